// Rules across keys: TLS enabling itself, what TLS and certificate usernames need, PROXY protocol's
// trusted balancers, port clashes.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ConfigError, loadConfig } from '../../src/config/index.ts';

function refused(env: NodeJS.ProcessEnv, ...fragments: string[]): void {
  assert.throws(
    () => loadConfig({ argv: [], env }),
    (err: unknown) => err instanceof ConfigError && err.code === 'CONFIG_INVALID' && fragments.every((f) => err.message.includes(f)),
  );
}

const CERT = { SPINDLE_MQTT_TLS_CERT: 'server.crt', SPINDLE_MQTT_TLS_KEY: 'server.key' };

test('TLS turns itself on when cert and key are set', () => {
  assert.equal(loadConfig({ argv: [], env: {} }).mqtt.tls.enabled, false);
  const c = loadConfig({ argv: [], env: CERT });
  assert.equal(c.mqtt.tls.enabled, true);
  assert.equal(c.mqtt.tls.cert, 'server.crt');
});

test('an explicit enabled: false is respected', () => {
  assert.equal(loadConfig({ argv: [], env: { ...CERT, SPINDLE_MQTT_TLS_ENABLED: 'false' } }).mqtt.tls.enabled, false);
});

test('TLS needs both the certificate and the key', () => {
  refused({ SPINDLE_MQTT_TLS_CERT: 'server.crt' }, 'mqtt.tls.key', 'required', 'SPINDLE_MQTT_TLS_CERT');
  refused({ SPINDLE_MQTT_TLS_KEY: 'server.key' }, 'mqtt.tls.cert', 'required', 'SPINDLE_MQTT_TLS_KEY');
  refused({ SPINDLE_MQTT_TLS_ENABLED: 'true' }, 'mqtt.tls.enabled', 'SPINDLE_MQTT_TLS_ENABLED');
});

test('certificate usernames need requested, CA-verified client certificates', () => {
  refused({ ...CERT, SPINDLE_MQTT_TLS_CN_AS_USERNAME: 'true' }, 'mqtt.tls.cnAsUsername', 'requestCert');
  refused({ ...CERT, SPINDLE_MQTT_TLS_CN_AS_USERNAME: 'true', SPINDLE_MQTT_TLS_REQUEST_CERT: 'true' }, 'mqtt.tls.cnAsUsername', 'mqtt.tls.ca');
  const c = loadConfig({ argv: [], env: { ...CERT, SPINDLE_MQTT_TLS_CN_AS_USERNAME: 'true', SPINDLE_MQTT_TLS_REQUEST_CERT: 'true', SPINDLE_MQTT_TLS_CA: 'ca.crt' } });
  assert.equal(c.mqtt.tls.cnAsUsername, true);
});

test('enabled listeners may not share a port (0 excepted)', () => {
  refused({ SPINDLE_MQTT_WS_PORT: '1883' }, 'mqtt.ws.port', 'mqtt.tcp.port');
  assert.equal(loadConfig({ argv: [], env: { SPINDLE_MQTT_WS_PORT: '1883', SPINDLE_MQTT_TCP_ENABLED: 'false' } }).mqtt.ws.port, 1883);
  const zero = loadConfig({ argv: [], env: { SPINDLE_MQTT_WS_PORT: '0', SPINDLE_MQTT_TCP_PORT: '0' } });
  assert.equal(zero.mqtt.ws.port, 0);
});

test('PROXY protocol needs its trusted balancers; CN as username needs PROXY protocol', () => {
  refused({ SPINDLE_MQTT_TCP_PROXY_PROTOCOL: 'required' }, 'mqtt.tcp.proxyProtocolTrusted', 'is required', 'SPINDLE_MQTT_TCP_PROXY_PROTOCOL');
  refused({ SPINDLE_MQTT_WS_PROXY_PROTOCOL: 'optional' }, 'mqtt.ws.proxyProtocolTrusted');
  refused({ SPINDLE_MQTT_TLS_PROXY_PROTOCOL_CN_AS_USERNAME: 'true' }, 'mqtt.tls.proxyProtocolCnAsUsername', 'needs mqtt.tls.proxyProtocol');
  assert.throws(
    () => loadConfig({ argv: [], env: { SPINDLE_MQTT_TCP_PROXY_PROTOCOL: 'required', SPINDLE_MQTT_TCP_PROXY_PROTOCOL_TRUSTED: '["10.0.0.0/8", "10.0.0.0/40"]' } }),
    (err: unknown) => err instanceof ConfigError && err.message.includes('mqtt.tcp.proxyProtocolTrusted[1]') && err.message.includes('CIDR'),
  );
  const c = loadConfig({ argv: [], env: { SPINDLE_MQTT_TCP_PROXY_PROTOCOL: 'required', SPINDLE_MQTT_TCP_PROXY_PROTOCOL_TRUSTED: '["10.0.0.0/8"]', SPINDLE_MQTT_TCP_PROXY_PROTOCOL_CN_AS_USERNAME: 'true' } });
  assert.deepEqual([c.mqtt.tcp.proxyProtocol, c.mqtt.tcp.proxyProtocolTrusted, c.mqtt.tcp.proxyProtocolCnAsUsername], ['required', ['10.0.0.0/8'], true]);
  assert.equal(loadConfig({ argv: [], env: {} }).mqtt.tls.proxyProtocol, 'off');
});
