// ClusterLink: this node's part of the cluster (main thread), over NATS.
// - Membership: a heartbeat on `spindle.hb` every second; a node not heard from for
//   DOWN_AFTER_MS is down (its interest dropped); a new epoch (it restarted) is synced again.
// - Interest: the routing core keeps which filters have local subscriptions; their changes go out
//   on `spindle.int.<node>` (node names base64url-encoded as subject tokens) every INTEREST_MS with a sequence number; a node syncs another's whole
//   interest by request (`spindle.int.sync.<node>`) when it first sees it, after a gap, or after
//   it came back.
// - Messages: each other node's interest is subscribed in the local routing core under a handle
//   of its own, so a local PUBLISH that another node wants is copied here by the worker (batched
//   per tick) and sent to `spindle.node.<that node>.<this node>`, frames of up to max_payload. Traffic no
//   other node wants never leaves its worker.
//   QoS 1/2 messages go through a JetStream stream instead (QosStream): their publishers are
//   acknowledged once NATS has stored them, and the other node takes them from the stream.
// - Inbound frames are routed locally with the cluster's inbound handle as publisher: never sent
//   on to another node.
// - Shared subscriptions are one group across the nodes: a node's interest names each group it has
//   members of (`$share/<group>/<filter>`), and the other nodes subscribe its handle to that group
//   as ONE member (with a number per group as subscription id), so the routing core that routes a
//   PUBLISH picks one member among its local sessions and the node handles. A message sent to a
//   node says whether it is for its plain subscribers and which groups it was picked for; there
//   it goes to one local member of each (never back to a node).
import { connect, type NatsConnection, type Msg } from '@nats-io/transport-node';

import type { BridgeOutput } from '../bridges/worker-bridges.ts';
import type { BatchMessage } from '../worker/messages.ts';
import type { Logger } from '../log/index.ts';
import { decodeBatch, encodeFrames, type FrameMessage } from './batch.ts';
import { NatsProcess, findNatsServer } from './nats-process.ts';
import { token, untoken } from './names.ts';
import type { NodeClaimsPart } from './claims.ts';
import { NodeFigureSampler, figuresOf, type NodeFigures } from './node-figures.ts';
import type { SessionAdoption } from './adoption.ts';
import type { ClusterAdminOps } from './admin-ops.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';
import { QosStream } from './qos-stream.ts';
import { SessionForwards } from './forwards.ts';
import { Leases } from './leases.ts';
import type { WorkerCall, WorkerCallAll } from '../worker/ops/index.ts';
import { WIRE_FORMAT, wireFormatOf } from './wire-format.ts';
import { VERSION } from '../install/root.ts';

export type { ClusterPart, ClusterPartContext } from './part.ts';

const HEARTBEAT_MS = 1000;
const DOWN_AFTER_MS = 3000;
const INTEREST_MS = 50;
const SYNC_TIMEOUT_MS = 5000;
/** A QoS 1/2 frame that could not be routed here is tried ROUTE_TRIES times, ROUTE_RETRY_MS apart,
 * before it goes back to the stream (then delivered again later, out of order). */
const ROUTE_TRIES = 10;
const ROUTE_RETRY_MS = 500;
/** A message forwarded here for a session that is not here yet (its claim's answer on the way:
 * the node it left forwards from the moment it let it go) is routed again for it every
 * ABSENT_RETRY_MS, ABSENT_TRIES times at most; its frame is acknowledged after. */
const ABSENT_TRIES = 40;
const ABSENT_RETRY_MS = 50;

/** What the cluster needs of the supervisor. */
export interface ClusterHost {
  reserveClusterHandles(nodes: number): { nodes: number[]; inbound: number; forwards: number[] };
  /** `from`: the worker's ticket for the tick's QoS 1/2 messages, answered with clusterAcked. */
  onClusterOutputs(fn: (items: BridgeOutput[], from: Ticket | null) => void): void;
  clusterAcked(from: Ticket, ok: boolean): void;
  takeInterestChanges(): string[];
  interestSnapshot(): string[];
  setTapFilter(handle: number, filter: string, on: boolean, subscriptionId?: number): void;
  removeTap(handle: number): void;
  /** `absent`: the messages only for some sessions (BatchMessage.only) of which these were not
   * on this node. */
  publishBatchCounted(messages: BatchMessage[], publisher: number, publisherHash?: number, orderKey?: string): Promise<{ matched: number[]; sharesMissed: number; absent: { index: number; only: string[] }[] }>;
  callAll: WorkerCallAll;
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void;
  call: WorkerCall;
}

export interface ClusterOptions {
  nodeName: string;
  natsUrl: string;
  localAddress: string;
  addresses: readonly string[];
  clientPort: number;
  natsServer: string;
  discovery: { service: string; namespace: string };
  maxNodes: number;
  dataDir: string;
}

/** A worker's ticket for one tick's QoS 1/2 messages for other nodes. */
interface Ticket {
  worker: number;
  ticket: number;
}

export interface ClusterNode {
  id: string;
  address: string;
  /** incompatible: a node of another wire format (wire-format.ts), not joined. */
  status: 'running' | 'down' | 'incompatible';
  self: boolean;
  lastSeen: string | null;
  /** Its Spindle version, when its heartbeat says it. */
  version?: string;
  /** Its figures as its last heartbeat told them (this node: sampled now); absent: a node of an
   * older build, which sends none. */
  figures?: NodeFigures;
}

interface Peer {
  name: string;
  address: string;
  epoch: number;
  handle: number;
  /** Its forward handle here (src/cluster/forwards.ts). */
  forward: number;
  lastSeen: number;
  /** Its figures from its last heartbeat (null: it sends none). */
  figures: NodeFigures | null;
  down: boolean;
  /** The interest sequence applied so far; -1 while syncing. */
  seq: number;
  /** Interest changes that came while syncing. */
  pending: { seq: number; changes: string[] }[];
  filters: Set<string>;
  /** QoS 0 messages for it (core NATS), and QoS 1/2 ones (the QoS stream), until the flush. */
  out: FrameMessage[];
  outQos: FrameMessage[];
}

export interface ClusterCounters {
  sentMessages: number;
  sentFrames: number;
  receivedMessages: number;
  receivedFrames: number;
  badFrames: number;
  publishFailures: number;
  resyncs: number;
  /** Messages another node wanted that were larger than a NATS message may be. */
  tooLarge: number;
  /** Times the connection to NATS was lost, and found again (the node serves its own clients
   * meanwhile; the other nodes are marked down after DOWN_AFTER_MS and synced when back). */
  natsDisconnects: number;
  natsReconnects: number;
  /** Shared-group picks of another node sent to it (a message picked for two groups counts 2). */
  sharedSent: number;
  /** Shared-group picks another node sent here. */
  sharedReceived: number;
  /** Picks for a group the picked node no longer had a member of, by the time the message came
   * (counted where that was found: here before sending, or on arrival): that message went to no
   * member of that group. */
  sharedNoMember: number;
  /** Messages forwarded here for sessions that had moved here from another node, that did not
   * come (ABSENT_TRIES): dropped. */
  forwardsUnclaimed: number;
  /** Frames (direct or from the QoS stream) from nodes of another wire format: dropped. */
  incompatibleFrames: number;
}

/** A node heard from whose wire format is not this build's: never joined. */
interface Stranger {
  wire: number;
  version: string | null;
  address: string;
  lastSeen: number;
}

export class ClusterLink {
  private nc: NatsConnection | null = null;
  private nats: NatsProcess | null = null;
  private handles: number[] = [];
  private forwardHandles: number[] = [];
  private inbound = -1;
  private readonly figures = new NodeFigureSampler();
  private readonly peers = new Map<string, Peer>();
  /** The same peers by their routing-core handle (every forwarded message is looked up here). */
  private readonly byHandle = new Map<number, Peer>();
  /** The same peers by their forward handle. */
  private readonly byForward = new Map<number, Peer>();
  private readonly epoch = Date.now();
  private seq = 0;
  private timers: NodeJS.Timeout[] = [];
  private flushScheduled = false;
  private readonly inboundChains = new Map<string, Promise<void>>();
  private readonly parts: ClusterPart[] = [];
  /** The workers' tickets for the QoS 1/2 messages queued for the next flush. */
  private tickets: Ticket[] = [];
  /** QoS 1/2 messages across nodes. */
  readonly qos: QosStream;
  /** Sessions that left this node for another, followed a while. */
  readonly forwards: SessionForwards;
  /** Client ids across nodes (set by createCluster). */
  claims: NodeClaimsPart | null = null;
  /** Sessions of nodes that went down (set by createCluster). */
  adoption: SessionAdoption | null = null;
  /** The admin API's questions to the other nodes (set by createCluster). */
  adminOps: ClusterAdminOps | null = null;
  /** Objects that run on one node at a time (commands). */
  readonly leases: Leases;
  readonly counters: ClusterCounters = { sentMessages: 0, sentFrames: 0, receivedMessages: 0, receivedFrames: 0, badFrames: 0, publishFailures: 0, resyncs: 0, tooLarge: 0, natsDisconnects: 0, natsReconnects: 0, sharedSent: 0, sharedReceived: 0, sharedNoMember: 0, forwardsUnclaimed: 0, incompatibleFrames: 0 };
  /** Nodes of another wire format, by name (logged once each, shown by nodes()). */
  private readonly strangers = new Map<string, Stranger>();
  /** The number of each shared group some node has members of (`$share/<group>/<filter>`): the
   * subscription id its node handles' memberships carry, so a worker names a pick with a number.
   * Counted by the nodes holding it; never reused while held. */
  private readonly shareIds = new Map<string, { id: number; refs: number }>();
  private readonly shareKeys = new Map<number, string>();
  private nextShareId = 1;
  /** Whether the connection to NATS is up now. */
  natsUp = false;

  constructor(private readonly host: ClusterHost, private readonly options: ClusterOptions, private readonly log: Logger) {
    this.qos = new QosStream(log, (source, data, only) => this.routeFrame(source, data, ROUTE_TRIES, only));
    this.leases = new Leases(log);
    this.forwards = new SessionForwards(host, (node) => this.peers.get(node)?.forward, this.qos);
    this.parts.push(this.qos, this.leases, this.forwards);
  }

  /** Before the supervisor starts: the routing core keeps the local interest from the start. */
  reserve(): void {
    const r = this.host.reserveClusterHandles(this.options.maxNodes - 1);
    this.handles = r.nodes;
    this.forwardHandles = r.forwards;
    this.inbound = r.inbound;
  }

  /** This run's part of the identity of the messages published here (FrameMessage.origin). */
  get originTag(): string {
    return `${this.options.nodeName}/${this.epoch.toString(36)}/`;
  }

  get address(): string {
    return this.options.localAddress;
  }

  async start(): Promise<void> {
    const o = this.options;
    let url = o.natsUrl;
    if (url === '') {
      this.nats = new NatsProcess({ binary: findNatsServer(o.natsServer), nodeName: o.nodeName, clientPort: o.clientPort, localAddress: o.localAddress, addresses: o.addresses, discovery: o.discovery, dataDir: o.dataDir }, this.log);
      await this.nats.start();
      url = this.nats.url;
    }
    this.nc = await connect({ servers: url.split(','), name: `spindle ${o.nodeName}`, noEcho: true, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
    this.natsUp = true;
    void this.watchStatus(this.nc);
    const nc = this.nc;
    nc.subscribe('spindle.hb', { callback: (err, m) => {
      if (!err) this.onHeartbeat(m);
    } });
    nc.subscribe('spindle.int.*', { callback: (err, m) => {
      if (!err) this.onInterest(m);
    } });
    nc.subscribe(`spindle.int.sync.${token(o.nodeName)}`, { callback: (err, m) => {
      if (!err) this.onSyncRequest(m);
    } });
    nc.subscribe(`spindle.node.${token(o.nodeName)}.*`, { callback: (err, m) => {
      if (!err) this.onFrame(m);
    } });
    this.host.onClusterOutputs((items, from) => this.onOutputs(items, from));
    const install = (w?: number) => {
      const args = { handles: this.handles, inbound: this.inbound, forwards: this.forwardHandles, originTag: this.originTag };
      const done = w === undefined ? this.host.callAll('cluster.set', args) : this.host.call(w, 'cluster.set', args);
      return done.catch((err: unknown) => this.log.error('cluster handles not installed on a worker', { worker: w, err }));
    };
    await install();
    this.host.onWorkerStart((w) => install(w));
    this.timers.push(setInterval(() => this.heartbeat(), HEARTBEAT_MS), setInterval(() => this.sweep(), 250), setInterval(() => this.flushInterest(), INTEREST_MS));
    this.heartbeat();
    for (const part of this.parts) await part.start(this.partContext());
    this.log.info('cluster joined', { node: o.nodeName, nats: url });
  }

  /** Adds a part; started at once when the link already is. */
  async addPart(part: ClusterPart): Promise<void> {
    this.parts.push(part);
    if (this.nc) await part.start(this.partContext());
  }

  private partContext(): ClusterPartContext {
    return { nc: this.nc!, nodeName: this.options.nodeName, runningPeers: () => [...this.peers.values()].filter((p) => !p.down).map((p) => p.name), natsUp: () => this.natsUp, log: this.log };
  }

  private tellParts(up: boolean, node: string): void {
    for (const part of this.parts) {
      try {
        if (up) part.peerUp?.(node);
        else part.peerDown?.(node);
      } catch (err) {
        this.log.error('cluster part failed on a node change', { node, err });
      }
    }
  }

  /** The counters of the parts that have some, by part name. */
  partCounters(): Record<string, object> {
    const out: Record<string, object> = {};
    for (const p of this.parts) if (p.name && p.counters) out[p.name] = p.counters;
    return out;
  }

  /** Every node known, this one first. */
  nodes(): ClusterNode[] {
    const self: ClusterNode = { id: this.options.nodeName, address: this.options.localAddress, status: 'running', self: true, lastSeen: new Date().toISOString(), figures: this.figures.sample() };
    const peers = [...this.peers.values()].filter((p) => !this.strangers.has(p.name)).map((p) => ({
      id: p.name, address: p.address, status: p.down ? 'down' as const : 'running' as const, self: false, lastSeen: new Date(p.lastSeen).toISOString(),
      ...(p.figures ? { version: p.figures.version, figures: p.figures } : {}),
    }));
    const strangers = [...this.strangers].map(([id, s]) => ({ id, address: s.address, status: 'incompatible' as const, self: false, lastSeen: new Date(s.lastSeen).toISOString(), ...(s.version ? { version: s.version } : {}) }));
    return [{ ...self, version: VERSION }, ...peers, ...strangers];
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const part of this.parts) await part.close?.();
    await Promise.all(this.inboundChains.values());
    if (this.nc) {
      await this.nc.drain().catch(() => undefined);
      this.nc = null;
    }
    await this.nats?.stop();
  }

  private heartbeat(): void {
    if (!this.nc) return;
    this.nc.publish('spindle.hb', JSON.stringify({ node: this.options.nodeName, epoch: this.epoch, address: this.options.localAddress, wire: WIRE_FORMAT, version: VERSION, figures: this.figures.sample() }));
  }

  private onHeartbeat(m: Msg): void {
    const hb = parse<{ node: string; epoch: number; address: string; wire?: unknown; version?: unknown; figures?: unknown }>(m);
    if (!hb || typeof hb.node !== 'string' || hb.node === this.options.nodeName) return;
    const wire = wireFormatOf(hb);
    if (wire !== WIRE_FORMAT) {
      this.refuse(hb.node, wire, typeof hb.version === 'string' ? hb.version : null, hb.address);
      return;
    }
    if (this.strangers.delete(hb.node)) this.log.info('cluster: node now of this wire format', { node: hb.node });
    let p = this.peers.get(hb.node);
    if (p && (p.epoch !== hb.epoch || p.down)) {
      // It restarted, or came back: what it wanted before is forgotten, then synced again.
      this.dropInterest(p);
      p.epoch = hb.epoch;
      p.down = false;
      p.seq = -1;
      this.log.info('cluster node back', { node: p.name });
      void this.sync(p);
      this.tellParts(true, p.name);
    }
    if (!p) {
      const index = this.handles.findIndex((h) => !this.byHandle.has(h));
      const handle = this.handles[index];
      if (handle === undefined) {
        this.log.error('cluster: more nodes than cluster.maxNodes; this one is ignored', { node: hb.node, maxNodes: this.options.maxNodes });
        return;
      }
      p = { name: hb.node, address: hb.address, epoch: hb.epoch, handle, forward: this.forwardHandles[index], lastSeen: Date.now(), figures: null, down: false, seq: -1, pending: [], filters: new Set(), out: [], outQos: [] };
      this.peers.set(hb.node, p);
      this.byHandle.set(handle, p);
      this.byForward.set(p.forward, p);
      this.log.info('cluster node joined', { node: p.name, address: p.address });
      void this.sync(p);
      this.tellParts(true, p.name);
    }
    p.lastSeen = Date.now();
    p.address = hb.address;
    p.figures = figuresOf(hb.figures);
  }

  /** A node of another wire format: not joined (a joined one that comes back so, e.g. upgraded
   * or downgraded, leaves as if down), logged once, its frames dropped. */
  private refuse(node: string, wire: number, version: string | null, address: string): void {
    const known = this.strangers.get(node);
    this.strangers.set(node, { wire, version, address, lastSeen: Date.now() });
    if (known?.wire === wire) return;
    this.log.error('cluster: a node of another wire format is not joined; all nodes must run builds of the same format (docs/operating/cluster.md, rolling upgrades)', {
      node, wireFormat: wire, ownWireFormat: WIRE_FORMAT, version: version ?? 'unknown', ownVersion: VERSION,
    });
    const p = this.peers.get(node);
    if (p && !p.down) {
      p.down = true;
      this.dropInterest(p);
      this.tellParts(false, p.name);
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const p of this.peers.values()) {
      if (p.down || now - p.lastSeen < DOWN_AFTER_MS) continue;
      p.down = true;
      this.dropInterest(p);
      this.log.warn('cluster node down', { node: p.name, silentMs: now - p.lastSeen });
      this.tellParts(false, p.name);
    }
  }

  /** The local interest's changes since the last flush, to every node. */
  private flushInterest(): void {
    const changes = this.host.takeInterestChanges();
    if (changes.length === 0 || !this.nc) return;
    this.seq++;
    this.nc.publish(`spindle.int.${token(this.options.nodeName)}`, JSON.stringify({ seq: this.seq, changes }));
  }

  private onSyncRequest(m: Msg): void {
    // Changes not yet sent go out first, so the snapshot's sequence covers them.
    this.flushInterest();
    m.respond(JSON.stringify({ seq: this.seq, epoch: this.epoch, filters: this.host.interestSnapshot() }));
  }

  private onInterest(m: Msg): void {
    const node = untoken(m.subject.slice('spindle.int.'.length));
    const p = this.peers.get(node);
    const update = parse<{ seq: number; changes: string[] }>(m);
    if (!p || !update || p.down) return;
    if (p.seq < 0) {
      p.pending.push(update);
      return;
    }
    if (update.seq <= p.seq) return;
    if (update.seq !== p.seq + 1) {
      // A gap (a reconnect lost some): start over from its whole interest.
      this.counters.resyncs++;
      this.dropInterest(p);
      p.seq = -1;
      void this.sync(p);
      return;
    }
    this.apply(p, update.changes);
    p.seq = update.seq;
  }

  private async sync(p: Peer): Promise<void> {
    if (!this.nc) return;
    try {
      const reply = await this.nc.request(`spindle.int.sync.${token(p.name)}`, '', { timeout: SYNC_TIMEOUT_MS });
      const snap = parse<{ seq: number; epoch: number; filters: string[] }>(reply);
      if (!snap || p.down) return;
      this.dropInterest(p);
      this.apply(p, snap.filters.map((f) => `+${f}`));
      p.seq = snap.seq;
      for (const u of p.pending.splice(0)) {
        if (u.seq <= p.seq) continue;
        this.apply(p, u.changes);
        p.seq = u.seq;
      }
    } catch (err) {
      this.log.warn('cluster: interest sync failed; retried with the next heartbeat', { node: p.name, err });
      p.seq = -1;
      // Seen as new again at its next heartbeat.
      p.epoch = -1;
    }
  }

  private apply(p: Peer, changes: readonly string[]): void {
    for (const c of changes) {
      const filter = c.slice(1);
      const on = c[0] === '+';
      if (on === p.filters.has(filter)) continue;
      const shared = filter.startsWith('$share/');
      try {
        this.host.setTapFilter(p.handle, filter, on, shared && on ? this.shareId(filter) : 0);
        if (on) {
          p.filters.add(filter);
        } else {
          p.filters.delete(filter);
          if (shared) this.releaseShare(filter);
        }
      } catch (err) {
        if (shared && on) this.releaseShare(filter);
        this.log.warn('cluster: a filter of another node was refused', { node: p.name, filter, err });
      }
    }
  }

  /** The number of a shared group, taken once more (by one node's membership). */
  private shareId(key: string): number {
    let e = this.shareIds.get(key);
    if (e === undefined) {
      let id = this.nextShareId;
      while (this.shareKeys.has(id)) id = id >= 0xfffffff0 ? 1 : id + 1;
      this.nextShareId = id >= 0xfffffff0 ? 1 : id + 1;
      e = { id, refs: 0 };
      this.shareIds.set(key, e);
      this.shareKeys.set(id, key);
    }
    e.refs++;
    return e.id;
  }

  private releaseShare(key: string): void {
    const e = this.shareIds.get(key);
    if (e === undefined || --e.refs > 0) return;
    this.shareIds.delete(key);
    this.shareKeys.delete(e.id);
  }

  private dropInterest(p: Peer): void {
    if (p.filters.size > 0) this.host.removeTap(p.handle);
    for (const f of p.filters) if (f.startsWith('$share/')) this.releaseShare(f);
    p.filters.clear();
    p.pending = [];
  }

  /** Matches for other nodes, copied by the workers: queued per node, sent once per tick. */
  private onOutputs(items: BridgeOutput[], from: Ticket | null): void {
    for (const item of items) {
      const p = this.byHandle.get(item.handle);
      if (p === undefined) {
        this.forwardOutput(item);
        continue;
      }
      if (p.down) continue;
      let shares: string[] | null = null;
      if (item.shares !== null) {
        for (const id of item.shares) {
          // A group the node left since the worker picked it: no member there any more.
          const key = this.shareKeys.get(id);
          if (key !== undefined && p.filters.has(key)) (shares ??= []).push(key);
          else this.counters.sharedNoMember++;
        }
        if (shares !== null) this.counters.sharedSent += shares.length;
      }
      if (!item.plain && shares === null) continue;
      (item.qos === 0 ? p.out : p.outQos).push({ topic: item.topic, payload: item.payload, qos: item.qos, retain: item.retain, expiresAt: item.expiresAt, props: item.props, plain: item.plain, shares, publisherHash: item.publisherHash, origin: item.origin, only: null });
    }
    if (from !== null) this.tickets.push(from);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushOut());
    }
  }

  /** A match of a forward handle: a message for sessions that left this node for that node
   * lately (QoS 1/2: through the stream, for them only; see forwards.ts). */
  private forwardOutput(item: BridgeOutput): void {
    const p = this.byForward.get(item.handle);
    if (p === undefined || p.down || item.qos === 0 || !item.plain) return;
    const only = this.forwards.targets(p.name, item.topic);
    if (only.length === 0) return;
    p.outQos.push({ topic: item.topic, payload: item.payload, qos: item.qos, retain: item.retain, expiresAt: item.expiresAt, props: item.props, plain: true, shares: null, publisherHash: item.publisherHash, origin: item.origin, only });
  }

  private flushOut(): void {
    this.flushScheduled = false;
    const stored: Promise<void>[] = [];
    const max = (this.nc?.info?.max_payload ?? 1_048_576) - 1024;
    for (const p of this.peers.values()) {
      if (p.out.length === 0 && p.outQos.length === 0) continue;
      const batch = p.out;
      const batchQos = p.outQos;
      p.out = [];
      p.outQos = [];
      if (!this.nc) continue;
      // Frames within NATS's max_payload (1 MB by default); a larger single message cannot cross.
      const { frames, tooLarge } = encodeFrames(batch, max);
      for (const f of frames) this.nc.publish(`spindle.node.${token(p.name)}.${token(this.options.nodeName)}`, f);
      const q = encodeFrames(batchQos, max);
      for (const f of q.frames) stored.push(this.qos.send(p.name, f));
      this.counters.sentFrames += frames.length + q.frames.length;
      this.counters.sentMessages += batch.length - tooLarge + batchQos.length - q.tooLarge;
      if (tooLarge + q.tooLarge > 0) {
        this.counters.tooLarge += tooLarge + q.tooLarge;
        this.log.warn('cluster: messages larger than NATS max_payload were not sent to another node', { node: p.name, count: tooLarge + q.tooLarge });
      }
    }
    // The publishers of the QoS 1/2 messages are acknowledged once NATS stored every frame of the
    // tick (a message too large to cross is acknowledged: it goes nowhere else, as with no node).
    const tickets = this.tickets;
    this.tickets = [];
    if (tickets.length === 0) return;
    const answer = (ok: boolean) => {
      for (const t of tickets) this.host.clusterAcked(t, ok);
    };
    if (!this.nc) answer(false);
    else if (stored.length === 0) answer(true);
    else Promise.all(stored).then(() => answer(true), () => answer(false));
  }

  private onFrame(m: Msg): void {
    const source = untoken(m.subject.slice(m.subject.lastIndexOf('.') + 1));
    void this.routeFrame(source, m.data).catch(() => undefined);
  }

  /** Routes a frame from `source` here, after the ones before it from the same node; rejects when
   * it could not be (a frame of the QoS stream is then delivered again). */
  private routeFrame(source: string, data: Uint8Array, tries = 1, only?: readonly string[]): Promise<void> {
    if (this.strangers.has(source)) {
      // Another wire format: it would be read wrongly (logged when the node was heard from).
      this.counters.incompatibleFrames++;
      return Promise.resolve();
    }
    let messages: BatchMessage[];
    try {
      messages = decodeBatch(data);
      // Frames of a node gone, taken here: only for the sessions adopted from it.
      if (only) for (const m of messages) m.only = m.only ? m.only.filter((c) => only.includes(c)) : only;
    } catch (err) {
      this.counters.badFrames++;
      this.log.warn('cluster: a frame that does not parse was dropped', { err });
      return Promise.resolve();
    }
    this.counters.receivedFrames++;
    this.counters.receivedMessages += messages.length;
    for (const x of messages) if (x.shares) this.counters.sharedReceived += x.shares.length;
    // In the order they came: a node's batches one after the other, all on the same worker
    // (batches routed by two workers at once could overtake each other).
    const chain = this.inboundChains.get(source) ?? Promise.resolve();
    // A frame of the QoS stream is tried again in its place (no worker running for a moment), so
    // the frames after it wait: they keep their order.
    const attempt = async (left: number): Promise<{ sharesMissed: number; absent: { index: number; only: string[] }[] }> => {
      try {
        return await this.host.publishBatchCounted(messages, this.inbound, 0, source);
      } catch (err) {
        if (left <= 1) throw err;
        await new Promise((r) => setTimeout(r, ROUTE_RETRY_MS));
        return attempt(left - 1);
      }
    };
    const routed = chain.then(() => attempt(tries));
    const next = routed.then(({ sharesMissed }) => {
      this.counters.sharedNoMember += sharesMissed;
    }, (err: unknown) => {
      this.counters.publishFailures++;
      this.log.warn('cluster: messages from another node could not be routed here', { node: source, count: messages.length, err });
    });
    this.inboundChains.set(source, next);
    // The frames after this one do not wait for the sessions not here yet.
    return routed.then(({ absent }) => (absent.length === 0 ? undefined : this.routeAbsent(source, absent.map((a) => ({ ...messages[a.index], only: a.only })))));
  }

  /** Messages only for sessions not here yet: routed again for them until they are (or given up,
   * counted in `forwardsUnclaimed`). */
  private async routeAbsent(source: string, messages: BatchMessage[]): Promise<void> {
    for (let i = 0; i < ABSENT_TRIES && messages.length > 0; i++) {
      await new Promise((r) => setTimeout(r, ABSENT_RETRY_MS));
      const { absent } = await this.host.publishBatchCounted(messages, this.inbound, 0, source);
      messages = absent.map((a) => ({ ...messages[a.index], only: a.only }));
    }
    if (messages.length > 0) {
      this.counters.forwardsUnclaimed += messages.length;
      this.log.warn('cluster: messages forwarded here for sessions that did not come here were dropped', { node: source, count: messages.length });
    }
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect') this.log.warn(`cluster: NATS ${s.type}`, { server: (s as { server?: string }).server });
      if (s.type === 'disconnect' && this.natsUp) {
        this.natsUp = false;
        this.counters.natsDisconnects++;
      } else if (s.type === 'reconnect' && !this.natsUp) {
        this.natsUp = true;
        this.counters.natsReconnects++;
      }
    }
  }
}


function parse<T>(m: Msg): T | null {
  try {
    return m.json<T>();
  } catch {
    return null;
  }
}
