// Client tracing in one worker thread (EMQX's trace): while a trace of a client id is on, every
// packet that client's connection reads or writes is logged (type, size; for PUBLISH the topic,
// QoS, retain, packet id and a payload preview), at info. A connection checks one boolean per
// packet; the set of traced ids and their end times comes from the main thread (TraceManager).
import { decodePacket } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import { PREVIEW_BYTES } from './worker-log-topics.ts';

export interface TraceSpec {
  clientId: string;
  /** When the trace ends, ms since the epoch. */
  until: number;
}

/** What a traced connection is, as far as tracing is concerned. */
export interface Traceable {
  readonly clientId: string;
  readonly version: 3 | 4 | 5;
  traced: boolean;
}

const TYPES = ['RESERVED', 'CONNECT', 'CONNACK', 'PUBLISH', 'PUBACK', 'PUBREC', 'PUBREL', 'PUBCOMP', 'SUBSCRIBE', 'SUBACK', 'UNSUBSCRIBE', 'UNSUBACK', 'PINGREQ', 'PINGRESP', 'DISCONNECT', 'AUTH'];

export class WorkerTraces {
  private readonly until = new Map<string, number>();

  constructor(private readonly log: Logger) {}

  /** Replaces the set of traced client ids; `connections` get their flag set or cleared. */
  set(specs: readonly TraceSpec[], connections: Iterable<Traceable>): void {
    this.until.clear();
    for (const s of specs) this.until.set(s.clientId, s.until);
    for (const c of connections) c.traced = this.isTraced(c.clientId);
  }

  isTraced(clientId: string): boolean {
    const until = this.until.get(clientId);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.until.delete(clientId);
    return false;
  }

  /** A packet of a traced connection: `bytes` is the whole packet, fixed header included. */
  packet(c: Traceable, direction: 'in' | 'out', bytes: Buffer): void {
    if (!this.isTraced(c.clientId)) {
      c.traced = false; // the trace ended
      return;
    }
    const type = TYPES[bytes[0] >> 4] ?? 'UNKNOWN';
    const fields: Record<string, unknown> = { trace: c.clientId, direction, packet: type, size: bytes.length };
    if (type === 'PUBLISH') {
      try {
        const p = decodePacket(c.version === 5 ? 5 : 4, bytes, 0, bytes.length);
        const payload = Buffer.from(p.payload ?? []);
        const shown = payload.subarray(0, PREVIEW_BYTES);
        fields.topic = p.topic;
        fields.qos = p.qos;
        fields.retain = p.retain;
        if (p.messageId) fields.packetId = p.messageId;
        fields.payloadSize = payload.length;
        fields.payload = shown.toString('base64');
      } catch {
        // a frame the codec refuses is logged by type and size alone
      }
    }
    this.log.info('trace', fields);
  }

  /** The connection of a traced client was accepted (CONNACK sent). */
  connected(c: Traceable, details: Record<string, unknown>): void {
    this.log.info('trace', { trace: c.clientId, direction: 'in', packet: 'CONNECT', ...details });
  }
}
