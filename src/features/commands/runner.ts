// Owns one command's life while it is enabled (main thread): a consumer per connection attempt,
// reconnected with backoff (1 s .. 30 s, counted) while the source is down or the connection
// breaks; given up (state failed) when the source refuses for good or the type's consumer module
// cannot be loaded (it is loaded at the first start of a command of that type); the lag sampled
// every 5 s while running; stop() aborts what is being delivered (unacknowledged: the source sends
// it again) and closes the consumer. Its state and counters outlive a stop and start. A
// registration (NACOS, no mapping) runs the same way: open registers, close deregisters, and its
// details (the instances) are shown with the state.
import { setTimeout as sleep } from 'node:timers/promises';

import type { Logger } from '../../log/index.ts';
import { Backoff } from '../../sources/backoff.ts';
import { withTimeout } from '../../sources/timeout.ts';
import { Delivery, emptyCounters, type DeliveryCounters, type PublishHost } from './delivery.ts';
import type { Mapping } from './mapping.ts';
import { ConsumerError, type BrokerInfo, type CommandState, type CommandTypeSpec, type Consumer, type InboundRecord } from './types.ts';

const LAG_SAMPLE_MS = 5_000;
const CLOSE_TIMEOUT_MS = 10_000;

export interface RunnerStatus extends DeliveryCounters {
  state: CommandState;
  /** When the state last changed (ISO 8601). */
  since: string;
  lastError: string | null;
  lastErrorAt: string | null;
  /** Connection attempts after the first (the source was down or the connection broke). */
  reconnects: number;
  /** Records waiting in the source (see Consumer.lag); null: unknown or not running. */
  lag: number | null;
  /** A registration's instances and when they were last confirmed (Consumer.details): the last
   * answer, kept after a stop; null for an inbound bridge. */
  details: Record<string, unknown> | null;
}

export class CommandRunner {
  private state: CommandState = 'stopped';
  private since = new Date().toISOString();
  private lastError: string | null = null;
  private lastErrorAt: string | null = null;
  private reconnects = 0;
  private lag: number | null = null;
  private details: Record<string, unknown> | null = null;
  private consumer: Consumer | null = null;
  /** null: a registration, which publishes nothing. */
  private readonly delivery: Delivery | null;
  private abort: AbortController | null = null;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly id: string,
    private readonly spec: CommandTypeSpec,
    private readonly config: unknown,
    mapping: Mapping | null,
    host: PublishHost,
    private readonly log: Logger,
    private readonly broker: BrokerInfo,
  ) {
    this.delivery = mapping && new Delivery(mapping, host, log, (message) => this.noteError(message), id);
  }

  status(): RunnerStatus {
    const c = this.delivery?.counters ?? emptyCounters();
    if (this.consumer?.details) this.details = this.consumer.details();
    return { state: this.state, since: this.since, lastError: this.lastError, lastErrorAt: this.lastErrorAt, reconnects: this.reconnects, lag: this.lag, ...c, failed: { ...c.failed }, details: this.details };
  }

  /** Starts consuming (again, after a stop or a failure); nothing when already running. */
  start(): void {
    if (this.loop) return;
    const abort = new AbortController();
    this.abort = abort;
    this.loop = this.run(abort.signal).finally(() => {
      this.loop = null;
    });
  }

  /** Stops consuming: what is being delivered is abandoned unacknowledged, the consumer closed. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.loop;
    this.setState('stopped');
  }

  private async run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(1000, 30_000);
    const stopped = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    this.setState('starting');
    while (!signal.aborted) {
      let consumer: Consumer;
      try {
        consumer = await this.spec.create(this.config, { id: this.id, deliver: (records) => this.deliver(records, signal), log: this.log, broker: this.broker });
      } catch (err) {
        // The type's module could not be loaded (ModuleLoadError): it will not load on a retry.
        this.noteError((err as Error).message ?? String(err));
        this.log.error('command cannot be created; it stays stopped until started again', { error: (err as Error).message });
        this.setState('failed');
        return;
      }
      this.consumer = consumer;
      let sampler: NodeJS.Timeout | undefined;
      try {
        await Promise.race([consumer.open(), stopped]);
        if (signal.aborted) break;
        this.setState('running');
        backoff.reset();
        sampler = setInterval(() => void this.sampleLag(consumer), LAG_SAMPLE_MS);
        void this.sampleLag(consumer);
        await Promise.race([consumer.failed, stopped]);
      } catch (err) {
        if (signal.aborted) break;
        const e = err instanceof ConsumerError ? err : new ConsumerError((err as Error).message ?? String(err), true, { cause: err });
        this.noteError(e.message);
        if (!e.retriable) {
          this.log.error('command failed; it stays stopped until started again', { error: e.message });
          this.setState('failed');
          return;
        }
        this.log.warn('command connection failed; reconnecting', { error: e.message, reconnects: this.reconnects + 1 });
        this.setState('reconnecting');
        this.reconnects++;
      } finally {
        clearInterval(sampler);
        this.lag = null;
        await withTimeout(consumer.close(), CLOSE_TIMEOUT_MS, 'command consumer close').catch((err: unknown) => this.log.warn('command consumer did not close cleanly', { error: (err as Error).message }));
        if (consumer.details) this.details = consumer.details();
        this.consumer = null;
      }
      // Rejects only when the command stops (AbortError); the loop then ends.
      await sleep(backoff.next(), undefined, { signal }).catch(() => {});
    }
  }

  private deliver(records: InboundRecord[], signal: AbortSignal): Promise<boolean> {
    if (!this.delivery) throw new Error(`a ${this.spec.type} command publishes nothing`);
    return this.delivery.deliver(records, signal);
  }

  private async sampleLag(consumer: Consumer): Promise<void> {
    try {
      this.lag = await withTimeout(consumer.lag(), LAG_SAMPLE_MS, 'command lag');
    } catch (err) {
      this.lag = null;
      this.log.debug('command lag not sampled', { error: (err as Error).message });
    }
  }

  private noteError(message: string): void {
    this.lastError = message;
    this.lastErrorAt = new Date().toISOString();
  }

  private setState(state: CommandState): void {
    if (state === this.state) return;
    this.state = state;
    this.since = new Date().toISOString();
  }
}
