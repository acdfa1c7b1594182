// A bridge's configuration (defaults, refusals naming the field, the `bridges` config key and its
// environment variable), its topic prefix mapping, and the bounded outbound queue. No servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadConfig, ConfigError } from '../../src/config/index.ts';
import { parseBridgeConfig, redactBridge } from '../../src/bridges/bridge-config.ts';
import { BridgeConfigError } from '../../src/bridges/errors.ts';
import { TopicMap } from '../../src/bridges/topic-map.ts';
import { OutboundQueue, type OutboundMessage } from '../../src/bridges/outbound-queue.ts';
import { tempFile } from '../config/helpers.ts';

const MINIMAL = { name: 'b1', url: 'mqtt://127.0.0.1:1883', forwards: [{ filter: 'a/#' }] };

test('defaults: MQTT 3.1.1, persistent session, QoS 1 mappings without prefixes, bounded queue', () => {
  assert.deepEqual(parseBridgeConfig(MINIMAL), {
    name: 'b1',
    url: 'mqtt://127.0.0.1:1883',
    protocolVersion: 4,
    clientId: '',
    username: '',
    password: '',
    tls: { ca: '', cert: '', key: '', rejectUnauthorized: true },
    keepalive: 60,
    cleanStart: false,
    sessionExpiryInterval: 86400,
    reconnectPeriod: 5000,
    queueLimit: 10000,
    maxInflight: 100,
    forwards: [{ filter: 'a/#', qos: 1, localPrefix: '', remotePrefix: '' }],
    subscriptions: [],
    enabled: true,
  });
});

test('a bad field is refused by its path', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ ...MINIMAL, url: 'http://x:1' }, 'url'],
    [{ ...MINIMAL, url: 'not a url' }, 'url'],
    [{ ...MINIMAL, url: 'mqtt://u:p@host:1883' }, 'url'],
    [{ ...MINIMAL, name: 'a b' }, 'name'],
    [{ url: MINIMAL.url, forwards: MINIMAL.forwards }, 'name'],
    [{ ...MINIMAL, protocolVersion: 3 }, 'protocolVersion'],
    [{ ...MINIMAL, queueLimit: 0 }, 'queueLimit'],
    [{ ...MINIMAL, reconnectPeriod: 10 }, 'reconnectPeriod'],
    [{ ...MINIMAL, password: 'p' }, 'username'],
    [{ ...MINIMAL, color: 'red' }, 'color'],
    [{ ...MINIMAL, tls: { cert: '/x.pem' } }, 'tls.key'],
    [{ ...MINIMAL, tls: { verify: true } }, 'tls.verify'],
    [{ ...MINIMAL, forwards: [] }, 'forwards'],
    [{ ...MINIMAL, forwards: [{ filter: 'a/#', qos: 3 }] }, 'forwards[0].qos'],
    [{ ...MINIMAL, forwards: [{ filter: 'a/#' }, { filter: 'a/#/b' }] }, 'forwards[1].filter'],
    [{ ...MINIMAL, forwards: [{ filter: '#', localPrefix: 'x' }] }, 'forwards[0].localPrefix'],
    [{ ...MINIMAL, forwards: [{ filter: 'a', remotePrefix: 'r/+/' }] }, 'forwards[0].remotePrefix'],
    [{ ...MINIMAL, subscriptions: [{ filter: 'SYS/#', localPrefix: '$' }] }, 'subscriptions[0].localPrefix'],
    [{ ...MINIMAL, subscriptions: [{ qos: 1 }] }, 'subscriptions[0].filter'],
  ];
  for (const [input, field] of cases) {
    assert.throws(() => parseBridgeConfig(input), (err: unknown) => err instanceof BridgeConfigError && err.field === field, `${JSON.stringify(input)} -> ${field}`);
  }
});

test('the password is never shown, only whether one is set', () => {
  const view = redactBridge(parseBridgeConfig({ ...MINIMAL, username: 'u', password: 'secret' }));
  assert.equal('password' in view, false);
  assert.equal(view.passwordSet, true);
  assert.ok(!JSON.stringify(view).includes('secret'));
});

test('the bridges key: checked whole, names unique, the field named with its index', () => {
  const ok = tempFile('bridges-ok.json', JSON.stringify({ bridges: [MINIMAL, { ...MINIMAL, name: 'b2', protocolVersion: 5 }] }));
  const c = loadConfig({ argv: ['--config', ok], env: {} });
  assert.equal(c.bridges.length, 2);
  assert.equal(c.bridges[1].protocolVersion, 5);
  assert.equal(c.bridges[0].queueLimit, 10000);

  const bad = tempFile('bridges-bad.json', JSON.stringify({ bridges: [MINIMAL, { ...MINIMAL, name: 'b2', subscriptions: [{ filter: 'x', qos: 7 }] }] }));
  assert.throws(() => loadConfig({ argv: ['--config', bad], env: {} }), (err: unknown) => err instanceof ConfigError && err.key === 'bridges[1].subscriptions[0].qos');
  const twice = tempFile('bridges-twice.json', JSON.stringify({ bridges: [MINIMAL, MINIMAL] }));
  assert.throws(() => loadConfig({ argv: ['--config', twice], env: {} }), (err: unknown) => err instanceof ConfigError && err.key === 'bridges[1].name');

  const fromEnv = loadConfig({ argv: [], env: { SPINDLE_BRIDGES: JSON.stringify([MINIMAL]) } });
  assert.equal(fromEnv.bridges[0].name, 'b1');
});

test('prefix mapping as in Mosquitto: the side a topic leaves loses its prefix, the other side adds its own', () => {
  const map = new TopicMap([
    { filter: 'up/#', qos: 1, localPrefix: 'local/', remotePrefix: 'site1/' },
    { filter: 'raw/+', qos: 0, localPrefix: '', remotePrefix: '' },
  ]);
  assert.deepEqual(map.localFilters(), ['local/up/#', 'raw/+']);
  assert.deepEqual(map.remoteFilters(), [{ filter: 'site1/up/#', qos: 1 }, { filter: 'raw/+', qos: 0 }]);
  assert.deepEqual(map.toRemote('local/up/t1'), { topic: 'site1/up/t1', qos: 1 });
  assert.deepEqual(map.toLocal('site1/up/t1'), { topic: 'local/up/t1', qos: 1 });
  assert.deepEqual(map.toRemote('raw/x'), { topic: 'raw/x', qos: 0 });
  assert.equal(map.toRemote('other/x'), 'unmapped');
  // 'local/up/#' also matches 'local/up' (its parent); its remote name would be 'site1/up': fine.
  assert.deepEqual(map.toRemote('local/up'), { topic: 'site1/up', qos: 1 });
  // Nothing comes into the broker's own topics.
  const intoSys = new TopicMap([{ filter: '#', qos: 1, localPrefix: '', remotePrefix: '' }]);
  assert.deepEqual(intoSys.toLocal('a/b'), { topic: 'a/b', qos: 1 });
  const prefixed = new TopicMap([{ filter: '#', qos: 1, localPrefix: 'x/', remotePrefix: '' }]);
  assert.equal(prefixed.toRemote('x'), 'topic');
});

test('the outbound queue drops the oldest waiting message at its bound, in-flight ones counted', () => {
  const m = (n: number): OutboundMessage => ({ topic: `t/${n}`, payload: new Uint8Array([n]), qos: 1, retain: false, expiresAt: 0 });
  const q = new OutboundQueue(3);
  assert.equal(q.push(m(1), 0), 0);
  assert.equal(q.push(m(2), 0), 0);
  assert.equal(q.push(m(3), 0), 0);
  assert.equal(q.push(m(4), 0), 1); // t/1 went
  assert.equal(q.length, 3);
  // Two in flight: only one may wait, so t/2, t/3 and t/4 go.
  assert.equal(q.push(m(5), 2), 3);
  assert.equal(q.length, 1);
  const first = q.shift()!;
  assert.equal(first.topic, 't/5');
  // A failed send comes back to the front, before what came after.
  q.push(m(6), 1);
  q.unshift(first);
  assert.deepEqual([q.shift()?.topic, q.shift()?.topic, q.shift()], ['t/5', 't/6', undefined]);
  // Everything held is in flight: the new one is the one dropped.
  assert.equal(q.push(m(7), 3), 1);
  assert.equal(q.length, 0);
});
