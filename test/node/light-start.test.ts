// Issue 26, a light start: no driver library is imported when the broker starts. Each is loaded
// by what needs it (a source, command, email channel, bridge or store of its type: lazy-import.ts).
// This walks the static imports of src/ from main.ts as the build emits them (type-only imports
// and dynamic import() are not followed) and fails naming the chain that reaches a driver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const DRIVERS = ['mysql2', 'postgres', 'ioredis', 'kafkajs', 'mongodb', 'nacos-naming', 'ws', 'amqplib', 'rocketmq-client-nodejs', 'nodemailer', 'mqtt', 'ldapts',
  // The OpenTelemetry metrics and logs export (src/features/otel/sdk.ts): loaded when configured.
  '@opentelemetry/sdk-metrics', '@opentelemetry/sdk-logs', '@opentelemetry/exporter-metrics-otlp-proto', '@opentelemetry/exporter-logs-otlp-proto', '@opentelemetry/resources'];

/** The specifiers a file imports at run time: what survives the build (tsc elides an import whose
 * every binding is a type, and `import type`). */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const out: string[] = [];
  for (const s of source.statements) {
    if (ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier)) {
      const clause = s.importClause;
      if (clause?.isTypeOnly) continue;
      const bindings = clause?.namedBindings;
      const onlyTypes = clause !== undefined && clause.name === undefined && bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
      if (!onlyTypes) out.push(s.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(s) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier) && !s.isTypeOnly) {
      const clause = s.exportClause;
      const onlyTypes = clause !== undefined && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
      if (!onlyTypes) out.push(s.moduleSpecifier.text);
    }
  }
  return out;
}

function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Every package statically reachable from `entry`, with the first chain of files to it. */
function reachablePackages(entry: string): Map<string, string[]> {
  const via = new Map<string, string | null>([[entry, null]]);
  const packages = new Map<string, string[]>();
  const queue = [entry];
  const chain = (file: string): string[] => {
    const files: string[] = [];
    for (let f: string | null | undefined = file; f; f = via.get(f)) files.unshift(path.relative(SRC, f));
    return files;
  };
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const spec of runtimeImports(file)) {
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(file), spec);
        if (!target.endsWith('.ts') || via.has(target)) continue;
        via.set(target, file);
        queue.push(target);
      } else if (!spec.startsWith('node:')) {
        const pkg = packageOf(spec);
        if (!packages.has(pkg)) packages.set(pkg, chain(file));
      }
    }
  }
  return packages;
}

test('the broker starts without importing a driver library: each loads with the first thing that needs it', () => {
  const packages = reachablePackages(path.join(SRC, 'main.ts'));
  assert.ok(packages.has('uWebSockets.js'), 'the walk sees the packages main.ts does import');
  const reached = DRIVERS.filter((d) => packages.has(d)).map((d) => `${d}: ${packages.get(d)!.join(' > ')}`);
  assert.deepEqual(reached, []);
});


// A worker thread routes messages: it has no use for the admin API's schema checks (Ajv, compiling
// them at load). Loading the endpoint schema in a worker once cost a third of its QoS 0 fan-in
// rate (issue 28: the OCSP defaults imported from endpoint-config.ts; the worker's GC promoted
// per-message garbage and ran mark-compacts six times as often), so its entry must not reach Ajv. Protobuf (Sparkplug B, schemas) cost it a quarter the same way
// (issue 29): the decoders load with their first use.
test("a worker thread does not import the admin API's schema checker, nor a decoder it may never use", () => {
  const packages = reachablePackages(path.join(SRC, 'worker', 'worker.ts'));
  assert.ok(packages.has('uWebSockets.js'), 'the walk sees the packages worker.ts does import');
  // And no part of OpenTelemetry: its exports run on the main thread (src/features/otel; the
  // traces' worker half records its spans as plain values, src/features/otel-traces/span-record.ts).
  const otel = [...packages.keys()].filter((p) => p.startsWith('@opentelemetry/'));
  const reached = ['ajv', 'protobufjs', 'avsc', 'pkijs', 'ldapts', ...otel].filter((d) => packages.has(d)).map((d) => `${d}: ${packages.get(d)!.join(' > ')}`);
  assert.deepEqual(reached, []);
});
