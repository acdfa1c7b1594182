// Delayed publish end to end on an in-process broker (LOCAL store): mqtt.js (MQTT 5) and
// mosquitto_pub (3.1.1 and 5) publish to $delayed/{seconds}/{topic}; a subscriber gets the
// message on {topic} when due (not before), with the publisher's properties and retain flag;
// malformed topics get 0x90, a topic the ACL denies 0x87 at receipt, and a message whose ACL was
// revoked meanwhile (the Mosquitto ACL file changed and reloaded) is dropped at due time; message
// expiry counts from receipt; the bound gives 0x97; the admin API lists, gets, counts and cancels
// (one and by topic, audited); the metrics count it all.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import type { MqttClient } from 'mqtt';

import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { tempDir } from '../helpers/process-broker.ts';
import { waitFor } from '../helpers/wait.ts';

const run = promisify(execFile);
const JSON_TYPE = { 'content-type': 'application/json' };

let b: AdminBroker;
let aclFile: string;
const ACL_OPEN = 'topic readwrite #\n';
before(async () => {
  aclFile = path.join(tempDir('spindle-delayed-acl-'), 'acl');
  writeFileSync(aclFile, ACL_OPEN);
  b = await startAdminBroker({
    store: { storeType: 'LOCAL' },
    auth: { aclFile, acl: [{ permission: 'deny', action: 'publish', topic: 'forbidden/#' }] },
    delayed: { maxMessages: 5, maxInterval: 3600 },
  });
});
after(async () => { await b?.stop(); });

/** The reason code of a QoS 1 PUBLISH's PUBACK (mqtt.js, MQTT 5). */
function puback(c: MqttClient, topic: string, payload: string, properties: Record<string, unknown> = {}, retain = false): Promise<number> {
  return new Promise((resolve, reject) => {
    c.publish(topic, payload, { qos: 1, retain, properties }, (err, packet) => {
      const rc = (err as { code?: number } | undefined)?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode ?? 0;
      if (err && typeof (err as { code?: unknown }).code !== 'number') reject(err);
      else resolve(rc);
    });
  });
}

async function metric(name: string): Promise<number> {
  const r = await b.api('GET', '/prometheus');
  assert.equal(r.status, 200, r.text);
  const line = r.text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return line === undefined ? NaN : Number(line.split(' ').pop());
}

test('a delayed message reaches the subscriber when due, with its properties and retain flag', async () => {
  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync('later/x', { qos: 1 });
  const pub = await connect(b.url, { protocolVersion: 5, clientId: 'delayed-pub' });
  const sentAt = Date.now();
  const rc = await puback(pub, '$delayed/2/later/x', 'hello', {
    userProperties: { k: 'v' }, contentType: 'text/plain', responseTopic: 'reply/here', correlationData: Buffer.from('c1'), payloadFormatIndicator: true,
  });
  assert.equal(rc, 0);
  const listed = await b.api('GET', '/api/delayed?topic=later/%23');
  assert.equal(listed.status, 200, listed.text);
  assert.equal(listed.json.total, 1);
  assert.equal(listed.json.data[0].topic, 'later/x');
  assert.equal(listed.json.data[0].clientId, 'delayed-pub');
  const one = await b.api('GET', `/api/delayed/${listed.json.data[0].id}`);
  assert.equal(Buffer.from(one.json.data.payload, 'base64').toString(), 'hello');

  const [m] = await nextMessages(sub, 1);
  const late = Date.now() - sentAt;
  assert.ok(late >= 1900, `delivered after ${late} ms, before it was due`);
  assert.equal(m.topic, 'later/x');
  assert.equal(m.payload, 'hello');
  const p = m.packet.properties!;
  assert.deepEqual({ ...p.userProperties }, { k: 'v' });
  assert.equal(p.contentType, 'text/plain');
  assert.equal(p.responseTopic, 'reply/here');
  assert.equal(Buffer.from(p.correlationData!).toString(), 'c1');
  assert.equal(p.payloadFormatIndicator, true);
  await waitFor(async () => (await b.api('GET', '/api/delayed/stats')).json.data.pending === 0);

  // Retained: a later subscriber gets it.
  assert.equal(await puback(pub, '$delayed/0/kept/r', 'held', {}, true), 0);
  const late2 = await connect(b.url, { protocolVersion: 5 });
  await waitFor(async () => (await b.api('GET', '/api/delayed/stats')).json.data.fired >= 2);
  const retained = nextMessages(late2, 1); // sent right after the SUBACK
  await late2.subscribeAsync('kept/r', { qos: 1 });
  const [r] = await retained;
  assert.equal(r.payload, 'held');
  assert.equal(r.packet.retain, true);
  await end(sub, pub, late2);
});

test('malformed delayed topics are refused with 0x90, denied targets with 0x87, past the bound with 0x97', async () => {
  const pub = await connect(b.url, { protocolVersion: 5 });
  for (const t of ['$delayed/x/a', '$delayed/10', '$delayed/10/', '$delayed/-1/a', '$delayed/4294968/a', '$delayed/3601/a']) {
    assert.equal(await puback(pub, t, 'p'), 0x90, t);
  }
  assert.equal(await puback(pub, '$delayed/5/forbidden/a', 'p'), 0x87);
  assert.equal(await metric('spindle_delayed_refused_total{reason="invalid"}'), 6);
  assert.equal(await metric('spindle_delayed_denied_total{at="receipt"}'), 1);

  // delayed.maxMessages = 5.
  for (let i = 0; i < 5; i++) assert.equal(await puback(pub, `$delayed/600/full/${i}`, 'p'), 0);
  assert.equal(await puback(pub, '$delayed/600/full/5', 'p'), 0x97);
  assert.equal(await metric('spindle_delayed_refused_total{reason="quota"}'), 1);
  assert.equal(await metric('spindle_delayed_pending'), 5);

  // Cancel one, then the rest by topic filter; both audited.
  const listed = await b.api('GET', '/api/delayed?topic=full/%2B&size=2&page=1');
  assert.equal(listed.json.total, 5);
  assert.equal(listed.json.data.length, 2);
  const gone = await b.api('DELETE', `/api/delayed/${listed.json.data[0].id}`, { headers: JSON_TYPE });
  assert.equal(gone.status, 200, gone.text);
  assert.equal((await b.api('GET', `/api/delayed/${listed.json.data[0].id}`)).status, 404);
  const rest = await b.api('DELETE', '/api/delayed?topic=full/%23', { headers: JSON_TYPE });
  assert.equal(rest.json.data.cancelled, 4);
  assert.equal((await b.api('DELETE', '/api/delayed?topic=a/%23/b', { headers: JSON_TYPE })).status, 400);
  assert.equal(await metric('spindle_delayed_cancelled_total'), 5);
  const audit = b.admin!.context.audit;
  await audit.flush();
  const { entries } = await audit.query({ resource: 'delayed', offset: 0, limit: 10 });
  assert.ok(entries.length >= 2); // the refused one (400) is audited too
  assert.ok(entries.some((e) => e.action === 'cancel' && e.resourceId === gone.json.data.id));
  assert.ok(JSON.stringify(entries).includes('"cancelled":4'), JSON.stringify(entries));
  await end(pub);
});

test('message expiry counts from receipt; a revoked ACL drops the message at due time', async () => {
  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync('exp/#', { qos: 1 });
  const pub = await connect(b.url, { protocolVersion: 5 });
  assert.equal(await puback(pub, '$delayed/2/exp/gone', 'x', { messageExpiryInterval: 1 }), 0);
  assert.equal(await puback(pub, '$delayed/1/exp/kept', 'y', { messageExpiryInterval: 60 }), 0);
  const [m] = await nextMessages(sub, 1);
  assert.equal(m.topic, 'exp/kept');
  // Expiry from receipt: 60 s less what it waited.
  assert.ok(m.packet.properties!.messageExpiryInterval! <= 59, String(m.packet.properties!.messageExpiryInterval));
  await waitFor(async () => (await metric('spindle_delayed_expired_total')) === 1);
  await noMessage(sub, 300);

  // ACL revoked between receipt and due time (the ACL file changed, SIGHUP's reload).
  assert.equal(await puback(pub, '$delayed/2/exp/revoked', 'z'), 0);
  writeFileSync(aclFile, 'topic read #\n');
  b.supervisor.reloadAuth();
  await waitFor(async () => (await metric('spindle_delayed_denied_total{at="due"}')) === 1);
  await noMessage(sub, 300);
  writeFileSync(aclFile, ACL_OPEN);
  b.supervisor.reloadAuth();
  await end(sub, pub);
});

test('mosquitto_pub (3.1.1 and 5) publishes a delayed message; 3.1.1 refusals are acknowledged and dropped', async () => {
  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync('mosq/#', { qos: 1 });
  const port = String(b.ports.tcp);
  await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', port, '-V', 'mqttv311', '-q', '1', '-t', '$delayed/1/mosq/v3', '-m', 'three']);
  await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', port, '-V', 'mqttv5', '-q', '1', '-t', '$delayed/1/mosq/v5', '-m', 'five', '-D', 'publish', 'user-property', 'a', 'b']);
  const got = await nextMessages(sub, 2);
  assert.deepEqual(got.map((m) => m.topic).sort(), ['mosq/v3', 'mosq/v5']);
  assert.deepEqual({ ...got.find((m) => m.topic === 'mosq/v5')!.packet.properties?.userProperties }, { a: 'b' });
  // 3.1.1: a malformed one is acknowledged (mosquitto_pub exits 0) and dropped, counted.
  const before = await metric('spindle_delayed_refused_total{reason="invalid"}');
  await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', port, '-V', 'mqttv311', '-q', '1', '-t', '$delayed/bad/mosq/x', '-m', 'bad']);
  assert.equal(await metric('spindle_delayed_refused_total{reason="invalid"}'), before + 1);
  await noMessage(sub, 300);
  await end(sub);
});
