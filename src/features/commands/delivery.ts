// Owns putting a command's records into the broker, and its record counters: each record is
// mapped (mapping.ts; a record that cannot be is counted by reason and logged, rate-limited),
// then the batch goes to Supervisor.publishBatch, which resolves once every message is routed
// and stored. While the broker refuses (a worker down or restarting) the same batch is sent
// again with backoff (100 ms .. 5 s), so the consumer acknowledges only what the broker has:
// at least once. One batch at a time per command: the consumer waits, and that is the
// backpressure. Main thread.
import { setTimeout as sleep } from 'node:timers/promises';

import type { Logger } from '../../log/index.ts';
import { RateLimitedWarn } from '../../policies/rate-limited-warn.ts';
import { Backoff } from '../../sources/backoff.ts';
import { FAILURE_REASONS, type FailureReason, type Mapping } from './mapping.ts';
import type { InboundMessage, InboundRecord } from './types.ts';

/** What delivery needs of the broker (the supervisor gives it). */
export interface PublishHost {
  /** `orderKey`: every batch with the same key is routed by the same worker (their order kept). */
  publishBatch(messages: InboundMessage[], publisher: undefined, publisherHash: number, orderKey: string): Promise<unknown>;
}

export interface DeliveryCounters {
  received: number;
  published: number;
  /** Records not published, by reason (they are acknowledged: sending them again cannot help). */
  failed: Record<FailureReason, number>;
  /** Batches sent again after the broker refused them. */
  publishRetries: number;
}

export function emptyCounters(): DeliveryCounters {
  return { received: 0, published: 0, failed: Object.fromEntries(FAILURE_REASONS.map((r) => [r, 0])) as Record<FailureReason, number>, publishRetries: 0 };
}

export class Delivery {
  readonly counters = emptyCounters();
  private readonly unmappedWarn: RateLimitedWarn;
  private readonly refusedWarn: RateLimitedWarn;

  /** `command:<id>`: the order key (one worker routes every batch of this command, so its
   * messages keep their order across batches: batches routed by two workers at once could
   * overtake each other), and who its messages are traced as (OpenTelemetry spans'
   * `messaging.client.id`). */
  private readonly name: string;

  constructor(
    private readonly mapping: Mapping,
    private readonly host: PublishHost,
    log: Logger,
    private readonly onError: (message: string) => void,
    id = '',
  ) {
    this.name = `command:${id}`;
    this.unmappedWarn = new RateLimitedWarn(log);
    this.refusedWarn = new RateLimitedWarn(log);
  }

  /** Publishes `records`: true once the broker has them all (or they failed for good), false
   * when `signal` aborts first (the command is stopping: nothing may be acknowledged). */
  async deliver(records: InboundRecord[], signal: AbortSignal): Promise<boolean> {
    const c = this.counters;
    c.received += records.length;
    const messages: InboundMessage[] = [];
    for (const record of records) {
      const m = this.mapping.map(record);
      if ('reason' in m) {
        c.failed[m.reason]++;
        this.onError(m.message);
        this.unmappedWarn.warn('command record not published', { reason: m.reason, error: m.message });
      } else {
        m.tracedAs = this.name;
        messages.push(m);
      }
    }
    if (messages.length === 0) return true;
    const backoff = new Backoff(100, 5000);
    for (;;) {
      if (signal.aborted) return false;
      try {
        await this.host.publishBatch(messages, undefined, 0, this.name);
        c.published += messages.length;
        return true;
      } catch (err) {
        c.publishRetries++;
        const message = `broker refused a batch of ${messages.length}: ${(err as Error).message}`;
        this.onError(message);
        this.refusedWarn.warn('command batch refused by the broker; sending it again', { error: message });
        // Rejects only when the command stops (AbortError); the loop then answers false.
        await sleep(backoff.next(), undefined, { signal }).catch(() => {});
      }
    }
  }
}
