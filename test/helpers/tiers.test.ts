// Keeps each test file's "// needs:" line (helpers/tiers.ts) in step with what the file uses: the
// needs are derived from its imports (helpers that start a broker or talk to a server, client
// libraries of servers) through the local modules it imports, and must equal the declaration. So
// a file cannot start a broker from the unit tier, nor reach Kafka without Kafka being started
// before it runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';

import { BROKER_CODE, NEEDS, PROVIDERS, declaredNeeds, ensureScripts, headerLines, readSource, testFiles, tierOf, type Need } from './tiers.ts';

interface Import {
  /** Repository-relative path of a local module, or the package name. */
  module: string;
  /** The value names imported; '*' for a default, namespace or side-effect import. */
  names: string[] | '*';
}

const IMPORT = /^(import|export)\s+(type\s+)?([^'";]*?)\s*from\s+'([^']+)'|^import\s+'([^']+)'|\bimport\('([^']+)'\)/gms;

/** The value imports (and re-exports) of `source`, found in `file`; type-only ones left out. */
function importsOf(file: string, source: string): Import[] {
  const found: Import[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const spec = m[4] ?? m[5] ?? m[6];
    if (m[2]) continue;
    const resolved = spec.startsWith('.') ? path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)) : spec;
    const clause = m[3];
    let names: string[] | '*' = '*';
    if (clause !== undefined) {
      const braces = /\{([^}]*)\}/.exec(clause);
      const outside = clause.replace(/\{[^}]*\}/, '').replace(/,/g, ' ').trim();
      if (braces && !outside) {
        names = braces[1].split(',').map((s) => s.trim()).filter((s) => s && !s.startsWith('type ')).map((s) => s.split(/\s+as\s+/)[0]);
        if (names.length === 0) continue;
      }
    }
    found.push({ module: resolved, names });
  }
  return found;
}

/** What `file` needs by its imports, followed through the local modules it imports (a module in
 * PROVIDERS is not followed: its entry says all it implies). */
function derivedNeeds(file: string): Set<Need> {
  const needs = new Set<Need>();
  const seen = new Set<string>();
  const visit = (module: string): void => {
    if (seen.has(module)) return;
    seen.add(module);
    const source = readSource(module);
    if (BROKER_CODE.some((re) => re.test(source))) needs.add('broker');
    for (const { module: dep, names } of importsOf(module, source)) {
      const provides = PROVIDERS[dep];
      if (Array.isArray(provides)) {
        for (const n of provides) needs.add(n);
      } else if (provides) {
        for (const name of names === '*' ? Object.keys(provides) : names) {
          for (const n of (provides as Record<string, readonly Need[]>)[name] ?? []) needs.add(n);
        }
      } else if (dep.startsWith('test/')) {
        visit(dep);
      }
    }
  };
  visit(file);
  return needs;
}

const ORDER = Object.keys(NEEDS) as Need[];
const sorted = (needs: Iterable<Need>) => [...needs].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));

test("every test file's `// needs:` line names what its imports need", () => {
  const wrong: string[] = [];
  for (const file of testFiles()) {
    const declared = sorted(declaredNeeds(readSource(file), file));
    const derived = sorted(derivedNeeds(file));
    if (declared.join() !== derived.join()) {
      wrong.push(`${file}: declares ${declared.length ? declared.join(', ') : 'nothing'} (${tierOf(declared)}), uses ${derived.length ? derived.join(', ') : 'nothing'} (${tierOf(derived)})${derived.length ? `: write "// needs: ${derived.join(', ')}" in its first comment block` : ': remove its "// needs:" line'}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('a "// needs:" line outside the first comment block is an error, not a unit test', () => {
  const misplaced = testFiles().filter((file) => {
    const source = readSource(file);
    const inHeader = headerLines(source).filter((l) => l.startsWith('// needs:')).length;
    return (source.match(/^\s*\/\/ needs:/gm)?.length ?? 0) !== inHeader;
  });
  assert.deepEqual(misplaced, []);
});

test('an unknown name in a declaration throws', () => {
  assert.throws(() => declaredNeeds('// x\n// needs: broker, postgres\n', 'f.test.ts'), /"\/\/ needs: postgres" is none of/);
  assert.deepEqual(declaredNeeds('// x\n// needs: broker, postgresql\nimport x;\n'), ['broker', 'postgresql']);
  assert.deepEqual(declaredNeeds('// x\n\n// needs: broker\n'), [], 'only the first comment block counts');
});

test('tiers: nothing is unit, broker and self-started servers are e2e, a shared server is services', () => {
  assert.equal(tierOf([]), 'unit');
  assert.equal(tierOf(['broker', 'nats', 'mosquitto', 'chromium', 'helm']), 'e2e');
  assert.equal(tierOf(['broker', 'redis']), 'services');
  assert.deepEqual(ensureScripts(['mariadb', 'postgresql', 'broker', 'kafka']), ['ensure-databases.sh', 'ensure-kafka.sh']);
});

test('the import scan reads what the test files write', () => {
  const imports = importsOf('test/x/a.test.ts', [
    "import { startBroker, type TestBroker } from '../helpers/broker.ts';",
    "import type { Store } from '../store/types.ts';",
    "import {\n  PG_URL,\n  uniqueName as unique,\n} from '../store/databases.ts';",
    "import postgres from 'postgres';",
    "export { closedPort } from './helpers.ts';",
    // Split so that the scan of this very file does not read it as an import.
    "const { x } = await imp" + "ort('../y.ts');",
  ].join('\n'));
  assert.deepEqual(imports, [
    { module: 'test/helpers/broker.ts', names: ['startBroker'] },
    { module: 'test/store/databases.ts', names: ['PG_URL', 'uniqueName'] },
    { module: 'postgres', names: '*' },
    { module: 'test/x/helpers.ts', names: ['closedPort'] },
    { module: 'test/y.ts', names: '*' },
  ]);
});

test('the tables point at what exists: ensure scripts, helper modules and their exports', () => {
  const root = path.resolve(import.meta.dirname, '../..');
  for (const [name, info] of Object.entries(NEEDS)) {
    if (info.ensure) assert.ok(existsSync(path.join(root, 'scripts', info.ensure)), `${name}: scripts/${info.ensure}`);
  }
  for (const [module, provides] of Object.entries(PROVIDERS)) {
    if (!module.startsWith('test/')) {
      assert.ok(existsSync(path.join(root, 'node_modules', module.split('/')[0])) || existsSync(path.join(root, 'node_modules', module)), `package ${module}`);
      continue;
    }
    const source = readSource(module);
    if (Array.isArray(provides)) continue;
    for (const name of Object.keys(provides)) {
      assert.match(source, new RegExp(`^export (async )?(function|const|class) ${name}\\b`, 'm'), `${module} exports ${name}`);
    }
  }
});
