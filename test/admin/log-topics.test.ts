// Log topics (spec 4.8): add, list, delete; a message on a matching topic is written to the log
// at the log topic's level by the publishing worker, with the publisher, QoS, retain, size and a
// payload preview; other topics write nothing; a deleted log topic stops at once.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
let urls: string[];
/** Log lines the broker's threads wrote to this process's stdout, parsed. */
const lines: Record<string, unknown>[] = [];
const write = process.stdout.write.bind(process.stdout);

before(async () => {
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    for (const line of text.split('\n')) {
      if (!line.startsWith('{"time"')) continue;
      try {
        lines.push(JSON.parse(line));
      } catch {
        // not one of ours
      }
    }
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  b = await startAdminBroker({ log: { level: 'info' } });
  urls = await workerUrls(b);
});
after(async () => {
  await b.stop();
  process.stdout.write = write;
});

const logged = () => lines.filter((l) => l.msg === 'message on a log topic');

test('add, list and delete; bad input is a 400 naming the field, a duplicate a 409', async () => {
  const add = await b.api('POST', '/api/log/topic/add', { body: { topic: 'audit/#', level: 'INFO' } });
  assert.equal(add.status, 200, add.text);
  assert.equal(add.json.data.level, 'INFO');
  const list = await b.api('GET', '/api/log/topics');
  assert.deepEqual(list.json.data.map((t: { topic: string }) => t.topic), ['audit/#']);
  assert.equal((await b.api('POST', '/api/log/topic/add', { body: { topic: 'audit/#', level: 'WARN' } })).status, 409);
  for (const [body, field] of [[{ topic: 'a/#/b', level: 'INFO' }, 'topic'], [{ topic: 'a', level: 'LOUD' }, 'level'], [{ level: 'INFO' }, 'topic'], [{ topic: '$share/g/a', level: 'INFO' }, 'topic']] as const) {
    const r = await b.api('POST', '/api/log/topic/add', { body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.field, field);
  }
  assert.equal((await b.api('POST', '/api/log/topic/delete', { body: { id: add.json.data.id } })).status, 200);
  assert.equal((await b.api('POST', '/api/log/topic/delete', { body: { id: add.json.data.id } })).status, 404);
  assert.deepEqual((await b.api('GET', '/api/log/topics')).json.data, []);
});

test('messages on a log topic are logged by the publishing worker (either worker); others are not; delete stops it', async () => {
  const add = await b.api('POST', '/api/log/topic/add', { body: { topic: 'traced/+', level: 'WARN' } });
  assert.equal(add.status, 200);
  const pubs = await Promise.all(urls.map((u, w) => connect(u, { clientId: `lt-pub-${w}` })));
  await pubs[0].publishAsync('traced/a', 'hello', { qos: 1, retain: true });
  await pubs[1].publishAsync('traced/b', Buffer.from([0xff, 0x00, 0x01]), { qos: 1 });
  await pubs[1].publishAsync('untraced/c', 'no', { qos: 1 });
  await waitFor(() => logged().length >= 2);
  const [a, bb] = [logged().find((l) => l.topic === 'traced/a')!, logged().find((l) => l.topic === 'traced/b')!];
  assert.equal(a.level, 'warn');
  assert.deepEqual([a.clientId, a.qos, a.retain, a.size, a.payload, a.logTopic], ['lt-pub-0', 1, true, 5, 'hello', 'traced/+']);
  assert.deepEqual([bb.clientId, bb.payload, bb.payloadEncoding], ['lt-pub-1', Buffer.from([0xff, 0x00, 0x01]).toString('base64'), 'base64']);
  assert.equal(logged().filter((l) => l.topic === 'untraced/c').length, 0);
  await b.api('POST', '/api/log/topic/delete', { body: { id: add.json.data.id } });
  const before = logged().length;
  await pubs[0].publishAsync('traced/a', 'after', { qos: 1 });
  // A marker on another log topic, published after: once it is logged, the first was not.
  await b.api('POST', '/api/log/topic/add', { body: { topic: 'marker', level: 'WARN' } });
  await pubs[0].publishAsync('marker', 'm', { qos: 1 });
  await waitFor(() => logged().some((l) => l.topic === 'marker'));
  assert.equal(logged().length, before + 1);
  await end(...pubs);
});

const traced = (clientId: string) => lines.filter((l) => l.msg === 'trace' && l.trace === clientId);

test('client tracing: every packet of the traced client id is logged, in and out, until the trace is stopped; others are not', async () => {
  const add = await b.api('POST', '/api/log/trace/add', { body: { clientId: 'tr-1', duration: 60 } });
  assert.equal(add.status, 200, add.text);
  assert.deepEqual((await b.api('GET', '/api/log/traces')).json.data.map((t: { clientId: string }) => t.clientId), ['tr-1']);
  const c = await connect(urls[1], { clientId: 'tr-1', protocolVersion: 5 });
  const other = await connect(urls[1], { clientId: 'tr-2' });
  await c.subscribeAsync('tr/#', { qos: 1 });
  await other.publishAsync('tr/x', 'payload-1', { qos: 1 });
  await waitFor(() => traced('tr-1').some((l) => l.packet === 'PUBACK' && l.direction === 'in'));
  const seen = traced('tr-1').map((l) => `${l.direction} ${l.packet}`);
  for (const p of ['in CONNECT', 'in SUBSCRIBE', 'out SUBACK', 'out PUBLISH', 'in PUBACK']) assert.ok(seen.includes(p), `${p} in ${seen.join(', ')}`);
  const pub = traced('tr-1').find((l) => l.packet === 'PUBLISH')!;
  assert.deepEqual([pub.topic, pub.qos, pub.payload], ['tr/x', 1, Buffer.from('payload-1').toString('base64')]);
  assert.equal(traced('tr-2').length, 0);
  assert.equal((await b.api('POST', '/api/log/trace/delete', { body: { clientId: 'tr-1' } })).status, 200);
  const count = traced('tr-1').length;
  await c.publishAsync('elsewhere', 'x', { qos: 1 });
  // Tracing tr-2 now applies to its open connection at once; its packet is the marker.
  await b.api('POST', '/api/log/trace/add', { body: { clientId: 'tr-2', duration: 60 } });
  await other.publishAsync('elsewhere', 'y', { qos: 1 });
  await waitFor(() => traced('tr-2').some((l) => l.packet === 'PUBLISH'));
  assert.equal(traced('tr-1').length, count, 'nothing traced after the stop');
  assert.equal((await b.api('POST', '/api/log/trace/add', { body: { clientId: 'x', duration: 0 } })).status, 400);
  assert.equal((await b.api('POST', '/api/log/trace/delete', { body: { clientId: 'nobody' } })).status, 404);
  await end(c, other);
});
