// Nodes of another wire format are not joined (src/cluster/wire-format.ts): two nodes of this
// build and the test's own NATS client heartbeating as a node of an older build (no `wire` field,
// as builds before the format existed) and then of a newer one. The others list it as
// `incompatible` with its version, never as running; a frame it sends is dropped and counted, not
// routed to a subscriber; Prometheus shows both; a node of this build that comes back with
// another format leaves the running ones.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';
import { token } from '../../src/cluster/names.ts';
import { WIRE_FORMAT } from '../../src/cluster/wire-format.ts';

let nats: TestNats;
let nc: NatsConnection;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['wire-a', 'wire-b']) {
    nodes.push(await startAdminBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
  nc = await natsConnect({ servers: nats.url });
});

after(async () => {
  await nc?.close();
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

test('a node of an older format is listed incompatible, not joined; its frames are dropped and counted', async () => {
  const [a] = nodes;
  const epoch = Date.now();
  const beat = () => nc.publish('spindle.hb', JSON.stringify({ node: 'wire-old', epoch, address: '127.0.0.9:1', version: '0.0.9' }));
  beat();
  const timer = setInterval(beat, 300);
  try {
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'wire-old'), { message: 'a heard the old node' });
    const old = a.cluster!.nodes().find((n) => n.id === 'wire-old')!;
    assert.equal(old.status, 'incompatible');
    assert.equal(old.version, '0.0.9');
    assert.equal(a.cluster!.nodes().filter((n) => n.status === 'running').length, 2, 'still two running nodes');
    // The admin API lists it so too.
    const listed = (await a.api('GET', '/api/cluster/nodes')).json;
    assert.match(JSON.stringify(listed), /wire-old[^}]*incompatible|incompatible[^}]*wire-old/);
    // A frame from it is not read: a subscriber here gets nothing, the drop is counted.
    const sub = await connect(a.url, { clientId: 'wire-sub' });
    await sub.subscribeAsync('wire/#', { qos: 1 });
    const got: string[] = [];
    sub.on('message', (topic) => got.push(topic));
    const before = a.cluster!.counters.incompatibleFrames;
    nc.publish(`spindle.node.${token('wire-a')}.${token('wire-old')}`, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    await waitFor(() => a.cluster!.counters.incompatibleFrames > before, { message: 'the frame was dropped and counted' });
    assert.equal(a.cluster!.counters.badFrames, 0, 'not parsed as a bad frame: not parsed at all');
    assert.deepEqual(got, []);
    const metrics = (await a.api('GET', '/prometheus')).text;
    assert.match(metrics, /spindle_cluster_incompatible_nodes(\{[^}]*\})? 1/);
    assert.match(metrics, /spindle_cluster_incompatible_frames_total(\{[^}]*\})? [1-9]/);
    await end(sub);
  } finally {
    clearInterval(timer);
  }
});

test('a node that comes back with another format leaves the running ones, and is joined again when it matches', async () => {
  const [a] = nodes;
  const epoch = Date.now();
  let wire = WIRE_FORMAT;
  nc.subscribe(`spindle.int.sync.${token('wire-c')}`, { callback: (_e, m) => {
    m.respond(JSON.stringify({ seq: 0, epoch, filters: [] }));
  } });
  const beat = () => nc.publish('spindle.hb', JSON.stringify({ node: 'wire-c', epoch, address: '127.0.0.9:2', wire, version: 'x' }));
  beat();
  const timer = setInterval(beat, 300);
  try {
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'wire-c' && n.status === 'running'), { message: 'joined while of this format' });
    wire = WIRE_FORMAT + 1;
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'wire-c' && n.status === 'incompatible'), { message: 'left once of another format' });
    assert.equal(a.cluster!.nodes().filter((n) => n.id === 'wire-c').length, 1, 'listed once');
    wire = WIRE_FORMAT;
    await waitFor(() => a.cluster!.nodes().some((n) => n.id === 'wire-c' && n.status === 'running'), { message: 'joined again' });
  } finally {
    clearInterval(timer);
  }
});
