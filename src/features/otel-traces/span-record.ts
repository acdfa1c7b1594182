// The compact form of a finished span, as a worker thread records it and posts it to the main
// thread (one post every 25 ms at most), where the exporter makes an OpenTelemetry ReadableSpan of it. Plain
// data: a worker never loads the OpenTelemetry SDK. A post carries its spans as one flat array of
// strings and numbers (FLAT below), which structured cloning copies about three times as fast as
// one object per span; the main thread reads them back into SpanRecords (readSpans).

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
 * What a worker posts (every FLUSH_MS while it has spans): its spans, flat, and how many it dropped past its bound.
 * FLAT: per span [traceId, spanId, parentId, name, kind (+ REMOTE_PARENT), start, end,
 * error or null, tracestate or null, n, then n attribute names and values, alternating].
 */
export interface SpanPost {
  spans: unknown[];
  dropped: number;
}

/** Added to a span's kind in a post when its parent is another process's. */
export const REMOTE_PARENT = 8;

/** A post's spans as records (main thread). */
export function readSpans(flat: readonly unknown[]): SpanRecord[] {
  const out: SpanRecord[] = [];
  for (let i = 0; i < flat.length;) {
    const kind = flat[i + 4] as number;
    const r: SpanRecord = {
      traceId: flat[i] as string,
      spanId: flat[i + 1] as string,
      parentId: flat[i + 2] as string,
      remoteParent: kind >= REMOTE_PARENT,
      name: flat[i + 3] as string,
      kind: kind & (REMOTE_PARENT - 1),
      start: flat[i + 5] as number,
      end: flat[i + 6] as number,
      attributes: {},
    };
    if (flat[i + 7] !== null) r.error = flat[i + 7] as string;
    if (flat[i + 8] !== null) r.tracestate = flat[i + 8] as string;
    const n = flat[i + 9] as number;
    i += 10;
    for (let k = 0; k < n; k++, i += 2) r.attributes[flat[i] as string] = flat[i + 1] as string | number | boolean;
    out.push(r);
  }
  return out;
}
