// The compact form of a finished span, as a worker thread records it and posts it to the main
// thread (one post per tick), where the exporter makes an OpenTelemetry ReadableSpan of it. Plain
// data: a worker never loads the OpenTelemetry SDK.

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

/** What a worker posts once per tick: its spans, and how many it dropped past its bound. */
export interface SpanPost {
  spans: SpanRecord[];
  dropped: number;
}
