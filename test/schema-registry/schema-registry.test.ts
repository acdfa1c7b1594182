// needs: broker
// The schema registry end to end on a 2-worker broker (admin API on): schemas of each type added,
// a bad one refused naming the field and the parser's message; payloads made by protobufjs from a
// .proto this test writes, by avsc, and JSON, decoded by rules (schema_decode in SELECT and
// WHERE, republished) on both workers; schema_encode; a schema check on a topic filter refusing
// a bad payload with 0x99 on v5 (mqtt.js) and dropping it on 3.1.1 (mosquitto_pub), counted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import protobuf from 'protobufjs';
import avro from 'avsc';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage } from '../helpers/broker.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';

const JSON_TYPE = { 'content-type': 'application/json' };
const dir = mkdtempSync(path.join(tmpdir(), 'spindle-schema-'));
const PROTO = `syntax = "proto3";
package demo;
message Reading {
  string sensor = 1;
  double temp = 2;
  int32 seq = 3;
}
message Other { bool on = 1; }
`;
const AVRO = { type: 'record', name: 'Reading', fields: [{ name: 'sensor', type: 'string' }, { name: 'temp', type: 'double' }] };
const JSON_SCHEMA = { type: 'object', properties: { sensor: { type: 'string' }, temp: { type: 'number' } }, required: ['sensor', 'temp'] };

let b: AdminBroker;
let urls: string[];
let Reading: protobuf.Type;
const avroType = avro.Type.forSchema(AVRO as avro.Schema);

before(async () => {
  b = await startAdminBroker();
  urls = await workerUrls(b);
  // The .proto as a file, loaded by protobufjs as a producer would.
  const file = path.join(dir, 'reading.proto');
  writeFileSync(file, PROTO);
  Reading = (await protobuf.load(file)).lookupType('demo.Reading');
});
after(() => b.stop());

async function addSchema(name: string, type: string, source: string): Promise<void> {
  const r = await b.api('POST', '/api/schemas', { body: { name, type, source } });
  assert.equal(r.status, 200, r.text);
}

async function addRule(name: string, sql: string, topic: string, payload: string): Promise<string> {
  const r = await b.api('POST', '/rule/add', { body: { name, sql, actions: [{ type: 'republish', config: { topic, payload } }] } });
  assert.equal(r.status, 200, r.text);
  const q = await b.api('POST', '/rule/query', { body: { name } });
  return q.json.data.find((x: { name: string }) => x.name === name).id as string;
}

function pb(v: Record<string, unknown>): Buffer {
  return Buffer.from(Reading.encode(Reading.create(v)).finish());
}

test('schemas are added, listed, got, replaced and deleted; a bad schema is refused naming the field and the parser message', async () => {
  await addSchema('sensor-pb', 'protobuf', PROTO);
  await addSchema('sensor-avro', 'avro', JSON.stringify(AVRO));
  await addSchema('sensor-json', 'json', JSON.stringify(JSON_SCHEMA));
  const list = await b.api('GET', '/api/schemas');
  assert.deepEqual(list.json.data.map((s: { name: string }) => s.name), ['sensor-avro', 'sensor-json', 'sensor-pb']);
  const one = await b.api('GET', '/api/schemas/sensor-pb');
  assert.equal(one.json.data.type, 'protobuf');
  assert.equal(one.json.data.by, 'admin');

  const badProto = await b.api('POST', '/api/schemas', { body: { name: 'bad', type: 'protobuf', source: 'message X { strin a = 1; }' } });
  assert.equal(badProto.status, 400);
  assert.equal(badProto.json.field, 'source', badProto.text);
  assert.match(badProto.json.message, /not a valid protobuf schema: .*strin/);
  const badAvro = await b.api('POST', '/api/schemas', { body: { name: 'bad', type: 'avro', source: '{"type":"record","name":"R","fields":[{"name":"a","type":"strnig"}]}' } });
  assert.equal(badAvro.status, 400);
  assert.match(badAvro.json.message, /not a valid avro schema: .*strnig/);
  const badJson = await b.api('POST', '/api/schemas', { body: { name: 'bad', type: 'json', source: '{"type": 12}' } });
  assert.equal(badJson.status, 400);
  assert.match(badJson.json.message, /not a valid json schema/);
  const badType = await b.api('POST', '/api/schemas', { body: { name: 'bad', type: 'xml', source: 'x' } });
  assert.equal(badType.status, 400);
  assert.match(badType.text, /type/);
  const taken = await b.api('POST', '/api/schemas', { body: { name: 'sensor-pb', type: 'json', source: '{}' } });
  assert.equal(taken.status, 409);

  await addSchema('temp', 'json', '{"type":"object"}');
  const put = await b.api('PUT', '/api/schemas/temp', { body: { type: 'json', source: '{"type":"array"}', description: 'changed' } });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.json.data.description, 'changed');
  const del = await b.api('DELETE', '/api/schemas/temp', { headers: JSON_TYPE });
  assert.equal(del.status, 200);
  assert.equal((await b.api('GET', '/api/schemas/temp')).status, 404);

  const audit = b.admin!.context.audit;
  await audit.flush();
  const { entries } = await audit.query({ resource: 'schema', offset: 0, limit: 50 });
  assert.ok(entries.some((e) => e.action === 'create' && e.resourceId === 'sensor-pb'), 'the add is audited');
  assert.ok(entries.some((e) => e.action === 'delete' && e.resourceId === 'temp'), 'the delete is audited');
});

test('try decode: a protobuf payload decodes through the API; a bad one is 400 naming why', async () => {
  const r = await b.api('POST', '/api/schemas/sensor-pb/decode', { body: { payload: pb({ sensor: 's1', temp: 21.5, seq: 3 }).toString('base64'), messageType: 'demo.Reading' } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.data, { sensor: 's1', temp: 21.5, seq: 3 });
  const noType = await b.api('POST', '/api/schemas/sensor-pb/decode', { body: { payload: 'AA==' } });
  assert.equal(noType.status, 400);
  assert.match(noType.json.message, /message type is needed/);
  const bad = await b.api('POST', '/api/schemas/sensor-json/decode', { body: { payload: '{"sensor":1}', encoding: 'text' } });
  assert.equal(bad.status, 400);
  assert.match(bad.json.message, /does not match the schema/);
});

test('rules decode protobuf, avro and JSON payloads with schema_decode in SELECT and WHERE, on both workers', async () => {
  const ids = [
    await addRule('pb', `SELECT schema_decode('sensor-pb', payload, 'demo.Reading') AS r FROM "pb/#" WHERE r.temp > 30`, 'hot/pb', '${r.sensor}:${r.temp}:${r.seq}'),
    await addRule('avro', `SELECT schema_decode('sensor-avro', payload) AS r FROM "avro/#" WHERE r.temp > 30`, 'hot/avro', '${r.sensor}:${r.temp}'),
    await addRule('json', `SELECT schema_decode('sensor-json', payload) AS r FROM "json/#" WHERE r.temp > 30`, 'hot/json', '${r.sensor}:${r.temp}'),
  ];
  const sub = await connect(b.url, { clientId: 'schema-sub' });
  await sub.subscribeAsync('hot/#', { qos: 1 });
  const pubs = await Promise.all(urls.map((u, w) => connect(u, { clientId: `schema-pub-${w}` })));
  const got = nextMessages(sub, 6);
  for (const [w, p] of pubs.entries()) {
    await p.publishAsync(`pb/${w}`, pb({ sensor: `p${w}`, temp: 10, seq: 1 }), { qos: 1 });
    await p.publishAsync(`pb/${w}`, pb({ sensor: `p${w}`, temp: 40.5, seq: 2 }), { qos: 1 });
    await p.publishAsync(`avro/${w}`, avroType.toBuffer({ sensor: `a${w}`, temp: 10 }), { qos: 1 });
    await p.publishAsync(`avro/${w}`, avroType.toBuffer({ sensor: `a${w}`, temp: 35 }), { qos: 1 });
    await p.publishAsync(`json/${w}`, JSON.stringify({ sensor: `j${w}`, temp: 1 }), { qos: 1 });
    await p.publishAsync(`json/${w}`, JSON.stringify({ sensor: `j${w}`, temp: 31 }), { qos: 1 });
  }
  const out = (await got).map((m) => `${m.topic} ${m.payload}`).sort();
  assert.deepEqual(out, ['hot/avro a0:35', 'hot/avro a1:35', 'hot/json j0:31', 'hot/json j1:31', 'hot/pb p0:40.5:2', 'hot/pb p1:40.5:2']);

  // A payload that does not decode fails the rule's row, counted as the rule engine counts failures.
  await pubs[0].publishAsync('pb/0', Buffer.from([0xff, 0xff, 0xff]), { qos: 1 });
  await pubs[1].publishAsync('json/1', 'not json', { qos: 1 });
  await noMessage(sub);
  const pbRt = await waitFor(async () => {
    const rt = await b.api('POST', '/rule/runtime', { body: { id: ids[0] } });
    return rt.json.data.failed === 1 ? rt.json.data : null;
  });
  assert.match(String(pbRt.lastError ?? pbRt.last_error ?? JSON.stringify(pbRt)), /schema_decode/);
  await waitFor(async () => (await b.api('POST', '/rule/runtime', { body: { id: ids[2] } })).json.data.failed === 1);
  for (const id of ids) await b.api('POST', '/rule/delete', { body: { id } });
  await end(sub, ...pubs);
});

test('schema_encode turns a map into the schema\'s bytes', async () => {
  await addRule('enc', `SELECT schema_encode('sensor-pb', json_decode(payload), 'demo.Reading') AS bin FROM "enc/in"`, 'enc/out', '${bin}');
  const sub = await connect(b.url, { clientId: 'enc-sub' });
  await sub.subscribeAsync('enc/out', { qos: 1 });
  const pub = await connect(urls[1], { clientId: 'enc-pub' });
  const got = new Promise<Buffer>((resolve) => sub.once('message', (_t, p) => resolve(p)));
  await pub.publishAsync('enc/in', JSON.stringify({ sensor: 'e', temp: 2.5, seq: 9 }), { qos: 1 });
  const bytes = await got;
  assert.deepEqual(Reading.toObject(Reading.decode(bytes)), { sensor: 'e', temp: 2.5, seq: 9 });
  await end(sub, pub);
});

function mosquittoPub(args: string[]): Promise<number> {
  return new Promise((resolve) => {
    execFile('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), ...args], { timeout: 10_000 }, (err) => resolve(err ? (typeof err.code === 'number' ? err.code : -1) : 0));
  });
}

test('a schema check on a topic filter refuses a bad payload: 0x99 on v5, dropped and counted on 3.1.1, on both workers', async () => {
  const bad = await b.api('POST', '/api/schema-checks', { body: { filter: 'checked/#', schema: 'sensor-pb', messageType: 'demo.Nope' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'messageType');
  const badFilter = await b.api('POST', '/api/schema-checks', { body: { filter: 'a/#/b', schema: 'sensor-pb' } });
  assert.equal(badFilter.status, 400);
  assert.equal(badFilter.json.field, 'filter');
  const r = await b.api('POST', '/api/schema-checks', { body: { filter: 'checked/#', schema: 'sensor-pb', messageType: 'demo.Reading' } });
  assert.equal(r.status, 200, r.text);
  assert.equal((await b.api('DELETE', '/api/schemas/sensor-pb', { headers: JSON_TYPE })).status, 409, 'a schema in use stays');

  const sub = await connect(b.url, { clientId: 'check-sub' });
  await sub.subscribeAsync('checked/#', { qos: 1 });
  for (const [w, u] of urls.entries()) {
    const p = await connect(u, { clientId: `check-pub-${w}`, protocolVersion: 5 });
    const good = nextMessages(sub, 1);
    await p.publishAsync(`checked/${w}`, pb({ sensor: 'ok', temp: 1, seq: w }), { qos: 1 });
    assert.equal((await good)[0].topic, `checked/${w}`);
    // A varint that runs past the end: not a Reading.
    await assert.rejects(p.publishAsync(`checked/${w}`, Buffer.from([0x08, 0xff]), { qos: 1 }), (err: Error & { code?: number }) => err.code === 0x99);
    await assert.rejects(p.publishAsync(`checked/${w}`, Buffer.from([0x08, 0xff]), { qos: 2 }), (err: Error & { code?: number }) => err.code === 0x99);
    await end(p);
  }
  await noMessage(sub);
  // MQTT 3.1.1 (mosquitto_pub): acknowledged and dropped.
  assert.equal(await mosquittoPub(['-V', 'mqttv311', '-q', '1', '-t', 'checked/v3', '-m', 'not protobuf \xff']), 0);
  await noMessage(sub);
  const metrics = await waitFor(async () => {
    const text = (await b.api('GET', '/prometheus')).text;
    return /spindle_schema_check_refused_total\{protocol="v3"\} 1\b/.test(text) ? text : null;
  });
  assert.match(metrics, /spindle_schema_check_refused_total\{protocol="v5"\} 4\b/);
  assert.match(metrics, /spindle_schema_checks 1\b/);
  // Topics the filter does not match are not checked.
  const free = nextMessages(sub, 1);
  await sub.subscribeAsync('free/#', { qos: 1 });
  assert.equal(await mosquittoPub(['-V', 'mqttv5', '-q', '1', '-t', 'free/x', '-m', 'anything']), 0);
  assert.equal((await free)[0].payload, 'anything');

  const del = await b.api('DELETE', `/api/schema-checks/${encodeURIComponent('checked/#')}`, { headers: JSON_TYPE });
  assert.equal(del.status, 200, del.text);
  const after = nextMessages(sub, 1);
  assert.equal(await mosquittoPub(['-V', 'mqttv311', '-q', '1', '-t', 'checked/v3', '-m', 'now free']), 0);
  assert.equal((await after)[0].payload, 'now free');
  await end(sub);
});
