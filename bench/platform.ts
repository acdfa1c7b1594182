// What a control platform tenant costs on the hot path (issue 15), on one Spindle process with
// the admin API, driven by bench/loadgen, written to bench/results/platform.{json,md}:
//  1. fan-in QoS 0 as an anonymous client (no tenant): the broker's own rate;
//  2. the same fan-in by an application's clients (its app key and secret, confined to its
//     namespace, every message counted in the tenant counters every worker shares, a licence
//     with limits far above the rate): target >= 90 % of 1;
//  3. with PLATFORM_BEFORE_ROOT set to a checkout before the platform: its anonymous fan-in, so
//     1 against 3 says what the platform costs traffic that is not a tenant's (target ~100 %).
// Rounds are interleaved and the medians compared.
// Needs: make build, cargo build --release -p spindle-loadgen (make bench-platform does both).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';

const run = promisify(execFile);
const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
const ROUNDS = Number(process.env.PLATFORM_ROUNDS ?? 5);
const SECONDS = Number(process.env.PLATFORM_FANIN_SECONDS ?? 8);
const BEFORE = process.env.PLATFORM_BEFORE_ROOT;

async function fanin(s: BenchSpindle, credentials: string[] = []): Promise<number> {
  const { stdout } = await run(LOADGEN, ['throughput', '--port', String(s.port), '--topology', 'fanin', '--pubs', '10', '--qos', '0', '--window', '4096', '--warmup', '2', '--duration', String(SECONDS), '--prefix', 'fa', ...credentials], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!).rate as number;
}

const rows: Row[] = [];
const notes: string[] = [];
const s = await startBenchSpindle('platform');
const before = BEFORE ? await startBenchSpindle('platform-before', { root: BEFORE }) : null;
try {
  const org = (await s.api('/api/v1/organizations', { name: 'bench' })).data;
  const project = (await s.api('/api/v1/projects', { organizationId: org.id, name: 'p' })).data;
  const app = (await s.api('/api/v1/applications', { projectId: project.id, name: 'fleet', namespace: 'fa/#' })).data;
  await s.api('/api/v1/licenses', { organizationId: org.id, maxConnections: 1000, maxMessageRate: 100_000_000 });
  const tenant = ['--username', app.appKey, '--password', app.appSecret];
  const rates: Record<'plain' | 'tenant' | 'before', number[]> = { plain: [], tenant: [], before: [] };
  for (let round = 0; round < ROUNDS; round++) {
    rates.plain.push(await fanin(s));
    rates.tenant.push(await fanin(s, tenant));
    if (before) rates.before.push(await fanin(before));
    console.error(`round ${round}: plain ${Math.round(rates.plain[round])}, tenant ${Math.round(rates.tenant[round])}${before ? `, before ${Math.round(rates.before[round])}` : ''} msgs/s`);
  }
  const usage = (await s.api(`/api/v1/applications/${app.id}/usage`, undefined, 'GET')).data;
  const plain = median(rates.plain);
  const t = median(rates.tenant);
  rows.push({ target: 'fan-in QoS 0, anonymous clients (no tenant)', measured: Math.round(plain), unit: 'msgs/s', goal: '(baseline)', ratio: 1, met: '' });
  rows.push({ target: 'fan-in QoS 0, an application\'s clients (namespace ACL, licence counters)', measured: Math.round(t), unit: 'msgs/s', goal: '>= 90 % of anonymous', ratio: t / plain, met: t / plain >= 0.9 ? 'yes' : 'no' });
  if (before) {
    const b = median(rates.before);
    rows.push({ target: 'fan-in QoS 0, anonymous clients, the checkout before the platform', measured: Math.round(b), unit: 'msgs/s', goal: 'anonymous now ~100 % of it', ratio: plain / b, met: plain / b >= 0.95 ? 'yes' : 'no' });
  }
  notes.push(`fan-in rates per round (msgs/s): anonymous ${rates.plain.map(Math.round).join(', ')}; tenant ${rates.tenant.map(Math.round).join(', ')}${before ? `; before the platform (${BEFORE}) ${rates.before.map(Math.round).join(', ')}` : ''}.`);
  notes.push(`Messages counted for the application over all rounds: ${usage.messagesReceived.toLocaleString('en-US')} (32-bit counter); throttled ${usage.throttled}, refused outside the namespace ${usage.aclDenied}.`);
  writeResults('platform', 'Control platform: fan-in QoS 0 (10 publishers -> 1 subscriber) by a tenant\'s clients against anonymous ones', rows, notes);
} finally {
  await s.stop();
  await before?.stop();
}
