// DeliveryBatch: the deliveries for one other worker thread collected during one tick, in one
// transferable buffer. A message is written once however many of that worker's sessions it
// goes to. Layout: repeated [u32 record length][message record][f64 receivedAt (ms)][i32 seq]
// [u16 origin length][origin (UTF-8; Message.origin, 0 bytes: none)][u32 n] then n deliveries of [u32 session][u8 qos][u8 retain][u16 ids][u32 id * ids].
// receivedAt travels so the delivery latency metric counts from when the publisher's worker
// received the message; seq is the routing clock's tick (Message.seq).
// A sampled message (OpenTelemetry traces, Message.trace) has bit 0 of its record's second byte
// set and its trace after the origin: [32 hex trace id][16 hex span id][f64 routedAt (ms)]; no
// other message carries more than that bit's check.
import { recordLength, writeRecord, readRecord, type Message } from '../broker/message.ts';
import type { MessageTrace } from '../broker/trace-context.ts';

/** Bytes of a carried trace: trace id and span id in hex, then when it was routed. */
const TRACE_BYTES = 32 + 16 + 8;

/** The smallest buffer a batch starts with. */
const MIN_BATCH_BYTES = 1024;

export class DeliveryBatch {
  private buf: Buffer;
  private len = 0;
  private last: Message | null = null;
  private countAt = 0;
  /** The size the next buffer starts with: about twice what the last batches needed, at most
   * `largest`. Each batch's buffer is transferred away, so a fixed large one per batch (64 KB at
   * 10 000 batches a second) was external memory V8 collected with a mark-compact every few tens
   * of milliseconds: the multi-millisecond tail latency of cross-worker delivery. */
  private next = MIN_BATCH_BYTES;

  constructor(private readonly largest = 64 * 1024) {
    this.buf = fresh(this.next);
  }

  get length(): number {
    return this.len;
  }

  add(m: Message, session: number, qos: number, retain: boolean, ids: number[] | null): void {
    if (m !== this.last) {
      const rl = recordLength(m);
      const ol = m.origin === undefined ? 0 : Buffer.byteLength(m.origin, 'utf8');
      const trace = m.trace;
      this.ensure(22 + rl + ol + (trace === undefined ? 0 : TRACE_BYTES));
      this.buf.writeUInt32LE(rl, this.len);
      writeRecord(m, this.buf, this.len + 4);
      if (trace !== undefined) this.buf[this.len + 5] = 1;
      this.len += 4 + rl;
      this.buf.writeDoubleLE(m.receivedAt, this.len);
      this.buf.writeInt32LE(m.seq ?? 0, this.len + 8);
      this.buf.writeUInt16LE(ol, this.len + 12);
      if (ol > 0) this.buf.write(m.origin!, this.len + 14, 'utf8');
      this.len += 14 + ol;
      if (trace !== undefined) {
        this.buf.write(trace.traceId, this.len, 32, 'latin1');
        this.buf.write(trace.spanId, this.len + 32, 16, 'latin1');
        this.buf.writeDoubleLE(trace.routedAt, this.len + 48);
        this.len += TRACE_BYTES;
      }
      this.countAt = this.len;
      this.buf.writeUInt32LE(0, this.len);
      this.len += 4;
      this.last = m;
    }
    const n = ids?.length ?? 0;
    this.ensure(8 + 4 * n);
    const b = this.buf;
    b.writeUInt32LE(session, this.len);
    b[this.len + 4] = qos;
    b[this.len + 5] = retain ? 1 : 0;
    b.writeUInt16LE(n, this.len + 6);
    this.len += 8;
    for (let i = 0; i < n; i++, this.len += 4) b.writeUInt32LE(ids![i], this.len);
    b.writeUInt32LE(b.readUInt32LE(this.countAt) + 1, this.countAt);
  }

  /** Hands over the collected bytes (to transfer) and starts a new buffer. */
  take(): { buffer: ArrayBuffer; length: number } {
    const out = { buffer: this.buf.buffer as ArrayBuffer, length: this.len };
    // Grows at once to what this batch needed; shrinks by half a step at a time.
    const wanted = Math.min(this.largest, Math.max(MIN_BATCH_BYTES, 2 ** Math.ceil(Math.log2(this.len * 2 + 1))));
    this.next = wanted >= this.next ? wanted : Math.max(wanted, this.next >>> 1);
    this.buf = fresh(this.next);
    this.len = 0;
    this.last = null;
    return out;
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = fresh(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
}

/** A Buffer over its own ArrayBuffer (not the shared pool), so it can be transferred. */
function fresh(size: number): Buffer {
  return Buffer.from(new ArrayBuffer(size));
}

/** Reads a batch; calls `deliver` for each delivery in order (no object per delivery). */
export function readBatch(
  buffer: ArrayBuffer,
  length: number,
  deliver: (message: Message, session: number, qos: 0 | 1 | 2, retain: boolean, ids: number[] | null) => void,
): void {
  const b = Buffer.from(buffer, 0, length);
  let at = 0;
  while (at < length) {
    const rl = b.readUInt32LE(at);
    const { message } = readRecord(b, at + 4, b.readDoubleLE(at + 4 + rl));
    message.seq = b.readInt32LE(at + 4 + rl + 8);
    const ol = b.readUInt16LE(at + 4 + rl + 12);
    if (ol > 0) message.origin = b.toString('utf8', at + 4 + rl + 14, at + 4 + rl + 14 + ol);
    const traced = b[at + 5] === 1;
    at += 4 + rl + 14 + ol;
    if (traced) {
      message.trace = carriedTrace(b, at);
      at += TRACE_BYTES;
    }
    const n = b.readUInt32LE(at);
    at += 4;
    for (let i = 0; i < n; i++) {
      const session = b.readUInt32LE(at);
      const qos = b[at + 4] as 0 | 1 | 2;
      const retain = b[at + 5] === 1;
      const k = b.readUInt16LE(at + 6);
      at += 8;
      let ids: number[] | null = null;
      if (k) {
        ids = [];
        for (let j = 0; j < k; j++, at += 4) ids.push(b.readUInt32LE(at));
      }
      deliver(message, session, qos, retain, ids);
    }
  }
}

/** The trace a sampled message carried from the worker that routed it. */
function carriedTrace(b: Buffer, at: number): MessageTrace {
  const routedAt = b.readDoubleLE(at + 48);
  return {
    traceId: b.toString('latin1', at, at + 32),
    spanId: b.toString('latin1', at + 32, at + 48),
    parentId: '',
    tracestate: '',
    start: routedAt,
    routedAt,
    mark: 0,
    remote: true,
    ended: true,
  };
}
