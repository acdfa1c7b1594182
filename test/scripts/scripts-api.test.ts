// Scripts and extensions (spec 4.9) through the admin API, with mqtt.js clients on both workers:
// the syntax check with line and column, a script converting, moving and dropping messages
// before subscribers see them (and not touching other topics), applied at once on add, disable,
// update and delete; an endless loop and an out-of-memory cut off with the message passed on;
// kept across a restart; the example extension splitting a message, confined to extensions.dir.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-scripts-'));
const extensionsDir = fileURLToPath(new URL('../../extensions/', import.meta.url));
const settings = { dataDir, scripts: { timeout: 100, memoryLimit: 32 }, extensions: { dir: extensionsDir } };
let b: AdminBroker;
let urls: string[];
before(async () => {
  b = await startAdminBroker(settings);
  urls = await workerUrls(b);
});
after(() => b.stop());

async function addScript(name: string, content: string, topic: string): Promise<string> {
  const r = await b.api('POST', '/script/add', { body: { name, type: 'javascript', content, topic } });
  assert.equal(r.status, 200, r.text);
  return r.json.data.id as string;
}

async function runtime(kind: 'script' | 'extension', id: string) {
  const r = await b.api('POST', `/${kind}/runtime`, { body: { id } });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

test('/script/check compiles without running: valid, or the syntax error with line and column', async () => {
  const good = await b.api('POST', '/script/check', { body: { content: 'function convert(t, p) { while (true) {} }' } });
  assert.deepEqual(good.json.data, { valid: true });
  const bad = await b.api('POST', '/script/check', { body: { content: 'function convert(t, p) {\n  return p +* 1;\n}' } });
  assert.equal(bad.status, 200);
  assert.deepEqual(bad.json.data, { valid: false, message: "Unexpected token '*'", line: 2, column: 13 });
  const refused = await b.api('POST', '/script/add', { body: { name: 'broken', content: 'let x = ;' } });
  assert.equal(refused.status, 400);
  assert.equal(refused.json.field, 'content');
  assert.match(refused.json.message, /line 1, column 9/);
  const filter = await b.api('POST', '/script/add', { body: { name: 'bad-filter', content: 'function convert() {}', topic: 'a/#/b' } });
  assert.equal(filter.status, 400);
  assert.equal(filter.json.field, 'topic');
  assert.equal((await b.api('POST', '/script/query', { body: {} })).json.total, 0, 'nothing was added');
});

test('a script that declares no convert function is invalid: /script/check says so, /script/add and /script/update refuse it', async () => {
  for (const content of ['function transform(t, p) { return p; }', '// convert(topic, payload) is not here\nvar x = 1;']) {
    const check = await b.api('POST', '/script/check', { body: { content } });
    assert.equal(check.status, 200, check.text);
    assert.equal(check.json.data.valid, false, `${content}: ${check.text}`);
    assert.match(check.json.data.message, /convert\(topic, payload\)/);
    const add = await b.api('POST', '/script/add', { body: { name: 'no-convert', content } });
    assert.equal(add.status, 400, add.text);
    assert.equal(add.json.error, 'INVALID_PARAMETER');
    assert.equal(add.json.field, 'content');
    assert.match(add.json.message, /convert\(topic, payload\)/);
  }
  // Every top-level declaration form is accepted; what only the word contains is not one.
  for (const content of ['function convert(t, p) { return p; }', 'var convert = function (t, p) { return p; };', 'const convert = (t, p) => p;', 'let convert = (t, p) => p;']) {
    assert.deepEqual((await b.api('POST', '/script/check', { body: { content } })).json.data, { valid: true }, content);
  }
  assert.equal((await b.api('POST', '/script/query', { body: {} })).json.total, 0, 'nothing was added');
  const id = await addScript('has-convert', 'function convert(t, p) { return p; }', 'nc/#');
  const update = await b.api('POST', '/script/update', { body: { id, content: 'function convertir(t, p) { return p; }' } });
  assert.equal(update.status, 400, update.text);
  assert.equal(update.json.field, 'content');
  assert.equal((await b.api('POST', '/script/delete', { body: { id } })).status, 200);
});

test('a script converts, moves and drops messages before subscribers see them; other topics are untouched', async () => {
  const id = await addScript('shout', `
    function convert(topic, payload) {
      const text = payload.toString();
      if (text === 'secret') return null;
      if (topic.endsWith('/move')) return { topic: 'moved/' + text, payload: text };
      return text.toUpperCase();
    }`, 'conv/#');
  const sub = await connect(urls[1], { clientId: 'conv-sub', protocolVersion: 5 });
  await sub.subscribeAsync(['conv/#', 'moved/#', 'plain/#'], { qos: 1 });
  const pub = await connect(urls[0], { clientId: 'conv-pub', protocolVersion: 5 });
  const got = nextMessages(sub, 4);
  await pub.publishAsync('conv/a', 'hello', { qos: 1 });
  const acks: number[] = [];
  pub.on('packetreceive', (p) => {
    if (p.cmd === 'puback') acks.push(p.reasonCode ?? 0);
  });
  await pub.publishAsync('conv/a', 'secret', { qos: 1 });
  assert.deepEqual(acks, [0x10], 'a dropped message is acknowledged as one no subscriber wanted');
  await pub.publishAsync('conv/move', 'there', { qos: 1 });
  await pub.publishAsync('plain/x', 'lower', { qos: 0 });
  await pub.publishAsync('conv/b', 'last', { qos: 0 });
  assert.deepEqual((await got).map((m) => [m.topic, m.payload]).sort(), [['conv/a', 'HELLO'], ['conv/b', 'LAST'], ['moved/there', 'there'], ['plain/x', 'lower']]);
  const r = await runtime('script', id);
  assert.equal(r.messages, 4);
  assert.equal(r.converted, 3);
  assert.equal(r.dropped, 1);

  // Order on a topic is kept through the pool: 200 QoS 1 messages arrive as they were sent.
  const many = nextMessages(sub, 200);
  await Promise.all(Array.from({ length: 200 }, (_, i) => pub.publishAsync('conv/seq', `m${i}`, { qos: 1 })));
  assert.deepEqual((await many).map((m) => m.payload), Array.from({ length: 200 }, (_, i) => `M${i}`));

  // Disabled: at once, on every worker; then updated and enabled; then deleted.
  assert.equal((await b.api('POST', '/script/state', { body: { id, enabled: false } })).status, 200);
  let next = nextMessages(sub, 1);
  await pub.publishAsync('conv/a', 'quiet', { qos: 1 });
  assert.deepEqual((await next).map((m) => m.payload), ['quiet']);
  assert.equal((await b.api('POST', '/script/update', { body: { id, content: 'function convert(t, p) { return "v2:" + p; }' } })).status, 200);
  assert.equal((await b.api('POST', '/script/state', { body: { id, enabled: true } })).status, 200);
  next = nextMessages(sub, 1);
  await pub.publishAsync('conv/a', 'x', { qos: 1 });
  assert.deepEqual((await next).map((m) => m.payload), ['v2:x']);
  assert.equal((await b.api('POST', '/script/delete', { body: { id } })).status, 200);
  next = nextMessages(sub, 1);
  await pub.publishAsync('conv/a', 'raw', { qos: 1 });
  assert.deepEqual((await next).map((m) => m.payload), ['raw']);
  await end(sub, pub);
});

test('an endless loop is cut off at scripts.timeout and the message passes; the broker goes on', async () => {
  const id = await addScript('loops', 'function convert(t, p) { if (p.toString() === "spin") for (;;) {} return "ok:" + p; }', 'loop/#');
  const sub = await connect(b.url, { clientId: 'loop-sub' });
  await sub.subscribeAsync('loop/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'loop-pub' });
  const got = nextMessages(sub, 3);
  await pub.publishAsync('loop/a', 'one', { qos: 1 });
  await pub.publishAsync('loop/a', 'spin', { qos: 1 });
  await pub.publishAsync('loop/a', 'two', { qos: 1 });
  // The three may share a batch: the one that never returns takes its batch with it, the first
  // time (the script then runs with a limit per call; see stage.test.ts).
  const payloads = (await got).map((m) => m.payload);
  assert.equal(payloads[1], 'spin');
  assert.ok(payloads[0] === 'ok:one' || payloads[0] === 'one', payloads[0]);
  const r = await runtime('script', id);
  assert.ok(r.failed.timeout >= 1);
  assert.match(r.lastError, /within 100 ms|longer than 100 ms/);
  await b.api('POST', '/script/delete', { body: { id } });
  await end(sub, pub);
});

test('a script that runs out of memory ends its pool thread: the batch passes, the next messages are converted again', async () => {
  const id = await addScript('hog', 'const keep = []; function convert(t, p) { if (p.toString() === "hog") for (;;) keep.push(new Array(1e6).fill(1.5)); return "ok:" + p; }', 'hog/#');
  const sub = await connect(b.url, { clientId: 'hog-sub' });
  await sub.subscribeAsync('hog/#', { qos: 1 });
  const pub = await connect(b.url, { clientId: 'hog-pub' });
  let got = nextMessages(sub, 1);
  await pub.publishAsync('hog/a', 'hog', { qos: 1 });
  assert.deepEqual((await got).map((m) => m.payload), ['hog']);
  await waitFor(async () => (await runtime('script', id)).failed.memory >= 1, { message: 'the out-of-memory is counted' });
  got = nextMessages(sub, 1);
  await pub.publishAsync('hog/a', 'fine', { qos: 1 });
  assert.deepEqual((await got).map((m) => m.payload), ['ok:fine']);
  await b.api('POST', '/script/delete', { body: { id } });
  await end(sub, pub);
});

test('the example extension splits a JSON array into one message per reading; modules outside extensions.dir are refused', async () => {
  const outside = mkdtempSync(path.join(tmpdir(), 'spindle-ext-'));
  writeFileSync(path.join(outside, 'evil.mjs'), 'export class Evil { onMessage() {} }');
  for (const [className, pattern] of [
    [path.relative(extensionsDir, path.join(outside, 'evil.mjs')) + '#Evil', /outside extensions.dir/],
    ['split-json-array.mjs#Nope', /exports no class Nope/],
    ['missing.mjs#X', /no such module/],
    ['README.md#X', /expected a \.mjs/],
  ] as const) {
    const r = await b.api('POST', '/extension/add', { body: { name: 'refused', type: 'processor', config: { className } } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.field, 'config.className');
    assert.match(r.json.message, pattern);
  }
  const add = await b.api('POST', '/extension/add', { body: { name: 'split', type: 'processor', config: { className: 'split-json-array.mjs#SplitJsonArray', topic: 'gw/+/batch', options: { topic: 'sensors/{id}' } } } });
  assert.equal(add.status, 200, add.text);
  const id = add.json.data.id as string;
  const sub = await connect(urls[0], { clientId: 'ext-sub' });
  await sub.subscribeAsync(['sensors/#', 'gw/#'], { qos: 1 });
  const pub = await connect(urls[1], { clientId: 'ext-pub' });
  const got = nextMessages(sub, 3);
  await pub.publishAsync('gw/g1/batch', JSON.stringify([{ id: 's1', t: 21.5 }, { id: 's2', t: 19 }]), { qos: 1 });
  await pub.publishAsync('gw/g1/batch', 'not json', { qos: 1 });
  assert.deepEqual((await got).map((m) => [m.topic, m.payload]), [['sensors/s1', '{"id":"s1","t":21.5}'], ['sensors/s2', '{"id":"s2","t":19}'], ['gw/g1/batch', 'not json']]);
  const r = await runtime('extension', id);
  assert.equal(r.converted, 1);
  assert.equal(r.unchanged, 1);
  assert.equal((await b.api('POST', '/extension/query', { body: {} })).json.data[0].config.className, 'split-json-array.mjs#SplitJsonArray');
  await b.api('POST', '/extension/delete', { body: { id } });
  await noMessage(sub, 0);
  await end(sub, pub);
});

test('scripts are kept in the store and run again after a restart', async () => {
  await addScript('kept', 'function convert(t, p) { return "kept:" + p; }', 'kept/#');
  await b.stop();
  b = await startAdminBroker(settings);
  urls = await workerUrls(b);
  const sub = await connect(urls[1], { clientId: 'kept-sub' });
  await sub.subscribeAsync('kept/#');
  const pub = await connect(urls[0], { clientId: 'kept-pub' });
  const got = nextMessages(sub, 1);
  await pub.publishAsync('kept/x', 'hello', { qos: 1 });
  assert.deepEqual((await got).map((m) => m.payload), ['kept:hello']);
  await end(sub, pub);
});
