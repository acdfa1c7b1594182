// Runs one tier of the test files (test/helpers/tiers.ts): picks the files of the tier (all of
// them, or those named), runs the ensure scripts of what they declare on their "// needs:" lines
// (each script once: installed when missing, started when not running), then the test command
// with the files appended. The Makefile's test-unit, test-e2e and test-services call it:
//
//   node --import tsx scripts/test-tier.ts services [test/store/postgres.test.ts ...] -- node --test ...
//
// A named file of another tier is refused (its tier is said), so a run never starts without what
// the file needs. Exits with the test command's status.
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { declaredNeeds, ensureScripts, readSource, testFiles, tierOf, type Need, type Tier } from '../test/helpers/tiers.ts';

const TIERS: Tier[] = ['unit', 'e2e', 'services'];

function usage(message: string): never {
  console.error(`test-tier: ${message}\nusage: test-tier.ts <${TIERS.join('|')}> [file ...] -- <command ...>`);
  process.exit(2);
}

function main(argv: string[]): number {
  const dash = argv.indexOf('--');
  if (dash < 0 || dash === argv.length - 1) usage('no command after --');
  const [tier, ...named] = argv.slice(0, dash);
  const command = argv.slice(dash + 1);
  if (!TIERS.includes(tier as Tier)) usage(`no tier "${tier ?? ''}"`);

  const files: string[] = [];
  const needs = new Set<Need>();
  const others: string[] = [];
  for (const file of named.length ? named.map((f) => f.replace(/^\.\//, '')) : testFiles()) {
    const declared = declaredNeeds(readSource(file), file);
    const its = tierOf(declared);
    if (its !== tier) {
      if (named.length) others.push(`${file} is ${its}`);
      continue;
    }
    files.push(file);
    for (const n of declared) needs.add(n);
  }
  if (others.length) usage(`not ${tier} tests: ${others.join('; ')} (make test-<tier> FILES=... runs files of that tier)`);
  if (files.length === 0) {
    console.log(`test-tier: no ${tier} test files`);
    return 0;
  }

  const scripts = ensureScripts(needs);
  console.log(`test-tier: ${files.length} ${tier} test files${needs.size ? `; they need ${[...needs].join(', ')}` : ''}`);
  const dir = fileURLToPath(new URL('./', import.meta.url));
  for (const script of scripts) {
    console.log(`test-tier: ${script}`);
    execFileSync(`${dir}${script}`, { stdio: 'inherit' });
  }
  const run = spawnSync(command[0], [...command.slice(1), ...files], { stdio: 'inherit' });
  if (run.error) throw run.error;
  return run.status ?? 1;
}

process.exitCode = main(process.argv.slice(2));
