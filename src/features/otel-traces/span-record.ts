// The compact form of a finished span, as a worker thread records it and posts it to the main
// thread (one post every 25 ms at most), where the exporter writes the OTLP request straight from
// those bytes (otlp-encode.ts encodePosts). Plain data: a worker never loads the OpenTelemetry
// SDK. A post carries its spans as bytes (SpanWriter below); readSpans reads them back into
// SpanRecords, the form the tests check them in.

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
 * how many it dropped past its bound. Bytes, not objects: a span's fields written at once into one
 * reused buffer leave no garbage for the 25 ms they wait (held as objects, they outlived the
 * worker's young generation and were promoted, and structured cloning of the object form cost a
 * worker at 1 % sampling a tenth of its time); a post copies the bytes once.
 *
 * The form is compact, because the worker's cost grows with what it writes (bench/otel.ts): ids as
 * their bytes (16 for the trace, 8 for the span and its parent, zeros for no parent); the span
 * names, attribute keys and constant values Spindle uses as a number into TEXTS (two bytes);
 * integers as u32. A span: trace id, span id, parent id, name (a text), kind (u8, + REMOTE_PARENT),
 * start, end (f64), error and tracestate (NONE, or STRING and a text), n (u8), then n attributes
 * (key as a text, a tagged value). A text: u16 length then UTF-8; a length of CONSTANT + k or more
 * is TEXTS[k]; PREFIXED + k is TEXTS[k] followed by a text (the publish span's name and topic).
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
export const INT = 5;

/** The texts a span record names by number: span names, attribute keys, constant values. */
export const TEXTS = [
  'authorize', 'scripts', 'route', 'rule', 'deliver', 'acknowledge (PUBACK)', 'acknowledge (PUBCOMP)', 'publish ',
  'messaging.system', 'messaging.operation.type', 'messaging.destination.name', 'messaging.client.id',
  'spindle.qos', 'spindle.matched', 'spindle.refused', 'spindle.packet_id', 'spindle.acl.allowed',
  'spindle.scripts.outputs', 'spindle.rule.id', 'mqtt', 'receive', 'spindle.delayed.due',
] as const;
export type Text = (typeof TEXTS)[number];
/** A text's number in TEXTS. */
export const T = Object.fromEntries(TEXTS.map((s, i) => [s, i])) as { readonly [K in Text]: number };

/** A text's u16 at CONSTANT + k: TEXTS[k]; at PREFIXED + k: TEXTS[k], then a text. */
export const CONSTANT = 0xff00;
export const PREFIXED = 0xfe00;
/** Longest string kept whole (bytes); longer ones are cut (topics and client ids are shorter). */
const MAX_STRING = PREFIXED - 1;

/** The value of each ASCII hex digit (lower case, as ids are written), by character code. */
const NIBBLE = new Uint8Array(128);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;

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

  /** An id given in hex (`bytes` long; '' for none: zeros) as its bytes. */
  id(hex: string, bytes: number): void {
    this.room(bytes);
    const b = this.buf;
    let at = this.pos;
    if (hex.length !== 2 * bytes) b.fill(0, at, at + bytes);
    else for (let i = 0; i < 2 * bytes; i += 2) b[at++] = (NIBBLE[hex.charCodeAt(i) & 127] << 4) | NIBBLE[hex.charCodeAt(i + 1) & 127];
    this.pos += bytes;
  }

  /** `bytes` bytes of `src` from `at`, as they are (a random id). */
  copy(src: Uint8Array, at: number, bytes: number): void {
    this.room(bytes);
    const b = this.buf;
    let to = this.pos;
    for (let i = at; i < at + bytes; i++) b[to++] = src[i];
    this.pos = to;
  }

  str(s: string): void {
    this.room(2 + 3 * s.length);
    let n = this.buf.write(s, this.pos + 2, 'utf8');
    if (n > MAX_STRING) n = MAX_STRING;
    this.buf.writeUInt16LE(n, this.pos);
    this.pos += 2 + n;
  }

  /** TEXTS[k]. */
  text(k: number): void {
    this.room(2);
    this.buf.writeUInt16LE(CONSTANT + k, this.pos);
    this.pos += 2;
  }

  /** TEXTS[k] followed by `s`, read as one string. */
  prefixed(k: number, s: string): void {
    this.room(2);
    this.buf.writeUInt16LE(PREFIXED + k, this.pos);
    this.pos += 2;
    this.str(s);
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

  /** An attribute: its key (TEXTS[key]) and its tagged value. */
  attr(key: number, value: string | number | boolean): void {
    this.text(key);
    if (typeof value === 'string') {
      this.u8(STRING);
      this.str(value);
    } else if (typeof value === 'number') {
      if (value >>> 0 === value) {
        this.room(5);
        this.buf[this.pos] = INT;
        this.buf.writeUInt32LE(value, this.pos + 1);
        this.pos += 5;
      } else {
        this.u8(NUMBER);
        this.f64(value);
      }
    } else {
      this.u8(value ? TRUE : FALSE);
    }
  }

  /** An attribute whose value is TEXTS[value]. */
  attrText(key: number, value: number): void {
    this.text(key);
    this.u8(STRING);
    this.text(value);
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

/** A post's spans as records (main thread; tests). */
export function readSpans(bytes: Uint8Array): SpanRecord[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let i = 0;
  const text = (): string => {
    const n = buf.readUInt16LE(i);
    i += 2;
    if (n >= CONSTANT) return TEXTS[n - CONSTANT];
    if (n >= PREFIXED) return TEXTS[n - PREFIXED] + text();
    const s = buf.toString('utf8', i, i + n);
    i += n;
    return s;
  };
  const id = (bytes: number): string => {
    const hex = buf.toString('hex', i, i + bytes);
    i += bytes;
    return /^0+$/.test(hex) ? '' : hex;
  };
  const f64 = (): number => {
    const v = buf.readDoubleLE(i);
    i += 8;
    return v;
  };
  const optional = (): string | undefined => (buf[i++] === NONE ? undefined : text());
  const out: SpanRecord[] = [];
  while (i < buf.length) {
    const traceId = id(16);
    const spanId = id(8);
    const parentId = id(8);
    const name = text();
    const kind = buf[i++];
    const r: SpanRecord = { traceId, spanId, parentId, remoteParent: kind >= REMOTE_PARENT, name, kind: kind & (REMOTE_PARENT - 1), start: f64(), end: f64(), attributes: {} };
    const error = optional();
    if (error !== undefined) r.error = error;
    const tracestate = optional();
    if (tracestate !== undefined) r.tracestate = tracestate;
    const n = buf[i++];
    for (let k = 0; k < n; k++) {
      const key = text();
      const tag = buf[i++];
      if (tag === STRING) r.attributes[key] = text();
      else if (tag === NUMBER) r.attributes[key] = f64();
      else if (tag === INT) {
        r.attributes[key] = buf.readUInt32LE(i);
        i += 4;
      } else r.attributes[key] = tag === TRUE;
    }
    out.push(r);
  }
  return out;
}
