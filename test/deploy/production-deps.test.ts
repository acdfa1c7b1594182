// Every npm package the broker's code imports (src/, compiled to lib/) is a production
// dependency: the Debian package installs only `dependencies` (npm install --omit=dev), so a
// package listed as a devDependency works in a clone and fails in the package. Regression: the
// MQTT bridges (mqtt) and the Pulsar command (ws) stopped the packaged broker at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const f = path.join(dir, e.name);
    return e.isDirectory() ? sources(f) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [f] : [];
  });
}

/** The package a bare specifier names: `mqtt`, `@nats-io/kv` for `@nats-io/kv/lib/x`. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

// Value imports and re-exports, static and dynamic, that name a package (not a relative path);
// `import type` and `export type` are erased by the compiler and need nothing at run time.
const IMPORT = /^\s*(?:import|export)\s+(?!type\s)[^'";]*?\s*from\s+'([^.'][^']*)'|^\s*import\s+'([^.'][^']*)'|\bimport\(\s*'([^.'][^']*)'\s*\)/gm;

test('every package src/ imports is in package.json dependencies', () => {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const builtins = new Set(builtinModules);
  const missing = new Map<string, string>();
  for (const file of sources(path.join(ROOT, 'src'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const specifier = m[1] ?? m[2] ?? m[3];
      if (specifier.startsWith('node:') || builtins.has(specifier)) continue;
      const name = packageOf(specifier);
      if (!Object.hasOwn(pkg.dependencies, name) && !missing.has(name)) missing.set(name, path.relative(ROOT, file));
    }
  }
  assert.deepEqual([...missing].map(([name, file]) => `${name} (imported by ${file})`), []);
});
