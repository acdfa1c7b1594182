// Sparkplug B end to end on a 2-worker broker with mqtt.js clients: an edge node's NBIRTH, DBIRTH,
// NDATA and DDATA kept as its state (admin API), its death by its NDEATH will when its socket is
// cut (bdSeq matching its NBIRTH), a rebirth on an NCMD Node Control/Rebirth, the primary host's
// STATE kept retained and its will honoured, spb_decode() in a rule republishing a metric value,
// and the metrics. The payloads are encoded by protobufjs from a .proto the test writes (the
// Payload message of Eclipse Tahu's sparkplug_b.proto, with its field numbers), apart from the
// broker's own descriptor.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import protobuf from 'protobufjs';
import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';

const PROTO = `
syntax = "proto2";
package org.eclipse.tahu.protobuf;
message Payload {
  message Metric {
    optional string name = 1;
    optional uint64 alias = 2;
    optional uint64 timestamp = 3;
    optional uint32 datatype = 4;
    optional bool is_null = 7;
    oneof value {
      uint32 int_value = 10;
      uint64 long_value = 11;
      float float_value = 12;
      double double_value = 13;
      bool boolean_value = 14;
      string string_value = 15;
      bytes bytes_value = 16;
    }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
  optional string uuid = 4;
  optional bytes body = 5;
}
`;
const Payload = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('org.eclipse.tahu.protobuf.Payload');

type Metric = Record<string, unknown>;
function spb(seq: number | null, metrics: Metric[]): Buffer {
  const msg: Record<string, unknown> = { timestamp: Date.now(), metrics };
  if (seq !== null) msg.seq = seq;
  return Buffer.from(Payload.encode(Payload.fromObject(msg)).finish());
}

const INT32 = 3;
const INT64 = 4;
const UINT64 = 8;
const DOUBLE = 10;
const BOOLEAN = 11;
const STRING = 12;
const INT16_ARRAY = 23;

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ sparkplug: { maxEdgeNodes: 50 } });
});
after(() => b.stop());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function nodeOf(group: string, node: string): Promise<any> {
  const r = await b.api('GET', `/api/sparkplug/nodes/${group}/${node}`);
  return r.status === 200 ? r.json.data : undefined;
}

interface EdgeNode {
  client: MqttClient;
  bdSeq: number;
}

// An edge node as Sparkplug 3.0 has it connect: its NDEATH (with the bdSeq of the NBIRTH to come)
// as its will, then its NBIRTH.
async function edgeNode(group: string, node: string, bdSeq: number, extra: Metric[] = []): Promise<EdgeNode> {
  const client = await connect(b.url, {
    clientId: `${group}-${node}`,
    clean: true,
    will: { topic: `spBv1.0/${group}/NDEATH/${node}`, payload: spb(null, [{ name: 'bdSeq', datatype: INT64, long_value: bdSeq }]), qos: 1, retain: false },
  });
  await client.publishAsync(`spBv1.0/${group}/NBIRTH/${node}`, nbirth(bdSeq, extra), { qos: 0 });
  return { client, bdSeq };
}

function nbirth(bdSeq: number, extra: Metric[] = []): Buffer {
  return spb(0, [
    { name: 'bdSeq', datatype: INT64, long_value: bdSeq },
    { name: 'Node Control/Rebirth', alias: 1, datatype: BOOLEAN, boolean_value: false },
    { name: 'temperature', alias: 2, datatype: DOUBLE, double_value: 20.5 },
    { name: 'offset', alias: 3, datatype: INT32, int_value: (-7 >>> 0) },
    ...extra,
  ]);
}

test('NBIRTH, DBIRTH, NDATA and DDATA are kept as the edge node\'s state, read through the admin API', async () => {
  const n = await edgeNode('plant1', 'line1', 0);
  try {
    await n.client.publishAsync('spBv1.0/plant1/DBIRTH/line1/pump7', spb(1, [
      { name: 'rpm', alias: 10, datatype: INT32, int_value: 1200 },
      { name: 'label', alias: 11, datatype: STRING, string_value: 'pump seven' },
      { name: 'history', alias: 12, datatype: INT16_ARRAY, bytes_value: Buffer.from([0xff, 0xff, 0x02, 0x00]) },
      { name: 'big', alias: 13, datatype: UINT64, long_value: '18446744073709551615' },
    ]));
    await n.client.publishAsync('spBv1.0/plant1/NDATA/line1', spb(2, [{ alias: 2, datatype: DOUBLE, double_value: 22.25 }]));
    await n.client.publishAsync('spBv1.0/plant1/DDATA/line1/pump7', spb(3, [{ alias: 10, datatype: INT32, int_value: 1500 }]));

    const node = await waitFor(async () => {
      const r = await nodeOf('plant1', 'line1');
      return r?.seq === 3 && r;
    });
    assert.equal(node.online, true);
    assert.equal(node.birth.bdSeq, 0);
    assert.equal(node.birth.seq, 0);
    const byName = (ms: Metric[], name: string) => ms.find((m) => m.name === name)!;
    assert.equal(byName(node.birth.metrics, 'temperature').value, 22.25, 'NDATA by alias updates the birth metric');
    assert.equal(byName(node.birth.metrics, 'temperature').alias, 2);
    assert.equal(byName(node.birth.metrics, 'temperature').type, 'Double');
    assert.equal(byName(node.birth.metrics, 'offset').value, -7, 'Int32 is sign-extended');
    assert.ok(node.lastDataAt > 0);
    assert.equal(node.devices.length, 1);
    const dev = node.devices[0];
    assert.equal(dev.device, 'pump7');
    assert.equal(dev.online, true);
    assert.equal(byName(dev.birth.metrics, 'rpm').value, 1500, 'DDATA updates the device metric');
    assert.equal(byName(dev.birth.metrics, 'label').value, 'pump seven');
    assert.deepEqual(byName(dev.birth.metrics, 'history').value, [-1, 2], 'Int16Array unpacked little-endian');
    assert.equal(byName(dev.birth.metrics, 'big').value, '18446744073709551615', 'a UInt64 past 2^53 reads as a decimal string');

    const list = await b.api('GET', '/api/sparkplug/nodes?group=plant1&page=1&size=10');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.total, 1);
    assert.deepEqual({ node: list.json.data[0].node, online: list.json.data[0].online, devices: list.json.data[0].devices, devicesOnline: list.json.data[0].devicesOnline }, { node: 'line1', online: true, devices: 1, devicesOnline: 1 });
    const groups = await b.api('GET', '/api/sparkplug/groups');
    assert.deepEqual(groups.json.data.find((g: { group: string }) => g.group === 'plant1'), { group: 'plant1', edgeNodes: 1, online: 1 });
    const missing = await b.api('GET', '/api/sparkplug/nodes/plant1/nope');
    assert.equal(missing.status, 404);
    const bad = await b.api('GET', '/api/sparkplug/nodes?size=0');
    assert.equal(bad.status, 400, bad.text);

    await n.client.publishAsync('spBv1.0/plant1/DDEATH/line1/pump7', spb(4, []));
    await waitFor(async () => {
      const r = await nodeOf('plant1', 'line1');
      return r.devices[0].online === false && r.devices[0].death !== null;
    });
  } finally {
    await end(n.client);
  }
});

test('an edge node cut off abruptly dies by its NDEATH will: offline, with the bdSeq of its NBIRTH; its devices go offline', async () => {
  const n = await edgeNode('plant2', 'press', 41);
  await n.client.publishAsync('spBv1.0/plant2/DBIRTH/press/head', spb(1, [{ name: 'force', alias: 5, datatype: DOUBLE, double_value: 3 }]));
  await waitFor(async () => (await nodeOf('plant2', 'press'))?.devices?.[0]?.online === true);
  (n.client as unknown as { stream: { destroy(): void } }).stream.destroy(); // no DISCONNECT: the will is published
  n.client.end(true);
  const node = await waitFor(async () => {
    const r = await nodeOf('plant2', 'press');
    return r?.online === false && r;
  });
  assert.equal(node.death.bdSeq, 41);
  assert.equal(node.birth.bdSeq, 41, 'the death matches the birth');
  assert.equal(node.devices[0].online, false);
  const prom = (await b.api('GET', '/prometheus')).text;
  assert.match(prom, /spindle_sparkplug_deaths_total\{kind="node"\} [1-9]/);
  assert.match(prom, /spindle_sparkplug_edge_nodes\{state="offline"\} [1-9]/);
});

test('a stale NDEATH (an older session\'s bdSeq) leaves the node online', async () => {
  const n = await edgeNode('plant3', 'mixer', 5);
  try {
    await waitFor(async () => (await nodeOf('plant3', 'mixer'))?.online === true);
    await n.client.publishAsync('spBv1.0/plant3/NDEATH/mixer', spb(null, [{ name: 'bdSeq', datatype: INT64, long_value: 4 }]));
    await n.client.publishAsync('spBv1.0/plant3/NDATA/mixer', spb(1, [{ alias: 2, datatype: DOUBLE, double_value: 1 }]));
    const node = await waitFor(async () => {
      const r = await nodeOf('plant3', 'mixer');
      return r?.seq === 1 && r;
    });
    assert.equal(node.online, true);
    assert.equal(node.death, null);
    assert.match((await b.api('GET', '/prometheus')).text, /spindle_sparkplug_deaths_total\{kind="stale"\} [1-9]/);
  } finally {
    await end(n.client);
  }
});

test('a rebirth: NCMD Node Control/Rebirth from the host, the edge node answers a new NBIRTH, the state takes it', async () => {
  const n = await edgeNode('plant4', 'oven', 9);
  const host = await connect(b.url, { clientId: 'scada-host-4' });
  try {
    const first = await waitFor(async () => {
      const r = await nodeOf('plant4', 'oven');
      return r?.online === true && r;
    });
    await n.client.subscribeAsync('spBv1.0/plant4/NCMD/oven', { qos: 1 });
    n.client.on('message', (topic, payload) => {
      const cmd = Payload.toObject(Payload.decode(payload)) as { metrics: { name: string; boolean_value: boolean }[] };
      if (cmd.metrics.some((m) => m.name === 'Node Control/Rebirth' && m.boolean_value)) {
        void n.client.publishAsync('spBv1.0/plant4/NBIRTH/oven', nbirth(9, [{ name: 'door', alias: 4, datatype: BOOLEAN, boolean_value: true }]));
      }
    });
    await host.publishAsync('spBv1.0/plant4/NCMD/oven', spb(null, [{ name: 'Node Control/Rebirth', datatype: BOOLEAN, boolean_value: true }]), { qos: 1 });
    const reborn = await waitFor(async () => {
      const r = await nodeOf('plant4', 'oven');
      return r.birth.at >= first.birth.at && r.birth.metrics.some((m: Metric) => m.name === 'door') && r;
    });
    assert.equal(reborn.online, true);
    assert.equal(reborn.birth.bdSeq, 9);
    assert.match((await b.api('GET', '/prometheus')).text, /spindle_sparkplug_births_total\{kind="node"\} [1-9]/);
  } finally {
    await end(n.client, host);
  }
});

test('the primary host\'s STATE is kept retained and its will honoured', async () => {
  const stateTopic = 'spBv1.0/STATE/scada-1';
  const offline = JSON.stringify({ online: false, timestamp: 1 });
  const host = await connect(b.url, { clientId: 'scada-1', protocolVersion: 5, will: { topic: stateTopic, payload: Buffer.from(offline), qos: 1, retain: true } });
  await host.publishAsync(stateTopic, JSON.stringify({ online: true, timestamp: 2 }), { qos: 1, retain: true });

  const late = await connect(b.url, { clientId: 'late-1' });
  const got = nextMessages(late, 1);
  await late.subscribeAsync(stateTopic, { qos: 1 });
  const [online] = await got;
  assert.equal(online.packet.retain, true);
  assert.deepEqual(JSON.parse(online.payload), { online: true, timestamp: 2 });
  await end(late);
  await waitFor(async () => (await b.api('GET', '/api/sparkplug/hosts')).json.data.find((h: { host: string }) => h.host === 'scada-1')?.online === true);

  (host as unknown as { stream: { destroy(): void } }).stream.destroy();
  host.end(true);
  await waitFor(async () => (await b.api('GET', '/api/sparkplug/hosts')).json.data.find((h: { host: string }) => h.host === 'scada-1')?.online === false);

  // The retained will is read by a new subscriber (a fresh one per look: the STATE tap may see the
  // will before the retained store has it).
  let n = 0;
  const dead = await waitFor(async () => {
    const later = await connect(b.url, { clientId: `late-${++n + 1}` });
    try {
      const got2 = nextMessages(later, 1);
      await later.subscribeAsync(stateTopic, { qos: 1 });
      const [m] = await got2;
      return JSON.parse(m.payload).online === false && m;
    } finally {
      await end(later);
    }
  });
  assert.equal(dead.packet.retain, true, 'the will was kept retained');
  assert.deepEqual(JSON.parse(dead.payload), { online: false, timestamp: 1 });
});

test('spb_decode(payload) in a rule: WHERE on a metric and a republish of its value; a payload that is not Sparkplug is an error counted on the rule', async () => {
  const add = await b.api('POST', '/rule/add', {
    body: {
      name: 'spb-temp',
      sql: 'SELECT spb_decode(payload) AS p, p.metrics[0].value AS v, topic(4) AS node FROM "spBv1.0/+/NDATA/+" WHERE p.metrics[0].name = \'temperature\' AND p.seq > 0',
      actions: [{ type: 'republish', config: { topic: 'temps/${node}', payload: '${v}' } }],
    },
  });
  assert.equal(add.status, 200, add.text);
  const sub = await connect(b.url, { clientId: 'temps-sub' });
  const pub = await connect(b.url, { clientId: 'spb-pub' });
  try {
    await sub.subscribeAsync('temps/#', { qos: 1 });
    const got = nextMessages(sub, 1);
    await pub.publishAsync('spBv1.0/g/NDATA/other', spb(5, [{ name: 'pressure', datatype: DOUBLE, double_value: 1 }]));
    await pub.publishAsync('spBv1.0/g/NDATA/n1', spb(6, [{ name: 'temperature', datatype: DOUBLE, double_value: 71.5 }]));
    const [m] = await got;
    assert.equal(m.topic, 'temps/n1');
    assert.equal(m.payload, '71.5');

    await pub.publishAsync('spBv1.0/g/NDATA/n1', Buffer.from([0x0a, 0xff, 0xff])); // a truncated field
    const q = await b.api('POST', '/rule/query', { body: { name: 'spb-temp' } });
    const id = q.json.data.find((x: { name: string }) => x.name === 'spb-temp').id as string;
    await waitFor(async () => {
      const r = (await b.api('POST', '/rule/runtime', { body: { id } })).json.data;
      return r.failed >= 1 && /spb_decode\(\)/.test(JSON.stringify(r.lastError));
    }, { message: 'the rule counted the payload spb_decode() could not read' });
    await waitFor(async () => /spindle_sparkplug_decode_errors_total [1-9]/.test((await b.api('GET', '/prometheus')).text));
  } finally {
    await end(sub, pub);
  }
});

test('the rule test endpoint decodes nothing it cannot: spb_decode of a text payload is an error', async () => {
  const r = await b.api('POST', '/rule/test', { body: { sql: 'SELECT spb_decode(payload) AS p FROM "t"', context: { topic: 't', payload: 'hello' } } });
  assert.notEqual(r.status, 200);
});

