// Commands across the cluster: a command added on one node is on every node (replicated like the
// other configuration objects) but runs on one node at a time, the holder of its lease, so each
// record comes in once; its messages reach subscribers on every node; when the node running it
// stops, another takes it over and the records sent meanwhile arrive; removed on any node, it
// stops everywhere. Against a real RabbitMQ (scripts/ensure-rabbitmq.sh).
// needs: broker, nats, rabbitmq
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { ensureRabbitMq } from '../helpers/services.ts';
import { waitFor } from '../helpers/wait.ts';
import { RABBITMQ, collect, deleteQueue, publishRabbit, runtime } from '../commands/helpers.ts';

let nats: TestNats;
const nodes: AdminBroker[] = [];
const names = ['cmd-a', 'cmd-b'];
const stopped = new Set<AdminBroker>();
const run = `${process.pid}-${Date.now()}`;

async function startNode(name: string): Promise<AdminBroker> {
  return startAdminBroker({ nodeName: name, cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` } });
}

before(async () => {
  ensureRabbitMq();
  nats = await TestNats.start();
  for (const name of names) nodes.push(await startNode(name));
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see each other' });
});

after(async () => {
  for (const n of nodes) if (!stopped.has(n)) await n.stop();
  await nats?.stop();
});

const records = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ routingKey: 'k', body: JSON.stringify({ n: from + i }) }));

test('a command added on one node runs on exactly one node; it moves when that node stops', async () => {
  const [a, b] = nodes;
  const queue = `cluster-cmd-${run}`;
  const exchange = `cluster-ex-${run}`;
  await deleteQueue(queue);
  const sub = await connect(b.url, { clientId: 'cluster-cmd-sub' });
  await sub.subscribeAsync('cmd/#', { qos: 1 });
  const got = collect(sub);
  const added = await a.api('POST', '/command/add', { body: { name: 'cluster-rabbit', type: 'RABBITMQ', config: { url: RABBITMQ, queue, exchange, routingKey: '#', declare: true, mqttTopic: 'cmd/${routingKey}', qos: 1 } } });
  assert.equal(added.status, 200, added.text);
  const id = added.json.data.id as string;
  // On both nodes; running on one, which both name.
  const states = async () => Promise.all(nodes.map((n) => runtime(n, id)));
  const [ra, rb] = await waitFor(async () => {
    const s = await states();
    return s.every((r) => typeof r.runningOn === 'string') && s.filter((r) => r.state === 'running').length === 1 && s;
  }, { message: 'the command runs on one node, and both know which' });
  assert.equal(ra.runningOn, rb.runningOn);
  const holder = nodes[names.indexOf(ra.runningOn)];
  const other = nodes.find((n) => n !== holder)!;
  assert.equal((await runtime(holder, id)).state, 'running');
  assert.equal((await runtime(other, id)).state, 'stopped');

  await publishRabbit(exchange, records(0, 20));
  await waitFor(() => got.length >= 20, { message: 'twenty records published into MQTT' });
  // Once each: a second runner would have taken some of them (and published them too).
  assert.deepEqual(got.map((m) => JSON.parse(m.payload).n), Array.from({ length: 20 }, (_, i) => i));
  assert.equal((await runtime(holder, id)).published, 20);
  assert.equal((await runtime(other, id)).published, 0);

  // The node running it stops: the other takes the lease over and consumes what came meanwhile.
  if (holder === b) {
    // Keep the subscriber on the node that stays.
    await end(sub);
  }
  const stays = other;
  const sub2 = holder === b ? await connect(stays.url, { clientId: 'cluster-cmd-sub2' }) : sub;
  if (holder === b) await sub2.subscribeAsync('cmd/#', { qos: 1 });
  const got2 = holder === b ? collect(sub2) : got;
  const before2 = got2.length;
  await holder.stop();
  stopped.add(holder);
  await publishRabbit(exchange, records(20, 30));
  await waitFor(async () => (await runtime(stays, id)).state === 'running', { timeout: 30_000, message: 'the other node runs it' });
  await waitFor(() => got2.length - before2 >= 10, { timeout: 30_000, message: 'the records sent meanwhile arrive' });
  assert.deepEqual(got2.slice(before2).map((m) => JSON.parse(m.payload).n).sort((x, y) => x - y), Array.from({ length: 10 }, (_, i) => 20 + i));
  assert.equal((await runtime(stays, id)).runningOn, names[nodes.indexOf(stays)]);

  const removed = await stays.api('POST', '/command/delete', { body: { id } });
  assert.equal(removed.status, 200, removed.text);
  await end(sub2);
  await deleteQueue(queue);
});
