// The otel.* configuration keys: their defaults, objects from a file and JSON from the
// environment, and the values refused with the key named.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ConfigError, loadConfig } from '../../src/config/index.ts';

function refused(env: NodeJS.ProcessEnv, key: string, fragment: string): void {
  assert.throws(
    () => loadConfig({ argv: [], env }),
    (err: unknown) => err instanceof ConfigError && err.message.startsWith(key) && err.message.includes(fragment),
    `${JSON.stringify(env)} refused at ${key} with "${fragment}"`,
  );
}

test('off by default, with the OTLP/HTTP default endpoints', () => {
  const c = loadConfig({ argv: [], env: {} }).otel;
  assert.equal(c.serviceName, 'spindle');
  assert.deepEqual(c.resourceAttributes, {});
  assert.equal(c.metrics.enabled, false);
  assert.equal(c.metrics.endpoint, 'http://127.0.0.1:4318/v1/metrics');
  assert.equal(c.metrics.interval, 60);
  assert.equal(c.metrics.timeout, 10_000);
  assert.deepEqual(c.metrics.headers, {});
  assert.equal(c.logs.enabled, false);
  assert.equal(c.logs.endpoint, 'http://127.0.0.1:4318/v1/logs');
  assert.equal(c.logs.level, 'info');
  assert.equal(c.logs.queueSize, 10_000);
});

test('headers and resource attributes from the environment as JSON', () => {
  const c = loadConfig({ argv: [], env: {
    SPINDLE_OTEL_METRICS_HEADERS: '{"Authorization":"Bearer abc","x-tenant":"t1"}',
    SPINDLE_OTEL_RESOURCE_ATTRIBUTES: '{"deployment.environment.name":"prod"}',
    SPINDLE_OTEL_LOGS_ENDPOINT: 'https://collector.example:4318/v1/logs',
  } }).otel;
  assert.deepEqual(c.metrics.headers, { Authorization: 'Bearer abc', 'x-tenant': 't1' });
  assert.deepEqual(c.resourceAttributes, { 'deployment.environment.name': 'prod' });
  assert.equal(c.logs.endpoint, 'https://collector.example:4318/v1/logs');
});

test('bad values are refused naming the key', () => {
  refused({ SPINDLE_OTEL_METRICS_ENDPOINT: 'grpc://127.0.0.1:4317' }, 'otel.metrics.endpoint', 'http:// or https://');
  refused({ SPINDLE_OTEL_LOGS_ENDPOINT: 'not a url' }, 'otel.logs.endpoint', 'URL');
  refused({ SPINDLE_OTEL_METRICS_HEADERS: '{"bad header":"x"}' }, 'otel.metrics.headers', 'HTTP token');
  refused({ SPINDLE_OTEL_LOGS_HEADERS: '{"x-a":"line\\nbreak"}' }, 'otel.logs.headers', 'line break');
  refused({ SPINDLE_OTEL_LOGS_HEADERS: '{"x-a":1}' }, 'otel.logs.headers', 'expected a string');
  refused({ SPINDLE_OTEL_METRICS_HEADERS: '["x"]' }, 'otel.metrics.headers', 'mapping');
  refused({ SPINDLE_OTEL_RESOURCE_ATTRIBUTES: '{"":"x"}' }, 'otel.resourceAttributes', 'a name is');
  refused({ SPINDLE_OTEL_METRICS_INTERVAL: '0' }, 'otel.metrics.interval', '1..86400');
  refused({ SPINDLE_OTEL_LOGS_LEVEL: 'trace' }, 'otel.logs.level', 'one of debug, info, warn, error');
  refused({ SPINDLE_OTEL_LOGS_QUEUE_SIZE: '0' }, 'otel.logs.queueSize', '1..1000000');
});
