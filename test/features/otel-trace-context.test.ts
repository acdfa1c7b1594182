// OpenTelemetry traces' pure parts: the W3C traceparent, the trace context read from and written
// into MQTT 5 PUBLISH properties, a sampled message's trace carried across workers in a delivery
// batch (and nothing more for the others), the worker's sampling decision and its span records
// (one post per FLUSH_MS, bounded), the rule outputs' traceparent taken off on the main thread, and
// the trace context a command's source record brings in its headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { findTraceContext, formatTraceparent, parseTraceparent, withSourceTrace, withTraceContext, type MessageTrace } from '../../src/broker/trace-context.ts';
import { headerText } from '../../src/features/commands/record-headers.ts';
import { DeliveryBatch, readBatch } from '../../src/router/batch.ts';
import type { Message } from '../../src/broker/message.ts';
import { sampleGap, WorkerOtelTraces } from '../../src/features/otel-traces/worker-otel-traces.ts';
import { readSpans, type SpanPost } from '../../src/features/otel-traces/span-record.ts';
import { OtlpTraceEncoder } from '../../src/features/otel-traces/otlp-encode.ts';
import { hrTime } from '../../src/features/otel-traces/exporter.ts';
import { waitFor } from '../helpers/wait.ts';
import { TRACEPARENT_FIELD, takeTraceparent, traceparentOf } from '../../src/rules/trace-output.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

/** MQTT 5 properties: a user property (0x26, two length-prefixed UTF-8 strings). */
function user(name: string, value: string): Buffer {
  const n = Buffer.from(name);
  const v = Buffer.from(value);
  return Buffer.concat([Buffer.from([0x26, n.length >> 8, n.length & 0xff]), n, Buffer.from([v.length >> 8, v.length & 0xff]), v]);
}

/** Payload Format Indicator (0x01, a byte) and Content Type (0x03, a string). */
const FORMAT = Buffer.from([0x01, 0x01]);
const CONTENT_TYPE = Buffer.concat([Buffer.from([0x03, 0x00, 0x04]), Buffer.from('text')]);

test('traceparent: version 00 parsed with its sampled flag; malformed, all-zero ids and version ff refused', () => {
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`), { traceId: TRACE, parentId: SPAN, sampled: true });
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-00`), { traceId: TRACE, parentId: SPAN, sampled: false });
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled, true);
  for (const bad of [`00-${TRACE.toUpperCase()}-${SPAN}-01`, `00-${'0'.repeat(32)}-${SPAN}-01`, `00-${TRACE}-${'0'.repeat(16)}-01`, `ff-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}`, 'traceparent', '']) {
    assert.equal(parseTraceparent(bad), null, bad);
  }
  assert.equal(formatTraceparent(TRACE, SPAN), `00-${TRACE}-${SPAN}-01`);
});

test('the trace context of PUBLISH properties: found among other properties, absent or malformed gives none', () => {
  const props = Buffer.concat([FORMAT, user('a', 'b'), CONTENT_TYPE, user('traceparent', `00-${TRACE}-${SPAN}-01`), user('tracestate', 'k=v')]);
  assert.deepEqual(findTraceContext(props), { parent: { traceId: TRACE, parentId: SPAN, sampled: true }, tracestate: 'k=v' });
  assert.equal(findTraceContext(Buffer.concat([FORMAT, user('a', 'b')])), null);
  assert.equal(findTraceContext(user('traceparent', 'not one')), null);
  // The value "traceparent" under another name is not a traceparent.
  assert.equal(findTraceContext(user('x', 'traceparent')), null);
  // Truncated: the walk stops, nothing is read past the end.
  const whole = user('traceparent', `00-${TRACE}-${SPAN}-01`);
  assert.equal(findTraceContext(whole.subarray(0, whole.length - 3)), null);
});

test("the broker's trace context replaces the publisher's in forwarded properties; the others keep their order", () => {
  const mine = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`;
  const props = Buffer.concat([FORMAT, user('traceparent', `00-${TRACE}-${SPAN}-01`), user('a', 'b'), user('tracestate', 'k=v'), CONTENT_TYPE]);
  const out = withTraceContext(props, mine, 'k=v');
  assert.deepEqual(out, Buffer.concat([FORMAT, user('a', 'b'), CONTENT_TYPE, user('traceparent', mine), user('tracestate', 'k=v')]));
  assert.deepEqual(findTraceContext(out)?.parent.parentId, '2'.repeat(16));
  // None before (an MQTT 3.1.1 publisher): the user property alone; no tracestate when empty.
  assert.deepEqual(withTraceContext(null, mine, ''), user('traceparent', mine));
});

test("a source's trace context (a command's record headers) becomes the user properties; an invalid traceparent or tracestate is left out", () => {
  const tp = `00-${TRACE}-${SPAN}-01`;
  assert.equal(withSourceTrace(null, {}), null, 'none given: no properties');
  assert.deepEqual(withSourceTrace(null, { traceparent: ` ${tp} `, tracestate: 'k=v' }), Buffer.concat([user('traceparent', tp), user('tracestate', 'k=v')]));
  assert.deepEqual(withSourceTrace(FORMAT, { traceparent: tp }), Buffer.concat([FORMAT, user('traceparent', tp)]));
  assert.equal(withSourceTrace(FORMAT, { traceparent: '00-xyz-01', tracestate: 'k=v' }), FORMAT, 'an invalid traceparent: the properties as they were');
  assert.deepEqual(withSourceTrace(null, { traceparent: tp, tracestate: 'k=\u00e9' }), user('traceparent', tp), 'not printable ASCII');
  assert.deepEqual(withSourceTrace(null, { traceparent: tp, tracestate: 'k='.padEnd(513, 'v') }), user('traceparent', tp), 'longer than 512');
});

test("a source message's headers as text: bytes read as UTF-8, lists joined, tables left out", () => {
  assert.deepEqual(headerText({ a: 'x', b: Buffer.from('\u00e9t\u00e9'), c: [Buffer.from('1'), '2'], d: 3, e: true, f: { nested: 1 }, g: undefined }), { a: 'x', b: '\u00e9t\u00e9', c: '1,2', d: '3', e: 'true' });
  assert.deepEqual(headerText(undefined), {});
});

function message(topic: string, trace?: MessageTrace): Message {
  return { topic, topicBytes: Buffer.from(topic), payload: Buffer.from('p'), qos: 1, retain: false, props: null, expiresAt: 0, receivedAt: 1_000, storeId: undefined, seq: 7, trace };
}

function trace(): MessageTrace {
  return { traceId: TRACE, spanId: SPAN, parentId: '', tracestate: '', start: 1, routedAt: 1234.5, mark: 0, remote: false, ended: false };
}

test('a delivery batch carries a sampled message\'s trace id, span id and routing time to the other worker, and nothing for the others', () => {
  const batch = new DeliveryBatch();
  const plain = message('a/plain');
  const traced = message('a/traced', trace());
  batch.add(plain, 1, 1, false, null);
  batch.add(traced, 2, 0, false, [5]);
  batch.add(traced, 3, 1, false, null);
  batch.add(plain, 4, 1, false, null);
  const { buffer, length } = batch.take();
  const got: { topic: string; session: number; trace: MessageTrace | undefined }[] = [];
  readBatch(buffer, length, (m, session) => got.push({ topic: m.topic, session, trace: m.trace }));
  assert.deepEqual(got.map((g) => [g.topic, g.session]), [['a/plain', 1], ['a/traced', 2], ['a/traced', 3], ['a/plain', 4]]);
  assert.equal(got[0].trace, undefined);
  assert.equal(got[3].trace, undefined);
  assert.deepEqual(got[1].trace, { traceId: TRACE, spanId: SPAN, parentId: '', tracestate: '', start: 1234.5, routedAt: 1234.5, mark: 0, remote: true, ended: true });
});

/** What the PUBLISH handler does: counts the tracer down, then asks it. */
function receive(t: WorkerOtelTraces, c: { clientId: string; traced: boolean }, m: { props: Buffer | null; trace?: MessageTrace; topic: string }): void {
  t.untilSelected--;
  t.received(c, m);
}

function tracer(sampleRatio: number, parentBased = true, maxQueueSize = 100): { t: WorkerOtelTraces; posts: SpanPost[] } {
  const posts: SpanPost[] = [];
  return { t: new WorkerOtelTraces({ enabled: true, sampleRatio, parentBased, queueSize: maxQueueSize }, (p) => posts.push(p)), posts };
}


test('sampling: a client under a client trace always; a traceparent decides when parent-based; else the ratio', () => {
  const off = tracer(0);
  const m = { props: null as Buffer | null, trace: undefined as MessageTrace | undefined, topic: 't' };
  receive(off.t, { clientId: 'c', traced: false }, m);
  assert.equal(m.trace, undefined, 'ratio 0: not sampled');
  const traced = { props: null as Buffer | null, trace: undefined as MessageTrace | undefined, topic: 't' };
  receive(off.t, { clientId: 'c', traced: true }, traced);
  assert.ok(traced.trace, 'a traced client: sampled');
  assert.equal(traced.trace.parentId, '');
  assert.match(traced.trace.traceId, /^[0-9a-f]{32}$/);
  assert.deepEqual(findTraceContext(traced.props!)?.parent, { traceId: traced.trace.traceId, parentId: traced.trace.spanId, sampled: true });

  const sampled = { props: user('traceparent', `00-${TRACE}-${SPAN}-01`), trace: undefined as MessageTrace | undefined, topic: 't' };
  receive(off.t, { clientId: 'c', traced: false }, sampled);
  assert.equal(sampled.trace?.traceId, TRACE, "the publisher's trace continues");
  assert.equal(sampled.trace?.parentId, SPAN);
  const clear = { props: user('traceparent', `00-${TRACE}-${SPAN}-00`), trace: undefined as MessageTrace | undefined, topic: 't' };
  receive(tracer(1).t, { clientId: 'c', traced: false }, clear);
  assert.equal(clear.trace, undefined, 'parent-based: a clear sampled flag is honoured even at ratio 1');
  const notParentBased = { props: user('traceparent', `00-${TRACE}-${SPAN}-00`), trace: undefined as MessageTrace | undefined, topic: 't' };
  receive(tracer(1, false).t, { clientId: 'c', traced: false }, notParentBased);
  assert.equal(notParentBased.trace?.traceId, TRACE, 'not parent-based: the ratio decides, the trace continues');
  const all = tracer(1);
  const many = Array.from({ length: 50 }, () => ({ props: null as Buffer | null, trace: undefined as MessageTrace | undefined, topic: 't' }));
  for (const x of many) receive(all.t, { clientId: 'c', traced: false }, x);
  assert.equal(many.filter((x) => x.trace).length, 50, 'ratio 1: all');
});

test('sampling by the ratio: each message with that chance, gaps geometric, whatever the ratio', () => {
  assert.equal(sampleGap(1), 1);
  assert.equal(sampleGap(0), Infinity);
  // The gaps' mean is 1/ratio and a gap of 1 (the next message) has the chance `ratio`; bounds at
  // five standard deviations of each estimate.
  for (const ratio of [0.5, 0.01, 0.0001]) {
    const n = 20_000;
    let sum = 0;
    let ones = 0;
    for (let i = 0; i < n; i++) {
      const g = sampleGap(ratio);
      assert.ok(Number.isInteger(g) && g >= 1, `a gap is a whole number of messages, not ${g}`);
      sum += g;
      if (g === 1) ones++;
    }
    const sd = Math.sqrt(1 - ratio) / ratio / Math.sqrt(n);
    assert.ok(Math.abs(sum / n - 1 / ratio) < 5 * sd, `ratio ${ratio}: mean gap ${sum / n}, expected ${1 / ratio}`);
    assert.ok(Math.abs(ones / n - ratio) < 5 * Math.sqrt(ratio * (1 - ratio) / n) + 1e-9, `ratio ${ratio}: ${ones} gaps of 1 in ${n}`);
  }
  // Through the tracer: 1 % of 200,000 messages (5 standard deviations: 222).
  const { t } = tracer(0.01);
  let sampled = 0;
  for (let i = 0; i < 200_000; i++) {
    const m = { props: null as Buffer | null, trace: undefined as MessageTrace | undefined, topic: 't' };
    receive(t, { clientId: 'c', traced: false }, m);
    if (m.trace !== undefined) sampled++;
  }
  assert.ok(Math.abs(sampled - 2000) < 222, `${sampled} of 200,000 sampled at 1 %`);
});

test("a traced message's spans leave together in one post, parented on the broker's span; past the bound they are dropped and counted", async () => {
  const { t, posts } = tracer(1, true, 5);
  const m = { props: user('traceparent', `00-${TRACE}-${SPAN}-01`), trace: undefined as MessageTrace | undefined, topic: 'a/b' };
  receive(t, { clientId: 'pub', traced: false }, m);
  const tr = m.trace!;
  t.authorized(tr, true);
  t.routing(tr);
  t.routed(tr, 1);
  const inflight = {};
  t.delivered(tr, 'sub', 1, 9, inflight);
  t.finished(tr, 'pub', 'a/b', 1, 1);
  t.finished(tr, 'pub', 'a/b', 1, 1); // once only
  await new Promise((r) => setImmediate(r));
  assert.equal(posts.length, 0, 'not one post per event-loop turn');
  await waitFor(() => posts.length === 1);
  assert.equal(posts[0].dropped, 0);
  const first = readSpans(posts[0].spans);
  assert.deepEqual(first.map((s) => s.name), ['authorize', 'route', 'deliver', 'publish a/b']);
  const root = first[3];
  assert.equal(root.parentId, SPAN);
  assert.equal(root.remoteParent, true);
  assert.equal(root.kind, 1, 'SERVER');
  assert.equal(root.spanId, tr.spanId);
  assert.deepEqual(root.attributes, { 'messaging.system': 'mqtt', 'messaging.operation.type': 'receive', 'messaging.destination.name': 'a/b', 'messaging.client.id': 'pub', 'spindle.qos': 1, 'spindle.matched': 1 });
  assert.deepEqual(first[2].attributes, { 'messaging.client.id': 'sub', 'spindle.qos': 1, 'spindle.packet_id': 9 });
  for (const s of first.slice(0, 3)) {
    assert.equal(s.parentId, tr.spanId);
    assert.equal(s.remoteParent, false);
    assert.ok(s.end >= s.start);
  }
  t.acknowledged(tr, 'sub', inflight);
  // Past the bound of 5 in one post.
  for (let i = 0; i < 6; i++) t.routed(tr, 0);
  await waitFor(() => posts.length === 2);
  const second = readSpans(posts[1].spans);
  assert.equal(second.length, 5);
  assert.equal(posts[1].dropped, 2);
  assert.equal(second[0].name, 'acknowledge (PUBACK)');
  assert.equal(second[0].parentId, first[2].spanId, 'the acknowledgement is a child of its delivery');
});

test('a rule output carries its traceparent to the main thread, where it is taken off the output and kept beside it', () => {
  const tp = formatTraceparent(TRACE, SPAN);
  const out: Record<string, unknown> = { clientid: 'c', [TRACEPARENT_FIELD]: tp };
  const cloned = structuredClone(out); // as postMessage does
  takeTraceparent(cloned);
  assert.deepEqual(cloned, { clientid: 'c' });
  assert.equal(traceparentOf(cloned), tp);
  const plain = { clientid: 'c' };
  takeTraceparent(plain);
  assert.equal(traceparentOf(plain), undefined);
});

test('exporter: times as [seconds, nanoseconds]', () => {
  assert.deepEqual(hrTime(1_700_000_000_123.5), [1_700_000_000, 123_500_000]);
  assert.deepEqual(hrTime(0), [0, 0]);
});

// The spans' OTLP encoding (otlp-encode.ts) read back by protobufjs with opentelemetry-proto's
// field numbers: what the collector decodes end to end (otel-traces.test.ts), field by field.
const OTLP_PROTO = `syntax = "proto3";
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; }
message InstrumentationScope { string name = 1; string version = 2; }
message Status { string message = 2; int32 code = 3; }
message Span { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4; fixed32 flags = 16; string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9; Status status = 15; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }`;

test('the OTLP encoding of spans: ids, trace state, kind, times in ns, attributes of each type, status, flags', async () => {
  const { default: protobuf } = await import('protobufjs');
  const Request = protobuf.parse(OTLP_PROTO).root.lookupType('ExportTraceServiceRequest');
  const encoder = new OtlpTraceEncoder({ resource: { 'service.name': 'spindle', 'x.n': 3 }, scopeName: 'spindle', scopeVersion: '1.2.3' });
  const long = 'l'.repeat(300); // a length past one varint byte
  const body = encoder.encode([
    { traceId: TRACE, spanId: SPAN, parentId: 'b7ad6b7169203331', remoteParent: true, name: 'publish a/b', kind: 1, start: 1_700_000_000_123.25, end: 1_700_000_000_124.5, attributes: { s: long, n: 7, neg: -2, d: 1.5, b: true }, tracestate: 'k=v' },
    { traceId: TRACE, spanId: '00f067aa0ba902b8', parentId: '', remoteParent: false, name: 'route', kind: 0, start: 1, end: 2, attributes: {}, error: 'not authorized' },
  ]);
  const got = Request.toObject(Request.decode(body), { longs: String, bytes: String, defaults: false }) as any;
  const rs = got.resourceSpans[0];
  assert.deepEqual(rs.resource.attributes.map((a: any) => [a.key, a.value.stringValue ?? a.value.intValue]), [['service.name', 'spindle'], ['x.n', '3']]);
  const ss = rs.scopeSpans[0];
  assert.deepEqual(ss.scope, { name: 'spindle', version: '1.2.3' });
  const [a, b] = ss.spans;
  assert.equal(Buffer.from(a.traceId, 'base64').toString('hex'), TRACE);
  assert.equal(Buffer.from(a.spanId, 'base64').toString('hex'), SPAN);
  assert.equal(Buffer.from(a.parentSpanId, 'base64').toString('hex'), 'b7ad6b7169203331');
  assert.equal(a.traceState, 'k=v');
  assert.equal(a.name, 'publish a/b');
  assert.equal(a.kind, 2, 'SPAN_KIND_SERVER');
  assert.equal(a.startTimeUnixNano, '1700000000123250000');
  assert.equal(a.endTimeUnixNano, '1700000000124500000');
  assert.equal(a.flags, 0x301, 'sampled, the parent known remote');
  const attrs = Object.fromEntries(a.attributes.map((kv: any) => [kv.key, kv.value]));
  assert.deepEqual(attrs, { s: { stringValue: long }, n: { intValue: '7' }, neg: { intValue: '-2' }, d: { doubleValue: 1.5 }, b: { boolValue: true } });
  assert.equal(a.status, undefined);
  assert.equal(b.parentSpanId, undefined);
  assert.equal(b.kind, 1, 'SPAN_KIND_INTERNAL');
  assert.equal(b.flags, 0x101, 'sampled, the parent known local');
  assert.deepEqual(b.status, { message: 'not authorized', code: 2 });
});

test("spans encoded straight from a worker's posts read back as the same request as from their records, batches split across posts", async () => {
  const { default: protobuf } = await import('protobufjs');
  const Request = protobuf.parse(OTLP_PROTO).root.lookupType('ExportTraceServiceRequest');
  const decode = (b: Buffer) => Request.toObject(Request.decode(b), { longs: String, bytes: String, defaults: false });
  const { t, posts } = tracer(1, true, 100);
  for (let k = 0; k < 3; k++) {
    const m = { props: Buffer.concat([user('traceparent', `00-${TRACE}-${SPAN}-01`), user('tracestate', 'a=b')]), trace: undefined as MessageTrace | undefined, topic: `a/é/${k}` };
    receive(t, { clientId: 'pub', traced: false }, m);
    t.authorized(m.trace!, k !== 1);
    t.routing(m.trace!);
    t.routed(m.trace!, 1);
    t.delivered(m.trace!, 'sub', 1, 9 + k, {});
    t.finished(m.trace!, 'pub', m.topic, 1, 1, k === 1 ? 'not authorized' : undefined);
  }
  await waitFor(() => posts.length === 1);
  const post = posts[0];
  assert.equal(post.count, 12, 'authorize, route, deliver and publish for each of 3');
  const records = readSpans(post.spans);
  const encoder = new OtlpTraceEncoder({ resource: { 'service.name': 'spindle' }, scopeName: 'spindle', scopeVersion: '1' });
  const pending = [{ bytes: Buffer.from(post.spans), at: 0, left: post.count }];
  const first = encoder.encodePosts(pending, 10);
  assert.equal(first.spans, 10);
  assert.equal(pending[0].left, 2);
  const second = encoder.encodePosts(pending, 10);
  assert.equal(second.spans, 2);
  assert.equal(pending[0].left, 0);
  assert.equal(pending[0].at, post.spans.byteLength);
  const byFields = (r: any) => r.resourceSpans[0].scopeSpans[0].spans;
  assert.deepEqual(byFields(decode(first.body)), byFields(decode(encoder.encode(records.slice(0, 10)))));
  assert.deepEqual(byFields(decode(second.body)), byFields(decode(encoder.encode(records.slice(10)))));
});

test('the OTLP encoding of span times: nanoseconds exact across the 32-bit halves (no BigInt in the encoder)', async () => {
  const { default: protobuf } = await import('protobufjs');
  const Request = protobuf.parse(OTLP_PROTO).root.lookupType('ExportTraceServiceRequest');
  const encoder = new OtlpTraceEncoder({ resource: {}, scopeName: 'spindle', scopeVersion: '1' });
  // Edges where the low 32 bits carry into the high ones, and times of this century with
  // fractions of a millisecond.
  const times = [0, 0.000001, 4294.967295, 4294.967296, 4294.967297, 8589.934591, 1_700_000_000_123.25, 4_102_444_800_000.999];
  let seed = 7;
  for (let i = 0; i < 200; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    times.push(1_600_000_000_000 + (seed % 500_000_000_000) + (seed % 1000) / 1000);
  }
  const expected = (ms: number): string => {
    const seconds = Math.floor(ms / 1000);
    const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
    return (BigInt(seconds) * 1_000_000_000n + BigInt(nanos)).toString();
  };
  const body = encoder.encode(times.map((ms) => ({ traceId: TRACE, spanId: SPAN, parentId: '', remoteParent: false, name: 'x', kind: 0, start: ms, end: ms, attributes: {} })));
  const got = Request.toObject(Request.decode(body), { longs: String, defaults: false }) as any;
  assert.deepEqual(got.resourceSpans[0].scopeSpans[0].spans.map((s: any) => s.startTimeUnixNano ?? '0'), times.map(expected));
});
