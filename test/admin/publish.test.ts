// HTTP publish (/api/publish): plain and base64 payloads reach real subscribers on either worker,
// retain is kept, MQTT 5 properties are forwarded, No Local is honoured for a clientId, and every
// bad field is a 400 that publishes nothing.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker();
});
after(() => b.stop());

test('/api/publish needs credentials (401) and the admin role (403)', async () => {
  const body = { topic: 'a/b', payload: 'x' };
  assert.equal((await b.api('POST', '/api/publish', { body, as: 'none' })).status, 401);
  const viewer = await b.api('POST', '/api/publish', { body, as: 'viewer' });
  assert.equal(viewer.status, 403);
  assert.equal(viewer.json.error, 'FORBIDDEN');
});

test('a plain payload reaches subscribers on both workers; the answer is {code: 0}', async () => {
  // Several clients: the two workers each get some (connections are spread by SO_REUSEPORT).
  const subs = await Promise.all([1, 2, 3, 4].map((i) => connect(b.url, { clientId: `pub-sub-${i}` })));
  await Promise.all(subs.map((s) => s.subscribeAsync('pub/plain/#', { qos: 1 })));
  const got = Promise.all(subs.map((s) => nextMessages(s, 1)));
  const r = await b.api('POST', '/api/publish', { body: { topic: 'pub/plain/x', payload: 'héllo', qos: 1 } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { code: 0 });
  for (const [m] of await got) {
    assert.equal(m.topic, 'pub/plain/x');
    assert.equal(m.payload, 'héllo');
    assert.equal(m.packet.qos, 1);
    assert.equal(m.packet.retain, false);
  }
  await end(...subs);
});

test('a base64 payload is decoded: binary bytes arrive as sent', async () => {
  const sub = await connect(b.url, { clientId: 'pub-b64' });
  await sub.subscribeAsync('pub/bin', { qos: 0 });
  const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80]);
  const got = new Promise<Buffer>((resolve) => sub.once('message', (_t, p) => resolve(p)));
  const r = await b.api('POST', '/api/publish', { body: { topic: 'pub/bin', payload: bytes.toString('base64'), payload_encoding: 'base64' } });
  assert.equal(r.status, 200);
  assert.deepEqual(await got, bytes);
  await end(sub);
});

test('retain: a later subscriber gets the message with RETAIN set; an empty retained payload clears it', async () => {
  const r = await b.api('POST', '/api/publish', { body: { topic: 'pub/ret', payload: 'kept', qos: 1, retain: true } });
  assert.equal(r.status, 200);
  const late = await connect(b.url, { clientId: 'pub-late' });
  const got = nextMessages(late, 1);
  await late.subscribeAsync('pub/ret', { qos: 1 });
  const [m] = await got;
  assert.equal(m.payload, 'kept');
  assert.equal(m.packet.retain, true);
  await end(late);
  assert.equal((await b.api('POST', '/api/publish', { body: { topic: 'pub/ret', payload: '', retain: true } })).status, 200);
  const later = await connect(b.url, { clientId: 'pub-later' });
  await later.subscribeAsync('pub/ret', { qos: 1 });
  await noMessage(later, 300);
  await end(later);
});

test('MQTT 5 properties are forwarded to a v5 subscriber', async () => {
  const sub = await connect(b.url, { clientId: 'pub-props', protocolVersion: 5 });
  await sub.subscribeAsync('pub/props', { qos: 0 });
  const got = nextMessages(sub, 1);
  const r = await b.api('POST', '/api/publish', { body: { topic: 'pub/props', payload: '{}', properties: { userProperties: { origin: 'http' }, contentType: 'application/json', responseTopic: 'pub/reply', messageExpiryInterval: 60 } } });
  assert.equal(r.status, 200);
  const [m] = await got;
  assert.deepEqual({ ...m.packet.properties?.userProperties }, { origin: 'http' });
  assert.equal(m.packet.properties?.contentType, 'application/json');
  assert.equal(m.packet.properties?.responseTopic, 'pub/reply');
  assert.ok((m.packet.properties?.messageExpiryInterval ?? 0) > 0 && (m.packet.properties?.messageExpiryInterval ?? 0) <= 60);
  await end(sub);
});

test('clientId publishes as that client: its No Local subscription skips the message', async () => {
  const me = await connect(b.url, { clientId: 'pub-nl', protocolVersion: 5 });
  const other = await connect(b.url, { clientId: 'pub-nl-other', protocolVersion: 5 });
  await me.subscribeAsync('pub/nl', { qos: 0, nl: true });
  await other.subscribeAsync('pub/nl', { qos: 0 });
  const otherGot = nextMessages(other, 1);
  const mine = noMessage(me, 400);
  assert.equal((await b.api('POST', '/api/publish', { body: { topic: 'pub/nl', payload: 'x', clientId: 'pub-nl' } })).status, 200);
  assert.equal((await otherGot)[0].payload, 'x');
  await mine;
  await end(me, other);
});

test('bad fields are 400 naming the field, and nothing is published', async () => {
  const sub = await connect(b.url, { clientId: 'pub-bad' });
  await sub.subscribeAsync('#', { qos: 0 });
  const silent = noMessage(sub, 600);
  const cases: [unknown, string][] = [
    [{ payload: 'x' }, 'topic'],
    [{ topic: '', payload: 'x' }, 'topic'],
    [{ topic: 'a/+', payload: 'x' }, 'topic'],
    [{ topic: 'a/#', payload: 'x' }, 'topic'],
    [{ topic: 'a/\ud800', payload: 'x' }, 'topic'],
    [{ topic: 'a\u0000b', payload: 'x' }, 'topic'],
    [{ topic: '$SYS/x', payload: 'x' }, 'topic'],
    [{ topic: 7, payload: 'x' }, 'topic'],
    [{ topic: 'a' }, 'payload'],
    [{ topic: 'a', payload: 5 }, 'payload'],
    [{ topic: 'a', payload: 'not base64!', payload_encoding: 'base64' }, 'payload'],
    [{ topic: 'a', payload: 'x', payload_encoding: 'hex' }, 'payload_encoding'],
    [{ topic: 'a', payload: 'x', qos: 3 }, 'qos'],
    [{ topic: 'a', payload: 'x', qos: '1' }, 'qos'],
    [{ topic: 'a', payload: 'x', retain: 'yes' }, 'retain'],
    [{ topic: 'a', payload: 'x', clientId: 1 }, 'clientId'],
    [{ topic: 'a', payload: 'x', extra: 1 }, 'extra'],
    [{ topic: 'a', payload: 'x', properties: { userProperties: { k: 1 } } }, 'properties.userProperties.k'],
    [{ topic: 'a', payload: 'x', properties: { messageExpiryInterval: 0 } }, 'properties.messageExpiryInterval'],
    [{ topic: 'a', payload: 'x', properties: { payloadFormatIndicator: 1 } }, 'properties.payloadFormatIndicator'],
    [{ topic: 'a', payload: 'x', properties: { responseTopic: 'a/#' } }, 'properties.responseTopic'],
  ];
  for (const [body, field] of cases) {
    const r = await b.api('POST', '/api/publish', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.field, field, JSON.stringify(body));
  }
  const junk = await b.api('POST', '/api/publish', { raw: '{"topic":' });
  assert.equal(junk.status, 400);
  await silent;
  await end(sub);
});
