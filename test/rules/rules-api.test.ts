// The rule engine end to end (spec 4.5) on a 2-worker broker with mqtt.js clients: rules apply at
// once on every worker, on add, state change and delete; WHERE filters; republish templates;
// events; loops refused or bounded; the SQL errors with their position; test without side
// effects; runtime counters and their Prometheus form; rules survive a restart.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-rules-'));
let b: AdminBroker;
let urls: string[];

before(async () => {
  b = await startAdminBroker({ dataDir });
  urls = await workerUrls(b);
});
after(() => b.stop());

async function addRule(body: Record<string, unknown>): Promise<string> {
  const r = await b.api('POST', '/rule/add', { body });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json, 'success');
  const q = await b.api('POST', '/rule/query', { body: { name: body.name } });
  const found = q.json.data.find((x: { name: string }) => x.name === body.name);
  assert.ok(found, 'the added rule is listed');
  return found.id as string;
}

test('a republish rule filters with WHERE and applies at once on both workers; disable, enable and delete apply at once', async () => {
  const id = await addRule({
    name: 'hot',
    sql: 'SELECT payload.temp AS t, clientid, topic(2) AS site FROM "plant/+/sensor" WHERE payload.temp > 30',
    actions: [{ type: 'republish', config: { topic: 'alerts/${site}', payload: '{"t":${t},"from":"${clientid}"}', qos: 1 } }],
  });
  const sub = await connect(b.url, { clientId: 'hot-sub' });
  await sub.subscribeAsync('alerts/#', { qos: 1 });
  const pubs = await Promise.all(urls.map((u, w) => connect(u, { clientId: `hot-pub-${w}` })));
  const alerts = nextMessages(sub, 2);
  for (const [w, p] of pubs.entries()) {
    await p.publishAsync(`plant/w${w}/sensor`, JSON.stringify({ temp: 20 }), { qos: 1 });
    await p.publishAsync(`plant/w${w}/sensor`, JSON.stringify({ temp: 31 + w }), { qos: 1 });
  }
  const got = await alerts;
  assert.deepEqual(got.map((m) => [m.topic, JSON.parse(m.payload)]).sort(), [
    ['alerts/w0', { t: 31, from: 'hot-pub-0' }],
    ['alerts/w1', { t: 32, from: 'hot-pub-1' }],
  ]);
  assert.equal(got[0].packet.qos, 1);

  const rt = await b.api('POST', '/rule/runtime', { body: { id } });
  assert.equal(rt.status, 200);
  assert.equal(rt.json.data.matched, 4);
  assert.equal(rt.json.data.passed, 2);
  assert.equal(rt.json.data.filtered, 2);
  assert.equal(rt.json.data.actions[0].success, 2);

  const off = await b.api('POST', '/rule/state/set', { body: { id, enabled: false } });
  assert.equal(off.status, 200);
  assert.equal(off.json.data.enabled, false);
  for (const p of pubs) await p.publishAsync('plant/x/sensor', JSON.stringify({ temp: 99 }), { qos: 1 });
  await noMessage(sub);
  assert.equal((await b.api('POST', '/rule/state/set', { body: { id, enabled: true } })).status, 200);
  const back = nextMessages(sub, 1);
  await pubs[1].publishAsync('plant/back/sensor', JSON.stringify({ temp: 50 }), { qos: 1 });
  assert.equal((await back)[0].topic, 'alerts/back');

  assert.equal((await b.api('POST', '/rule/delete', { body: { id } })).status, 200);
  for (const p of pubs) await p.publishAsync('plant/y/sensor', JSON.stringify({ temp: 99 }), { qos: 1 });
  await noMessage(sub);
  assert.equal((await b.api('POST', '/rule/runtime', { body: { id } })).status, 404);
  await end(sub, ...pubs);
});

test('disabling and enabling a rule keeps its counters and its last error', async () => {
  const id = await addRule({ name: 'kept-counts', sql: 'SELECT payload.to AS to FROM "kept/in"', actions: [{ type: 'republish', config: { topic: 'kept/out/${to}', payload: 'x' } }] });
  const pub = await connect(b.url, { clientId: 'kept-pub' });
  const runtime = async () => (await b.api('POST', '/rule/runtime', { body: { id } })).json.data;
  await pub.publishAsync('kept/in', JSON.stringify({ to: 'a' }), { qos: 1 });
  await pub.publishAsync('kept/in', JSON.stringify({ to: '#' }), { qos: 1 }); // kept/out/# is no topic name
  const before = await waitFor(async () => {
    const r = await runtime();
    return r.matched === 2 && r.republished === 1 && r.republishFailed === 1 && r.lastError !== null && r;
  }, { message: 'the rule counted both messages and the failed republish' });

  assert.equal((await b.api('POST', '/rule/state/set', { body: { id, enabled: false } })).status, 200);
  const off = await runtime();
  assert.equal(off.enabled, false);
  assert.deepEqual([off.matched, off.passed, off.republished, off.republishFailed, off.lastError, off.lastErrorAt], [2, 2, 1, 1, before.lastError, before.lastErrorAt], 'disabled: the counts and the last error stay');
  assert.deepEqual(off.actions[0], before.actions[0]);

  assert.equal((await b.api('POST', '/rule/state/set', { body: { id, enabled: true } })).status, 200);
  const on = await runtime();
  assert.deepEqual([on.matched, on.republished, on.republishFailed, on.lastError], [2, 1, 1, before.lastError], 'enabled again: still there');
  await pub.publishAsync('kept/in', JSON.stringify({ to: 'b' }), { qos: 1 });
  const after = await waitFor(async () => {
    const r = await runtime();
    return r.matched === 3 && r;
  }, { message: 'counting goes on from where it was' });
  assert.deepEqual([after.passed, after.republished, after.republishFailed, after.lastError], [3, 2, 1, before.lastError]);
  assert.equal((await b.api('POST', '/rule/delete', { body: { id } })).status, 200);
  await end(pub);
});

test('/rule/sql answers the parsed form; a syntax error is a 400 with line, column and what was expected', async () => {
  const ok = await b.api('POST', '/rule/sql', { body: { sql: 'SELECT payload.a AS a FROM "x/#", "$EVENT.CONNECT" WHERE a > 1' } });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.json.data.filters, ['x/#']);
  assert.deepEqual([...ok.json.data.events].sort(), ['CONNECT', 'PUBLISH']);
  assert.equal(ok.json.data.fields[0].alias, 'a');
  const bad = await b.api('POST', '/rule/sql', { body: { sql: 'SELECT a\nFORM "x"' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error, 'SQL_SYNTAX_ERROR');
  assert.equal(bad.json.field, 'sql');
  assert.equal(bad.json.line, 2);
  assert.equal(bad.json.column, 1);
  assert.ok(Array.isArray(bad.json.expected) && bad.json.expected.length > 0);
  const add = await b.api('POST', '/rule/add', { body: { name: 'broken', sql: 'SELECT FROM' } });
  assert.equal(add.status, 400);
  assert.equal((await b.api('POST', '/rule/query', { body: { name: 'broken' } })).json.total, 0, 'nothing is added by a refused request');
});

test('/rule/test runs on testData without side effects: the output, or why it was filtered', async () => {
  const sub = await connect(b.url, { clientId: 'test-watch' });
  await sub.subscribeAsync('#');
  const sql = 'SELECT upper(payload.name) AS n, payload.v * 2 AS double FROM "t/#" WHERE payload.v >= 10';
  const hit = await b.api('POST', '/rule/test', { body: { sql, testData: { topic: 't/1', payload: '{"name":"abc","v":21}' } } });
  assert.equal(hit.status, 200, hit.text);
  assert.deepEqual(hit.json.data, { matched: true, output: { n: 'ABC', double: 42 } });
  const filtered = await b.api('POST', '/rule/test', { body: { sql, testData: { topic: 't/1', payload: '{"v":1}' } } });
  assert.equal(filtered.json.data.matched, false);
  assert.match(filtered.json.data.reason, /WHERE/);
  const other = await b.api('POST', '/rule/test', { body: { sql, testData: { topic: 'u/1', payload: '{"v":100}' } } });
  assert.equal(other.json.data.matched, false);
  assert.match(other.json.data.reason, /matches none/);
  assert.equal((await b.api('POST', '/rule/test', { body: { sql } })).status, 400);
  await noMessage(sub);
  await end(sub);
});

test('events: CONNECT, SUBSCRIBE and CLOSE rules see their clients on either worker', async () => {
  await addRule({ name: 'ev-connect', sql: 'SELECT clientid, username FROM "$EVENT.CONNECT" WHERE clientid LIKE \'ev-%\'', actions: [{ type: 'republish', config: { topic: 'events/connect', payload: '${clientid}' } }] });
  await addRule({ name: 'ev-sub', sql: 'SELECT clientid, topic FROM "$EVENT.SUBSCRIBE" WHERE topic =~ \'watched/#\'', actions: [{ type: 'republish', config: { topic: 'events/sub', payload: '${clientid} ${topic}' } }] });
  await addRule({ name: 'ev-close', sql: 'SELECT clientid, reason FROM "$EVENT.CLOSE" WHERE clientid LIKE \'ev-%\'', actions: [{ type: 'republish', config: { topic: 'events/close', payload: '${clientid} ${reason}' } }] });
  const watch = await connect(b.url, { clientId: 'watcher' });
  await watch.subscribeAsync('events/#');
  let next = nextMessages(watch, 1);
  const c = await connect(urls[1], { clientId: 'ev-1' });
  assert.deepEqual((await next).map((m) => [m.topic, m.payload]), [['events/connect', 'ev-1']]);
  next = nextMessages(watch, 1);
  await c.subscribeAsync('watched/a');
  assert.deepEqual((await next).map((m) => [m.topic, m.payload]), [['events/sub', 'ev-1 watched/a']]);
  next = nextMessages(watch, 1);
  await end(c);
  assert.deepEqual((await next).map((m) => [m.topic, m.payload]), [['events/close', 'ev-1 normal']]);
  await end(watch);
  for (const name of ['ev-connect', 'ev-sub', 'ev-close']) {
    const q = await b.api('POST', '/rule/query', { body: { name } });
    await b.api('POST', '/rule/delete', { body: { id: q.json.data[0].id } });
  }
});

test('events: DISCONNECT, UNSUBSCRIBE, DELIVERED, ACK and DROP carry their fields', async () => {
  const rules: [string, string, string][] = [
    ['ev-disc', 'SELECT clientid, reason_code FROM "$EVENT.DISCONNECT" WHERE clientid = \'ev2-c\'', '${clientid} ${reason_code}'],
    ['ev-unsub', 'SELECT clientid, topic FROM "$EVENT.UNSUBSCRIBE" WHERE clientid = \'ev2-c\'', '${clientid} ${topic}'],
    ['ev-deliv', 'SELECT clientid, topic, qos, payload FROM "$EVENT.DELIVERED" WHERE topic =~ \'dl/#\'', '${clientid} ${topic} ${qos} ${payload}'],
    ['ev-ack', 'SELECT clientid, topic, packet_id FROM "$EVENT.ACK" WHERE topic =~ \'dl/#\'', '${clientid} ${topic}'],
    ['ev-drop', 'SELECT reason, topic, clientid FROM "$EVENT.DROP" WHERE topic =~ \'nobody/#\'', '${reason} ${topic} ${clientid}'],
  ];
  const ids: string[] = [];
  for (const [name, sql, payload] of rules) ids.push(await addRule({ name, sql, actions: [{ type: 'republish', config: { topic: `ev2/${name}`, payload } }] }));
  const watch = await connect(b.url, { clientId: 'ev2-watch' });
  await watch.subscribeAsync('ev2/#');
  const got = async (n: number, fn: () => Promise<unknown>) => {
    const next = nextMessages(watch, n);
    await fn();
    return (await next).map((m) => [m.topic, m.payload]).sort();
  };
  const c = await connect(urls[0], { clientId: 'ev2-c' });
  await c.subscribeAsync('dl/#', { qos: 1 });
  const pub = await connect(urls[1], { clientId: 'ev2-pub' });
  assert.deepEqual(await got(2, () => pub.publishAsync('dl/x', 'hello', { qos: 1 })), [
    ['ev2/ev-ack', 'ev2-c dl/x'],
    ['ev2/ev-deliv', 'ev2-c dl/x 1 hello'],
  ]);
  assert.deepEqual(await got(1, () => pub.publishAsync('nobody/here', 'x', { qos: 1 })), [['ev2/ev-drop', 'no_subscribers nobody/here ev2-pub']]);
  assert.deepEqual(await got(1, () => c.unsubscribeAsync('dl/#')), [['ev2/ev-unsub', 'ev2-c dl/#']]);
  assert.deepEqual(await got(1, () => end(c)), [['ev2/ev-disc', 'ev2-c 0']]);
  await end(watch, pub);
  for (const id of ids) await b.api('POST', '/rule/delete', { body: { id } });
});

test('loops: a constant republish topic its own FROM matches is refused; a templated loop is bounded and counted', async () => {
  const refused = await b.api('POST', '/rule/add', { body: { name: 'self', sql: 'SELECT * FROM "loop/#"', actions: [{ type: 'republish', config: { topic: 'loop/x' } }] } });
  assert.equal(refused.status, 400);
  assert.equal(refused.json.field, 'actions[0].config.topic');
  const id = await addRule({ name: 'deep', sql: 'SELECT topic FROM "deep/#"', actions: [{ type: 'republish', config: { topic: '${topic}/d', payload: 'x' } }] });
  const sub = await connect(b.url, { clientId: 'deep-sub' });
  await sub.subscribeAsync('deep/#');
  const pub = await connect(b.url, { clientId: 'deep-pub' });
  const all = nextMessages(sub, 9);
  await pub.publishAsync('deep/a', 'start', { qos: 1 });
  const got = await all;
  assert.equal(got.at(-1)!.topic, `deep/a${'/d'.repeat(8)}`);
  await noMessage(sub);
  const rt = await waitFor(async () => {
    const r = (await b.api('POST', '/rule/runtime', { body: { id } })).json.data;
    return r.actions[0].failed === 1 && r;
  });
  assert.match(rt.lastError, /loop/);
  await b.api('POST', '/rule/delete', { body: { id } });
  await end(sub, pub);
});

test('validation: unknown action type, missing fields and a source that does not exist are 400s naming the field', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ sql: 'SELECT * FROM "a"' }, 'name'],
    [{ name: 'n' }, 'sql'],
    [{ name: 'n', sql: 'SELECT * FROM "a"', actions: [{ type: 'teleport', config: {} }] }, 'actions[0].type'],
    [{ name: 'n', sql: 'SELECT * FROM "a"', actions: [{ type: 'save_postgresql', config: { source: 'nope', table: 't' } }] }, 'actions[0].config.source'],
    [{ name: 'n', sql: 'SELECT * FROM "a"', actions: [{ type: 'republish', config: {} }] }, 'actions[0].config.topic'],
  ];
  for (const [body, field] of cases) {
    const r = await b.api('POST', '/rule/add', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.field, field, r.text);
  }
  const actions = await b.api('POST', '/rule/actions', { body: {} });
  assert.deepEqual(actions.json.data.map((a: { type: string }) => a.type).sort(), ['republish', 'save_kafka', 'save_mongodb', 'save_mysql', 'save_postgresql', 'save_redis', 'webhook']);
});

test('rule metrics carry a rule label', async () => {
  const id = await addRule({ name: 'metered', sql: 'SELECT * FROM "m/#"', actions: [{ type: 'republish', config: { topic: 'metered/out' } }] });
  const pub = await connect(b.url, { clientId: 'm-pub' });
  await pub.publishAsync('m/1', 'x', { qos: 1 });
  await end(pub);
  const text = await waitFor(async () => {
    const t = (await b.api('GET', '/prometheus')).text;
    return t.includes(`spindle_rule_matched_total{rule="${id}"} 1`) && t;
  });
  assert.match(text, new RegExp(`spindle_rule_action_success_total\\{rule="${id}",action="0",type="republish"\\} 1`));
});

test('rules are kept in the store and run again after a restart', async () => {
  await addRule({ name: 'kept', sql: 'SELECT payload FROM "keep/in"', actions: [{ type: 'republish', config: { topic: 'keep/out', payload: '${payload}!' } }] });
  await b.stop();
  b = await startAdminBroker({ dataDir });
  urls = await workerUrls(b);
  const sub = await connect(b.url, { clientId: 'keep-sub' });
  await sub.subscribeAsync('keep/out');
  const pub = await connect(urls[0], { clientId: 'keep-pub' });
  const kept = nextMessages(sub, 1);
  await pub.publishAsync('keep/in', 'hello', { qos: 1 });
  assert.deepEqual((await kept).map((m) => m.payload), ['hello!']);
  await end(sub, pub);
});
