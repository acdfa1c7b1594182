// The OTLP/protobuf encoding of spans (an ExportTraceServiceRequest of opentelemetry-proto's
// collector/trace/v1, with trace/v1, resource/v1 and common/v1), written here rather than through
// the SDK's exporter: on the message path's core the SDK's exporter (ReadableSpan objects, then
// otlp-transformer's intermediate objects, then its protobuf writer) cost about 13 µs of main
// thread time per span, which at 1 % sampling of a saturated worker took 0.29 of its rate when
// both share a core (bench/otel.ts); this writes each span's fields straight from its record.
// Only what Spindle's spans use: ids, trace state, name, kind, times, attributes (string, bool,
// int, double), status; no events, no links. Checked end to end by a real OpenTelemetry
// Collector decoding it (test/features/otel-traces.test.ts) and field by field against the
// proto's numbering (test/features/otel-trace-context.test.ts).
import { CONSTANT, INT, NONE, NUMBER, PREFIXED, REMOTE_PARENT, STRING, TEXTS, TRUE, type SpanRecord } from './span-record.ts';

/** Spans as a worker posted them, waiting for export: `left` of them from byte `at` on. */
export interface PendingSpans {
  bytes: Buffer;
  at: number;
  left: number;
}

/** Wire types. */
const VARINT = 0;
const I64 = 1;
const LEN = 2;
const I32 = 5;

/** The texts of span records (span-record.ts TEXTS) as UTF-8, written as they are. */
const TEXT_BYTES = TEXTS.map((t) => Buffer.from(t, 'utf8'));

/** Whether b[from, from + n) is all zeros (a span without a parent). */
function zero(b: Buffer, from: number, n: number): boolean {
  for (let i = from; i < from + n; i++) if (b[i] !== 0) return false;
  return true;
}

/** Copies src[from, from + n) to dst at `at`: short runs (names, attribute keys, client ids) in a
 * loop, which costs less than Buffer#copy's call into C++; long ones with TypedArray#set. */
function copyBytes(src: Buffer, from: number, n: number, dst: Buffer, at: number): void {
  if (n <= 64) {
    for (let i = 0; i < n; i++) dst[at + i] = src[from + i];
  } else {
    dst.set(src.subarray(from, from + n), at);
  }
}

/** A growing protobuf writer; nested messages are written in place and their length put before
 * them when they end (fork/end: the length's varint reserved at its widest, the body moved back
 * over what it did not need). */
class Writer {
  buf = Buffer.allocUnsafeSlow(64 * 1024);
  pos = 0;
  private readonly starts: number[] = [];

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** A non-negative integer below 2^53. */
  varint(v: number): void {
    this.room(10);
    while (v > 0x7f) {
      this.buf[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }

  /** An int64 (two's complement, 10 bytes when negative). */
  int64(v: number): void {
    if (v >= 0) {
      this.varint(v);
      return;
    }
    let b = BigInt.asUintN(64, BigInt(v));
    this.room(10);
    while (b > 0x7fn) {
      this.buf[this.pos++] = Number(b & 0x7fn) | 0x80;
      b >>= 7n;
    }
    this.buf[this.pos++] = Number(b);
  }

  string(field: number, s: string): void {
    this.tag(field, LEN);
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.room(n);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** Hex digits as bytes (trace and span ids). */
  hex(field: number, hex: string): void {
    this.tag(field, LEN);
    const n = hex.length >> 1;
    this.varint(n);
    this.room(n);
    this.pos += this.buf.write(hex, this.pos, 'hex');
  }

  /** Bytes src[from, from + n) as a length-delimited field (a UTF-8 string as posted). */
  raw(field: number, src: Buffer, from: number, n: number): void {
    this.tag(field, LEN);
    this.varint(n);
    this.room(n);
    copyBytes(src, from, n, this.buf, this.pos);
    this.pos += n;
  }

  /** The text at src[at] (span-record.ts: a string, TEXTS[k], or TEXTS[k] and a string) as
   * string field `field`; returns where it ends. */
  text(field: number, src: Buffer, at: number): number {
    const n = src[at] | (src[at + 1] << 8);
    if (n >= CONSTANT) {
      const t = TEXT_BYTES[n - CONSTANT];
      this.raw(field, t, 0, t.length);
      return at + 2;
    }
    if (n >= PREFIXED) {
      const t = TEXT_BYTES[n - PREFIXED];
      const m = src[at + 2] | (src[at + 3] << 8);
      this.tag(field, LEN);
      this.varint(t.length + m);
      this.room(t.length + m);
      copyBytes(t, 0, t.length, this.buf, this.pos);
      copyBytes(src, at + 4, m, this.buf, this.pos + t.length);
      this.pos += t.length + m;
      return at + 4 + m;
    }
    this.raw(field, src, at + 2, n);
    return at + 2 + n;
  }

  /** Nanoseconds since the epoch from fractional milliseconds, as fixed64. */
  nanos(field: number, ms: number): void {
    this.tag(field, I64);
    this.room(8);
    const seconds = Math.floor(ms / 1000);
    const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
    // seconds * 10^9 + nanos without a BigInt (each was a heap object, and the main thread's
    // collector ran for them): 10^9 = 1953125 * 2^9, and seconds * 1953125 is below 2^53, so
    // exact; shifted left 9 bits it is split into 32-bit halves, and nanos added to the low one.
    const a = seconds * 1_953_125;
    const high = Math.floor(a / 0x800000);
    let low = (a % 0x800000) * 512 + nanos;
    const carry = low >= 0x100000000 ? 1 : 0;
    low -= carry * 0x100000000;
    this.buf.writeUInt32LE(low, this.pos);
    this.buf.writeUInt32LE(high + carry, this.pos + 4);
    this.pos += 8;
  }

  double(field: number, v: number): void {
    this.tag(field, I64);
    this.room(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  fixed32(field: number, v: number): void {
    this.tag(field, I32);
    this.room(4);
    this.buf.writeUInt32LE(v, this.pos);
    this.pos += 4;
  }

  /** Starts a nested message (field, length-delimited). */
  fork(field: number): void {
    this.tag(field, LEN);
    this.room(5);
    this.starts.push(this.pos);
    this.pos += 5;
  }

  /** Ends the nested message begun by the last fork(). */
  end(): void {
    const start = this.starts.pop()!;
    const length = this.pos - start - 5;
    let width = 1;
    for (let v = length; v > 0x7f; v = Math.floor(v / 128)) width++;
    if (width < 5) {
      this.buf.copyWithin(start + width, start + 5, this.pos);
      this.pos -= 5 - width;
    }
    const at = this.pos;
    this.pos = start;
    this.varint(length);
    this.pos = at;
  }

  /** A KeyValue (common/v1) of field `field`. */
  attribute(field: number, key: string, value: string | number | boolean): void {
    this.fork(field);
    this.string(1, key);
    this.fork(2); // AnyValue
    if (typeof value === 'string') this.string(1, value);
    else if (typeof value === 'boolean') {
      this.tag(2, VARINT);
      this.varint(value ? 1 : 0);
    } else if (Number.isSafeInteger(value)) {
      this.tag(3, VARINT);
      this.int64(value);
    } else this.double(4, value);
    this.end();
    this.end();
  }

  /** What was written, copied out; the writer starts again empty. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.pos));
    this.pos = 0;
    return out;
  }
}

export interface EncodeScope {
  /** Resource attributes (service.name, ...). */
  resource: Record<string, string | number | boolean>;
  scopeName: string;
  scopeVersion: string;
}

/** One writer per exporter: its buffer is kept from request to request. */
export class OtlpTraceEncoder {
  private readonly w = new Writer();

  constructor(private readonly scope: EncodeScope) {}

  private open(): Writer {
    const w = this.w;
    w.fork(1); // ResourceSpans
    w.fork(1); // Resource
    for (const [k, v] of Object.entries(this.scope.resource)) w.attribute(1, k, v);
    w.end();
    w.fork(2); // ScopeSpans
    w.fork(1); // InstrumentationScope
    w.string(1, this.scope.scopeName);
    w.string(2, this.scope.scopeVersion);
    w.end();
    return w;
  }

  private close(): Buffer {
    this.w.end();
    this.w.end();
    return this.w.take();
  }

  /**
   * An ExportTraceServiceRequest of at most `max` spans taken from the front of `posts` (as the
   * workers posted them, span-record.ts: no object made per span, strings copied as bytes), each
   * post's `at` and `left` advanced past what was taken.
   */
  encodePosts(posts: readonly PendingSpans[], max: number): { body: Buffer; spans: number } {
    const w = this.open();
    let taken = 0;
    for (const p of posts) {
      const b = p.bytes;
      let i = p.at;
      while (p.left > 0 && taken < max) {
        w.fork(2); // Span
        w.raw(1, b, i, 16); // trace id
        w.raw(2, b, i + 16, 8); // span id
        if (!zero(b, i + 24, 8)) w.raw(4, b, i + 24, 8); // parent span id
        i = w.text(5, b, i + 32); // name
        const kind = b[i++];
        w.tag(6, VARINT);
        w.varint((kind & (REMOTE_PARENT - 1)) + 1);
        w.nanos(7, b.readDoubleLE(i));
        w.nanos(8, b.readDoubleLE(i + 8));
        i += 16;
        if (b[i++] !== NONE) {
          w.fork(15); // Status
          i = w.text(2, b, i);
          w.tag(3, VARINT);
          w.varint(2); // STATUS_CODE_ERROR
          w.end();
        }
        if (b[i++] !== NONE) i = w.text(3, b, i); // trace state
        const count = b[i++];
        for (let k = 0; k < count; k++) {
          w.fork(9); // KeyValue
          i = w.text(1, b, i);
          w.fork(2); // AnyValue
          const tag = b[i++];
          if (tag === STRING) {
            i = w.text(1, b, i);
          } else if (tag === INT) {
            w.tag(3, VARINT);
            w.varint(b.readUInt32LE(i));
            i += 4;
          } else if (tag === NUMBER) {
            const v = b.readDoubleLE(i);
            i += 8;
            if (Number.isSafeInteger(v)) {
              w.tag(3, VARINT);
              w.int64(v);
            } else w.double(4, v);
          } else {
            w.tag(2, VARINT);
            w.varint(tag === TRUE ? 1 : 0);
          }
          w.end();
          w.end();
        }
        w.fixed32(16, 0x01 | 0x100 | (kind >= REMOTE_PARENT ? 0x200 : 0));
        w.end();
        p.left--;
        taken++;
      }
      p.at = i;
      if (taken >= max) break;
    }
    return { body: this.close(), spans: taken };
  }

  /** An ExportTraceServiceRequest of `spans` (one resource, one scope). */
  encode(spans: readonly SpanRecord[]): Buffer {
    const w = this.open();
    for (const s of spans) {
      w.fork(2); // Span
      w.hex(1, s.traceId);
      w.hex(2, s.spanId);
      if (s.tracestate) w.string(3, s.tracestate);
      if (s.parentId !== '') w.hex(4, s.parentId);
      w.string(5, s.name);
      // The API's SpanKind (INTERNAL 0, SERVER 1, ...) is the proto's minus one.
      w.tag(6, VARINT);
      w.varint(s.kind + 1);
      w.nanos(7, s.start);
      w.nanos(8, s.end);
      for (const k in s.attributes) w.attribute(9, k, s.attributes[k]);
      if (s.error !== undefined) {
        w.fork(15); // Status
        w.string(2, s.error);
        w.tag(3, VARINT);
        w.varint(2); // STATUS_CODE_ERROR
        w.end();
      }
      // Flags: the sampled trace flag, and whether the parent is another process's (bits 8, 9).
      w.fixed32(16, 0x01 | 0x100 | (s.remoteParent ? 0x200 : 0));
      w.end();
    }
    return this.close();
  }
}
