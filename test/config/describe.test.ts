// configKeys and describeConfig: one row per key, names derived from the key path, and every
// variable actually read by loadConfig.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { configKeys, describeConfig, envName, loadConfig, unknownEnvVars } from '../../src/config/index.ts';

test('environment variable names split camelCase', () => {
  assert.equal(envName('mqtt.ws.port'), 'SPINDLE_MQTT_WS_PORT');
  assert.equal(envName('auth.allowAnonymous'), 'SPINDLE_AUTH_ALLOW_ANONYMOUS');
  assert.equal(envName('limits.queueQos0'), 'SPINDLE_LIMITS_QUEUE_QOS0');
  assert.equal(envName('mqtt.tls.cnAsUsername'), 'SPINDLE_MQTT_TLS_CN_AS_USERNAME');
});

test('every key is documented once, with a distinct variable', () => {
  const keys = configKeys();
  assert.equal(keys.length, 198);
  assert.equal(new Set(keys.map((k) => k.env)).size, keys.length);
  for (const k of keys) {
    assert.ok(k.description.length > 10, k.key);
    assert.ok(k.default.length > 0, k.key);
  }
  assert.deepEqual(keys.find((k) => k.key === 'mqtt.ws.port'), {
    key: 'mqtt.ws.port',
    env: 'SPINDLE_MQTT_WS_PORT',
    default: '8083',
    description: 'Port of the WebSocket listener (0: any free port).',
  });
});

test('the Markdown table has a header and one row per key', () => {
  const lines = describeConfig().trimEnd().split('\n');
  assert.equal(lines[0], '| key | environment variable | default | meaning |');
  assert.equal(lines.length, 2 + configKeys().length);
  assert.ok(lines.includes('| `auth.allowAnonymous` | `SPINDLE_AUTH_ALLOW_ANONYMOUS` | `true` | Accept clients without a username. |'));
});

test('unknownEnvVars lists SPINDLE_ variables that name no key', () => {
  assert.deepEqual(unknownEnvVars({ SPINDLE_MQTT_WS_PROT: '1', SPINDLE_WORKERS: '2', HOME: '/' }), ['SPINDLE_MQTT_WS_PROT']);
});

test('a documented variable of each kind is read', () => {
  const c = loadConfig({ argv: [], env: { SPINDLE_SHUTDOWN_TIMEOUT: '100', SPINDLE_DATA_DIR: '/var/lib/spindle', SPINDLE_MQTT_HOST: '::' } });
  assert.equal(c.shutdownTimeout, 100);
  assert.equal(c.dataDir, '/var/lib/spindle');
  assert.equal(c.mqtt.host, '::');
});

test('the SQL stores need a datasource URL', async () => {
  const { loadConfig, ConfigError } = await import('../../src/config/index.ts');
  assert.throws(() => loadConfig({ argv: [], env: { SPINDLE_STORE_STORE_TYPE: 'POSTGRESQL' } }), (e: unknown) => e instanceof ConfigError && e.key === 'store.datasource.url');
  const ok = loadConfig({ argv: [], env: { SPINDLE_STORE_STORE_TYPE: 'MYSQL', SPINDLE_STORE_DATASOURCE_URL: 'mysql://127.0.0.1:3306/x' } });
  assert.equal(ok.store.storeType, 'MYSQL');
  assert.equal(loadConfig({ argv: [], env: {} }).store.storeType, 'LOCAL', 'LOCAL is the default');
});
