// The Sparkplug B state across a two-node cluster (the test's own nats-server with JetStream) and
// a restart: an edge node's NBIRTH and DBIRTH published on node a are read through node b's admin
// API, its death (its will, when its socket is cut) too; node a started again on its data alone
// (no cluster) reads the state back from its LOCAL store. The payloads are encoded by protobufjs
// from the Payload message of Eclipse Tahu's sparkplug_b.proto (field numbers as published).
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import protobuf from 'protobufjs';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
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
    oneof value {
      uint32 int_value = 10;
      uint64 long_value = 11;
      double double_value = 13;
    }
  }
  optional uint64 timestamp = 1;
  repeated Metric metrics = 2;
  optional uint64 seq = 3;
}
`;
const Payload = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('org.eclipse.tahu.protobuf.Payload');
const INT32 = 3;
const INT64 = 4;
const DOUBLE = 10;

function spb(seq: number | null, metrics: Record<string, unknown>[]): Buffer {
  const msg: Record<string, unknown> = { timestamp: Date.now(), metrics };
  if (seq !== null) msg.seq = seq;
  return Buffer.from(Payload.encode(Payload.fromObject(msg)).finish());
}

let nats: TestNats;
const nodes: AdminBroker[] = [];
const dirA = mkdtempSync(path.join(tmpdir(), 'spindle-spb-a-'));

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const [name, dataDir] of [['spb-a', dirA], ['spb-b', mkdtempSync(path.join(tmpdir(), 'spindle-spb-b-'))]]) {
    nodes.push(await startAdminBroker({ nodeName: name, dataDir, workers: 1, store: { storeType: 'LOCAL' }, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function nodeOf(broker: AdminBroker, group: string, node: string): Promise<any> {
  const r = await broker.api('GET', `/api/sparkplug/nodes/${group}/${node}`);
  return r.status === 200 ? r.json.data : undefined;
}

test('a birth on node a is read on node b; so is the death by will; a restart keeps them', async () => {
  const [a, b] = nodes;
  const edge = await connect(a.url, {
    clientId: 'spb-edge',
    will: { topic: 'spBv1.0/plant9/NDEATH/edge1', payload: spb(null, [{ name: 'bdSeq', datatype: INT64, long_value: 4 }]), qos: 1, retain: false },
  });
  await edge.publishAsync('spBv1.0/plant9/NBIRTH/edge1', spb(0, [
    { name: 'bdSeq', datatype: INT64, long_value: 4 },
    { name: 'temperature', alias: 2, datatype: DOUBLE, double_value: 20.5 },
  ]), { qos: 1 });
  await edge.publishAsync('spBv1.0/plant9/DBIRTH/edge1/pump1', spb(1, [{ name: 'rpm', alias: 10, datatype: INT32, int_value: 1200 }]), { qos: 1 });

  const onB = await waitFor(async () => {
    const n = await nodeOf(b, 'plant9', 'edge1');
    return n?.devices?.length === 1 && n;
  }, { message: 'node b reads the edge node born on node a' });
  assert.equal(onB.online, true);
  assert.equal(onB.birth.bdSeq, 4);
  assert.equal(onB.birth.metrics.find((m: { name: string }) => m.name === 'temperature').value, 20.5);
  assert.equal(onB.devices[0].device, 'pump1');
  assert.equal(onB.devices[0].online, true);
  assert.equal(onB.devices[0].birth.metrics[0].value, 1200);
  const list = (await b.api('GET', '/api/sparkplug/nodes?group=plant9')).json;
  assert.equal(list.total, 1);

  // Its socket cut: the will (NDEATH, bdSeq 4) is published on a, and b reads the death.
  edge.stream.destroy();
  const dead = await waitFor(async () => {
    const n = await nodeOf(b, 'plant9', 'edge1');
    return n?.online === false && n;
  }, { message: 'node b reads the death' });
  assert.equal(dead.death.bdSeq, 4);
  assert.equal(dead.devices[0].online, false);

  // Node a alone again on its data (no cluster): the state comes back from its store.
  await a.stop();
  nodes.splice(0, 1);
  const again = await startAdminBroker({ nodeName: 'spb-a', dataDir: dirA, workers: 1, store: { storeType: 'LOCAL' } });
  nodes.push(again);
  const back = await nodeOf(again, 'plant9', 'edge1');
  assert.ok(back, 'the edge node is kept across the restart');
  assert.equal(back.online, false);
  assert.equal(back.birth.bdSeq, 4);
  assert.equal(back.death.bdSeq, 4);
  assert.equal(back.devices[0].birth.metrics[0].name, 'rpm');
  assert.match((await again.api('GET', '/prometheus')).text, /spindle_sparkplug_edge_nodes\{state="offline"[^}]*\} 1/);
});
