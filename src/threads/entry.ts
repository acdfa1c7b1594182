// The entry modules of the threads the broker starts: from the TypeScript sources (tests and
// development, through tsx) the source file, compiled (lib/, `make build`) the bundle esbuild
// made of it (scripts/build-lib.mjs names the same entries).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { FROM_SOURCE, ROOT } from '../install/root.ts';

const ENTRIES = {
  /** A worker thread (listeners, sessions). */
  worker: { source: 'src/worker/worker.ts', built: 'lib/worker.js' },
  /** A thread of the scripts' piscina pool: its task handler, exported as runBatch. */
  'run-batch': { source: 'src/features/scripts/pool/run-batch.ts', built: 'lib/run-batch.js' },
  /** A thread of a worker's schema pool (checks and rule evaluations): its task handler,
   * exported as schemaTask. */
  'schema-task': { source: 'src/features/schema-registry/pool/task.ts', built: 'lib/schema-task.js' },
} as const;

export type ThreadEntry = keyof typeof ENTRIES;

/** The module a thread of kind `name` runs. */
export function threadEntry(name: ThreadEntry): URL {
  const e = ENTRIES[name];
  return pathToFileURL(path.join(ROOT, FROM_SOURCE ? e.source : e.built));
}
