// End to end: a broker with a password file written by the real mosquitto_passwd and a Mosquitto
// ACL file: right and wrong passwords, publishes and subscriptions granted and denied, then both
// files rewritten and reloaded (Supervisor.reloadAuth, what SIGHUP calls) without a restart; a file
// that no longer parses is refused on reload and the old contents stay.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startBroker, connect, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';
import { rawConnect } from '../helpers/raw.ts';
import { waitFor } from '../helpers/wait.ts';
import { workerUrls } from '../helpers/worker-ports.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-mosq-'));
const passwordFile = path.join(dir, 'passwd');
const aclFile = path.join(dir, 'acl');

function passwd(...args: string[]): void {
  execFileSync('/usr/bin/mosquitto_passwd', args);
}

let broker: TestBroker;
before(async () => {
  passwd('-c', '-b', passwordFile, 'alice', 'alice-pw');
  passwd('-H', 'sha512', '-b', passwordFile, 'bob', 'bob-pw');
  writeFileSync(aclFile, [
    'user alice',
    'topic write sensors/#',
    'topic deny sensors/locked',
    'user bob',
    'topic read sensors/#',
    'pattern readwrite clients/%c/#',
    '',
  ].join('\n'));
  // Many wrong passwords from one address on purpose: no lockout (test/broker/auth-lockout.test.ts covers it).
  broker = await startBroker({ auth: { passwordFile, aclFile, allowAnonymous: false }, limits: { authMaxFailures: 0 } });
});
after(async () => { await broker.stop(); });

function code(connack: unknown, protocolVersion: 4 | 5): number | undefined {
  return (connack as { returnCode?: number; reasonCode?: number })[protocolVersion === 5 ? 'reasonCode' : 'returnCode'];
}

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: $7$ and $6$ users connect with the right password; wrong ones get CONNACK ${protocolVersion === 5 ? '0x86' : '0x04'}`, async () => {
    for (const [username, password] of [['alice', 'alice-pw'], ['bob', 'bob-pw']]) {
      const ok = await rawConnect(broker.ports.tcp!, { clientId: `ok-${username}-${protocolVersion}`, username, password }, protocolVersion);
      assert.equal(code(ok.connack, protocolVersion), 0, username);
      ok.end();
      const bad = await rawConnect(broker.ports.tcp!, { clientId: `bad-${username}-${protocolVersion}`, username, password: 'nope' }, protocolVersion);
      assert.equal(code(bad.connack, protocolVersion), protocolVersion === 5 ? 0x86 : 0x04, username);
      await bad.closed();
    }
    const unknown = await rawConnect(broker.ports.tcp!, { clientId: `who-${protocolVersion}`, username: 'mallory', password: 'x' }, protocolVersion);
    assert.equal(code(unknown.connack, protocolVersion), protocolVersion === 5 ? 0x86 : 0x04);
    await unknown.closed();
  });
}

test('v5: the ACL file grants and denies publishes and subscriptions', async () => {
  const raw = await rawConnect(broker.ports.tcp!, { clientId: 'bob-raw', username: 'bob', password: 'bob-pw' });
  raw.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'sensors/#', qos: 1 }, { topic: 'other/#', qos: 1 }, { topic: 'clients/bob-raw/#', qos: 1 }, { topic: 'clients/someone/#', qos: 1 }] });
  assert.deepEqual((await raw.next('suback') as unknown as { granted: number[] }).granted, [1, 0x87, 1, 0x87]);
  raw.end();
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'bob-sub', username: 'bob', password: 'bob-pw' });
  await sub.subscribeAsync('sensors/#', { qos: 1 });
  const pub = await rawConnect(broker.ports.tcp!, { clientId: 'alice-pub', username: 'alice', password: 'alice-pw' });
  const w = nextMessages(sub, 1);
  pub.send({ cmd: 'publish', topic: 'sensors/t1', payload: Buffer.from('21.5'), qos: 1, messageId: 1, retain: false, dup: false });
  assert.equal((await pub.next('puback') as unknown as { reasonCode?: number }).reasonCode ?? 0, 0);
  assert.deepEqual((await w).map((m) => [m.topic, m.payload]), [['sensors/t1', '21.5']]);
  pub.send({ cmd: 'publish', topic: 'sensors/locked', payload: Buffer.from('x'), qos: 1, messageId: 2, retain: false, dup: false });
  assert.equal((await pub.next('puback') as unknown as { reasonCode: number }).reasonCode, 0x87, 'deny line');
  pub.send({ cmd: 'publish', topic: 'elsewhere', payload: Buffer.from('x'), qos: 1, messageId: 3, retain: false, dup: false });
  assert.equal((await pub.next('puback') as unknown as { reasonCode: number }).reasonCode, 0x87, 'not granted');
  await noMessage(sub, 300);
  pub.end();
  await end(sub);
});

test('reloadAuth: rewritten files take effect on new connections and on existing ones; a bad file keeps the old contents', async () => {
  // alice gets a new password, carol is added; the ACL now lets alice write to news/#.
  passwd('-b', passwordFile, 'alice', 'alice-new');
  passwd('-b', passwordFile, 'carol', 'carol-pw');
  writeFileSync(aclFile, 'user alice\ntopic write news/#\nuser bob\ntopic read news/#\n');
  const before = await rawConnect(broker.ports.tcp!, { clientId: 'alice-before', username: 'alice', password: 'alice-pw' });
  assert.equal(code(before.connack, 5), 0);
  broker.supervisor.reloadAuth();
  await waitFor(async () => {
    const c = await rawConnect(broker.ports.tcp!, { clientId: 'carol-1', username: 'carol', password: 'carol-pw' });
    c.end();
    return code(c.connack, 5) === 0;
  }, { message: 'carol, added to the password file, connects' });
  // Every worker has reloaded when several connections in a row (spread over the workers) see it.
  for (let i = 0; i < 6; i++) {
    const ok = await rawConnect(broker.ports.tcp!, { clientId: `alice-new-${i}`, username: 'alice', password: 'alice-new' });
    assert.equal(code(ok.connack, 5), 0, `connection ${i}`);
    ok.end();
    const old = await rawConnect(broker.ports.tcp!, { clientId: `alice-old-${i}`, username: 'alice', password: 'alice-pw' });
    assert.equal(code(old.connack, 5), 0x86, `connection ${i}`);
    await old.closed();
  }
  // The connection made before the reload follows the new ACL (its cached decisions were dropped).
  before.send({ cmd: 'publish', topic: 'sensors/t1', payload: Buffer.from('x'), qos: 1, messageId: 1, retain: false, dup: false });
  assert.equal((await before.next('puback') as unknown as { reasonCode: number }).reasonCode, 0x87);
  before.send({ cmd: 'publish', topic: 'news/a', payload: Buffer.from('x'), qos: 1, messageId: 2, retain: false, dup: false });
  assert.ok(((await before.next('puback') as unknown as { reasonCode?: number }).reasonCode ?? 0) < 0x80, 'success (0x10: no subscribers)');
  before.end();

  // A password file that no longer parses: logged, the old users stay. The ACL file is rewritten
  // with it (carol may now write carol/#): a worker reloads the password file before the ACL
  // file, so once each worker applies the new ACL, it has tried the bad password file.
  writeFileSync(passwordFile, 'alice:not-a-hash\n');
  writeFileSync(aclFile, 'user alice\ntopic write news/#\nuser bob\ntopic read news/#\nuser carol\ntopic write carol/#\n');
  broker.supervisor.reloadAuth();
  for (const [w, url] of (await workerUrls(broker)).entries()) {
    await waitFor(async () => {
      const still = await rawConnect(Number(new URL(url).port), { clientId: `carol-2-${w}`, username: 'carol', password: 'carol-pw' });
      try {
        assert.equal(code(still.connack, 5), 0, `worker ${w}: carol is still a user`);
        still.send({ cmd: 'publish', topic: 'carol/x', payload: Buffer.from('x'), qos: 1, messageId: 1, retain: false, dup: false });
        return ((await still.next('puback') as unknown as { reasonCode?: number }).reasonCode ?? 0) < 0x80;
      } finally {
        still.end();
      }
    }, { message: `worker ${w} applies the new ACL file and keeps the old password file` });
  }
});

