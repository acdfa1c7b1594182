// loadConfig refusals: every error names the key and where the value came from.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ConfigError, loadConfig } from '../../src/config/index.ts';
import { SpindleError } from '../../src/native/index.ts';
import { tempFile } from './helpers.ts';

function refusal(fn: () => unknown, code: string, ...fragments: string[]): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.ok(caught instanceof SpindleError);
  assert.equal(caught.code, code, caught.message);
  for (const fragment of fragments) assert.ok(caught.message.includes(fragment), `${JSON.stringify(caught.message)} should mention ${JSON.stringify(fragment)}`);
  return caught;
}

function yaml(name: string, text: string): string[] {
  return ['--config', tempFile(name, text)];
}

test('an unknown key in the file is refused, naming it and the likely intent', () => {
  const argv = yaml('typo.yaml', 'mqtt:\n  ws:\n    prot: 9001\n');
  const err = refusal(() => loadConfig({ argv, env: {} }), 'CONFIG_UNKNOWN_KEY', 'mqtt.ws.prot', 'typo.yaml', 'did you mean mqtt.ws.port?');
  assert.equal(err.key, 'mqtt.ws.prot');
  refusal(() => loadConfig({ argv: yaml('top.yaml', 'wrokers: 2\n'), env: {} }), 'CONFIG_UNKNOWN_KEY', 'wrokers', 'workers');
  refusal(() => loadConfig({ argv: yaml('far.yaml', 'zzz: 1\n'), env: {} }), 'CONFIG_UNKNOWN_KEY', 'unknown key zzz');
});

test('a section given a scalar is refused', () => {
  refusal(() => loadConfig({ argv: yaml('section.yaml', 'mqtt: 5\n'), env: {} }), 'CONFIG_INVALID', 'mqtt', 'section');
});

test('a value of the wrong type is refused, naming key and file', () => {
  const err = refusal(() => loadConfig({ argv: yaml('type.yaml', 'mqtt:\n  tcp:\n    port: "1883"\n'), env: {} }), 'CONFIG_INVALID', 'mqtt.tcp.port', 'integer', 'type.yaml');
  assert.equal(err.key, 'mqtt.tcp.port');
  assert.ok(err.source?.startsWith('file '));
  refusal(() => loadConfig({ argv: yaml('bool.yaml', 'sys:\n  enabled: yes\n'), env: {} }), 'CONFIG_INVALID', 'sys.enabled', 'true or false');
  refusal(() => loadConfig({ argv: yaml('null.yaml', 'mqtt:\n  tls:\n    ca:\n'), env: {} }), 'CONFIG_INVALID', 'mqtt.tls.ca', 'string');
  refusal(() => loadConfig({ argv: yaml('float.yaml', 'workers: 2.5\n'), env: {} }), 'CONFIG_INVALID', 'workers', 'integer');
});

test('a value out of range is refused, naming key and source', () => {
  refusal(() => loadConfig({ argv: yaml('port.yaml', 'mqtt:\n  ws:\n    port: 70000\n'), env: {} }), 'CONFIG_INVALID', 'mqtt.ws.port', '0..65535', '70000');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_WORKERS: '0' } }), 'CONFIG_INVALID', 'workers', '1..256', 'environment variable SPINDLE_WORKERS');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_LIMITS_MAX_PACKET_SIZE: '8' } }), 'CONFIG_INVALID', 'limits.maxPacketSize', '16..268435455');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_LIMITS_RECEIVE_MAXIMUM: '65536' } }), 'CONFIG_INVALID', 'limits.receiveMaximum');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_LIMITS_QUEUE_DROP_POLICY: 'drop-random' } }), 'CONFIG_INVALID', 'limits.queueDropPolicy', 'drop-oldest, drop-newest');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_LOG_LEVEL: 'trace' } }), 'CONFIG_INVALID', 'log.level');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_MQTT_WS_PATH: 'mqtt' } }), 'CONFIG_INVALID', 'mqtt.ws.path', "start with '/'");
});

test('environment text that does not fit the key type is refused, naming the variable', () => {
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_MQTT_WS_PORT: 'eighty' } }), 'CONFIG_INVALID', 'mqtt.ws.port', 'SPINDLE_MQTT_WS_PORT', 'number');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_MQTT_WS_PORT: '' } }), 'CONFIG_INVALID', 'SPINDLE_MQTT_WS_PORT');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_AUTH_ALLOW_ANONYMOUS: 'yes' } }), 'CONFIG_INVALID', 'auth.allowAnonymous', 'SPINDLE_AUTH_ALLOW_ANONYMOUS', 'true, false, 1 or 0');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_AUTH_USERS: '[{' } }), 'CONFIG_INVALID', 'auth.users', 'SPINDLE_AUTH_USERS', 'JSON');
  refusal(() => loadConfig({ argv: [], env: { SPINDLE_AUTH_ACL: '{"permission":"allow"}' } }), 'CONFIG_INVALID', 'auth.acl', 'list');
});

test('user entries need both fields and a password hash', () => {
  const env = (users: unknown) => ({ SPINDLE_AUTH_USERS: JSON.stringify(users) });
  refusal(() => loadConfig({ argv: [], env: env([{ username: 'a' }]) }), 'CONFIG_INVALID', 'auth.users[0].password', 'required');
  refusal(() => loadConfig({ argv: [], env: env([{ password: '$2b$04$x' }]) }), 'CONFIG_INVALID', 'auth.users[0].username', 'required');
  const plain = refusal(() => loadConfig({ argv: [], env: env([{ username: 'a', password: 'hunter2' }]) }), 'CONFIG_INVALID', 'auth.users[0].password', 'hash');
  assert.ok(!plain.message.includes('hunter2') || plain.message.includes('hash'), 'names the problem');
  refusal(() => loadConfig({ argv: [], env: env([{ username: 'a', password: '$2b$04$short' }]) }), 'CONFIG_INVALID', 'auth.users[0].password', 'malformed bcrypt');
  refusal(() => loadConfig({ argv: [], env: env([{ username: 'a', password: '$argon2id$nope' }]) }), 'CONFIG_INVALID', 'auth.users[0].password', 'malformed argon2');
  refusal(() => loadConfig({ argv: [], env: env([{ username: 'a', pasword: 'x' }]) }), 'CONFIG_INVALID', 'auth.users[0].pasword', 'unknown field');
  const hash = '$2b$04$pYnenx.RgQsBiPAEXvbOLuaboy3puZYCOHXB4YAKymc4HNtmj4FcS';
  refusal(() => loadConfig({ argv: [], env: env([{ username: 'a', password: hash }, { username: 'a', password: hash }]) }), 'CONFIG_INVALID', 'auth.users[1].username', 'twice');
});

test('ACL entries are checked field by field', () => {
  const file = (acl: string) => yaml('acl.yaml', `auth:\n  acl:\n${acl}`);
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: "a/#/b" }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[0].topic', "'#' must be the last level");
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: "a/b+" }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[0].topic', "'+'");
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: "a/%x" }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[0].topic', 'placeholder');
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: "" }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[0].topic', 'empty');
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: a }\n    - { permission: maybe, action: pubsub, topic: a }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[1].permission');
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: read, topic: a }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[0].action');
  refusal(() => loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: a, user: x }\n'), env: {} }), 'CONFIG_INVALID', 'auth.acl[0].user', 'unknown field');
  const ok = loadConfig({ argv: file('    - { permission: allow, action: pubsub, topic: "users/%u/%c-in/+", clientId: c1 }\n'), env: {} });
  assert.deepEqual(ok.auth.acl, [{ permission: 'allow', action: 'pubsub', topic: 'users/%u/%c-in/+', clientId: 'c1' }]);
});

test('unreadable and malformed files are refused, naming the file', () => {
  refusal(() => loadConfig({ argv: ['--config', '/nonexistent/spindle.yaml'], env: {} }), 'CONFIG_FILE', '/nonexistent/spindle.yaml');
  refusal(() => loadConfig({ argv: yaml('bad.yaml', 'mqtt: [1\n'), env: {} }), 'CONFIG_FILE', 'bad.yaml', 'YAML');
  refusal(() => loadConfig({ argv: yaml('dup.yaml', 'workers: 1\nworkers: 2\n'), env: {} }), 'CONFIG_FILE', 'dup.yaml');
  refusal(() => loadConfig({ argv: ['--config', tempFile('bad.json', '{"workers": }')], env: {} }), 'CONFIG_FILE', 'bad.json', 'JSON');
  refusal(() => loadConfig({ argv: yaml('list.yaml', '- 1\n- 2\n'), env: {} }), 'CONFIG_FILE', 'mapping');
  refusal(() => loadConfig({ argv: ['--config'], env: {} }), 'CONFIG_FILE', '--config needs a file path');
});

test('the admin sign-in limits have defaults, take the environment, and are refused out of range', () => {
  const c = loadConfig({ argv: [], env: {} });
  assert.deepEqual([c.admin.loginMaxFailures, c.admin.loginWindow, c.admin.loginLockout], [10, 60, 60]);
  const e = loadConfig({ argv: [], env: { SPINDLE_ADMIN_LOGIN_MAX_FAILURES: '0', SPINDLE_ADMIN_LOGIN_LOCKOUT: '900' } });
  assert.deepEqual([e.admin.loginMaxFailures, e.admin.loginLockout], [0, 900]);
  refusal(() => loadConfig({ argv: yaml('fail.yaml', 'admin:\n  loginMaxFailures: -1\n'), env: {} }), 'CONFIG_INVALID', 'admin.loginMaxFailures');
  refusal(() => loadConfig({ argv: yaml('window.yaml', 'admin:\n  loginWindow: 0\n'), env: {} }), 'CONFIG_INVALID', 'admin.loginWindow');
  refusal(() => loadConfig({ argv: yaml('lockout.yaml', 'admin:\n  loginLockout: 86401\n'), env: {} }), 'CONFIG_INVALID', 'admin.loginLockout');
});
