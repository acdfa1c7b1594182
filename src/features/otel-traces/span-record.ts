// The compact form of a finished span, as a worker thread records it and posts it to the main
// thread (one post every 25 ms at most), where the exporter makes an OpenTelemetry ReadableSpan of
// it. Plain data: a worker never loads the OpenTelemetry SDK. A post carries its spans as bytes
// (SpanWriter below); the main thread reads them back into SpanRecords (readSpans).

/** SpanKind of @opentelemetry/api, by number (the worker does not import the API). */
export const KIND = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 } as const;

export interface SpanRecord {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits. */
  spanId: string;
  /** The parent span's id (16 hex digits); '' for a root span. */
  parentId: string;
  /** Whether the parent span is another process's (the publisher's). */
  remoteParent: boolean;
  name: string;
  kind: number;
  /** ms since the epoch, fractional. */
  start: number;
  end: number;
  attributes: Record<string, string | number | boolean>;
  /** The span's status is an error with this message; absent: unset. */
  error?: string;
  /** The publisher's tracestate, on the broker's spans of its message; absent: none. */
  tracestate?: string;
}

/**
 * What a worker posts (every FLUSH_MS while it has spans): its spans, encoded (SpanWriter), and
 * how many it dropped past its bound. Bytes, not objects: a span's strings and times written at
 * once into one reused buffer leave no garbage for the 25 ms they wait (held as objects, they
 * outlived the worker's young generation and were promoted, and structured cloning of the object
 * form cost a worker at 1 % sampling a tenth of its time); a post copies the bytes once.
 * A span: traceId, spanId, parentId, name (strings), kind (u8, + REMOTE_PARENT), start, end (f64),
 * error and tracestate (a tagged string or NONE), n (u8), then n attributes (name string, tagged
 * value). A string: u16 byte length, then UTF-8.
 */
export interface SpanPost {
  spans: Uint8Array;
  /** Spans in `spans`. */
  count: number;
  dropped: number;
}

/** Added to a span's kind in a post when its parent is another process's. */
export const REMOTE_PARENT = 8;

export const NONE = 0;
export const STRING = 1;
export const NUMBER = 2;
export const TRUE = 3;
const FALSE = 4;
/** Longest string kept whole (bytes); longer ones are cut (topics and client ids are shorter). */
const MAX_STRING = 0xffff;

/** Writes spans into one buffer, reused from post to post (worker thread). */
export class SpanWriter {
  private buf = Buffer.allocUnsafeSlow(64 * 1024);
  private pos = 0;

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + bytes) size *= 2;
    const next = Buffer.allocUnsafeSlow(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  str(s: string): void {
    this.room(2 + 3 * s.length);
    let n = this.buf.write(s, this.pos + 2, 'utf8');
    if (n > MAX_STRING) n = MAX_STRING;
    this.buf.writeUInt16LE(n, this.pos);
    this.pos += 2 + n;
  }

  /** A string or NONE. */
  optional(s: string | null): void {
    if (s === null) {
      this.room(1);
      this.buf[this.pos++] = NONE;
    } else {
      this.room(1);
      this.buf[this.pos++] = STRING;
      this.str(s);
    }
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.pos++] = v;
  }

  f64(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** An attribute: its name and its tagged value. */
  attr(name: string, value: string | number | boolean): void {
    this.str(name);
    if (typeof value === 'string') {
      this.u8(STRING);
      this.str(value);
    } else if (typeof value === 'number') {
      this.u8(NUMBER);
      this.f64(value);
    } else {
      this.u8(value ? TRUE : FALSE);
    }
  }

  get empty(): boolean {
    return this.pos === 0;
  }

  /** What was written, copied out (the buffer is kept for the next spans). */
  take(): Uint8Array {
    const out = new Uint8Array(this.pos);
    out.set(this.buf.subarray(0, this.pos));
    this.pos = 0;
    return out;
  }
}

/** A post's spans as records (main thread). */
export function readSpans(bytes: Uint8Array): SpanRecord[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let i = 0;
  const str = (): string => {
    const n = buf.readUInt16LE(i);
    const s = buf.toString('utf8', i + 2, i + 2 + n);
    i += 2 + n;
    return s;
  };
  const f64 = (): number => {
    const v = buf.readDoubleLE(i);
    i += 8;
    return v;
  };
  const optional = (): string | undefined => (buf[i++] === NONE ? undefined : str());
  const out: SpanRecord[] = [];
  while (i < buf.length) {
    const traceId = str();
    const spanId = str();
    const parentId = str();
    const name = str();
    const kind = buf[i++];
    const r: SpanRecord = { traceId, spanId, parentId, remoteParent: kind >= REMOTE_PARENT, name, kind: kind & (REMOTE_PARENT - 1), start: f64(), end: f64(), attributes: {} };
    const error = optional();
    if (error !== undefined) r.error = error;
    const tracestate = optional();
    if (tracestate !== undefined) r.tracestate = tracestate;
    const n = buf[i++];
    for (let k = 0; k < n; k++) {
      const key = str();
      const tag = buf[i++];
      r.attributes[key] = tag === STRING ? str() : tag === NUMBER ? f64() : tag === TRUE;
    }
    out.push(r);
  }
  return out;
}
