// Bridge: one running MQTT bridge (main thread): its mqtt.js client connected to the remote
// broker, the bounded outbound queue (local -> remote) and the inbound publisher (remote ->
// local). mqtt.js reconnects every reconnectPeriod; with cleanStart false the remote keeps the
// bridge's session (its subscriptions and the QoS 1/2 messages for it) while it is away, and
// mqtt.js sends again the QoS 1/2 messages the remote had not acknowledged. mqtt.js is loaded
// when the first bridge starts, never at the broker's start (issue 26).
import { readFileSync } from 'node:fs';

import type { IClientOptions, IClientPublishOptions, MqttClient } from 'mqtt';

import { lazyImport } from '../lazy/lazy-import.ts';
import type { Logger } from '../log/index.ts';
import type { BatchMessage } from '../worker/messages.ts';
import { clientIdOf, type BridgeConfig } from './bridge-config.ts';
import type { BridgeCounters } from './counters.ts';
import { BridgeError } from './errors.ts';
import { InboundPublisher } from './inbound.ts';
import { OutboundQueue, type OutboundMessage } from './outbound-queue.ts';
import { TopicMap } from './topic-map.ts';
import type { BridgeOutput } from './worker-bridges.ts';

const loadMqtt = lazyImport('mqtt.js', async () => (await import('mqtt')).default);

/** mqtt.js's errors for a message the connection closed under (it was not refused). */
const CONNECTION_GONE = new Set(['Connection closed', 'client disconnecting']);

export type BridgeState = 'connecting' | 'connected' | 'stopped';

export interface BridgeDeps {
  nodeName: string;
  log: Logger;
  publishBatch(messages: BatchMessage[], publisher: number): Promise<number[]>;
}

export interface BridgeStatus {
  state: BridgeState;
  /** When the current connection was made (ISO time; null when not connected). */
  connectedSince: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  /** Outbound messages waiting plus those sent and not yet acknowledged. */
  queued: number;
  inflight: number;
  /** Whether the remote has acknowledged this connection's subscriptions (true without any). */
  subscribed: boolean;
  /** Inbound messages taken from the remote, not yet published here. */
  inboundWaiting: number;
}

export class Bridge {
  private client: MqttClient | null = null;
  private state: BridgeState = 'stopped';
  private connectedSince = 0;
  private subscribed = false;
  private lastError: string | null = null;
  private lastErrorAt = 0;
  private readonly queue: OutboundQueue;
  private inflight = 0;
  private readonly forwards: TopicMap;
  private readonly subscriptions: TopicMap;
  private readonly inbound: InboundPublisher;
  private stopping = false;

  constructor(
    readonly config: BridgeConfig,
    readonly handle: number,
    private readonly counters: BridgeCounters,
    private readonly deps: BridgeDeps,
  ) {
    this.queue = new OutboundQueue(config.queueLimit);
    this.forwards = new TopicMap(config.forwards);
    this.subscriptions = new TopicMap(config.subscriptions);
    this.inbound = new InboundPublisher(
      { publishBatch: deps.publishBatch, failed: (err) => this.error(`publishing a remote message here failed (retried): ${err.message}`), tracedAs: `bridge:${config.name}` },
      handle,
      this.subscriptions,
      counters,
    );
  }

  /** The local filters whose messages this bridge forwards (routing-core entries). */
  localFilters(): string[] {
    return this.forwards.localFilters();
  }

  /** Connects (and keeps reconnecting), once mqtt.js is loaded. Throws BridgeError when a TLS
   * file cannot be read; mqtt.js that cannot be loaded is the bridge's lastError, and the bridge
   * stays connecting. */
  start(): void {
    const c = this.config;
    const options: IClientOptions = {
      protocolVersion: c.protocolVersion,
      clientId: clientIdOf(c, this.deps.nodeName),
      clean: c.cleanStart,
      keepalive: c.keepalive,
      reconnectPeriod: c.reconnectPeriod,
      connectTimeout: 30_000,
      // Subscribed again by us on every CONNACK (a session the remote lost has none).
      resubscribe: false,
      // Nothing is handed to mqtt.js while offline: the bounded queue here holds it.
      queueQoSZero: false,
      rejectUnauthorized: c.tls.rejectUnauthorized,
    };
    if (c.username !== '') options.username = c.username;
    if (c.password !== '') options.password = c.password;
    if (c.protocolVersion === 5) options.properties = { sessionExpiryInterval: c.cleanStart ? 0 : c.sessionExpiryInterval };
    Object.assign(options, readTlsFiles(c));
    this.state = 'connecting';
    loadMqtt()
      .then((mqtt) => {
        if (!this.stopping) this.connect(mqtt.connect(c.url, options));
      })
      .catch((err: unknown) => this.error(err instanceof Error ? err.message : String(err)));
  }

  private connect(client: MqttClient): void {
    this.client = client;
    // Acknowledged to the remote only once published here (see inbound.ts).
    client.handleMessage = (packet, done) => this.inbound.accept(packet, () => done());
    client.on('connect', (connack) => this.connected(connack.sessionPresent));
    client.on('close', () => {
      if (this.state === 'connected' && !this.stopping) this.error('the connection to the remote broker closed');
      this.connectedSince = 0;
      this.subscribed = false;
      if (!this.stopping) this.state = 'connecting';
    });
    client.on('error', (err) => this.error(err.message));
  }

  /** A message matched the bridge's local filters (posted by a worker). */
  enqueue(out: BridgeOutput): void {
    if (this.stopping) return;
    const mapped = this.forwards.toRemote(out.topic);
    if (typeof mapped === 'string') {
      this.counters.drop(mapped);
      return;
    }
    const m: OutboundMessage = { topic: mapped.topic, payload: out.payload, qos: Math.min(out.qos, mapped.qos) as 0 | 1 | 2, retain: out.retain, expiresAt: out.expiresAt };
    const dropped = this.queue.push(m, this.inflight);
    if (dropped > 0) this.counters.drop('queue_full', dropped);
    this.pump();
  }

  status(): BridgeStatus {
    return {
      state: this.state,
      connectedSince: this.connectedSince ? new Date(this.connectedSince).toISOString() : null,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt ? new Date(this.lastErrorAt).toISOString() : null,
      queued: this.queue.length + this.inflight,
      inflight: this.inflight,
      subscribed: this.subscribed,
      inboundWaiting: this.inbound.waiting,
    };
  }

  /** Disconnects (a DISCONNECT when connected: the remote keeps a persistent session); what waits
   * outbound is dropped and counted ('stopped'). */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.inbound.stop();
    const client = this.client;
    this.client = null;
    this.state = 'stopped';
    if (client) {
      await new Promise<void>((resolve) => {
        // A remote that does not take the DISCONNECT in time: the socket is cut.
        const timer = setTimeout(() => {
          client.end(true);
          resolve();
        }, 2000);
        client.end(!client.connected, {}, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    this.counters.drop('stopped', this.queue.clear() + this.inflight);
    this.inflight = 0;
  }

  private connected(sessionPresent: boolean): void {
    const c = this.config;
    this.state = 'connected';
    this.connectedSince = Date.now();
    this.deps.log.info('bridge connected to the remote broker', { bridge: c.name, url: c.url, sessionPresent });
    const filters = this.subscriptions.remoteFilters();
    if (filters.length > 0) {
      const map: Record<string, { qos: 0 | 1 | 2; nl?: boolean; rap?: boolean; rh?: number }> = {};
      // MQTT 5: No Local (what we publish there does not come back), Retain As Published, and
      // retained messages only for a subscription new to the session (not at every reconnect).
      for (const f of filters) map[f.filter] = c.protocolVersion === 5 ? { qos: f.qos, nl: true, rap: true, rh: 1 } : { qos: f.qos };
      this.client?.subscribe(map, (err, granted) => {
        if (err) return this.error(`subscribing on the remote failed: ${err.message}`);
        let refused = false;
        for (const g of granted ?? []) {
          if (g.qos < 0x80) continue;
          refused = true;
          this.error(`the remote refused the subscription ${g.topic} (reason ${g.qos})`);
        }
        this.subscribed = !refused;
      });
    } else this.subscribed = true;
    this.pump();
  }

  /** Hands waiting messages to mqtt.js while connected, up to maxInflight unacknowledged. */
  private pump(): void {
    const client = this.client;
    if (!client || !client.connected || this.stopping) return;
    const now = Date.now();
    while (this.inflight < this.config.maxInflight) {
      const m = this.queue.shift();
      if (m === undefined) return;
      const options: IClientPublishOptions = { qos: m.qos, retain: m.retain };
      if (m.expiresAt !== 0) {
        if (m.expiresAt <= now) {
          this.counters.drop('expired');
          continue;
        }
        if (this.config.protocolVersion === 5) options.properties = { messageExpiryInterval: Math.ceil((m.expiresAt - now) / 1000) };
      }
      this.inflight++;
      client.publish(m.topic, Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength), options, (err) => this.sent(m, err));
    }
  }

  /** mqtt.js's callback: QoS 0 written, QoS 1 PUBACK, QoS 2 PUBCOMP, or an error. */
  private sent(m: OutboundMessage, err: Error | undefined): void {
    if (this.stopping) return;
    this.inflight--;
    if (!err) this.counters.out++;
    else if (CONNECTION_GONE.has(err.message)) {
      // Not taken by the remote (the connection closed first): it goes again, first.
      this.queue.unshift(m);
    } else {
      // The remote's reason code (or mqtt.js's own refusal): sending it again would not help.
      this.counters.drop('refused');
      this.error(`a message to ${m.topic} was refused: ${err.message}`);
    }
    this.pump();
  }

  private error(message: string): void {
    // mqtt.js reports a refused connection at every attempt: log a change, count every one.
    if (message !== this.lastError) this.deps.log.warn('bridge error', { bridge: this.config.name, error: message });
    this.lastError = message;
    this.lastErrorAt = Date.now();
  }
}

/** The bridge's TLS files (PEM), read; throws BridgeError naming the one that cannot be read. */
export function readTlsFiles(c: BridgeConfig): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const out: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  for (const f of ['ca', 'cert', 'key'] as const) {
    if (c.tls[f] === '') continue;
    try {
      out[f] = readFileSync(c.tls[f]);
    } catch (err) {
      throw new BridgeError('INVALID_PARAMETER', `tls.${f}`, `tls.${f}: cannot read ${c.tls[f]}: ${(err as Error).message}`);
    }
  }
  return out;
}
