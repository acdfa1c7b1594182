// The web console's figures (issue 17), written to bench/results/console.{json,md}: the size of
// what a browser loads (dist/console, raw and gzipped), and the time to the first render of the
// overview with its first live sample, in Debian's Chromium (playwright-core), against a broker
// process of this tree: target under 1 s. Median of ROUNDS page loads, each in a fresh page of
// a signed-in browser (the session cookie set, the assets not cached: a new browser context).
// Also takes the web console's screenshots (docs/console/*.png, shown in docs/features/console.md). Needs: make build,
// scripts/ensure-system-packages.sh (make bench-console does both).
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import mqtt from 'mqtt';

import { ADMIN_PASSWORD, startBenchSpindle } from './lib/bench-spindle.ts';
import { ROOT } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';
import { launchBrowser } from '../test/helpers/browser.ts';

const ROUNDS = Number(process.env.CONSOLE_ROUNDS ?? 9);
const DIST = path.join(ROOT, 'dist/console');
const SHOTS = path.join(ROOT, 'docs/console');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

const rows: Row[] = [];
let raw = 0;
let gz = 0;
for (const f of files(DIST)) {
  const body = readFileSync(f);
  raw += body.length;
  gz += gzipSync(body).length;
  rows.push({ figure: `file ${path.relative(DIST, f)}`, value: `${(body.length / 1024).toFixed(1)} kB (${(gzipSync(body).length / 1024).toFixed(1)} kB gzipped)` });
}
rows.push({ figure: 'everything a browser loads', value: `${(raw / 1024).toFixed(1)} kB (${(gz / 1024).toFixed(1)} kB gzipped)` });

const broker = await startBenchSpindle('console');
const browser = await launchBrowser();
const clients: mqtt.MqttClient[] = [];
try {
  // Some traffic, so the overview has something to draw.
  for (let i = 0; i < 5; i++) clients.push(await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: `console-bench-${i}` }));
  await clients[0].subscribeAsync('bench/#');
  const traffic = setInterval(() => {
    for (const c of clients) for (let i = 0; i < 20; i++) c.publish('bench/x', 'm');
  }, 50);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const signIn = await context.newPage();
  await signIn.goto(`${broker.adminUrl}/`);
  await signIn.getByLabel('Password').fill(ADMIN_PASSWORD);
  await signIn.getByRole('button', { name: 'Sign in' }).click();
  await signIn.getByRole('navigation', { name: 'pages' }).waitFor();
  const cookies = await context.cookies();
  await signIn.close();
  const times: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await fresh.addCookies(cookies);
    const page = await fresh.newPage();
    const t0 = Date.now();
    await page.goto(`${broker.adminUrl}/`);
    // First render of the overview with live data: the connection count shown.
    await page.waitForFunction(() => /\d/.test(document.querySelector('[data-testid="stat-connections"]')?.textContent ?? ''));
    times.push(Date.now() - t0);
    await fresh.close();
  }
  rows.push({ figure: `first render of the overview with live data (median of ${ROUNDS})`, value: `${median(times)} ms` });
  rows.push({ figure: 'first render, slowest', value: `${Math.max(...times)} ms` });

  // The screenshots of docs/features/console.md, after a few seconds of live data.
  mkdirSync(SHOTS, { recursive: true });
  const page = await context.newPage();
  await page.goto(`${broker.adminUrl}/#/overview`);
  await page.waitForFunction(() => /(\d+) samples kept/.test(document.body.textContent ?? '') && Number(/(\d+) samples kept/.exec(document.body.textContent ?? '')![1]) >= 8);
  await page.screenshot({ path: path.join(SHOTS, 'overview.png'), fullPage: true });
  await page.goto(`${broker.adminUrl}/#/endpoints`);
  await page.locator('tbody tr').first().waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'endpoints.png'), fullPage: true });
  await page.goto(`${broker.adminUrl}/#/connections`);
  await page.locator('tbody tr').first().waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'connections.png'), fullPage: true });
  // A rule with its counters moving.
  await broker.api('/rule/add', { name: 'hot', sql: 'SELECT clientid, topic FROM "bench/#"', actions: [{ type: 'republish', config: { topic: 'seen/${clientid}', payload: '${topic}' } }] });
  await page.goto(`${broker.adminUrl}/#/rules`);
  await page.locator('tbody tr').first().waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'rules.png'), fullPage: true });
  // Watch: the traffic seen live through the admin server.
  await page.goto(`${broker.adminUrl}/#/watch`);
  await page.getByRole('status').filter({ hasText: 'connected' }).waitFor();
  const watch = page.getByRole('form', { name: 'watch a topic filter' });
  await watch.getByLabel('Topic filter').fill('bench/#');
  await watch.getByRole('button', { name: 'Subscribe' }).click();
  await page.locator('tr[data-topic="bench/x"]').nth(10).waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'watch.png'), fullPage: true });
  await page.goto(`${broker.adminUrl}/#/logs`);
  await page.getByRole('heading', { name: 'Logs' }).waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'logs.png'), fullPage: true });
  // A client's page: its connection, session, subscriptions and live traffic on them.
  await page.goto(`${broker.adminUrl}/#/clients/console-bench-0`);
  await page.getByRole('region', { name: 'live traffic' }).locator('tr[data-topic="bench/x"]').nth(5).waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'client.png'), fullPage: true });
  // A rule being edited, its SQL tested beside the editor.
  await page.goto(`${broker.adminUrl}/#/rules`);
  await page.locator('tr[data-rule="hot"]').getByRole('button', { name: 'Edit' }).click();
  const tester = page.getByRole('form', { name: 'SQL test' });
  await tester.getByLabel('Sample topic').fill('bench/x');
  await tester.getByRole('button', { name: 'Test' }).click();
  await page.getByTestId('rule-edit-test-result').waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'rule-edit.png'), fullPage: true });
  // The topic tree, opened, the traffic's level measured from it (the topic metric bench/#) with
  // its rates shown.
  for (const t of ['bench/a/temp', 'bench/b/temp', 'home/kitchen/+/state']) await clients[1].subscribeAsync(t);
  await clients[2].publishAsync('home/kitchen/lamp/state', 'on', { retain: true });
  await page.goto(`${broker.adminUrl}/#/topic-tree`);
  const tree = page.getByRole('region', { name: 'topic tree' });
  await tree.waitFor();
  await page.getByRole('button', { name: 'Expand all' }).click();
  await tree.locator('tr[data-path="bench"]').getByRole('button', { name: 'Measure rate' }).click();
  await page.waitForFunction(() => /[1-9]/.test(document.querySelector('tr[data-path="bench"] [data-col="rate-in"]')?.textContent ?? ''));
  await page.screenshot({ path: path.join(SHOTS, 'topic-tree.png'), fullPage: true });
  await page.goto(`${broker.adminUrl}/#/cluster`);
  await page.locator('td[data-testid^="uptime-"]').filter({ hasText: /\d/ }).first().waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'cluster.png'), fullPage: true });
  // Topic metrics of the traffic's filter (added from the topic tree above), after a few seconds of it.
  await page.goto(`${broker.adminUrl}/#/topic-metrics`);
  await page.locator('tr[data-filter="bench/#"]').waitFor();
  await page.waitForTimeout(3000);
  await page.screenshot({ path: path.join(SHOTS, 'topic-metrics.png'), fullPage: true });
  // A data source's form, generated from its type's schema.
  await page.goto(`${broker.adminUrl}/#/sources`);
  await page.getByRole('form', { name: 'add a data source' }).getByLabel('Type').selectOption('http');
  await page.locator('[data-field="config.url"] input').waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'source-form.png'), fullPage: true });
  // The overview in dark mode (the system's setting).
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${broker.adminUrl}/#/overview`);
  await page.waitForFunction(() => /(\d+) samples kept/.test(document.body.textContent ?? '') && Number(/(\d+) samples kept/.exec(document.body.textContent ?? '')![1]) >= 4);
  await page.screenshot({ path: path.join(SHOTS, 'overview-dark.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });
  clearInterval(traffic);
} finally {
  for (const c of clients) await c.endAsync();
  await browser.close();
  await broker.stop();
}
writeResults('console', 'Web console: size and first render (Chromium, this machine)', rows, [`target: first render under 1 s`]);
