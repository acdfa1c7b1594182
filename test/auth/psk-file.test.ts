// Mosquitto psk_file parsing (every bad line named by its number), keys read as Mosquitto reads
// them (mosquitto__hex2bin: leading zero bytes kept, an odd number of digits padded on the left),
// and the configuration keys around TLS-PSK and the admin API's HTTPS refused naming the key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { MosquittoFileError, parsePskFile, pskKeyBytes, pskKeyProblem } from '../../src/auth/index.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

test('a psk_file: comments, blank lines, identities and their keys', () => {
  const keys = parsePskFile('# devices\n\ndev1:a1b2\n  sensor-7:00FF01  \r\nodd:abc\n');
  assert.deepEqual([...keys.keys()], ['dev1', 'sensor-7', 'odd']);
  assert.deepEqual(keys.get('dev1'), Buffer.from([0xa1, 0xb2]));
  assert.deepEqual(keys.get('sensor-7'), Buffer.from([0x00, 0xff, 0x01]));
  assert.deepEqual(keys.get('odd'), Buffer.from([0x0a, 0xbc]));
});

test('keys as Mosquitto reads them', () => {
  const cases: [string, number[]][] = [
    ['00', [0]],
    ['0000', [0, 0]],
    ['000f', [0, 0x0f]],
    ['0abc', [0x0a, 0xbc]],
    ['abc', [0x0a, 0xbc]],
    ['00abc', [0, 0x0a, 0xbc]],
    ['DEADbeef', [0xde, 0xad, 0xbe, 0xef]],
  ];
  for (const [hex, bytes] of cases) assert.deepEqual([...pskKeyBytes(hex)], bytes, hex);
});

test('bad lines are refused with their number', () => {
  const bad: [string, RegExp][] = [
    ['ok:ab\nno colon here\n', /line 2: expected "identity:hexkey"/],
    [':ab\n', /line 1: expected/],
    ['a:ab\na:cd\n', /line 2: identity "a" is listed twice/],
    ['a:0xab\n', /line 1: the key must be hexadecimal/],
    ['a:\n', /line 1: the key is empty/],
    ['a:ab:cd\n', /line 1: the key must be hexadecimal/],
    [`a:${'ab'.repeat(513)}\n`, /line 1: the key is longer than 512 bytes/],
    [`${'x'.repeat(257)}:ab\n`, /line 1: the identity is longer than 256 bytes/],
  ];
  for (const [text, message] of bad) {
    assert.throws(() => parsePskFile(text, 'psk.txt'), (err: unknown) => err instanceof MosquittoFileError && err.code === 'MOSQUITTO_PSK_INVALID' && message.test(err.message) && err.message.startsWith('psk.txt line'), text);
  }
  assert.equal(pskKeyProblem('abcd'), undefined);
  assert.match(pskKeyProblem('xyz') ?? '', /hexadecimal/);
});

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-psk-config-'));
const good = path.join(dir, 'good.txt');
const bad = path.join(dir, 'bad.txt');
writeFileSync(good, 'dev1:abcd\n');
writeFileSync(bad, '# x\ndev1:abcd\ndev2 abcd\n');

function refused(env: NodeJS.ProcessEnv, ...fragments: string[]): void {
  assert.throws(
    () => loadConfig({ argv: [], env }),
    (err: unknown) => err instanceof ConfigError && err.code === 'CONFIG_INVALID' && fragments.every((f) => err.message.includes(f)),
    JSON.stringify(env),
  );
}

test('mqtt.tls.psk.*: turns TLS on without a certificate; a bad file is refused naming the key and the line', () => {
  const c = loadConfig({ argv: [], env: { SPINDLE_MQTT_TLS_PSK_FILE: good } });
  assert.equal(c.mqtt.tls.enabled, true);
  assert.equal(loadConfig({ argv: [], env: { SPINDLE_MQTT_TLS_PSK_FROM_CLIENT_DB: 'true' } }).mqtt.tls.enabled, true);
  refused({ SPINDLE_MQTT_TLS_PSK_FILE: bad }, 'mqtt.tls.psk.file', 'line 3', 'SPINDLE_MQTT_TLS_PSK_FILE');
  refused({ SPINDLE_MQTT_TLS_PSK_FILE: path.join(dir, 'none.txt') }, 'mqtt.tls.psk.file', 'cannot read');
  refused({ SPINDLE_MQTT_TLS_PSK_FILE: good, SPINDLE_MQTT_TLS_REQUEST_CERT: 'true' }, 'mqtt.tls.requestCert', 'server certificate');
  // TLS turned off: the file is not read.
  assert.equal(loadConfig({ argv: [], env: { SPINDLE_MQTT_TLS_PSK_FILE: bad, SPINDLE_MQTT_TLS_ENABLED: 'false' } }).mqtt.tls.enabled, false);
});

test('admin.tls.*: a certificate and its key, or an endpoint, not both; plain HTTP beside HTTPS only', () => {
  const c = loadConfig({ argv: [], env: { SPINDLE_ADMIN_TLS_CERT: 'a.crt', SPINDLE_ADMIN_TLS_KEY: 'a.key', SPINDLE_ADMIN_TLS_PLAIN: 'redirect', SPINDLE_ADMIN_TLS_PLAIN_PORT: '8081' } });
  assert.equal(c.admin.tls.plain, 'redirect');
  refused({ SPINDLE_ADMIN_TLS_CERT: 'a.crt' }, 'admin.tls.key', 'required');
  refused({ SPINDLE_ADMIN_TLS_KEY: 'a.key' }, 'admin.tls.cert', 'required');
  refused({ SPINDLE_ADMIN_TLS_CERT: 'a.crt', SPINDLE_ADMIN_TLS_KEY: 'a.key', SPINDLE_ADMIN_TLS_FROM_ENDPOINT: 'tls' }, 'admin.tls.fromEndpoint', 'not both');
  refused({ SPINDLE_ADMIN_TLS_PLAIN: 'on' }, 'admin.tls.plain', 'needs HTTPS');
  refused({ SPINDLE_ADMIN_TLS_FROM_ENDPOINT: 'tls', SPINDLE_ADMIN_TLS_PLAIN: 'redirect', SPINDLE_ADMIN_TLS_PLAIN_PORT: '8080' }, 'admin.tls.plainPort', 'admin.port');
  refused({ SPINDLE_ADMIN_TLS_PLAIN: 'sometimes' }, 'admin.tls.plain');
});
