// The cluster's figures (issue 16), driven by bench/loadgen, written to
// bench/results/cluster.{json,md}. Two Spindle nodes (a, b) on one NATS (a nats-server of the
// bench's own), and one node with clustering off, all on this machine:
//  1. local-only fan-in QoS 0 on node a (b has a subscriber elsewhere, so a holds remote interest
//     that this traffic does not match) against the node without a cluster: target >= 95 %;
//  2. fan-in QoS 0 across nodes: 10 publishers on a, 1 subscriber on b (msgs/s);
//  3. fan-out QoS 0 across nodes: 1 publisher on a, 10 subscribers on b (deliveries/s);
//  4. latency across nodes (publisher on a, subscriber on b) against on one node, p50/p99, QoS 0
//     at 5,000 msgs/s;
//  4b. fan-in QoS 1 across nodes, and latency QoS 1 across nodes (QoS 1/2 messages cross through
//     a JetStream stream, their PUBACK waiting for NATS to store them);
//  5. connection rate (CONNECT to CONNACK and close, 64 at a time) on node a, where every CONNECT
//     first asks node b for its client id, against the node without a cluster.
// Rounds of 1 are interleaved and medians compared. Needs: make build, cargo build --release -p
// spindle-loadgen, scripts/ensure-nats.sh (make bench-cluster does all three).
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { startBenchSpindle, type BenchSpindle } from './lib/bench-spindle.ts';
import { ROOT, freePort } from './lib/compare-brokers.ts';
import { writeResults, median, type Row } from './lib/report.ts';
import { findNatsServer } from '../src/cluster/nats-process.ts';

const run = promisify(execFile);
const LOADGEN = path.join(ROOT, 'target/release/spindle-loadgen');
const ROUNDS = Number(process.env.CLUSTER_ROUNDS ?? 5);
const SECONDS = Number(process.env.CLUSTER_SECONDS ?? 6);

async function loadgen(args: string[]): Promise<any> {
  const { stdout } = await run(LOADGEN, args, { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

const natsPort = await freePort();
const nats = spawn(findNatsServer(''), ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', mkdtempSync(path.join(os.tmpdir(), 'bench-nats-'))], { stdio: 'ignore' });
for (let i = 0; i < 100; i++) {
  const up = await new Promise<boolean>((resolve) => {
    const s = net.connect(natsPort, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
  if (up) break;
  await new Promise((r) => setTimeout(r, 100));
}
const clusterEnv = async (name: string) => ({
  SPINDLE_NODE_NAME: name, SPINDLE_CLUSTER_ENABLED: 'true', SPINDLE_CLUSTER_NATS_URL: `nats://127.0.0.1:${natsPort}`,
  SPINDLE_CLUSTER_LOCAL_ADDRESS: `127.0.0.1:${await freePort()}`,
});
const nodes: BenchSpindle[] = [];
const rows: Row[] = [];
const notes: string[] = [];
try {
  const a = await startBenchSpindle('cluster-a', { env: await clusterEnv('a') });
  nodes.push(a);
  const b = await startBenchSpindle('cluster-b', { env: await clusterEnv('b') });
  nodes.push(b);
  const off = await startBenchSpindle('cluster-off');
  nodes.push(off);
  // Remote interest a holds but the local-only traffic does not match.
  const elsewhere = spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(b.port), '-t', 'elsewhere/#'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1500));
  const fanin = (port: number, prefix: string, extra: string[] = [], qos = 0) => loadgen(['throughput', '--port', String(port), '--topology', 'fanin', '--pubs', '10', '--qos', String(qos), '--window', '4096', '--warmup', '2', '--duration', String(SECONDS), '--prefix', prefix, ...extra]);
  const fanout = (port: number, prefix: string, extra: string[] = []) => loadgen(['throughput', '--port', String(port), '--topology', 'fanout', '--subs', '10', '--qos', '0', '--window', '4096', '--warmup', '2', '--duration', String(SECONDS), '--prefix', prefix, ...extra]);
  const latency = (port: number, prefix: string, extra: string[] = [], qos = 0) => loadgen(['latency', '--port', String(port), '--rate', '5000', '--qos', String(qos), '--warmup', '2', '--duration', String(SECONDS), '--prefix', prefix, ...extra]);
  const connrate = (port: number) => loadgen(['connrate', '--port', String(port), '--concurrency', '64', '--warmup', '2', '--duration', String(SECONDS)]);
  const r: Record<string, number[]> = { connOff: [], connOn: [], off: [], local: [], crossIn: [], crossOut: [], latLocalP50: [], latLocalP99: [], latCrossP50: [], latCrossP99: [], crossIn1: [], latCross1P99: [] };
  for (let round = 0; round < ROUNDS; round++) {
    r.off.push((await fanin(off.port, `off${round}`)).rate);
    r.local.push((await fanin(a.port, `loc${round}`)).rate);
    r.crossIn.push((await fanin(a.port, `xin${round}`, ['--sub-port', String(b.port), '--settle', '500'])).rate);
    r.crossOut.push((await fanout(a.port, `xout${round}`, ['--sub-port', String(b.port), '--settle', '500'])).rate);
    const ll = await latency(a.port, `ll${round}`);
    const lc = await latency(a.port, `lc${round}`, ['--sub-port', String(b.port)]);
    r.crossIn1.push((await fanin(a.port, `xq${round}`, ['--sub-port', String(b.port), '--settle', '500'], 1)).rate);
    r.latCross1P99.push((await latency(a.port, `lq${round}`, ['--sub-port', String(b.port)], 1)).p99);
    r.connOff.push((await connrate(off.port)).rate);
    r.connOn.push((await connrate(a.port)).rate);
    r.latLocalP50.push(ll.p50); r.latLocalP99.push(ll.p99); r.latCrossP50.push(lc.p50); r.latCrossP99.push(lc.p99);
    console.error(`round ${round}: off ${Math.round(r.off[round])}, local ${Math.round(r.local[round])}, cross fan-in ${Math.round(r.crossIn[round])}, cross fan-out ${Math.round(r.crossOut[round])} msgs/s, cross fan-in QoS 1 ${Math.round(r.crossIn1[round])} msgs/s (p99 ${r.latCross1P99[round]} µs); latency p99 local ${ll.p99} µs, cross ${lc.p99} µs; connections/s off ${Math.round(r.connOff[round])}, on ${Math.round(r.connOn[round])}`);
  }
  elsewhere.kill();
  const m = (k: string) => median(r[k]);
  rows.push({ target: 'fan-in QoS 0, clustering off', measured: Math.round(m('off')), unit: 'msgs/s', goal: '(baseline)', ratio: 1, met: '' });
  rows.push({ target: 'fan-in QoS 0, clustering on, local-only traffic', measured: Math.round(m('local')), unit: 'msgs/s', goal: '>= 95 % of off', ratio: m('local') / m('off'), met: m('local') / m('off') >= 0.95 ? 'yes' : 'no' });
  rows.push({ target: 'fan-in QoS 0 across nodes (10 publishers on a, 1 subscriber on b)', measured: Math.round(m('crossIn')), unit: 'msgs/s', goal: '(figure)', ratio: m('crossIn') / m('off'), met: '' });
  rows.push({ target: 'fan-out QoS 0 across nodes (1 publisher on a, 10 subscribers on b)', measured: Math.round(m('crossOut')), unit: 'msgs/s', goal: '(figure)', ratio: '', met: '' });
  rows.push({ target: 'latency p99 at 5,000 msgs/s, one node', measured: m('latLocalP99'), unit: 'µs', goal: '(figure)', ratio: '', met: '' });
  rows.push({ target: 'latency p99 at 5,000 msgs/s, across nodes', measured: m('latCrossP99'), unit: 'µs', goal: '(figure)', ratio: m('latCrossP99') / m('latLocalP99'), met: '' });
  rows.push({ target: 'fan-in QoS 1 across nodes (through the JetStream stream; PUBACK once stored)', measured: Math.round(m('crossIn1')), unit: 'msgs/s', goal: '(figure)', ratio: m('crossIn1') / m('crossIn'), met: '' });
  rows.push({ target: 'latency p99 at 5,000 msgs/s QoS 1, across nodes', measured: m('latCross1P99'), unit: 'µs', goal: '(figure)', ratio: m('latCross1P99') / m('latCrossP99'), met: '' });
  rows.push({ target: 'connections/s, clustering off', measured: Math.round(m('connOff')), unit: 'conn/s', goal: '(baseline)', ratio: 1, met: '' });
  rows.push({ target: 'connections/s, clustering on (each CONNECT asks the other node for its client id)', measured: Math.round(m('connOn')), unit: 'conn/s', goal: '(figure)', ratio: m('connOn') / m('connOff'), met: '' });
  notes.push(`Per round: ${JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v.map(Math.round)])))}.`);
  notes.push('Latency p50 medians: one node ' + m('latLocalP50') + ' µs, across nodes ' + m('latCrossP50') + ' µs.');
  notes.push('Both nodes, the node without a cluster, nats-server and the load generator share this machine\'s cores.');
  writeResults('cluster', 'Cluster: two nodes over NATS on one machine, against clustering off', rows, notes);
} finally {
  for (const n of nodes) await n.stop();
  nats.kill('SIGTERM');
}
