// loadConfig: defaults, YAML and JSON files merged over them, SPINDLE_* overrides with coercion,
// the returned object frozen.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadConfig } from '../../src/config/index.ts';
import { tempFile } from './helpers.ts';

const BCRYPT = '$2b$04$pYnenx.RgQsBiPAEXvbOLuaboy3puZYCOHXB4YAKymc4HNtmj4FcS';

test('defaults', () => {
  const c = loadConfig({ argv: [], env: {}, cpus: 6, hostname: 'box' });
  assert.equal(c.nodeName, 'spindle@box');
  assert.equal(c.workers, 6);
  assert.equal(c.workerYoungGeneration, 6);
  assert.equal(c.dataDir, './data');
  assert.equal(c.log.level, 'info');
  assert.deepEqual(c.mqtt, {
    host: '0.0.0.0',
    io: 'native',
    exclusiveSubscription: true,
    tcp: { enabled: true, port: 1883, proxyProtocol: 'off', proxyProtocolTrusted: [], proxyProtocolCnAsUsername: false },
    ws: { enabled: true, port: 8083, path: '/mqtt', proxyProtocol: 'off', proxyProtocolTrusted: [] },
    tls: {
      enabled: false, port: 8883, cert: '', key: '', ca: '', requestCert: false, rejectUnauthorized: true, cnAsUsername: false, crl: '',
      psk: { file: '', fromClientDb: false, identityHint: '', identityAsUsername: false },
      ocspStapling: { enabled: false, responderUrl: '', refreshBefore: 3600, timeoutMs: 5000 },
      ocspClientCheck: { enabled: false, failMode: 'closed', responderUrl: '', cacheSeconds: 300, timeoutMs: 3000 },
      proxyProtocol: 'off', proxyProtocolTrusted: [], proxyProtocolCnAsUsername: false,
    },
    rateLimit: { messagesPerSecond: 0, messagesBurst: 0, bytesPerSecond: 0, bytesBurst: 0 },
    totalRateLimit: { messagesPerSecond: 0, messagesBurst: 0, bytesPerSecond: 0, bytesBurst: 0 },
  });
  assert.deepEqual(c.limits, {
    maxPacketSize: 1048576,
    receiveMaximum: 1024,
    maxInflight: 1024,
    maxKeepalive: 3600,
    topicAliasMaximum: 64,
    maxQueuedMessages: 1000,
    queueDropPolicy: 'drop-oldest',
    queueQos0: false,
    maxSessionExpiry: 604800,
    maxClientIdLength: 256,
    maxTopicLevels: 128,
    authMaxFailures: 10,
    authFailureWindow: 60,
    authLockout: 60,
    maxOutboundBytes: 8388608,
    slowConsumerTimeout: 30,
    partialPacketTimeout: 60,
    maxRetainedMessages: 0,
    maxRetainedPayloadSize: 0,
    retainedDefaultExpiry: 0,
  });
  assert.deepEqual(c.auth, { allowAnonymous: true, users: [], acl: [], aclDefault: 'allow', passwordFile: '', aclFile: '', cacheSize: 1024, clientDbCache: true, policyCacheTtl: 60, policyCacheSize: 100_000, policyTimeout: 15_000, policyMaxPending: 10_000, hashConcurrency: 0, exchangeTimeout: 10, scram: { iterations: 4096 } });
  assert.deepEqual(c.bridges, []);
  assert.deepEqual(c.sys, { enabled: true, interval: 10 });
  assert.deepEqual(c.scripts, { threads: 1, timeout: 100, memoryLimit: 128, onError: 'pass' });
  assert.deepEqual(c.extensions, { dir: '' });
  assert.deepEqual(c.platform, { maxTenants: 10_000, alertInterval: 10, maxAlerts: 10_000 });
  assert.deepEqual(c.audit, { retentionDays: 90, reads: false });
  assert.deepEqual(c.cluster, {
    enabled: false, natsUrl: '', localAddress: '127.0.0.1:6222', addresses: [], clientPort: 4222, natsServer: '',
    discovery: { service: '', namespace: '' }, maxNodes: 64, mqttAddress: '',
  });
  assert.deepEqual(c.drain, { rate: 100, serverReference: '', onStop: false, stopTimeout: 60, handoverTimeout: 10 });
  assert.equal(c.shutdownTimeout, 5000);
});

test('the workers default is capped at 256', () => {
  assert.equal(loadConfig({ argv: [], env: {}, cpus: 512 }).workers, 256);
});

test('the result is deeply frozen', () => {
  const c = loadConfig({ argv: [], env: {} });
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.mqtt.tls));
  assert.ok(Object.isFrozen(c.auth.users));
  assert.throws(() => {
    (c.mqtt.tcp as { port: number }).port = 1;
  }, TypeError);
});

test('a YAML file is merged over the defaults', () => {
  const file = tempFile(
    'merge.yaml',
    `
workers: 3
log:
  level: debug
mqtt:
  ws:
    port: 9001
limits:
  queueDropPolicy: drop-newest
auth:
  allowAnonymous: false
  users:
    - username: alice
      password: "${BCRYPT}"
  acl:
    - { permission: allow, action: pubsub, topic: "clients/%c/#" }
    - { permission: deny, action: subscribe, topic: "#", username: bob }
`,
  );
  const c = loadConfig({ argv: ['--config', file], env: {}, cpus: 8 });
  assert.equal(c.workers, 3);
  assert.equal(c.log.level, 'debug');
  assert.deepEqual(c.mqtt.ws, { enabled: true, port: 9001, path: '/mqtt', proxyProtocol: 'off', proxyProtocolTrusted: [] }, 'siblings keep their defaults');
  assert.equal(c.mqtt.tcp.port, 1883);
  assert.equal(c.limits.queueDropPolicy, 'drop-newest');
  assert.equal(c.limits.maxInflight, 1024);
  assert.equal(c.auth.allowAnonymous, false);
  assert.deepEqual(c.auth.users, [{ username: 'alice', password: BCRYPT }]);
  assert.deepEqual(c.auth.acl, [
    { permission: 'allow', action: 'pubsub', topic: 'clients/%c/#' },
    { permission: 'deny', action: 'subscribe', topic: '#', username: 'bob' },
  ]);
});

test('a JSON file is read as JSON (--config=PATH form)', () => {
  const file = tempFile('merge.json', JSON.stringify({ nodeName: 'n1', mqtt: { tcp: { port: 0 }, ws: { enabled: false } }, sys: { interval: 60 } }));
  const c = loadConfig({ argv: [`--config=${file}`], env: {} });
  assert.equal(c.nodeName, 'n1');
  assert.equal(c.mqtt.tcp.port, 0, 'port 0 means any free port');
  assert.equal(c.mqtt.ws.enabled, false);
  assert.equal(c.sys.interval, 60);
});

test('an empty YAML file changes nothing', () => {
  const file = tempFile('empty.yaml', '# nothing\n');
  const c = loadConfig({ argv: ['-c', file], env: {}, cpus: 2, hostname: 'h' });
  assert.deepEqual(c, loadConfig({ argv: [], env: {}, cpus: 2, hostname: 'h' }));
});

test('other command-line arguments are left alone', () => {
  const c = loadConfig({ argv: ['--verbose', 'x'], env: {} });
  assert.equal(c.mqtt.tcp.port, 1883);
});

test('environment variables override the file and are coerced to the key type', () => {
  const file = tempFile('env.yaml', 'mqtt:\n  ws:\n    port: 9001\nworkers: 3\n');
  const c = loadConfig({
    argv: ['--config', file],
    env: {
      SPINDLE_MQTT_WS_PORT: '9002',
      SPINDLE_WORKERS: ' 5 ',
      SPINDLE_AUTH_ALLOW_ANONYMOUS: 'false',
      SPINDLE_MQTT_TCP_ENABLED: '0',
      SPINDLE_LIMITS_QUEUE_QOS0: 'TRUE',
      SPINDLE_SYS_ENABLED: '1',
      SPINDLE_NODE_NAME: 'edge-7',
      SPINDLE_LOG_LEVEL: 'warn',
      SPINDLE_MQTT_TLS_CN_AS_USERNAME: 'false',
      UNRELATED: 'x',
    },
  });
  assert.equal(c.mqtt.ws.port, 9002);
  assert.equal(c.workers, 5);
  assert.equal(c.auth.allowAnonymous, false);
  assert.equal(c.mqtt.tcp.enabled, false);
  assert.equal(c.limits.queueQos0, true);
  assert.equal(c.sys.enabled, true);
  assert.equal(c.nodeName, 'edge-7');
  assert.equal(c.log.level, 'warn');
});

test('arrays come from the environment as JSON', () => {
  const users = [{ username: 'alice', password: BCRYPT }];
  const acl = [{ permission: 'deny', action: 'publish', topic: '$SYS/#' }];
  const c = loadConfig({ argv: [], env: { SPINDLE_AUTH_USERS: JSON.stringify(users), SPINDLE_AUTH_ACL: JSON.stringify(acl) } });
  assert.deepEqual(c.auth.users, users);
  assert.deepEqual(c.auth.acl, acl);
});
