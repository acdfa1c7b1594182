// Metrics: /prometheus and the per-endpoint metrics, health and performance routes, with real
// MQTT clients moving the counters (exact increases), the text exposition parsed line by line,
// the JSON form's shape, 400/401/404, and the Grafana dashboard querying only exported names.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { hashPassword } from '../../src/auth/index.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let port: number;

before(async () => {
  b = await startAdminBroker({
    // Small session queues so buffer_full drops are easy to cause; one denied topic; one user, so
    // unknown usernames are refused (with no users, a username is taken as the identity).
    limits: { maxQueuedMessages: 2 },
    auth: {
      users: [{ username: 'metrics-user', password: await hashPassword('metrics-pw', 'bcrypt', 4) }],
      acl: [{ permission: 'deny', action: 'publish', topic: 'denied/#' }],
    },
  });
  port = b.ports.tcp!;
});
after(() => b.stop());

type Sample = { name: string; labels: Record<string, string>; value: number };

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?(?:[0-9.]+(?:e[+-]?[0-9]+)?|[Nn]a[Nn]|[+-]?Inf))$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/g;

/** Parses a text exposition; every non-comment, non-empty line must be `name{labels} value`. */
function parse(text: string): { samples: Sample[]; declared: Map<string, string> } {
  const samples: Sample[] = [];
  const declared = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) declared.set(type[1], type[2]);
    if (line.startsWith('#')) continue;
    const m = LINE.exec(line);
    assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      let consumed = 0;
      for (const l of m[2].matchAll(LABEL)) {
        labels[l[1]] = l[2];
        consumed += l[0].length;
      }
      assert.equal(consumed, m[2].length, `bad labels in ${line}`);
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { samples, declared };
}

class Scrape {
  constructor(readonly samples: Sample[], readonly declared: Map<string, string>) {}

  /** The one sample of `name` whose labels include `labels` (fails when none or several). */
  get(name: string, labels: Record<string, string> = {}): number {
    const found = this.all(name, labels);
    assert.equal(found.length, 1, `${name}${JSON.stringify(labels)}: ${found.length} samples`);
    return found[0].value;
  }

  all(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }
}

async function scrape(path = '/prometheus'): Promise<Scrape> {
  const r = await b.api('GET', path);
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const { samples, declared } = parse(r.text);
  return new Scrape(samples, declared);
}

const ep = () => ({ port: String(port), endpoint: 'tcp' });

/** Retries `check` (assertions) until it passes: counters of another worker follow asynchronously. */
async function eventually(check: () => Promise<void>): Promise<void> {
  await waitFor(async () => {
    await check();
    return true;
  }, { interval: 50 });
}

test('connects and publishes move the broker-wide and endpoint counters by exactly what happened', async () => {
  const before = await scrape();
  const sub = await connect(b.url, { clientId: 'm-sub' });
  await sub.subscribeAsync('m/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'm-pub' });
  const got = nextMessages(sub, 5);
  // PUBLISH m/x with a 2-byte payload (v3.1.1): QoS 0 is 9 bytes, QoS 1 11 (packet id).
  for (let i = 0; i < 3; i++) await pub.publishAsync('m/x', `p${i}`, { qos: 0 });
  for (let i = 3; i < 5; i++) await pub.publishAsync('m/x', `p${i}`, { qos: 1 });
  await got;
  const after = await scrape();
  const d = (name: string, labels: Record<string, string> = {}) => after.get(name, labels) - before.get(name, labels);

  assert.equal(d('spindle_connections_total'), 2);
  assert.equal(d('spindle_connections_current'), 2);
  assert.equal(d('spindle_sessions_current'), 2);
  assert.equal(d('spindle_subscriptions_current'), 1);
  assert.equal(d('spindle_messages_received_total', { qos: '0' }), 3);
  assert.equal(d('spindle_messages_received_total', { qos: '1' }), 2);
  assert.equal(d('spindle_messages_received_total', { qos: '2' }), 0);
  assert.equal(d('spindle_messages_sent_total', { qos: '0' }), 3);
  assert.equal(d('spindle_messages_sent_total', { qos: '1' }), 2);
  assert.equal(d('spindle_publish_bytes_received_total', { qos: '0' }), 27);
  assert.equal(d('spindle_publish_bytes_received_total', { qos: '1' }), 22);
  assert.equal(d('spindle_publish_bytes_sent_total', { qos: '0' }), 27);
  assert.equal(d('spindle_publish_bytes_sent_total', { qos: '1' }), 22);
  assert.equal(d('spindle_delivery_latency_seconds_count'), 5);
  assert.equal(d('spindle_delivery_latency_seconds_bucket', { le: '+Inf' }), 5);

  assert.equal(d('svc_endpoint_connections_total', ep()), 2);
  assert.equal(d('svc_endpoint_connections_current', ep()), 2);
  assert.equal(d('svc_endpoint_sessions_current', ep()), 2);
  assert.equal(d('svc_endpoint_subscriptions_current', ep()), 1);
  assert.equal(d('svc_endpoint_messages_received_total', ep()), 5);
  assert.equal(d('svc_endpoint_messages_sent_total', ep()), 5);
  assert.equal(d('svc_endpoint_topics_published_total', ep()), 5);
  assert.equal(d('svc_endpoint_message_size_bytes_count', { ...ep(), direction: 'in' }), 5);
  assert.equal(d('svc_endpoint_message_size_bytes_sum', { ...ep(), direction: 'in' }), 49);
  assert.equal(d('svc_endpoint_message_size_bytes_bucket', { ...ep(), direction: 'in', le: '64' }), 5);
  assert.equal(d('svc_endpoint_message_size_bytes_sum', { ...ep(), direction: 'out' }), 49);
  // Nothing happened on the WebSocket endpoint.
  assert.equal(d('svc_endpoint_messages_received_total', { endpoint: 'ws' }), 0);
  assert.ok(after.get('svc_endpoint_messages_received_rate', ep()) > 0, 'a receive rate over the window');
  assert.ok(after.get('svc_endpoint_response_time_seconds', { ...ep(), operation: 'connect' }) > 0);
  assert.ok(after.get('svc_endpoint_response_time_seconds', { ...ep(), operation: 'subscribe' }) > 0);

  await end(sub, pub);
  await eventually(async () => {
    const closed = await scrape();
    assert.equal(closed.get('spindle_connections_current') - before.get('spindle_connections_current'), 0);
    assert.equal(closed.get('svc_endpoint_connections_current', ep()) - before.get('svc_endpoint_connections_current', ep()), 0);
    assert.equal(closed.get('svc_endpoint_connections_total', ep()) - before.get('svc_endpoint_connections_total', ep()), 2);
  });
});

test('drops are counted by reason: a full offline queue (buffer_full) and QoS 0 for an offline client', async () => {
  const off = await connect(b.url, { clientId: 'm-offline', clean: false });
  await off.subscribeAsync('q/#', { qos: 1 });
  await end(off);
  const before = await scrape();
  assert.equal(before.get('svc_endpoint_sessions_persistent', ep()) >= 1, true);
  const pub = await connect(b.url, { clientId: 'm-pub2' });
  // limits.maxQueuedMessages is 2: of 5 QoS 1 messages, 3 are dropped; QoS 0 is not queued.
  for (let i = 0; i < 5; i++) await pub.publishAsync('q/x', `m${i}`, { qos: 1 });
  for (let i = 0; i < 2; i++) await pub.publishAsync('q/x', `z${i}`, { qos: 0 });
  await end(pub);
  // The offline session may live on the other worker: its drops follow a delivery batch.
  await eventually(async () => {
    const after = await scrape();
    const d = (name: string, labels: Record<string, string>) => after.get(name, labels) - before.get(name, labels);
    assert.equal(d('spindle_messages_dropped_total', { reason: 'queue_full' }), 3);
    assert.equal(d('spindle_messages_dropped_total', { reason: 'qos0_offline' }), 2);
    assert.equal(d('svc_endpoint_messages_dropped_total', { ...ep(), reason: 'buffer_full' }), 3);
    assert.equal(d('svc_endpoint_messages_dropped_total', { ...ep(), reason: 'client_disconnected' }), 2);
    assert.equal(d('svc_endpoint_messages_dropped_total', { ...ep(), reason: 'others' }), 0);
  });
});

test('refused credentials, ACL denials and CONNACK codes are counted; publish response time is sampled', async () => {
  const before = await scrape();
  await assert.rejects(connect(b.url, { clientId: 'm-ghost', username: 'ghost', password: 'nope', protocolVersion: 5 }));
  const c = await connect(b.url, { clientId: 'm-acl', protocolVersion: 5 });
  await c.publishAsync('denied/x', 'no', { qos: 1 }).catch(() => undefined); // PUBACK 0x87
  // One PUBLISH in 64 is timed per endpoint and worker: 64 from one client time at least one.
  for (let i = 0; i < 64; i++) c.publish('free/x', 'x', { qos: 0 });
  await c.publishAsync('free/x', 'last', { qos: 1 });
  await end(c);
  const after = await scrape();
  const d = (name: string, labels: Record<string, string> = {}) => after.get(name, labels) - before.get(name, labels);
  assert.equal(d('spindle_auth_failures_total'), 1);
  assert.equal(d('spindle_acl_denials_total'), 1);
  assert.equal(d('spindle_messages_dropped_total', { reason: 'not_authorized' }), 1);
  assert.equal(d('svc_endpoint_errors_total', { ...ep(), error_type: 'auth_failed' }), 1);
  assert.equal(d('svc_endpoint_errors_total', { ...ep(), error_type: 'acl_denied' }), 1);
  const refused = after.get('svc_endpoint_connection_errors_total', { ...ep(), error_code: '0x86' });
  assert.equal(refused - (before.all('svc_endpoint_connection_errors_total', { ...ep(), error_code: '0x86' })[0]?.value ?? 0), 1);
  assert.ok(after.get('svc_endpoint_errors_rate', { ...ep(), error_type: 'auth_failed' }) > 0);
  assert.ok(after.get('svc_endpoint_response_time_seconds', { ...ep(), operation: 'publish' }) > 0);
  // 66 published, the denied one not accepted for routing.
  assert.equal(d('svc_endpoint_messages_received_total', ep()), 66);
  assert.equal(d('svc_endpoint_topics_published_total', ep()), 65);
});

test('every metric the issue asks for is there, with its labels', async () => {
  const s = await scrape();
  for (const name of ['spindle_connections_current', 'spindle_connections_total', 'spindle_sessions_current', 'spindle_sessions_persistent', 'spindle_subscriptions_current', 'spindle_retained_messages', 'spindle_retained_bytes', 'spindle_process_cpu_seconds_total', 'spindle_process_resident_memory_bytes']) {
    assert.equal(s.all(name).length, 1, name);
  }
  for (const name of ['spindle_messages_received_total', 'spindle_messages_sent_total', 'spindle_publish_bytes_received_total', 'spindle_publish_bytes_sent_total']) {
    assert.deepEqual(s.all(name).map((x) => x.labels.qos).sort(), ['0', '1', '2'], name);
  }
  assert.deepEqual(s.all('spindle_messages_dropped_total').map((x) => x.labels.reason).sort(), ['cluster_copy', 'expired', 'no_session', 'not_authorized', 'qos0_offline', 'queue_full', 'read_denied', 'slow_consumer', 'too_large']);
  assert.equal(s.declared.get('spindle_delivery_latency_seconds'), 'histogram');
  const buckets = s.all('spindle_delivery_latency_seconds_bucket').map((x) => x.value);
  assert.deepEqual(buckets, [...buckets].sort((x, y) => x - y), 'cumulative buckets');
  assert.equal(buckets.at(-1), s.get('spindle_delivery_latency_seconds_count'));
  assert.deepEqual(s.all('spindle_worker_event_loop_lag_seconds', { quantile: '0.99' }).map((x) => x.labels.worker).sort(), ['0', '1']);

  // svc_endpoint_*: every metric of the spec's table, each sample with port and endpoint.
  const spec: Record<string, string[]> = {
    svc_endpoint_connections_current: [], svc_endpoint_connections_rate: [], svc_endpoint_connections_total: [],
    svc_endpoint_messages_received_rate: [], svc_endpoint_messages_sent_rate: [], svc_endpoint_messages_dropped_total: ['reason'],
    svc_endpoint_message_size_bytes_bucket: ['direction', 'le'], svc_endpoint_sessions_current: [], svc_endpoint_sessions_persistent: [],
    svc_endpoint_cpu_usage_percent: [], svc_endpoint_memory_usage_bytes: ['type'], svc_endpoint_response_time_seconds: ['operation'],
    svc_endpoint_errors_rate: ['error_type'], svc_endpoint_connection_errors_total: ['error_code'], svc_endpoint_subscriptions_current: [],
    svc_endpoint_topics_published_total: [],
  };
  for (const [name, extra] of Object.entries(spec)) {
    const samples = s.all(name, ep());
    assert.ok(samples.length > 0, `${name} for the tcp endpoint`);
    for (const x of samples) assert.deepEqual(Object.keys(x.labels).sort(), ['endpoint', 'port', ...extra].sort(), name);
  }
  // Unlimited endpoints have no max sample; the metric is still declared.
  assert.equal(s.declared.get('svc_endpoint_connections_max'), 'gauge');
  assert.equal(s.declared.get('svc_endpoint_sessions_max'), 'gauge');
  assert.equal(s.all('svc_endpoint_connections_max', ep()).length, 0);
  assert.deepEqual(s.all('svc_endpoint_memory_usage_bytes', ep()).map((x) => x.labels.type).sort(), ['heap', 'non_heap']);
  assert.deepEqual(s.all('svc_endpoint_response_time_seconds', ep()).map((x) => x.labels.operation).sort(), ['connect', 'publish', 'subscribe']);
  assert.deepEqual(s.all('svc_endpoint_errors_rate', ep()).map((x) => x.labels.error_type).sort(), ['acl_denied', 'auth_failed', 'protocol_error']);
  assert.deepEqual(s.all('svc_endpoint_message_size_bytes_count', ep()).map((x) => x.labels.direction).sort(), ['in', 'out']);
  assert.ok(s.get('svc_endpoint_memory_usage_bytes', { ...ep(), type: 'heap' }) > 1_000_000);
});

test('/api/endpoints/metrics: prometheus form has only that endpoint; JSON form has the NOTES.md shape', async () => {
  const s = await scrape(`/api/endpoints/metrics?port=${port}&format=prometheus`);
  assert.ok(s.samples.length > 20);
  for (const x of s.samples) {
    assert.match(x.name, /^svc_endpoint_/);
    assert.equal(x.labels.port, String(port));
    assert.equal(x.labels.endpoint, 'tcp');
  }
  const all = await scrape();
  assert.equal(s.get('svc_endpoint_connections_total', ep()), all.get('svc_endpoint_connections_total', ep()));

  const r = await b.api('GET', `/api/endpoints/metrics?port=${port}&format=json`);
  assert.equal(r.status, 200);
  assert.equal(r.json.code, 200);
  assert.equal(r.json.message, 'success');
  const data = r.json.data;
  assert.equal(data.port, port);
  assert.ok(!Number.isNaN(Date.parse(data.timestamp)));
  const m = data.metrics;
  assert.deepEqual(Object.keys(m).sort(), ['connections', 'errors', 'messages', 'performance', 'sessions']);
  assert.deepEqual(Object.keys(m.connections).sort(), ['current', 'max', 'rate', 'total']);
  assert.deepEqual(Object.keys(m.messages).sort(), ['dropped', 'received', 'receivedRate', 'sent', 'sentRate']);
  assert.deepEqual(Object.keys(m.sessions).sort(), ['current', 'max', 'persistent']);
  assert.deepEqual(Object.keys(m.performance).sort(), ['cpuUsage', 'memoryUsage', 'responseTime']);
  assert.deepEqual(Object.keys(m.errors).sort(), ['aclDenied', 'authFailed', 'connectionErrors', 'rate']);
  assert.equal(m.connections.max, null, 'unlimited');
  assert.equal(m.connections.total, all.get('svc_endpoint_connections_total', ep()));
  assert.equal(m.messages.received, all.get('svc_endpoint_messages_received_total', ep()));
  assert.equal(m.messages.dropped, 5, 'the drops of the drop test (3 buffer_full + 2 client_disconnected)');
  assert.equal(m.errors.authFailed, 1);
  assert.equal(m.errors.aclDenied, 1);
  assert.equal(m.errors.connectionErrors, 1);
  assert.equal(m.sessions.persistent, 1);
  for (const group of Object.values(m) as Record<string, unknown>[]) {
    for (const [k, v] of Object.entries(group)) if (v !== null) assert.equal(typeof v, 'number', k);
  }
  // format defaults to json
  const dflt = await b.api('GET', `/api/endpoints/metrics?port=${port}`);
  assert.equal(dflt.json.data.port, port);
});

test('/api/endpoints/health and /performance answer for the endpoint', async () => {
  const h = await b.api('GET', `/api/endpoints/health?port=${port}`, { as: 'viewer' });
  assert.equal(h.status, 200);
  assert.equal(h.json.data.port, port);
  assert.equal(h.json.data.id, 'tcp');
  assert.equal(h.json.data.running, true);
  assert.deepEqual(h.json.data.workers, { listening: 2, total: 2 });
  assert.ok(['UP', 'DEGRADED'].includes(h.json.data.status));
  assert.ok(Array.isArray(h.json.data.reasons));
  if (h.json.data.status === 'UP') assert.deepEqual(h.json.data.reasons, []);
  assert.equal(h.json.data.connections.max, null);

  const p = await b.api('GET', `/api/endpoints/performance?port=${port}`, { as: 'viewer' });
  assert.equal(p.status, 200);
  const d = p.json.data;
  assert.equal(d.port, port);
  assert.equal(d.window, 30);
  for (const k of ['connections', 'messagesReceived', 'messagesSent', 'bytesReceived', 'bytesSent', 'errors']) assert.equal(typeof d.rates[k], 'number', k);
  for (const op of ['connect', 'publish', 'subscribe']) assert.ok(d.responseTime[op].count >= 1, op);
  assert.equal(d.messageSize.in.count, d.messageSize.in.buckets.reduce((a: number, x: { count: number }) => a + x.count, 0));
  assert.equal(d.messageSize.in.buckets.at(-1).le, '+Inf');
  const all = await scrape();
  assert.equal(d.messageSize.in.sum, all.get('svc_endpoint_message_size_bytes_sum', { ...ep(), direction: 'in' }));
});

test('per-endpoint routes: 404 for a port without an endpoint, 400 naming a bad port or format', async () => {
  for (const path of ['/api/endpoints/metrics', '/api/endpoints/health', '/api/endpoints/performance']) {
    const missing = await b.api('GET', `${path}?port=1`);
    assert.equal(missing.status, 404, path);
    assert.equal(missing.json.error, 'NOT_FOUND');
    for (const q of ['', '?port=abc', '?port=0', '?port=70000', `?port=${port}&bogus=1`]) {
      const r = await b.api('GET', `${path}${q}`);
      assert.equal(r.status, 400, `${path}${q}`);
      assert.equal(r.json.field, q.includes('bogus') ? 'bogus' : 'port', `${path}${q}`);
    }
  }
  const f = await b.api('GET', `/api/endpoints/metrics?port=${port}&format=xml`);
  assert.equal(f.status, 400);
  assert.equal(f.json.field, 'format');
  assert.equal((await b.api('GET', '/api/endpoints/metrics?port=1&format=prometheus')).status, 404);
});

test('a viewer may read the metrics; without credentials they are 401', async () => {
  assert.equal((await b.api('GET', '/prometheus', { as: 'viewer' })).status, 200);
  assert.equal((await b.api('GET', `/api/endpoints/metrics?port=${port}`, { as: 'viewer' })).status, 200);
  for (const path of ['/prometheus', `/api/endpoints/metrics?port=${port}`, `/api/endpoints/health?port=${port}`, `/api/endpoints/performance?port=${port}`]) {
    assert.equal((await b.api('GET', path, { as: 'none' })).status, 401, path);
  }
});

test('the Grafana dashboard queries only metrics the broker exports', async () => {
  const dash = JSON.parse(readFileSync(new URL('../../grafana/spindle-dashboard.json', import.meta.url), 'utf8'));
  const s = await scrape();
  const exported = new Set<string>();
  for (const [name, type] of s.declared) {
    exported.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(name + suffix);
  }
  const exprs: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if ((k === 'expr' || k === 'query' || k === 'definition') && typeof x === 'string') exprs.push(x);
        else walk(x);
      }
    }
  };
  walk(dash);
  assert.ok(exprs.length >= 10, `queries found: ${exprs.length}`);
  const used = new Set(exprs.flatMap((e) => e.match(/\b(?:spindle|svc_endpoint)_[a-zA-Z0-9_]+/g) ?? []));
  assert.ok(used.size >= 10);
  for (const name of used) assert.ok(exported.has(name), `dashboard queries ${name}, which the broker does not export`);
  // The datasource is a variable, and the per-endpoint panels use $endpoint.
  assert.ok(dash.templating.list.some((v: { type: string; name: string }) => v.type === 'datasource'));
  assert.ok(dash.templating.list.some((v: { name: string }) => v.name === 'endpoint'));
  assert.ok(exprs.some((e) => e.includes('$endpoint')));
});
