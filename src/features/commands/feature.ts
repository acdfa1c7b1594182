// Commands: inbound bridges from Kafka, RabbitMQ, RocketMQ and Pulsar publishing into the broker,
// and the NACOS registration of its endpoints (registry.ts: one file and one line per type).
// Stored and replicated across a cluster, where a command that brings records in runs on one node
// at a time (its lease's holder). Started last, so they stop first, before anything they publish
// through.
import type { Feature } from '../feature.ts';
import { COMMAND_KIND, CommandManager } from './manager.ts';
import { registerCommandMetrics } from './metrics.ts';
import { commandRoutes } from './routes.ts';

export const commands: Feature<CommandManager> = {
  name: 'commands',
  async start(ctx) {
    const limits = { maxTopicLevels: ctx.config.limits.maxTopicLevels, maxPayload: ctx.config.limits.maxPacketSize };
    const manager = new CommandManager(ctx.broker, ctx.store, ctx.log, limits, ctx.broker);
    if (ctx.leases) manager.useLeases(ctx.leases);
    await manager.load();
    ctx.replicate(COMMAND_KIND, (id, doc) => manager.applyStored(id, doc as never));
    registerCommandMetrics(ctx.registry, manager);
    return { api: manager, routes: () => commandRoutes(manager), close: () => manager.close() };
  },
};
