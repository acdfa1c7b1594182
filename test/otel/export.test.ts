// needs: broker, otelcol
// The OpenTelemetry export of metrics and logs (src/features/otel) from a `spindle` process to a
// real OpenTelemetry Collector (OTLP/HTTP receiver, file exporter): the series of /prometheus
// arrive with the values /prometheus shows after a known number of PUBLISHes (counters as
// cumulative monotonic sums, gauges, histograms), with the node's resource; the node's log lines
// arrive as records, a worker's lockout warning with its severity and fields; a SIGTERM sends
// what is left; a receiver that is not there is counted, logged once, and nothing else breaks.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { hashPassword } from '../../src/auth/index.ts';
import { freePort, startProcessBroker, tempDir, type ProcessBroker } from '../helpers/process-broker.ts';
import { startCollector, type Collector, type ExportedMetric } from '../helpers/otelcol.ts';
import { waitFor } from '../helpers/wait.ts';

const PASSWORD = 'otel-export-password';
const NODE = 'otel-node-1';
const PUBLISHED = 20;

let collector: Collector;

before(async () => {
  collector = await startCollector();
});

after(async () => {
  await collector?.stop();
});

async function prometheus(adminPort: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/prometheus`, { headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` } });
  assert.equal(res.status, 200);
  return res.text();
}

/** The value of one sample of the text exposition (labels as written, e.g. `{qos="1"}`). */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return undefined;
}

const HASH = await hashPassword('known-pw', 'bcrypt', 4);

function config(dataDir: string, port: number, adminPort: number, otel: Record<string, unknown>, logFile = true) {
  return {
    dataDir,
    nodeName: NODE,
    workers: 2,
    log: { level: 'info', file: { enabled: logFile } },
    sys: { enabled: false },
    store: { storeType: 'MEMORY' },
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    admin: { enabled: true, host: '127.0.0.1', port: adminPort, password: PASSWORD },
    // Anonymous clients are welcome; a named one needs its user's password.
    auth: { allowAnonymous: true, users: [{ username: 'known', password: HASH }] },
    limits: { authMaxFailures: 2, authFailureWindow: 60, authLockout: 60 },
    otel,
  };
}

/** Connects with credentials nobody has: refused (not authorized). */
async function refusedConnect(url: string, clientId: string): Promise<void> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 5, clientId, username: 'nobody', password: 'wrong' });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => reject(new Error('connected without credentials')));
    client.once('error', () => resolve());
    client.once('close', () => resolve());
  }).finally(() => client.end(true));
}

/** The last data point of `name` whose attributes include `attrs`, over every export so far. */
function lastPoint(metrics: ExportedMetric[], name: string, attrs: Record<string, string> = {}) {
  let found: { metric: ExportedMetric; point: ExportedMetric['dataPoints'][number] } | undefined;
  for (const m of metrics) {
    if (m.name !== name) continue;
    for (const p of m.dataPoints) if (Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)) found = { metric: m, point: p };
  }
  return found;
}

test('metrics and logs reach the collector with the values /prometheus shows', async () => {
  const port = await freePort();
  const adminPort = await freePort();
  const broker: ProcessBroker = await startProcessBroker(config(tempDir(), port, adminPort, {
    resourceAttributes: { 'deployment.environment.name': 'test' },
    metrics: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/metrics`, interval: 1 },
    logs: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/logs`, level: 'info' },
    // Without the log store: the workers' lines reach the main thread for the export alone.
  }, false));
  const sub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, protocolVersion: 5, clientId: 'otel-sub' });
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, protocolVersion: 5, clientId: 'otel-pub' });
  try {
    // A known traffic: PUBLISHED QoS 1 messages, each delivered to one subscriber.
    await sub.subscribeAsync('otel/test', { qos: 1 });
    let delivered = 0;
    sub.on('message', () => delivered++);
    for (let i = 0; i < PUBLISHED; i++) await pub.publishAsync('otel/test', `m${i}`, { qos: 1 });
    await waitFor(() => delivered === PUBLISHED, { message: `${PUBLISHED} messages delivered` });
    // Named clients that are not the user are refused: the second from 127.0.0.1 locks it out.
    for (let i = 0; i < 2; i++) await refusedConnect(broker.url, `refused-${i}`);
    const text = await waitFor(async () => {
      const t = await prometheus(adminPort);
      return sample(t, 'spindle_auth_lockouts_total') === 1 && t;
    }, { message: 'the refused CONNECTs counted' });
    assert.equal(sample(text, 'spindle_messages_received_total{qos="1"}'), PUBLISHED);
    assert.equal(sample(text, 'spindle_messages_sent_total{qos="1"}'), PUBLISHED);
    assert.equal(sample(text, 'spindle_connections_current'), 2);
    const failures = sample(text, 'spindle_auth_failures_total')!;
    assert.equal(failures, 2);

    // The same series arrive: counters as cumulative monotonic sums, with the values /prometheus
    // shows and their labels as attributes.
    const received = await collector.waitForMetrics((ms) => {
      const p = lastPoint(ms, 'spindle_messages_received_total', { qos: '1' });
      return p?.point.value === PUBLISHED && p;
    }, { message: `spindle_messages_received_total{qos="1"} ${PUBLISHED} in the collector` });
    assert.equal(received.metric.type, 'sum');
    assert.equal(received.metric.monotonic, true);
    assert.equal(received.metric.aggregationTemporality, 2, 'cumulative');
    assert.equal(received.metric.description, 'PUBLISH packets received from clients, by QoS.');
    assert.equal(received.metric.scope, 'spindle.prometheus');
    await collector.waitForMetrics((ms) => lastPoint(ms, 'spindle_auth_failures_total')?.point.value === failures, { message: `spindle_auth_failures_total ${failures}` });
    assert.equal(lastPoint(collector.metrics(), 'spindle_messages_sent_total', { qos: '1' })?.point.value, PUBLISHED);
    // The node's resource.
    assert.equal(received.metric.resource['service.name'], 'spindle');
    assert.equal(received.metric.resource['service.instance.id'], NODE);
    assert.match(String(received.metric.resource['service.version']), /^\d+\.\d+\.\d+/);
    assert.equal(received.metric.resource['deployment.environment.name'], 'test');
    // Gauges.
    const connections = lastPoint(collector.metrics(), 'spindle_connections_current');
    assert.equal(connections?.metric.type, 'gauge');
    assert.equal(connections.point.value, 2);
    assert.equal(lastPoint(collector.metrics(), 'spindle_workers_running')?.point.value, 2);
    // A histogram: per-bucket counts that add up to its count (one per delivery), one more
    // bucket than bounds.
    const latency = await collector.waitForMetrics((ms) => {
      const p = lastPoint(ms, 'spindle_delivery_latency_seconds');
      return p?.point.count === PUBLISHED && p;
    }, { message: 'the delivery latency histogram' });
    assert.equal(latency.metric.type, 'histogram');
    assert.equal(latency.metric.unit, 's');
    const p = latency.point;
    assert.equal(p.bucketCounts!.length, p.explicitBounds!.length + 1);
    assert.equal(p.bucketCounts!.reduce((a, n) => a + n, 0), PUBLISHED);

    // The worker's warning of the lockout (the second failure from 127.0.0.1 reached the mark of 2)
    // arrives as a WARN record with its fields, and the main thread's lines as INFO records.
    const warn = await collector.waitForLogs((logs) => logs.find((l) => l.body === 'source address locked out after failed authentications'), { message: 'the lockout warning in the collector' });
    assert.equal(warn.severityText, 'WARN');
    assert.equal(warn.severityNumber, 13);
    assert.match(String(warn.attributes.thread), /^worker-[01]$/);
    assert.equal(warn.attributes.node, NODE);
    assert.equal(warn.attributes.address, '127.0.0.1');
    assert.match(String(warn.attributes.clientId), /^refused-/);
    assert.equal(warn.resource['service.instance.id'], NODE);
    const started = await collector.waitForLogs((logs) => logs.find((l) => l.body === 'spindle started'), { message: 'the start line in the collector' });
    assert.equal(started.severityText, 'INFO');
    assert.equal(started.attributes.thread, 'main');
    assert.equal(started.attributes.logger, 'main');
    assert.equal(started.attributes.workers, 2);
    assert.equal(started.attributes.node, NODE);
    assert.equal(started.attributes._node, NODE, 'its own node field, kept apart');

    // Nothing failed, and the exports are counted.
    const after = await prometheus(adminPort);
    assert.equal(sample(after, 'spindle_otel_export_failures_total{signal="metrics"}'), 0);
    assert.equal(sample(after, 'spindle_otel_export_failures_total{signal="logs"}'), 0);
    assert.ok(sample(after, 'spindle_otel_exports_total{signal="metrics"}')! >= 1);
    assert.ok(sample(after, 'spindle_otel_log_records_exported_total')! >= 2);
    assert.equal(sample(after, 'spindle_otel_log_records_dropped_total{reason="queue_full"}'), 0);
    assert.deepEqual(broker.output.filter((l) => /unhandled|"level":"error"|OTLP export/.test(l)), []);
  } finally {
    sub.end(true);
    pub.end(true);
    await broker.kill('SIGKILL');
  }
});

test('SIGTERM sends the metrics and the log lines not sent yet, then the broker exits', async () => {
  const port = await freePort();
  const adminPort = await freePort();
  // An interval no test reaches: the only metric export is the one on shutdown.
  const broker = await startProcessBroker(config(tempDir(), port, adminPort, {
    serviceName: 'spindle-shutdown-test',
    metrics: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/metrics`, interval: 3600 },
    logs: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/logs` },
  }));
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, protocolVersion: 5, clientId: 'otel-shutdown-pub' });
  try {
    for (let i = 0; i < PUBLISHED; i++) await pub.publishAsync('otel/shutdown', `m${i}`, { qos: 1 });
    pub.end(true);
    const ours = (m: { resource: Record<string, unknown> }) => m.resource['service.name'] === 'spindle-shutdown-test';
    assert.equal(collector.metrics().filter(ours).length, 0, 'no metric export before the interval');
    assert.equal(await broker.kill('SIGTERM'), 0);
    // The collector writes its file every 50 ms: what the broker sent before it exited appears.
    const received = await collector.waitForMetrics((ms) => lastPoint(ms.filter(ours), 'spindle_messages_received_total', { qos: '1' }), { message: 'the metric export on shutdown' });
    assert.equal(received.point.value, PUBLISHED, 'the export on shutdown has the last counts');
    const stopping = await collector.waitForLogs((logs) => logs.filter(ours).find((l) => l.body === 'shutting down'), { message: 'the shutdown line' });
    assert.equal(stopping.attributes.signal, 'SIGTERM');
    assert.equal(stopping.attributes.thread, 'main');
  } finally {
    pub.end(true);
    await broker.kill('SIGKILL');
  }
});

test('a receiver that is not there: failures counted, logged once, dropped records counted, MQTT unaffected', async () => {
  const port = await freePort();
  const adminPort = await freePort();
  const nowhere = `http://127.0.0.1:${await freePort()}`;
  const broker = await startProcessBroker(config(tempDir(), port, adminPort, {
    metrics: { enabled: true, endpoint: `${nowhere}/v1/metrics`, interval: 1, timeout: 500 },
    logs: { enabled: true, endpoint: `${nowhere}/v1/logs`, timeout: 500 },
  }));
  try {
    const text = await waitFor(async () => {
      const t = await prometheus(adminPort);
      return (sample(t, 'spindle_otel_export_failures_total{signal="metrics"}') ?? 0) >= 3 && (sample(t, 'spindle_otel_export_failures_total{signal="logs"}') ?? 0) >= 1 && t;
    }, { message: 'export failures counted' });
    assert.ok(sample(text, 'spindle_otel_log_records_dropped_total{reason="export_failed"}')! >= 1);
    assert.equal(sample(text, 'spindle_otel_log_records_exported_total'), 0);
    // One line per signal for the whole outage so far (the next one after a minute).
    const failed = broker.output.filter((l) => l.includes('"OTLP export failed"'));
    assert.equal(failed.filter((l) => l.includes('"signal":"metrics"')).length, 1, failed.join('\n'));
    assert.equal(failed.filter((l) => l.includes('"signal":"logs"')).length, 1, failed.join('\n'));
    assert.equal(broker.output.filter((l) => l.includes('still failing')).length, 0);
    // MQTT goes on.
    const client = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, protocolVersion: 5, clientId: 'otel-nowhere' });
    await client.publishAsync('otel/nowhere', 'x', { qos: 1 });
    client.end(true);
    // And the node stops in its time though the last exports fail, having thrown nothing.
    assert.equal(await broker.kill('SIGTERM'), 0);
    assert.deepEqual(broker.output.filter((l) => /unhandled|"level":"error"/.test(l)), []);
  } finally {
    await broker.kill('SIGKILL');
  }
});
