// `make build`'s broker: src/ bundled by esbuild into lib/, one bundle per thread entry (the
// `spindle` command, a worker thread, a scripts pool thread, hash-password), code they share and
// what loads on demand (a driver's wrapper, the admin API, the cluster) in chunks beside them.
// Packages stay in node_modules (external). One file per thread instead of ~300 modules: each module
// costs the ESM loader a file open, a resolve and a link, about a third of a start's CPU.
// src/threads/entry.ts names the same entries. Type checking is `make typecheck`'s (tsc).
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const out = path.join(root, 'lib');

rmSync(out, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    main: 'src/main.ts',
    worker: 'src/worker/worker.ts',
    'run-batch': 'src/features/scripts/pool/run-batch.ts',
    'schema-task': 'src/features/schema-registry/pool/task.ts',
    'hash-password': 'src/auth/hash-password.ts',
  },
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  legalComments: 'none',
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: 'warning',
});
const outputs = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith('.js'));
const total = outputs.reduce((n, [, o]) => n + o.bytes, 0);
console.log(`lib/: ${outputs.length} files, ${(total / 1024).toFixed(0)} KiB (${Object.keys(result.metafile.inputs).length} modules of src/)`);
