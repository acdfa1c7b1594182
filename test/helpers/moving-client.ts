// A persistent subscriber that follows the broker when it is moved (a drain, a rebalance): an
// MQTT 5 client told DISCONNECT 0x9C reconnects to the Server Reference; any other close (an MQTT
// 3.1.1 client closed, 0x8B) reconnects to the next address `pick` gives. It counts each message
// of a numbered stream once, and tells apart a repeat the broker marked DUP (allowed after a
// reconnect: a QoS 1 redelivery) from one it did not. Used by the drain tests and by
// bench/cluster-upgrade.ts.
import mqtt, { type MqttClient } from 'mqtt';

export interface MovingClientOptions {
  clientId: string;
  version: 4 | 5;
  topic: string;
  /** The first address, host:port. */
  address: string;
  /** Where to go after a close that named no server (receives the address it was on). */
  pick(from: string): string;
}

export class MovingClient {
  client: MqttClient | null = null;
  address: string;
  /** Sequence numbers received (each once), repeats with DUP set, repeats without it. */
  readonly seen = new Set<number>();
  /** Repeats: with DUP set (a redelivery after a reconnect, as MQTT allows), sent again by their
   * publisher (it lost its connection before the PUBACK: at least once), and neither. */
  dupRedeliveries = 0;
  publisherRetries = 0;
  duplicates = 0;
  /** The numbers repeated without DUP and not resent by their publisher (for a report). */
  readonly duplicateNumbers: number[] = [];
  /** Numbers that arrived as a publisher's resend (`<n>:retry`): a later copy without the mark is
   * the first send, which the publisher's broker stored after all (the two arrive either way). */
  private readonly resent = new Set<number>();
  moves = 0;
  followedReference = 0;
  /** The longest time without a connection (ms), and when the current gap started. */
  longestGapMs = 0;
  private gapFrom = 0;
  private stopped = false;
  private reference: string | null = null;
  private lastMessageAt = Date.now();
  /** The longest time between two messages while the stream flowed (ms). */
  longestSilenceMs = 0;

  get clientId(): string {
    return this.o.clientId;
  }

  constructor(private readonly o: MovingClientOptions) {
    this.address = o.address;
  }

  /** Connects (and subscribes on the first connect); resolves at the first CONNACK. */
  async start(): Promise<void> {
    await this.open(true);
  }

  get connected(): boolean {
    return this.client?.connected ?? false;
  }

  private open(first: boolean): Promise<void> {
    const [host, port] = [this.address.slice(0, this.address.lastIndexOf(':')), Number(this.address.slice(this.address.lastIndexOf(':') + 1))];
    const c = mqtt.connect({
      host, port, clientId: this.o.clientId, clean: false, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: this.o.version,
      ...(this.o.version === 5 ? { properties: { sessionExpiryInterval: 3600 } } : {}),
    });
    this.client = c;
    c.on('message', (_t, payload, packet) => this.onMessage(payload, packet.dup));
    c.on('disconnect', (p) => {
      if (p.reasonCode === 0x9c && p.properties?.serverReference) this.reference = p.properties.serverReference;
    });
    c.on('error', () => undefined); // a refused connect closes too: handled on 'close'
    c.on('close', () => this.onClose(c));
    return new Promise<void>((resolve, reject) => {
      c.once('connect', () => {
        if (this.gapFrom) this.longestGapMs = Math.max(this.longestGapMs, Date.now() - this.gapFrom);
        this.gapFrom = 0;
        if (first) c.subscribeAsync(this.o.topic, { qos: 1 }).then(() => resolve(), reject);
        else resolve();
      });
      if (first) c.once('close', () => reject(new Error(`${this.o.clientId}: closed before CONNACK`)));
    });
  }

  private onMessage(payload: Buffer, dup: boolean): void {
    const now = Date.now();
    this.longestSilenceMs = Math.max(this.longestSilenceMs, now - this.lastMessageAt);
    this.lastMessageAt = now;
    // "<n>" or "<n>:retry" (the publisher sent n again after losing its connection before PUBACK).
    const [num, retry] = payload.toString().split(':');
    const n = Number(num);
    const resend = retry === 'retry';
    // A negative number is a probe, published again until every subscriber has it (the
    // upgrade bench's "subscriptions known"): its copies are not repeats of one PUBLISH.
    if (n < 0) {
      this.seen.add(n);
      return;
    }
    if (!this.seen.has(n)) this.seen.add(n);
    else if (dup) this.dupRedeliveries++;
    else if (resend || this.resent.has(n)) this.publisherRetries++;
    else {
      this.duplicates++;
      this.duplicateNumbers.push(n);
    }
    if (resend) this.resent.add(n);
  }

  private onClose(c: MqttClient): void {
    if (c !== this.client || this.stopped) return;
    this.client = null;
    this.gapFrom ||= Date.now();
    const from = this.address;
    if (this.reference) {
      this.address = this.reference;
      this.followedReference++;
    } else {
      this.address = this.o.pick(from);
    }
    this.reference = null;
    this.moves++;
    // Again at once; a node that refuses (draining, stopped) closes at once and the next pick is tried.
    setTimeout(() => void this.open(false).catch(() => undefined), this.moves % 10 === 0 ? 200 : 10);
  }

  /** Restarts the silence measure (the stream starts now). */
  streamStarts(): void {
    this.lastMessageAt = Date.now();
    this.longestSilenceMs = 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const c = this.client;
    this.client = null;
    if (c) await c.endAsync().catch(() => undefined);
  }
}
