// Bench output: every bench prints its table and writes bench/results/<name>.json and .md, so
// results are files a person can read and diff.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';

export type Row = Record<string, string | number>;

export function machine(): Record<string, string | number> {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
  };
}

function markdown(title: string, rows: Row[], notes: string[]): string {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const fmt = (v: string | number | undefined) => (typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en-US') : v.toFixed(2)) : (v ?? ''));
  return [
    `## ${title}`, '',
    `| ${cols.join(' | ')} |`, `| ${cols.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${cols.map((c) => fmt(r[c])).join(' | ')} |`), '',
    ...notes.map((n) => `- ${n}`), '',
  ].join('\n');
}

export function writeResults(name: string, title: string, rows: Row[], notes: string[] = [], extra: object = {}): void {
  const dir = new URL('../results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const env = machine();
  writeFileSync(new URL(`${name}.json`, dir), JSON.stringify({ name, title, machine: env, rows, notes, ...extra }, null, 2) + '\n');
  const md = markdown(title, rows, [...notes, `Measured ${env.date} on ${env.cpu} (${env.cores} cores), Node ${env.node}.`]);
  writeFileSync(new URL(`${name}.md`, dir), md);
  console.log('\n' + md);
}

/** Prints the table as writeResults does, writing no file (a partial run). */
export function printResults(title: string, rows: Row[], notes: string[] = []): void {
  console.log('\n' + markdown(title, rows, notes));
}

/** Runs `fn(iterations)` repeatedly for about `ms` and returns operations per second. */
export function opsPerSecond(fn: (n: number) => number, ms = 1000): number {
  fn(1000); // warm up
  let ops = 0;
  let n = 1000;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < ms * 1e6) {
    ops += fn(n);
    elapsed = Number(process.hrtime.bigint() - start);
    if (elapsed < 50e6) n *= 2;
  }
  return ops / (elapsed / 1e9);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Median of `runs` measurements, with the spread (max-min)/median. */
export function measure(fn: (n: number) => number, runs = 3, ms = 1000): { median: number; spread: number } {
  const xs = Array.from({ length: runs }, () => opsPerSecond(fn, ms));
  const m = median(xs);
  return { median: m, spread: (Math.max(...xs) - Math.min(...xs)) / m };
}
