// Exclusive subscriptions across a two-node cluster (the test's own nats-server with JetStream):
// two clients on two nodes race `$exclusive/...` at the same moment, 20 rounds, and exactly one
// is granted each time (the other refused 0x97; a client subscribing twice at once gets one answer); the holder unsubscribing or disconnecting frees
// the place for the other node's client; a persistent session's place held on a node that stops
// is freed for the other node; a session taken over on the other node (Clean Start 0) keeps its
// place there.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages, noMessage, persistent } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];
const dirB = mkdtempSync(path.join(tmpdir(), 'spindle-excl-b-'));
const nodeOptions = async (name: string) => ({
  nodeName: name, workers: 2, store: { storeType: 'LOCAL' }, ...(name === 'excl-b' ? { dataDir: dirB } : {}),
  cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
});

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  for (const name of ['excl-a', 'excl-b']) nodes.push(await startAdminBroker(await nodeOptions(name)));
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

/** The SUBACK code of one filter (mqtt.js rejects a refusal: its code is in the packet). */
async function granted(c: MqttClient, filter: string): Promise<number> {
  try {
    return (await c.subscribeAsync(filter, { qos: 1 }))[0].qos;
  } catch (err) {
    const code = (err as { packet?: { granted?: number[] } }).packet?.granted?.[0];
    if (code === undefined) throw err;
    return code;
  }
}

test('two nodes race for one place 20 times: exactly one granted each round, the other refused 0x97', async () => {
  const [a, b] = nodes;
  const ca = await connect(a.url, { protocolVersion: 5, clientId: 'race-a' });
  const cb = await connect(b.url, { protocolVersion: 5, clientId: 'race-b' });
  const winners = { a: 0, b: 0 };
  try {
    for (let round = 0; round < 20; round++) {
      const filter = `$exclusive/race/${round}/#`;
      const [ga, gb] = await Promise.all([granted(ca, filter), granted(cb, filter)]);
      assert.deepEqual([ga, gb].sort((x, y) => x - y), [1, 0x97], `round ${round}: a ${ga}, b ${gb}`);
      const [winner, loser] = ga === 1 ? [ca, cb] : [cb, ca];
      winners[ga === 1 ? 'a' : 'b']++;
      // The winner receives through it (what is published on its node: the other node learns of
      // a new filter a moment later).
      const got = nextMessages(winner, 1);
      await winner.publishAsync(`race/${round}/x`, 'm', { qos: 1 });
      assert.equal((await got)[0].payload, 'm');
      // Unsubscribed, the place is free for the other node's client.
      await winner.unsubscribeAsync(filter);
      await waitFor(async () => (await granted(loser, filter)) === 1, { message: `round ${round}: the loser takes the freed place` });
      assert.equal(await granted(winner, filter), 0x97);
      await loser.unsubscribeAsync(filter);
    }
  } finally {
    await end(ca, cb);
  }
  assert.equal(winners.a + winners.b, 20);
  const m = await a.api('GET', '/prometheus');
  assert.match(m.text, /spindle_exclusive_taken_total\{[^}]*\} [1-9]/);
  assert.match(m.text, /spindle_exclusive_refused_total\{reason="busy"[^}]*\} [1-9]/);
});

test('a client subscribing twice while its first SUBSCRIBE is decided gets the same answer twice', async () => {
  const [a, b] = nodes;
  const ca = await connect(a.url, { protocolVersion: 5, clientId: 'twice-a' });
  const cb = await connect(b.url, { protocolVersion: 5, clientId: 'twice-b' });
  try {
    for (let round = 0; round < 10; round++) {
      const filter = `$exclusive/twice/${round}`;
      const [a1, a2, gb] = await Promise.all([granted(ca, filter), granted(ca, filter), granted(cb, filter)]);
      assert.equal(a1, a2, `round ${round}: a's two answers`);
      assert.deepEqual([a1, gb].sort((x, y) => x - y), [1, 0x97], `round ${round}: a ${a1}, b ${gb}`);
    }
  } finally {
    await end(ca, cb);
  }
});

test('a holder that disconnects (clean session) frees the place for the other node', async () => {
  const [a, b] = nodes;
  const holder = await connect(a.url, { protocolVersion: 5, clientId: 'dc-holder' });
  const other = await connect(b.url, { protocolVersion: 5, clientId: 'dc-other' });
  try {
    assert.equal(await granted(holder, '$exclusive/dc/#'), 1);
    assert.equal(await granted(other, '$exclusive/dc/#'), 0x97);
    await end(holder);
    await waitFor(async () => (await granted(other, '$exclusive/dc/#')) === 1, { message: 'the other node\'s client takes the place' });
  } finally {
    await end(other);
  }
});

test('a session taken over on the other node (Clean Start 0) keeps its place there', async () => {
  const [a, b] = nodes;
  const first = await connect(a.url, persistent('mover'));
  assert.equal(await granted(first, '$exclusive/mv/#'), 1);
  const other = await connect(a.url, { protocolVersion: 5, clientId: 'mv-other' });
  const again = await connect(b.url, persistent('mover'));
  try {
    assert.equal(again.connected, true);
    // The session continued on b with its subscription and its place.
    const got = nextMessages(again, 1);
    await other.publishAsync('mv/x', 'moved', { qos: 1 });
    assert.equal((await got)[0].payload, 'moved');
    assert.equal(await granted(other, '$exclusive/mv/#'), 0x97);
    const holders = (await b.api('GET', '/api/exclusive')).json.data.holders;
    assert.deepEqual(holders.filter((h: { filter: string }) => h.filter === 'mv/#').map((h: { clientId: string }) => h.clientId), ['mover']);
  } finally {
    again.end(true);
    first.end(true);
    await end(other);
  }
});

test('a node that stops: its places are freed for the other node; started again, its persistent sessions claim them back', async () => {
  const [a, b] = nodes;
  const holder = await connect(b.url, persistent('down-holder'));
  assert.equal(await granted(holder, '$exclusive/down/#'), 1);
  holder.end(true); // offline, its session (and place) lives on b
  const keeper = await connect(b.url, persistent('rs-holder'));
  assert.equal(await granted(keeper, '$exclusive/rs/#'), 1);
  keeper.end(true);
  const other = await connect(a.url, { protocolVersion: 5, clientId: 'down-other' });
  try {
    assert.equal(await granted(other, '$exclusive/down/#'), 0x97);
    await b.stop();
    nodes.pop();
    await waitFor(async () => (await granted(other, '$exclusive/down/#')) === 1, { message: 'the place of the stopped node is freed' });
    // Freed by a, the first running node, for the node that went down.
    assert.match((await a.api('GET', '/prometheus')).text, /spindle_exclusive_cluster_places_total\{what="freed"[^}]*\} [1-9]/);
    const got = nextMessages(other, 1);
    await other.publishAsync('down/x', 'here', { qos: 1 });
    assert.equal((await got)[0].payload, 'here');

    // b again on its LOCAL store: its restored sessions claim their places; down/# is another
    // client's now (lost: the restored subscription is removed), rs/# is b's client's again.
    const again = await startAdminBroker(await nodeOptions('excl-b'));
    nodes.push(again);
    let last: unknown;
    const parts = await waitFor(async () => {
      const p = (await again.api('GET', '/api/cluster/status')).json.data.parts.exclusive;
      last = p;
      // granted: rs/# and the place of 'mover' (the test before), both b's again.
      return p?.lost === 1 && p.granted === 2 && p;
    }, { message: () => `b claims its restored places: ${JSON.stringify(last)}` });
    assert.equal(parts.busy, 1);
    assert.equal(await granted(other, '$exclusive/rs/#'), 0x97, 'the restored session on b holds rs/#');
    const holders = (await again.api('GET', '/api/exclusive')).json.data.holders.map((h: { clientId: string; filter: string }) => `${h.clientId} ${h.filter}`);
    assert.deepEqual(holders.filter((h: string) => !h.startsWith('mover ')), ['rs-holder rs/#']);
    // Back online: rs-holder receives through its place; down-holder's subscription is gone.
    const lostOne = await connect(again.url, persistent('down-holder'));
    const keptOne = await connect(again.url, persistent('rs-holder'));
    const pub = await connect(again.url, { protocolVersion: 5, clientId: 'rs-pub' });
    try {
      const kept = nextMessages(keptOne, 1);
      await pub.publishAsync('down/y', 'not for the lost one', { qos: 1 });
      await pub.publishAsync('rs/y', 'kept', { qos: 1 });
      assert.equal((await kept)[0].payload, 'kept');
      await noMessage(lostOne, 300);
    } finally {
      lostOne.end(true);
      keptOne.end(true);
      await end(pub);
    }
  } finally {
    await end(other);
  }
});
