// needs: broker
// Flapping detection: a client id that connects more than flapping.maxCount times within
// flapping.window (over the node's workers: the count is shared) is banned by "flapping" for
// flapping.banTime, refused with 0x8A, counted, told to the rule engine ($EVENT.FLAPPING), and
// connects again once the ban ends.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, nextMessages } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { workerUrls } from '../helpers/worker-ports.ts';

let b: AdminBroker;

before(async () => {
  b = await startAdminBroker({ workers: 2, flapping: { enable: true, maxCount: 3, window: 30, banTime: 2 }, banned: { sweepInterval: 1 } });
});
after(() => b.stop());

function connackCode(clientId: string): Promise<number> {
  const client = mqtt.connect(b.url, { reconnectPeriod: 0, protocolVersion: 5, clientId });
  return new Promise<number>((resolve, reject) => {
    client.once('connect', () => resolve(0));
    client.once('error', (err: Error & { code?: number }) => (typeof err.code === 'number' ? resolve(err.code) : reject(err)));
  }).finally(() => client.end(true));
}

test('a client reconnecting maxCount + 1 times is banned for banTime, then connects again', async () => {
  // $EVENT.FLAPPING reaches the rule engine: republished where a watcher listens.
  const rule = await b.api('POST', '/rule/add', { body: { name: 'flapping-alert', sql: 'SELECT clientid, max_count, window FROM "$EVENT.FLAPPING"', actions: [{ type: 'republish', config: { topic: 'alerts/flapping', payload: '${clientid} ${max_count} ${window}', qos: 1 } }] } });
  assert.equal(rule.status, 200, rule.text);
  const watcher = await connect(b.url, { clientId: 'flapping-watcher' });
  await watcher.subscribeAsync('alerts/flapping', { qos: 1 });
  const alert = nextMessages(watcher, 1);
  // maxCount connections are allowed: no ban. They alternate between the two workers (the
  // count is the node's, not a worker's: neither worker alone sees more than 2).
  const urls = await workerUrls(b);
  assert.equal(urls.length, 2);
  for (let i = 0; i < 3; i++) (await connect(urls[i % 2], { clientId: 'flappy', protocolVersion: 5 })).end(true);
  assert.equal((await b.api('GET', '/api/banned')).json.total, 0);
  const other = await connect(b.url, { clientId: 'steady', protocolVersion: 5 });
  // The fourth goes past the limit: banned, and kicked.
  const fourth = await connect(urls[1], { clientId: 'flappy', protocolVersion: 5 });
  const closed = new Promise<void>((resolve) => fourth.once('close', () => resolve()));
  const banned = await waitFor(async () => (await b.api('GET', '/api/banned?as=clientid')).json.data.find((d: any) => d.who === 'flappy'), { timeout: 5000 });
  assert.equal(banned.by, 'flapping');
  assert.match(banned.reason, /more than 3 times within 30 s/);
  assert.ok(banned.until !== null && Date.parse(banned.until) > Date.now());
  await closed;
  assert.equal((await alert)[0].payload, 'flappy 3 30');
  watcher.end(true);
  assert.equal(await connackCode('flappy'), 0x8a);
  assert.equal(other.connected, true, 'another client id is not touched');
  other.end(true);
  const metrics = (await b.api('GET', '/prometheus')).text;
  assert.match(metrics, /spindle_flapping_bans_total 1/);
  // banTime over: connects again (and the sweep removes the ban).
  await waitFor(async () => (await connackCode('flappy')) === 0, { timeout: 6000 });
  await waitFor(async () => (await b.api('GET', '/api/banned')).json.total === 0, { timeout: 5000 });
});
