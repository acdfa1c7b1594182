// What the node does with each OTLP export's outcome (src/features/otel/export-outcomes.ts): both
// counted in Prometheus, failures logged without flooding (the first at once, then one line per
// FAILURE_LOG_INTERVAL_MS with how many were not logged), and the recovery logged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';

import { Registry } from 'prom-client';

import { createLogger } from '../../src/log/index.ts';
import { OtelMetrics } from '../../src/features/otel/metrics.ts';
import { ExportOutcomes, FAILURE_LOG_INTERVAL_MS } from '../../src/features/otel/export-outcomes.ts';

test('failures are counted each time and logged once per interval; the recovery is logged', async () => {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  const registry = new Registry();
  const metrics = new OtelMetrics(registry, ['metrics'], () => 0);
  let now = 1_000_000;
  const outcomes = new ExportOutcomes('metrics', 'http://collector:4318/v1/metrics', metrics, createLogger({ level: 'info', stream }), () => now);

  outcomes.succeeded();
  for (let i = 0; i < 10; i++) {
    outcomes.failed(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    now += 1000;
  }
  assert.deepEqual(lines.map((l) => l.msg), ['OTLP export failed']);
  assert.equal(lines[0].level, 'warn');
  assert.equal(lines[0].err, 'connect ECONNREFUSED (ECONNREFUSED)');
  assert.equal(lines[0].endpoint, 'http://collector:4318/v1/metrics');
  now += FAILURE_LOG_INTERVAL_MS;
  outcomes.failed(new Error('timeout'));
  assert.deepEqual(lines.map((l) => l.msg), ['OTLP export failed', 'OTLP export still failing']);
  assert.equal(lines[1].failures, 11);
  assert.equal(lines[1].notLogged, 9);
  outcomes.succeeded();
  assert.equal(lines[2].msg, 'OTLP export works again');
  assert.equal(lines[2].failures, 11);
  outcomes.succeeded();
  assert.equal(lines.length, 3, 'nothing while it works');

  const text = await registry.metrics();
  assert.match(text, /^spindle_otel_exports_total\{signal="metrics"\} 14$/m);
  assert.match(text, /^spindle_otel_export_failures_total\{signal="metrics"\} 11$/m);
  assert.doesNotMatch(text, /signal="logs"/, 'only the signals exported have series');
});
