// The overview's per-node figures in a cluster, in a real browser (Debian's Chromium through
// playwright-core): two brokers clustered over the test's own nats-server, the console open on
// node a; mqtt.js clients on node b publishing and receiving; the Watch page on node a showing
// what is published on node b. The page shows both nodes'
// connections and messages in and out per second (node b's gathered through the admin queries
// across nodes), with a chart per figure; a node that leaves drops out. A broker without
// clustering shows no per-node part (single-node behaviour unchanged).
// needs: broker, nats, chromium
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import type { Browser, Page } from 'playwright-core';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end } from '../helpers/broker.ts';
import { launchBrowser, signIn } from '../helpers/browser.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
let a: AdminBroker;
let b: AdminBroker | null = null;
let browser: Browser;

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  const cluster = async () => ({ enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` });
  a = await startAdminBroker({ nodeName: 'cn-a', cluster: await cluster() });
  b = await startAdminBroker({ nodeName: 'cn-b', cluster: await cluster() });
  await waitFor(() => [a, b!].every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await b?.stop();
  await a?.stop();
  await nats?.stop();
});

const signedIn = (base: string): Promise<Page> => signIn(browser, base);

const figure = async (page: Page, node: string, column: number) => Number((await page.getByRole('region', { name: 'per node' }).locator(`tr[data-node="${node}"] td`).nth(column).innerText()).replace(/\D/g, ''));

test('the Watch page on node a shows what a client of node b publishes (a watched filter is node a\'s interest)', async () => {
  const page = await signedIn(a.base);
  const pub = await connect(b!.url, { clientId: 'watch-across-pub' });
  try {
    await page.getByRole('link', { name: 'Watch', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'connected' }).waitFor();
    const form = page.getByRole('form', { name: 'watch a topic filter' });
    await form.getByLabel('Topic filter').fill('across/+/temp');
    await form.getByRole('button', { name: 'Subscribe' }).click();
    await page.locator('li[data-filter="across/+/temp"]').waitFor();
    // The interest reaches node b within its 50 ms batching: publish until the row shows.
    const row = page.locator('tr[data-topic="across/b/temp"]');
    let n = 0;
    await waitFor(async () => {
      await pub.publishAsync('across/b/temp', `from-b-${n++}`, { qos: 0 });
      return (await row.count()) > 0;
    }, { message: 'a message published on node b shown on node a' });
    assert.match(await row.first().innerText(), /from-b-\d+/);
  } finally {
    await end(pub);
    await page.close();
  }
});

test('the Cluster page on node a: both nodes with a last seen, uptime, version, CPU, memory and connections (node b\'s from its heartbeat)', async () => {
  const page = await signedIn(a.base);
  const onB = await connect(b!.url, { clientId: 'cn-figures-b' });
  try {
    // The API: node b's figures as its heartbeat carried them, a last seen for both.
    const nodes = await waitFor(async () => {
      const list = (await a.api('GET', '/api/cluster/nodes')).json.data as { id: string; lastSeen: string; uptime?: number; rssBytes?: number; cpuPercent?: number; version?: string }[];
      return list.find((n) => n.id === 'cn-b')?.uptime !== undefined ? list : undefined;
    }, { message: 'node b\'s figures on node a' });
    for (const n of nodes) {
      assert.ok(Math.abs(Date.parse(n.lastSeen) - Date.now()) < 5000, `${n.id} last seen ${n.lastSeen}`);
      assert.ok(n.rssBytes! > 0 && n.cpuPercent! >= 0 && typeof n.version === 'string', JSON.stringify(n));
    }
    await page.getByRole('link', { name: 'Cluster' }).click();
    for (const id of ['cn-a', 'cn-b']) {
      await page.locator(`tr[data-node="${id}"]`).waitFor();
      assert.match(await page.getByTestId(`last-seen-${id}`).innerText(), id === 'cn-a' ? /now/ : /\d+ s ago/);
      assert.match(await page.getByTestId(`uptime-${id}`).innerText(), /\d+ (s|min|h|d)/);
    }
    // Connections per node, from the live samples: node b's client is counted on node b's row.
    await waitFor(async () => (await page.getByTestId('connections-cn-b').innerText()) === '1', { message: 'node b\'s row shows its one connection' });
    assert.equal(await page.getByTestId('connections-cn-a').innerText(), '0');
  } finally {
    await end(onB);
    await page.close();
  }
});

test('the overview on node a shows both nodes\' connections and messages per second, node b\'s from node b', async () => {
  const page = await signedIn(a.base);
  const onA = await connect(a.url, { clientId: 'cn-on-a' });
  const sub = await connect(b!.url, { clientId: 'cn-sub-b' });
  const pub = await connect(b!.url, { clientId: 'cn-pub-b' });
  let publishing = true;
  try {
    await sub.subscribeAsync('cn/#', { qos: 0 });
    const flow = (async () => {
      while (publishing) {
        for (let i = 0; i < 50; i++) pub.publish('cn/x', 'm');
        await new Promise((r) => setTimeout(r, 20)); // pacing: a steady rate for the charts
      }
    })();
    const perNode = page.getByRole('region', { name: 'per node' });
    await perNode.locator('tr[data-node="cn-b"]').waitFor();
    assert.match(await perNode.locator('tr[data-node="cn-a"]').innerText(), /this node/);
    // Columns: node, connections, in/s, out/s, dropped/s.
    await waitFor(async () => (await figure(page, 'cn-b', 1)) === 2, { message: 'two connections on node b' });
    await waitFor(async () => (await figure(page, 'cn-a', 1)) === 1, { message: 'one connection on node a' });
    await waitFor(async () => (await figure(page, 'cn-b', 2)) > 0, { message: 'messages in per second on node b' });
    await waitFor(async () => (await figure(page, 'cn-b', 3)) > 0, { message: 'messages out per second on node b' });
    assert.equal(await figure(page, 'cn-a', 2), 0, 'nothing published on node a');
    // A chart per figure, each with a series per node (uPlot's legend names them).
    for (const id of ['chart-node-connections', 'chart-node-in', 'chart-node-out']) {
      const chart = page.getByTestId(id);
      assert.ok(await chart.locator('canvas').count() >= 1, id);
      const legend = await chart.locator('.u-legend').innerText();
      assert.match(legend, /cn-a/, id);
      assert.match(legend, /cn-b/, id);
    }
    // The same sample on the wire: node b's part is there, nothing missing.
    const sample = await page.evaluate(() => new Promise<any>((resolve) => {
      const ws = new WebSocket(`ws://${location.host}/api/live`);
      ws.onmessage = (e) => {
        const s = JSON.parse(e.data);
        if (s.nodes?.length === 2) {
          ws.close();
          resolve(s);
        }
      };
    }));
    assert.deepEqual(sample.nodes.map((n: { node: string; self: boolean }) => [n.node, n.self]), [['cn-a', true], ['cn-b', false]]);
    assert.deepEqual(sample.nodesMissing, []);
    publishing = false;
    await flow;
    // Node b leaves: it drops out of the per-node figures.
    await end(sub, pub);
    await b!.stop();
    b = null;
    await perNode.locator('tr[data-node="cn-b"]').waitFor({ state: 'detached' });
    assert.match(await perNode.locator('tr[data-node="cn-a"]').innerText(), /this node/);
  } finally {
    publishing = false;
    await end(onA);
    await page.close();
  }
});

test('without clustering the overview has no per-node part', async () => {
  const single = await startAdminBroker();
  const page = await signedIn(single.base);
  try {
    // Wait for a live sample (the figures filled in), then look.
    await waitFor(async () => (await page.getByTestId('stat-connections').innerText()) !== '–', { message: 'a live sample shown' });
    const sample = await page.evaluate(() => new Promise<any>((resolve) => {
      const ws = new WebSocket(`ws://${location.host}/api/live`);
      ws.onmessage = (e) => {
        ws.close();
        resolve(JSON.parse(e.data));
      };
    }));
    assert.equal(sample.nodes, undefined);
    assert.equal(sample.nodesMissing, undefined);
    assert.equal(await page.getByRole('region', { name: 'per node' }).count(), 0);
  } finally {
    await page.close();
    await single.stop();
  }
});
