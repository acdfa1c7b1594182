// InboundPublisher: the remote -> local half of one bridge (main thread). Messages the remote
// broker sends are mapped to local topics and published through the supervisor in batches, one
// batch in flight at a time (so they stay in order), collected over a tick. A QoS 1/2 message is
// acknowledged to the remote only once its batch is routed and stored here (mqtt.js sends the
// PUBACK, or the PUBCOMP of QoS 2, when its handleMessage callback runs), so a crash or a
// failed publish leaves it with the remote, which sends it again. QoS 0 messages are acknowledged
// at once while few wait; past HIGH_WATER they wait too (backpressure: mqtt.js reads the next
// packet only after the callback).
import type { IPublishPacket } from 'mqtt';

import type { BatchMessage } from '../worker/messages.ts';
import { Backoff } from '../sources/backoff.ts';
import type { BridgeCounters } from './counters.ts';
import type { TopicMap } from './topic-map.ts';

/** QoS 0 messages waiting before the remote's stream is paused. */
export const HIGH_WATER = 1000;

export interface InboundHost {
  /** Supervisor.publishBatch: resolves once every message is routed and stored. */
  publishBatch(messages: BatchMessage[], publisher: number): Promise<number[]>;
  /** A publish failed (it is retried). */
  failed(err: Error): void;
  /** Who its messages are traced as (OpenTelemetry), e.g. `bridge:<name>`. */
  readonly tracedAs?: string;
}

interface Pending {
  message: BatchMessage;
  /** The acknowledgement still owed to the remote (null: already given). */
  ack: (() => void) | null;
}

export class InboundPublisher {
  private pending: Pending[] = [];
  private busy = false;
  private scheduled = false;
  private stopped = false;
  private readonly backoff = new Backoff(100, 5000);
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly host: InboundHost,
    private readonly handle: number,
    private readonly map: TopicMap,
    private readonly counters: BridgeCounters,
  ) {}

  /** mqtt.js handleMessage: a PUBLISH from the remote; `done` acknowledges it. */
  accept(packet: IPublishPacket, done: () => void): void {
    if (this.stopped) return; // the client is closing: the remote keeps what it has not had acknowledged
    const mapped = this.map.toLocal(packet.topic);
    if (typeof mapped === 'string') {
      this.counters.drop(mapped);
      done();
      return;
    }
    const payload = packet.payload;
    // Copy exactly the payload: it may be a view into the socket's larger buffer.
    const bytes = typeof payload === 'string' ? new Uint8Array(Buffer.from(payload)) : new Uint8Array(payload);
    const expiry = packet.properties?.messageExpiryInterval;
    const message: BatchMessage = {
      topic: mapped.topic,
      payload: bytes,
      qos: packet.qos,
      retain: packet.retain,
      expiresAt: expiry !== undefined ? Date.now() + expiry * 1000 : 0,
      props: null,
      tracedAs: this.host.tracedAs,
    };
    let ack: (() => void) | null = done;
    if (packet.qos === 0 && this.pending.length < HIGH_WATER) {
      done();
      ack = null;
    }
    this.pending.push({ message, ack });
    this.schedule();
  }

  /** Messages taken from the remote and not yet published here. */
  get waiting(): number {
    return this.pending.length;
  }

  /** Stops publishing; what waits is dropped unacknowledged (the remote sends QoS 1/2 again). */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.pending = [];
  }

  private schedule(): void {
    if (this.scheduled || this.busy || this.stopped) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.busy || this.stopped || this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.busy = true;
    this.host.publishBatch(batch.map((p) => p.message), this.handle).then(
      () => {
        this.busy = false;
        this.backoff.reset();
        if (this.stopped) return;
        this.counters.in += batch.length;
        for (const p of batch) p.ack?.();
        this.schedule();
      },
      (err: Error) => {
        this.busy = false;
        if (this.stopped) return;
        this.host.failed(err);
        // Published again, in order, before anything that came after (at least once).
        this.pending = batch.concat(this.pending);
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.schedule();
        }, this.backoff.next());
      },
    );
  };
}
