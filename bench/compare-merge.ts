// Merges a partial comparison run over a complete one: the runs of every (scenario, broker, mode)
// the partial run measured replace the complete run's; everything else is kept. For re-measuring
// Spindle (and Mosquitto beside it) after a change without repeating the hour-long full run.
//   node --import tsx bench/compare-merge.ts <full dir> <partial dir> <out dir> [--readme]
// (--readme: also the summary table of docs/development/benchmarks.md)
import { readFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

import { writeCompareReport, type CompareResults } from './lib/compare-report.ts';

const [fullDir, partialDir, outDir, flag] = process.argv.slice(2);
if (!fullDir || !partialDir || !outDir) {
  console.error('usage: compare-merge.ts <full dir> <partial dir> <out dir> [--readme]');
  process.exit(2);
}
const read = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'compare.json'), 'utf8')) as CompareResults;
const full = read(fullDir);
const partial = read(partialDir);
const key = (r: { scenario: string; broker: string; mode: string }) => `${r.scenario}|${r.broker}|${r.mode}`;
const replaced = new Set(partial.runs.map(key));
const merged: CompareResults = {
  ...full,
  brokers: { ...full.brokers, ...partial.brokers },
  machine: partial.machine,
  options: {
    ...full.options,
    merged: full.options.merged
      ? `${String(full.options.merged)} Then ${replaced.size} cells re-measured in another run (${partial.brokers.spindle}; brokers ${[...new Set(partial.runs.map((r) => r.broker))].join(', ')}).`
      : `Merged runs: the full run measured ${full.brokers.spindle} against every broker; ${replaced.size} (scenario, broker, mode) cells were re-measured in a later run (${partial.brokers.spindle}; brokers ${[...new Set(partial.runs.map((r) => r.broker))].join(', ')}). Ratios use the two brokers of the same run wherever both were re-measured; the Aedes columns, retained and 1 M subscriptions are from the full run unless listed.`,
  },
  runs: [...full.runs.filter((r) => !replaced.has(key(r))), ...partial.runs],
  seconds: (full.seconds ?? 0) + (partial.seconds ?? 0),
};
delete merged.summary;
mkdirSync(outDir, { recursive: true });
writeCompareReport(merged, outDir, flag === '--readme' ? path.resolve('docs/development/benchmarks.md') : null);
