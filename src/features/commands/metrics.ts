// The commands' Prometheus metrics, labelled `command` (its id) and `type`: the counters
// /command/runtime answers, read from the runners when scraped (main thread, no copy kept).
import { Counter, Gauge, type Registry } from 'prom-client';

import type { CommandManager, CommandRuntime } from './manager.ts';
import { COMMAND_STATES } from './types.ts';

export function registerCommandMetrics(registry: Registry, commands: CommandManager): void {
  const labels = (r: CommandRuntime) => ({ command: r.id, type: r.type });
  const counter = (name: string, help: string, value: (r: CommandRuntime) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['command', 'type'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of commands.allRuntimes()) this.inc(labels(r), value(r));
      },
    });
  counter('spindle_command_received_total', 'Records a command received from its source (again after a reconnect, for what was not acknowledged).', (r) => r.received);
  counter('spindle_command_published_total', 'Records a command published into the broker (routed and stored).', (r) => r.published);
  counter('spindle_command_publish_retries_total', 'Batches a command sent again after the broker refused them (a worker down).', (r) => r.publishRetries);
  counter('spindle_command_reconnects_total', 'Connections to the source a command tried again (the server down or the connection lost).', (r) => r.reconnects);
  new Counter({
    name: 'spindle_command_failed_total',
    help: 'Records a command could not publish, by reason: topic (the mqttTopic template gave an invalid topic name), too_large (payload over limits.maxPacketSize). They are acknowledged.',
    labelNames: ['command', 'type', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of commands.allRuntimes()) for (const [reason, n] of Object.entries(r.failed)) this.inc({ ...labels(r), reason }, n);
    },
  });
  new Gauge({
    name: 'spindle_command_lag',
    help: 'Records waiting in the source, sampled every 5 s while running (Kafka: high watermark - committed offset, summed over partitions; RabbitMQ: ready messages of the queue; Pulsar: the subscription\'s msgBacklog; RocketMQ: not known).',
    labelNames: ['command', 'type'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of commands.allRuntimes()) if (r.lag !== null) this.set(labels(r), r.lag);
    },
  });
  new Gauge({
    name: 'spindle_command_registered_instances',
    help: 'Instances a registration command (NACOS) has registered now (one per endpoint it announces).',
    labelNames: ['command', 'type'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of commands.allRuntimes()) if (Array.isArray(r.details?.instances)) this.set(labels(r), r.details.instances.length);
    },
  });
  new Gauge({
    name: 'spindle_command_state',
    help: `1 for the state a command is in: ${COMMAND_STATES.join(', ')}.`,
    labelNames: ['command', 'type', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of commands.allRuntimes()) for (const state of COMMAND_STATES) this.set({ ...labels(r), state }, r.state === state ? 1 : 0);
    },
  });
}
