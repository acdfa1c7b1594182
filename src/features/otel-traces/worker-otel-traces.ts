// OpenTelemetry traces in one worker thread: decides which PUBLISHes are sampled (the clients
// under a client trace always, a publisher's sampled traceparent when parent-based, else the
// configured ratio), records the spans of a sampled message's path here as compact records
// (span-record.ts) and posts them to the main thread every FLUSH_MS, bounded. Never loads the
// OpenTelemetry SDK: the main thread exports (exporter.ts). With tracing off the engine checks
// `enabled` only; on, a PUBLISH costs a count down (untilSelected, sampleGap), and a search of its
// properties for a traceparent only when it has properties.
import { randomFillSync } from 'node:crypto';

import { findTraceContext, formatTraceparent, nowMs, withTraceContext, type MessageTrace, type MessageTracer, type TracedClient } from '../../broker/trace-context.ts';
import { KIND, REMOTE_PARENT, SpanWriter, T, type SpanPost } from './span-record.ts';

export interface WorkerOtelTracesConfig {
  enabled: boolean;
  sampleRatio: number;
  /** A publisher's traceparent decides (its sampled flag) whether its message is traced. */
  parentBased: boolean;
  /** Spans held at most between two posts; past it they are dropped and counted. */
  queueSize: number;
}

/** A rule's span: what the rule engine needs while it runs the rule on a traced message. */
export interface TracedRules {
  /** The traceparent rule outputs carry to the main thread's actions (webhook header); null none. */
  traceparent: string | null;
}

const IDS = Buffer.allocUnsafe(4096);
let idsAt = IDS.length;

/** Where `bytes` fresh random bytes start in IDS, a pool refilled 4 KB at a time. */
function randomAt(bytes: number): number {
  if (idsAt + bytes > IDS.length) {
    randomFillSync(IDS);
    idsAt = 0;
  }
  idsAt += bytes;
  return idsAt - bytes;
}

/** `bytes` random bytes in hex (span ids 8, trace ids 16): for the ids something else reads (a
 * traceparent, an acknowledgement's parent). */
function randomHex(bytes: number): string {
  const at = randomAt(bytes);
  return IDS.toString('hex', at, at + bytes);
}

/** A span id nothing else reads: begin writes random bytes, never a string (the hex costs more
 * than the rest of the id). */
const RANDOM = null;

/**
 * How many messages until the ratio samples one (1: the next), drawn from the geometric
 * distribution of the gaps between independent draws: each message is sampled with the chance
 * `ratio`, independently of the others, as if a random number were drawn for each, but a message
 * costs one decrement (a Math.random per PUBLISH cost a few per cent of the worker at 1 %,
 * bench/otel.ts). Infinity for 0: never.
 */
export function sampleGap(ratio: number): number {
  if (ratio >= 1) return 1;
  if (ratio <= 0) return Infinity;
  // P(gap = k) = (1 - ratio)^(k - 1) * ratio, by inversion of a uniform draw in (0, 1].
  return 1 + Math.floor(Math.log(1 - Math.random()) / Math.log1p(-ratio));
}

/** How long spans wait on a worker before they leave in one post: much of a post's cost is the
 * same for one span as for hundreds (a post per event-loop turn was about one per sampled message
 * at 1 % of 400,000 messages a second). */
export const FLUSH_MS = 25;

interface Sent {
  span: string;
  at: number;
  qos: number;
}

export class WorkerOtelTraces implements MessageTracer {
  readonly enabled: boolean;
  private readonly ratio: number;
  /** Drawn by sampleGap, counted down by whoever receives a PUBLISH (MessageTracer). */
  untilSelected: number;
  private readonly parentBased: boolean;
  private readonly max: number;
  private readonly spans = new SpanWriter();
  /** Spans in `spans`. */
  private count = 0;
  private dropped = 0;
  private flushScheduled = false;
  /** The PUBLISHes of traced messages in flight to subscribers: their delivery span and time. */
  private readonly sent = new WeakMap<object, Sent>();

  constructor(config: WorkerOtelTracesConfig, private readonly post: (p: SpanPost) => void) {
    this.enabled = config.enabled;
    this.ratio = config.sampleRatio;
    this.untilSelected = sampleGap(this.ratio);
    this.parentBased = config.parentBased;
    this.max = config.queueSize;
  }

  /** Each message counted down (untilSelected) and the one reaching 0 is selected, so each is
   * selected with the chance `ratio`, independently of the others; one the ratio decides for is
   * sampled when selected. A traced client's, and one with a traceparent when parent-based, are
   * decided otherwise (a selection landing on one of them is not moved to the next). */
  received(c: TracedClient, m: { props: Buffer | null; trace?: MessageTrace; topic: string }): void {
    const selected = this.untilSelected <= 0;
    if (selected) this.untilSelected = sampleGap(this.ratio);
    const found = m.props !== null ? findTraceContext(m.props) : null;
    let sampled = c.traced;
    if (!sampled) sampled = found !== null && this.parentBased ? found.parent.sampled : selected;
    if (!sampled) return;
    let traceId: string;
    let spanId: string;
    if (found === null) {
      // A new trace's id and the span's from one string (two would cost twice).
      const ids = randomHex(24);
      traceId = ids.slice(0, 32);
      spanId = ids.slice(32);
    } else {
      traceId = found.parent.traceId;
      spanId = randomHex(8);
    }
    const t: MessageTrace = {
      traceId,
      spanId,
      parentId: found?.parent.parentId ?? '',
      tracestate: found?.tracestate ?? '',
      start: nowMs(),
      routedAt: 0,
      mark: 0,
      remote: false,
      ended: false,
    };
    m.trace = t;
    // The subscribers' traceparent names the broker's span (MQTT 5 subscribers get it).
    m.props = withTraceContext(m.props, formatTraceparent(t.traceId, t.spanId), t.tracestate);
  }

  originated(clientId: string, m: { props: Buffer | null; trace?: MessageTrace; topic: string }): MessageTrace | undefined {
    if (!this.enabled || (--this.untilSelected > 0 && m.props === null)) return undefined;
    this.received({ clientId, traced: false }, m);
    const t = m.trace;
    if (t !== undefined) t.routedAt = t.start;
    return t;
  }

  /** A message from another node of the cluster: when its properties carry a sampled traceparent
   * (the broker's span on the node that received it, which put it there), its deliveries here
   * are recorded under that span, as a delivery batch's are (the publish side is that node's). */
  fromNode(m: { props: Buffer | null; trace?: MessageTrace }): void {
    if (m.props === null) return;
    const found = findTraceContext(m.props);
    if (found === null || !found.parent.sampled) return;
    const now = nowMs();
    m.trace = { traceId: found.parent.traceId, spanId: found.parent.parentId, parentId: '', tracestate: found.tracestate, start: now, routedAt: now, mark: 0, remote: true, ended: true };
  }

  authorized(t: MessageTrace, allowed: boolean): void {
    const now = nowMs();
    if (this.begin(t, t.spanId, RANDOM, T.authorize, KIND.internal, t.start, now, 1, allowed ? null : 'not authorized')) this.spans.attr(T['spindle.acl.allowed'], allowed);
    t.mark = now;
  }

  scriptsStart(t: MessageTrace): void {
    t.mark = nowMs();
  }

  scripts(t: MessageTrace, outputs: number): void {
    const now = nowMs();
    if (this.begin(t, t.spanId, RANDOM, T.scripts, KIND.internal, t.mark || t.start, now, 1)) this.spans.attr(T['spindle.scripts.outputs'], outputs);
    t.mark = now;
  }

  routing(t: MessageTrace): void {
    t.routedAt = nowMs();
  }

  routed(t: MessageTrace, matched: number): void {
    if (this.begin(t, t.spanId, RANDOM, T.route, KIND.internal, t.routedAt, nowMs(), 1)) this.spans.attr(T['spindle.matched'], matched);
  }

  /** Runs the rule `ruleId` on a traced message under a span of its own; its outputs carry that
   * span as their traceparent (a webhook sends it). */
  rule(t: MessageTrace, ruleId: string, rules: TracedRules, run: () => void): void {
    const spanId = randomHex(8);
    const start = nowMs();
    rules.traceparent = formatTraceparent(t.traceId, spanId);
    try {
      run();
    } finally {
      rules.traceparent = null;
      if (this.begin(t, t.spanId, spanId, T.rule, KIND.internal, start, nowMs(), 1)) this.spans.attr(T['spindle.rule.id'], ruleId);
    }
  }

  delivered(t: MessageTrace, clientId: string, qos: number, packetId: number, inflight: object | null): void {
    const now = nowMs();
    // Its id is read again only when it is acknowledged (QoS 1 and 2).
    const spanId = inflight !== null ? randomHex(8) : RANDOM;
    if (this.begin(t, t.spanId, spanId, T.deliver, KIND.producer, t.routedAt || t.start, now, packetId !== 0 ? 3 : 2)) {
      this.spans.attr(T['messaging.client.id'], clientId);
      this.spans.attr(T['spindle.qos'], qos);
      if (packetId !== 0) this.spans.attr(T['spindle.packet_id'], packetId);
    }
    if (inflight !== null && spanId !== RANDOM) this.sent.set(inflight, { span: spanId, at: now, qos });
  }

  acknowledged(t: MessageTrace, clientId: string, inflight: object): void {
    const sent = this.sent.get(inflight);
    if (sent === undefined) return; // sent before tracing knew it (a resend after a restart)
    this.sent.delete(inflight);
    const name = sent.qos === 2 ? T['acknowledge (PUBCOMP)'] : T['acknowledge (PUBACK)'];
    if (this.begin(t, sent.span, RANDOM, name, KIND.internal, sent.at, nowMs(), 2)) {
      this.spans.attr(T['messaging.client.id'], clientId);
      this.spans.attr(T['spindle.qos'], sent.qos);
    }
  }

  finished(t: MessageTrace, clientId: string, topic: string, qos: number, matched: number, refused?: string): void {
    if (!this.publishSpan(t, clientId, topic, qos, refused ?? null)) return;
    if (refused === undefined) this.spans.attr(T['spindle.matched'], matched);
    else this.spans.attr(T['spindle.refused'], refused);
  }

  held(t: MessageTrace, clientId: string, topic: string, qos: number, dueAt: number): void {
    if (this.publishSpan(t, clientId, topic, qos, null)) this.spans.attr(T['spindle.delayed.due'], new Date(dueAt).toISOString());
  }

  /** Ends the broker's span of a publish: its first five attributes written, the sixth is the
   * caller's. False when it was ended before, is another worker's, or the post is full. */
  private publishSpan(t: MessageTrace, clientId: string, topic: string, qos: number, refused: string | null): boolean {
    if (t.ended || t.remote) return false;
    t.ended = true;
    const kind = KIND.server + (t.parentId !== '' ? REMOTE_PARENT : 0);
    if (!this.begin(t, t.parentId, t.spanId, T['publish '], kind, t.start, nowMs(), 6, refused, t.tracestate || null, topic)) return false;
    const w = this.spans;
    w.attrText(T['messaging.system'], T.mqtt);
    w.attrText(T['messaging.operation.type'], T.receive);
    w.attr(T['messaging.destination.name'], topic);
    w.attr(T['messaging.client.id'], clientId);
    w.attr(T['spindle.qos'], qos);
    return true;
  }

  /** Starts a span's entry in the next post (span-record.ts SpanPost), named TEXTS[name] (followed
   * by `suffix` when given), followed by `attributes` key-value pairs the caller pushes; false
   * when the post's bound is reached (it is dropped). `spanId` RANDOM: a new random id. */
  private begin(t: MessageTrace, parentId: string, spanId: string | typeof RANDOM, name: number, kind: number, start: number, end: number, attributes: number, error: string | null = null, tracestate: string | null = null, suffix: string | null = null): boolean {
    if (this.count >= this.max) {
      this.dropped++;
      return false;
    }
    this.count++;
    const w = this.spans;
    w.id(t.traceId, 16);
    if (spanId === RANDOM) w.copy(IDS, randomAt(8), 8);
    else w.id(spanId, 8);
    w.id(parentId, 8);
    if (suffix === null) w.text(name);
    else w.prefixed(name, suffix);
    w.u8(kind);
    w.f64(start);
    w.f64(end);
    w.optional(error);
    w.optional(tracestate);
    w.u8(attributes);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setTimeout(this.flush, FLUSH_MS).unref();
    }
    return true;
  }

  /** Every FLUSH_MS while there are spans: what was recorded leaves in one post. */
  readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.count === 0 && this.dropped === 0) return;
    const spans = this.spans.take();
    const { count, dropped } = this;
    this.count = 0;
    this.dropped = 0;
    this.post({ spans, count, dropped });
  };
}
