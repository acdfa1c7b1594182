// An in-memory engine for unit tests: one or more "workers" (router, session table, outbox,
// wills, handler host) in this thread over a routing core and client registry of their own,
// wired by the same createEngine (src/worker/engine.ts) the worker threads use, with the messages between workers (delivery batches,
// session hand-over) passed in memory and delivered on the next turn of the event loop, as
// MessagePorts do. Clients are FakeClients: no sockets; what the broker writes is parsed back.
import { randomUUID } from 'node:crypto';

import mqttPacket, { type Packet as MqttPacket } from 'mqtt-packet';

import { Router, RetainedStore, ClientRegistry, DESC_SLOTS, Framer, decodePacket, encodePublish, type Packet } from '../../src/native/index.ts';
import { loadConfig, type BrokerConfig } from '../../src/config/index.ts';
import { createLogger } from '../../src/log/index.ts';
import { StaticAuthenticator, StaticAuthorizer, type Authenticator, type AuthMethod, type Authorizer } from '../../src/auth/index.ts';
import { EndpointCounters, createCounters } from '../../src/broker/endpoint-counters.ts';
import type { RateLimiter } from '../../src/broker/rate-limiter.ts';
import type { Shedding } from '../../src/engine/session/outbox.ts';
import { completeEndpoint } from '../../src/broker/endpoint-config.ts';
import { remainingExpiry } from '../../src/broker/message.ts';
import type { CloseReason } from '../../src/protocol/reason-codes.ts';
import * as send from '../../src/protocol/send.ts';
import type { Delivery } from '../../src/router/delivery.ts';
import type { SessionTable } from '../../src/engine/session/session-table.ts';
import type { WorkerRouter } from '../../src/router/worker-router.ts';
import { Persistence } from '../../src/engine/session/persistence.ts';
import type { Session } from '../../src/engine/session/session.ts';
import type { HandoverMessage } from '../../src/engine/session/handover.ts';
import type { NodeClaims } from '../../src/engine/session/node-handover.ts';
import type { AuthExchange, Client, ClientEndpoint, ClientState, Dispatcher, HandlerHost, PayloadCheck } from '../../src/engine/handlers/client.ts';
import { WorkerStats } from '../../src/stats/worker-stats.ts';
import { createEngine } from '../../src/worker/engine.ts';
import { EndpointStats } from '../../src/stats/endpoint-stats.ts';
import type { Store } from '../../src/store/types.ts';

export interface EngineWorker {
  id: number;
  host: HandlerHost;
  router: WorkerRouter;
  sessions: SessionTable;
  stats: WorkerStats;
  dispatch: Dispatcher;
}

export interface Engine {
  config: BrokerConfig;
  workers: EngineWorker[];
  /** Resolves once every message between workers sent so far (and those they cause) arrived. */
  settle(): Promise<void>;
  /** A client on worker `worker` (not connected yet: send it a CONNECT). */
  client(worker?: number): FakeClient;
  close(): void;
}

/** Configuration as a config file would give it (`overrides` in the file's shape). */
export function engineConfig(overrides: Record<string, unknown> = {}): BrokerConfig {
  const env: Record<string, string> = { SPINDLE_LOG_LEVEL: 'error', SPINDLE_SYS_ENABLED: 'false', SPINDLE_STORE_STORE_TYPE: 'MEMORY' };
  for (const [k, v] of Object.entries(flatten(overrides))) env[`SPINDLE_${k.replace(/([a-z])([A-Z])/g, '$1_$2').replace(/\./g, '_').toUpperCase()}`] = typeof v === 'string' ? v : JSON.stringify(v);
  return loadConfig({ argv: [], env });
}

function flatten(o: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v && typeof v === 'object' && !Array.isArray(v)) Object.assign(out, flatten(v as Record<string, unknown>, `${prefix}${k}.`));
    else out[`${prefix}${k}`] = v;
  }
  return out;
}

export interface EngineOptions {
  workers?: number;
  config?: BrokerConfig;
  store?: Store;
  /** The other nodes of a cluster, as worker `worker` asks them (none unless given). */
  nodes?: (worker: number) => NodeClaims;
  /** Loads a stored session (a dead worker's, or one another node left in the shared store);
   * none unless given. */
  loadStored?: (clientId: string, handle: number) => Promise<Session | null>;
  /** QoS 0 shedding while overloaded, shared by every worker (none unless given). */
  shedding?: Shedding;
  /** Enhanced-authentication methods by name (none unless given). */
  authMethods?: ReadonlyMap<string, AuthMethod>;
  /** The authenticator of CONNECTs without a method (the static users unless given). */
  authenticator?: Authenticator;
  /** Schema checks on PUBLISH payloads (none unless given). */
  payloadCheck?: PayloadCheck;
}

export function startEngine(options: EngineOptions = {}): Engine {
  const config = options.config ?? engineConfig();
  const name = `engine-${randomUUID()}`;
  const registry = ClientRegistry.open(name);
  const counters = new EndpointCounters(createCounters());
  const shared = new SharedArrayBuffer(8);
  const log = createLogger({ level: 'error', name: 'engine-test' });
  let inFlight = 0;
  let idle: (() => void)[] = [];
  const post = (fn: () => void) => {
    inFlight++;
    setImmediate(() => {
      try {
        fn();
      } finally {
        inFlight--;
        if (inFlight === 0) for (const f of idle.splice(0)) f();
      }
    });
  };
  const workers: EngineWorker[] = [];
  const count = options.workers ?? 1;
  for (let id = 0; id < count; id++) {
    const stats = new WorkerStats();
    const staticAuthorizer = new StaticAuthorizer(config.auth);
    const engine = createEngine({
      workerId: id,
      config,
      log,
      stats,
      routerName: name,
      registry,
      routeShared: shared,
      persistence: options.store ? new Persistence(options.store, registry, id, log) : null,
      endpointCounters: counters,
      authenticator: options.authenticator ?? new StaticAuthenticator(config.auth),
      authMethods: options.authMethods ?? new Map(),
      authorizerFor: (): Authorizer => staticAuthorizer,
      sendBatch: (worker, buffer, length) => {
        post(() => workers[worker].router.receiveBatch(buffer, length, id));
        return true;
      },
      sendControl: (worker: number, msg: HandoverMessage) => post(() => workers[worker].sessions.onControl(msg, id)),
      peers: () => workers.map((w) => w.id).filter((w) => w !== id),
      loadStored: options.loadStored ?? (async () => null),
      nodes: options.nodes?.(id),
      shedding: options.shedding,
      payloadCheck: options.payloadCheck,
    });
    workers.push({ id, host: engine.host, router: engine.router, sessions: engine.sessions, stats, dispatch: engine.dispatcher });
  }
  const endpoint: ClientEndpoint = { config: completeEndpoint({ port: 1883 }, { messageMaxSize: config.limits.maxPacketSize }, 'config'), slot: 0, stats: new EndpointStats() };
  return {
    config,
    workers,
    settle: () => new Promise<void>((resolve) => {
      const check = () => setImmediate(() => (inFlight === 0 ? resolve() : idle.push(check)));
      check();
    }),
    client: (worker = 0) => new FakeClient(workers[worker], endpoint),
    close() {
      Router.close(name);
      RetainedStore.close(name);
      ClientRegistry.close(name);
    },
  };
}

/** A client connection without a socket: packets in through the worker's dispatcher (encoded and
 * framed as a socket would deliver them), what the broker writes parsed back in order. */
export class FakeClient implements Client {
  state: ClientState = 'new';
  version: send.Version = 5;
  clientId = '';
  traced = false;
  username: string | undefined;
  clientHash = 0;
  cleanStart = true;
  session: Session | null = null;
  authorizer!: Authorizer;
  identity!: { clientId: string; username?: string };
  receiveMaximum = 65535;
  maxPacketSize = 268435460;
  aliasMaxOut = 0;
  normalDisconnect = false;
  countedOnEndpoint = false;
  authMethod: string | undefined;
  authExchange: AuthExchange | null = null;
  readonly endpointMaxPacket: number;
  readonly remoteAddress = '127.0.0.1';
  readonly certificateCN = undefined;
  peerCertificates(): Buffer[] | undefined {
    return undefined;
  }
  readonly proxy = undefined;
  readonly aliasesIn = new Map<number, Buffer>();
  messagesIn = 0;
  publishChain: Promise<void> | null = null;
  publishPending = 0;
  transforming = 0;
  paused = false;
  limiter: RateLimiter | null = null;
  throttledUntil = 0;
  heldByRules = false;
  /** Set false to play a client that does not read (slow consumer). */
  writable = true;
  /** Bytes written and not taken (overload shedding reads it). */
  outboundBacklog = 0;
  congestedCount = 0;
  closeReason: CloseReason | undefined;
  /** Everything the broker wrote, parsed, in order. */
  readonly received: MqttPacket[] = [];
  private readonly framer: InstanceType<typeof Framer>;
  private parser: ReturnType<typeof mqttPacket.parser> | null = null;
  private readonly table = new Uint32Array(DESC_SLOTS * 64);
  private work: Promise<void> = Promise.resolve();

  constructor(readonly worker: EngineWorker, readonly endpoint: ClientEndpoint) {
    this.endpointMaxPacket = endpoint.config.messageMaxSize;
    this.framer = new Framer(this.endpointMaxPacket);
  }

  get connected(): boolean { return this.state === 'connected'; }
  get sharesFrames(): boolean { return this.aliasMaxOut === 0; }
  get endpointStats(): EndpointStats { return this.endpoint.stats; }
  get endpointSlot(): number { return this.endpoint.slot; }

  /** Sends packets (mqtt-packet objects) to the broker; resolves when the handlers are done. */
  send(...packets: Record<string, unknown>[]): Promise<void> {
    for (const p of packets) {
      const version = p.cmd === 'connect' ? (p.protocolVersion as number) ?? 5 : this.version;
      const bytes = mqttPacket.generate(p as unknown as MqttPacket, { protocolVersion: version as 4 | 5 });
      this.work = this.work.then(() => this.feed(bytes));
    }
    return this.work;
  }

  /** Sends bytes as they are (what an encoder would refuse to make). */
  sendBytes(bytes: Buffer): Promise<void> {
    this.work = this.work.then(() => this.feed(bytes));
    return this.work;
  }

  private async feed(bytes: Buffer): Promise<void> {
    if (this.state === 'closed') return;
    let n = this.framer.feed(bytes, this.table);
    while (n > 0) {
      for (let i = 0; i < n; i++) {
        const o = i * DESC_SLOTS;
        const desc = this.table.slice(o, o + DESC_SLOTS);
        const type = (desc[0] & 0xff) >> 4;
        if (type === 3) await this.worker.dispatch.publish(this, bytes, desc, 0);
        else await this.worker.dispatch.packet(this, decode(this.version, bytes, desc));
        if (this.isClosed()) return;
      }
      n = this.framer.more(bytes, this.table);
    }
  }

  /** The packets of type `cmd` received so far (fields read loosely, as the tests need). */
  packets(cmd: string): (MqttPacket & Record<string, any>)[] {
    return this.received.filter((p) => p.cmd === cmd);
  }

  // ---- Client / SessionLink --------------------------------------------------------------

  write(frame: Buffer): void {
    if (this.state === 'closed') return;
    this.parser ??= mqttPacket.parser({ protocolVersion: this.version });
    this.parser.removeAllListeners('packet');
    this.parser.on('packet', (p: MqttPacket) => this.received.push(p));
    this.parser.parse(frame);
  }

  published(): void {}

  congested(): void {
    this.congestedCount++;
  }

  encodePublish(d: Delivery, now: number, dup: boolean): Buffer {
    const m = d.message;
    const props = this.version === 5 ? send.publishProperties(m.props, remainingExpiry(m, now), d.subscriptionIds, 0) : null;
    const len = send.publishLength(this.version, d.qos, m.topicBytes.length, props?.length ?? 0, m.payload.length);
    const out = Buffer.alloc(len);
    encodePublish(this.version, out, 0, d.qos | (dup ? 4 : 0) | (d.retain ? 8 : 0), d.qos ? 1 : 0, m.topicBytes, m.payload, props ?? undefined);
    return out;
  }

  isClosed(): boolean { return this.state === 'closed'; }

  onConnected(): void {
    this.state = 'connected';
    this.framer.setVersion(this.version);
  }

  protocolError(reason: number, message?: string): void {
    this.disconnectWith(reason, 'protocol_error', message);
  }

  disconnectWith(reason: number, why: CloseReason, message?: string): void {
    if (this.state === 'closed') return;
    if (this.version === 5 && this.state === 'connected') this.write(send.disconnect(reason, message));
    this.close(why);
  }

  canRead(topic: string): boolean | Promise<boolean> {
    return this.authorizer.authorize(this.identity, 'subscribe', topic);
  }

  kick(reason: number, why: CloseReason, message?: string): void {
    this.disconnectWith(reason, why, message);
  }

  close(why: CloseReason): void {
    if (this.state === 'closed') return;
    this.closeReason ??= why;
    this.state = 'closed';
    if (this.authExchange !== null) clearTimeout(this.authExchange.timer);
    this.authExchange = null;
    if (this.countedOnEndpoint) this.worker.host.endpointCounters.releaseConnection(this.endpoint.slot);
    if (this.session) this.worker.sessions.connectionClosed(this.session, this);
  }

  pauseReading(): void { this.paused = true; }
  resumeReading(): void { this.paused = false; }
}

function decode(version: number, bytes: Buffer, desc: Uint32Array): Packet {
  return decodePacket(version, bytes, desc[1], desc[2]);
}
