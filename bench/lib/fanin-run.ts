// What the A/B benches of one feature against none share (bench/rewrite.ts, topic-metrics.ts,
// otel.ts, and the settings of operator.ts, proxy.ts): a positive number from the environment, and
// one QoS 0 fan-in run of the load generator against a Spindle, its rate and the broker's cores.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import type { BenchSpindle } from './bench-spindle.ts';
import { ROOT, processCpuSeconds } from './compare-brokers.ts';

const run = promisify(execFile);

export const LOADGEN = process.env.LOADGEN ?? path.join(ROOT, 'target/release/spindle-loadgen');

/** The number in environment variable `name` (else `fallback`); anything but a positive number is refused. */
export function positiveSetting(name: string, fallback: number): number {
  const v = Number(process.env[name] ?? fallback);
  if (!(v > 0)) throw new Error(`${name}: a positive number, not ${process.env[name]}`);
  return v;
}

/**
 * One run of the load generator (`args`, MQTT 5.0, 16 source addresses) against `s`, pinned to
 * `core` when given: its rate, and the broker process's CPU over the run in cores. A run with
 * losses, refusals or errors throws (`what` names it).
 */
export async function loadgenRun(s: BenchSpindle, args: readonly string[], core: number | null, what: string): Promise<{ rate: number; cores: number }> {
  const cpu = processCpuSeconds(s.pid);
  const t0 = performance.now();
  const [command, ...pinned] = core !== null ? ['taskset', '-c', String(core), LOADGEN] : [LOADGEN];
  const { stdout } = await run(command, [...pinned, ...args, '--port', String(s.port), '--version', '5', '--sources', '16'], { maxBuffer: 16 * 1024 * 1024 });
  const seconds = (performance.now() - t0) / 1000;
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!);
  if (r.ok === false || r.refused > 0 || r.errors > 0 || r.loss > 0) throw new Error(`${what}: the run failed: ${JSON.stringify(r).slice(0, 500)}`);
  return { rate: r.rate, cores: (processCpuSeconds(s.pid) - cpu) / seconds };
}
