// The `spindle` command as it ships (bin/spindle running the compiled lib/ of `make build`), for
// the tests that start the broker as a process. It runs on this test's Node (SPINDLE_NODE). A
// lib/ older than a source file would test yesterday's broker: that throws, naming the file.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SPINDLE_BIN = path.join(ROOT, 'bin/spindle');

function newestSource(dir: string): { file: string; mtimeMs: number } {
  let newest = { file: '', mtimeMs: 0 };
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const f = path.join(dir, e.name);
    const n = e.isDirectory() ? newestSource(f) : { file: f, mtimeMs: statSync(f).mtimeMs };
    if (n.mtimeMs > newest.mtimeMs) newest = n;
  }
  return newest;
}

let checked = false;

/** The environment a spawned `spindle` gets: `env` with SPINDLE_NODE set to this Node. */
export function spindleEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (!checked) {
    const built = (() => {
      try {
        return statSync(path.join(ROOT, 'lib/main.js')).mtimeMs;
      } catch {
        return 0;
      }
    })();
    const src = newestSource(path.join(ROOT, 'src'));
    if (built < src.mtimeMs) throw new Error(`lib/ is older than ${path.relative(ROOT, src.file)}: run "make build" (the process tests run the compiled broker)`);
    checked = true;
  }
  return { ...env, SPINDLE_NODE: process.execPath };
}
