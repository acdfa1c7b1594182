// NATS stopped under a running cluster: every node goes on serving its own clients (a CONNECT does
// not wait for the others), counts the loss, marks the others down; when NATS is back the nodes
// find each other again and messages cross as before.
// needs: broker, nats
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, end, nextMessages, type TestBroker } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
const nodes: TestBroker[] = [];

before(async () => {
  nats = await TestNats.start();
  for (const name of ['down-a', 'down-b']) {
    nodes.push(await startBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().every((x) => x.status === 'running') && n.cluster!.nodes().length === 2), { message: 'both nodes see each other' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await nats?.stop();
});

async function crosses(from: TestBroker, to: TestBroker, topic: string): Promise<void> {
  const sub = await connect(to.url);
  await sub.subscribeAsync(topic, { qos: 1 });
  const pub = await connect(from.url);
  await waitFor(async () => {
    const got = nextMessages(sub, 1, 500).catch(() => null);
    pub.publish(topic, 'x', { qos: 1 });
    return (await got) !== null;
  }, { message: `${topic} crosses` });
  await end(sub, pub);
}

test('NATS stopped: each node serves its own clients; NATS back: the cluster heals', async () => {
  const [a, b] = nodes;
  await crosses(a, b, 'heal/before');
  await nats.stop();
  await waitFor(() => a.cluster!.counters.natsDisconnects >= 1 && b.cluster!.counters.natsDisconnects >= 1, { message: 'the loss counted' });
  await waitFor(() => a.cluster!.nodes().find((n) => n.id === 'down-b')?.status === 'down', { timeout: 15_000, message: 'b marked down on a' });

  // Local traffic goes on, and a CONNECT (which asks the other nodes when they are reachable)
  // is answered at once.
  const started = Date.now();
  const sub = await connect(a.url, { clientId: 'while-down', clean: false, protocolVersion: 5, properties: { sessionExpiryInterval: 60 } });
  assert.ok(Date.now() - started < 2000, `CONNECT took ${Date.now() - started} ms`);
  await sub.subscribeAsync('heal/local', { qos: 1 });
  const pub = await connect(a.url);
  const got = nextMessages(sub, 3);
  for (let i = 0; i < 3; i++) await pub.publishAsync('heal/local', String(i), { qos: 1 });
  assert.deepEqual((await got).map((m) => m.payload), ['0', '1', '2']);
  await end(sub, pub);

  await nats.restart();
  await waitFor(() => a.cluster!.counters.natsReconnects >= 1 && b.cluster!.counters.natsReconnects >= 1, { timeout: 20_000, message: 'both reconnected' });
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().every((x) => x.status === 'running')), { timeout: 15_000, message: 'both running again' });
  await crosses(a, b, 'heal/after');
  await crosses(b, a, 'heal/back');
});
