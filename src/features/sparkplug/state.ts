// The current Sparkplug B state this node has seen (main thread): per edge node its last NBIRTH
// (metrics with their aliases, bdSeq, seq, timestamp), its last NDEATH, online or offline, the
// last data; the same per device (DBIRTH, DDEATH, DDATA); and each primary host's STATE. Fed the
// messages the workers' tap matched, a batch per tick. Bounded: sparkplug.maxEdgeNodes edge nodes
// (hosts count apart, up to the same number), sparkplug.maxDevicesPerNode devices per edge node;
// a new one past its bound is left out and counted.
// Kept and shared (feature.ts): each birth, death and STATE change is told to `onChange`, which
// writes the edge node's (or host's) document to the store, replicated across a cluster;
// applyStored() takes a document back (at start from the store, and from the other nodes).
import type { TapMatch } from '../feature.ts';
import { decodeSparkplug, SparkplugDecodeError, type SparkplugMetric, type SparkplugPayload } from '../../rules/sql/sparkplug.ts';
import { parseTopic } from './topic.ts';

export interface Birth {
  /** When this node received it (ms since the epoch). */
  at: number;
  timestamp: number | string | null;
  seq: number | string | null;
  bdSeq: number | string | null;
  metrics: SparkplugMetric[];
}

export interface Death {
  at: number;
  timestamp: number | string | null;
  bdSeq: number | string | null;
}

export interface DeviceState {
  device: string;
  online: boolean;
  birth: Birth | null;
  death: Death | null;
  lastDataAt: number | null;
  seq: number | string | null;
}

export interface EdgeNodeState {
  group: string;
  node: string;
  online: boolean;
  birth: Birth | null;
  death: Death | null;
  lastDataAt: number | null;
  /** The seq of the last message of the node or its devices. */
  seq: number | string | null;
  devices: Map<string, DeviceState>;
}

export interface HostState {
  host: string;
  online: boolean;
  /** The timestamp the host's STATE payload gave. */
  timestamp: number | null;
  at: number;
}

export interface SparkplugLimits {
  maxEdgeNodes: number;
  maxDevicesPerNode: number;
}

export interface SparkplugCounters {
  births: { node: number; device: number };
  deaths: { node: number; device: number };
  /** NDEATHs whose bdSeq is not the current NBIRTH's (a will of an older session): ignored. */
  staleDeaths: number;
  decodeErrors: number;
  dropped: { edgeNodes: number; devices: number; hosts: number };
}

/** An edge node as stored: its state, its devices as a list. */
export interface EdgeNodeDoc extends Omit<EdgeNodeState, 'devices'> {
  devices: DeviceState[];
}

/** What changed: an edge node (`{group}/{node}`) or a host (its id). */
export type SparkplugChange = { kind: 'node'; key: string } | { kind: 'host'; key: string };

export class SparkplugState {
  private readonly nodes = new Map<string, EdgeNodeState>();
  private readonly hosts = new Map<string, HostState>();
  /** Told of each birth, death and STATE kept (not of data: see store.ts). */
  onChange: (change: SparkplugChange) => void = () => {};
  readonly counters: SparkplugCounters = {
    births: { node: 0, device: 0 },
    deaths: { node: 0, device: 0 },
    staleDeaths: 0,
    decodeErrors: 0,
    dropped: { edgeNodes: 0, devices: 0, hosts: 0 },
  };

  constructor(
    private readonly limits: SparkplugLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Applies a batch of tapped messages, in order. */
  apply(matches: readonly TapMatch[]): void {
    for (const m of matches) this.applyOne(m.topic, m.payload);
  }

  applyOne(topic: string, payload: Uint8Array): void {
    const t = parseTopic(topic);
    if (t === null) return;
    const at = this.now();
    if (t.kind === 'state') {
      this.applyHost(t.host, payload, at);
      return;
    }
    let p: SparkplugPayload;
    try {
      p = decodeSparkplug(payload);
    } catch (err) {
      if (!(err instanceof SparkplugDecodeError)) throw err;
      this.counters.decodeErrors++;
      return;
    }
    const key = `${t.group}/${t.node}`;
    let node = this.nodes.get(key);
    if (node === undefined) {
      if (this.nodes.size >= this.limits.maxEdgeNodes) {
        this.counters.dropped.edgeNodes++;
        return;
      }
      node = { group: t.group, node: t.node, online: false, birth: null, death: null, lastDataAt: null, seq: null, devices: new Map() };
      this.nodes.set(key, node);
    }
    if (t.kind === 'node') {
      switch (t.type) {
        case 'NBIRTH':
          node.birth = birthOf(p, at);
          node.online = true;
          node.seq = p.seq ?? null;
          this.counters.births.node++;
          this.onChange({ kind: 'node', key });
          break;
        case 'NDEATH': {
          const bdSeq = bdSeqOf(p);
          if (node.birth !== null && node.birth.bdSeq !== null && bdSeq !== null && String(bdSeq) !== String(node.birth.bdSeq)) {
            this.counters.staleDeaths++;
            return;
          }
          node.death = { at, timestamp: p.timestamp ?? null, bdSeq };
          node.online = false;
          for (const d of node.devices.values()) d.online = false; // a node's devices die with it
          this.counters.deaths.node++;
          this.onChange({ kind: 'node', key });
          break;
        }
        case 'NDATA':
          node.lastDataAt = at;
          node.seq = p.seq ?? node.seq;
          if (node.birth !== null) updateValues(node.birth.metrics, p.metrics);
          break;
        case 'NCMD':
          break;
      }
      return;
    }
    let device = node.devices.get(t.device);
    if (device === undefined) {
      if (node.devices.size >= this.limits.maxDevicesPerNode) {
        this.counters.dropped.devices++;
        return;
      }
      device = { device: t.device, online: false, birth: null, death: null, lastDataAt: null, seq: null };
      node.devices.set(t.device, device);
    }
    node.seq = p.seq ?? node.seq;
    switch (t.type) {
      case 'DBIRTH':
        device.birth = birthOf(p, at);
        device.online = true;
        device.seq = p.seq ?? null;
        this.counters.births.device++;
        this.onChange({ kind: 'node', key });
        break;
      case 'DDEATH':
        device.death = { at, timestamp: p.timestamp ?? null, bdSeq: null };
        device.online = false;
        device.seq = p.seq ?? device.seq;
        this.counters.deaths.device++;
        this.onChange({ kind: 'node', key });
        break;
      case 'DDATA':
        device.lastDataAt = at;
        device.seq = p.seq ?? device.seq;
        if (device.birth !== null) updateValues(device.birth.metrics, p.metrics);
        break;
      case 'DCMD':
        break;
    }
  }

  private applyHost(host: string, payload: Uint8Array, at: number): void {
    // Sparkplug 3.0: a JSON {"online": bool, "timestamp": ms}. An empty payload clears a retained STATE.
    let online = false;
    let timestamp: number | null = null;
    if (payload.byteLength === 0) {
      if (this.hosts.delete(host)) this.onChange({ kind: 'host', key: host });
      return;
    }
    try {
      const v = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8')) as { online?: unknown; timestamp?: unknown };
      online = v.online === true;
      timestamp = typeof v.timestamp === 'number' ? v.timestamp : null;
    } catch {
      this.counters.decodeErrors++;
      return;
    }
    if (!this.hosts.has(host) && this.hosts.size >= this.limits.maxEdgeNodes) {
      this.counters.dropped.hosts++;
      return;
    }
    this.hosts.set(host, { host, online, timestamp, at });
    this.onChange({ kind: 'host', key: host });
  }

  /** The document of an edge node (`{group}/{node}`) or a host as stored; null when not kept. */
  docOf(change: SparkplugChange): EdgeNodeDoc | HostState | null {
    if (change.kind === 'host') return this.hosts.get(change.key) ?? null;
    const n = this.nodes.get(change.key);
    return n === undefined ? null : { ...n, devices: [...n.devices.values()] };
  }

  /**
   * Takes a stored document (at start, or written by another node of the cluster): the edge node
   * or host replaces the one kept (null: forgotten). A new one past the bounds is left out and
   * counted, as for a message. Throws on a document that is not one.
   */
  applyStored(kind: 'node' | 'host', key: string, doc: unknown): void {
    if (kind === 'host') {
      if (doc === null) {
        this.hosts.delete(key);
        return;
      }
      const h = doc as HostState;
      if (typeof h?.host !== 'string' || typeof h.online !== 'boolean' || typeof h.at !== 'number') throw new Error(`not a Sparkplug B host: ${key}`);
      const mine = this.hosts.get(key);
      if (mine !== undefined && mine.at > h.at) {
        // Older than what this node saw (two nodes saw it): this node's is written again.
        this.onChange({ kind: 'host', key });
        return;
      }
      if (!this.hosts.has(key) && this.hosts.size >= this.limits.maxEdgeNodes) {
        this.counters.dropped.hosts++;
        return;
      }
      this.hosts.set(key, { host: h.host, online: h.online, timestamp: h.timestamp ?? null, at: h.at });
      return;
    }
    if (doc === null) {
      this.nodes.delete(key);
      return;
    }
    const d = doc as EdgeNodeDoc;
    if (typeof d?.group !== 'string' || typeof d.node !== 'string' || typeof d.online !== 'boolean' || !Array.isArray(d.devices)) throw new Error(`not a Sparkplug B edge node: ${key}`);
    const mine = this.nodes.get(key);
    if (mine !== undefined && lastChange(mine.birth, mine.death, mine.devices.values()) > lastChange(d.birth, d.death, d.devices)) {
      // Older than what this node saw (two nodes saw its births and deaths, and wrote them in
      // another order): this node's is written again, so every node ends on the latest.
      this.onChange({ kind: 'node', key });
      return;
    }
    if (!this.nodes.has(key) && this.nodes.size >= this.limits.maxEdgeNodes) {
      this.counters.dropped.edgeNodes++;
      return;
    }
    const devices = new Map<string, DeviceState>();
    for (const dev of d.devices) {
      if (devices.size >= this.limits.maxDevicesPerNode) {
        this.counters.dropped.devices++;
        break;
      }
      if (typeof dev?.device === 'string') devices.set(dev.device, dev);
    }
    this.nodes.set(key, { group: d.group, node: d.node, online: d.online, birth: d.birth ?? null, death: d.death ?? null, lastDataAt: d.lastDataAt ?? null, seq: d.seq ?? null, devices });
  }

  /** The edge nodes, sorted by group then node; `group` filters. */
  list(group?: string): EdgeNodeState[] {
    const out: EdgeNodeState[] = [];
    for (const n of this.nodes.values()) if (group === undefined || n.group === group) out.push(n);
    return out.sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  get(group: string, node: string): EdgeNodeState | undefined {
    return this.nodes.get(`${group}/${node}`);
  }

  /** The groups with their counts of edge nodes and of those online. */
  groups(): { group: string; edgeNodes: number; online: number }[] {
    const by = new Map<string, { group: string; edgeNodes: number; online: number }>();
    for (const n of this.nodes.values()) {
      let g = by.get(n.group);
      if (g === undefined) by.set(n.group, (g = { group: n.group, edgeNodes: 0, online: 0 }));
      g.edgeNodes++;
      if (n.online) g.online++;
    }
    return [...by.values()].sort((a, b) => (a.group < b.group ? -1 : 1));
  }

  hostList(): HostState[] {
    return [...this.hosts.values()].sort((a, b) => (a.host < b.host ? -1 : 1));
  }

  counts(): { online: number; offline: number; devicesOnline: number; devicesOffline: number } {
    let online = 0;
    let devicesOnline = 0;
    let devices = 0;
    for (const n of this.nodes.values()) {
      if (n.online) online++;
      devices += n.devices.size;
      for (const d of n.devices.values()) if (d.online) devicesOnline++;
    }
    return { online, offline: this.nodes.size - online, devicesOnline, devicesOffline: devices - devicesOnline };
  }
}

/** When an edge node's last birth or death (its own or a device's) was received. */
function lastChange(birth: Birth | null, death: Death | null, devices: Iterable<DeviceState>): number {
  let t = Math.max(birth?.at ?? 0, death?.at ?? 0);
  for (const d of devices) t = Math.max(t, d.birth?.at ?? 0, d.death?.at ?? 0);
  return t;
}

function bdSeqOf(p: SparkplugPayload): number | string | null {
  const m = p.metrics.find((x) => x.name === 'bdSeq');
  const v = m?.value;
  return typeof v === 'number' || typeof v === 'string' ? v : null;
}

function birthOf(p: SparkplugPayload, at: number): Birth {
  return { at, timestamp: p.timestamp ?? null, seq: p.seq ?? null, bdSeq: bdSeqOf(p), metrics: p.metrics };
}

// Data messages name their metrics by alias (or by name): the birth's metrics take the new values.
function updateValues(birthMetrics: SparkplugMetric[], data: SparkplugMetric[]): void {
  for (const d of data) {
    const m = birthMetrics.find((b) => (d.alias !== undefined && b.alias !== undefined ? String(b.alias) === String(d.alias) : d.name !== undefined && b.name === d.name));
    if (m === undefined) continue;
    m.value = d.value;
    if (d.timestamp !== undefined) m.timestamp = d.timestamp;
    if (d.is_null === true) m.is_null = true;
    else delete m.is_null;
  }
}
