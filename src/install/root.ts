// Where the broker's files are. The install root is the directory holding Spindle's package.json:
// a clone, or /usr/lib/spindle where the Debian package puts it. This module finds it from its own
// place, which differs between the TypeScript sources (src/install/, run through tsx by the tests
// and bin/spindle-dev.mjs) and the build (lib/, esbuild bundles): the first directory above it
// with that package.json. A leaf: it imports nothing of the broker.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const NAME = 'spindle';

function findRoot(): { root: string; version: string } {
  const start = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === NAME) return { root: dir, version: pkg.version ?? '0.0.0' };
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json of ${NAME} above ${start}: the install is incomplete`);
  }
}

const found = findRoot();

/** The install root (absolute). */
export const ROOT = found.root;

/** package.json's version. */
export const VERSION = found.version;

/** True when this runs from the TypeScript sources (through tsx), false compiled (lib/). */
export const FROM_SOURCE = import.meta.url.endsWith('.ts');
