// needs: broker
// The admin API pages against the spec's routes (test/admin/spec-routes.ts) and the server's. The
// table in docs/api/README.md must list every spec section once, say whether it is built, and link
// the pages that document it: those pages together must name every path of the section, and a
// section marked built must have every route (method and path) of its spec table routed, one
// marked "partly" some but not all, one marked "not yet" none of them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { SPEC_SECTIONS } from './spec-routes.ts';

const API_DOCS = new URL('../../docs/api/', import.meta.url);

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' } });
});
after(() => b.stop());

interface Row {
  state: string;
  pages: string[];
}

/** Section number -> its state and linked pages, from the table of docs/api/README.md. */
function docsTable(): Map<string, Row> {
  const out = new Map<string, Row>();
  for (const line of readFileSync(new URL('README.md', API_DOCS), 'utf8').split('\n')) {
    const row = /^\| (4\.\d+) \| [^|]+ \| (built|partly|not yet)\b[^|]* \|([^|]*)\|/.exec(line);
    if (!row) continue;
    assert.ok(!out.has(row[1]), `section ${row[1]} listed once`);
    const pages = [...row[3].matchAll(/\]\(([\w-]+\.md)\)/g)].map((m) => m[1]);
    out.set(row[1], { state: row[2], pages });
  }
  return out;
}

/** `path` named in `text` as a whole path (not as the start of a longer one). */
function names(text: string, path: string): boolean {
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`${escaped}(?![\\w/-])`).test(text);
}

test('the spec data holds every section 4.1 to 4.12, each with routes', () => {
  assert.deepEqual(SPEC_SECTIONS.map((s) => s.section), Array.from({ length: 12 }, (_, i) => `4.${i + 1}`));
  for (const s of SPEC_SECTIONS) assert.ok(s.routes.length > 0, `section ${s.section} lists routes`);
});

test('the API pages list every spec section once and name each of its paths', () => {
  const table = docsTable();
  assert.deepEqual([...table.keys()].sort(), SPEC_SECTIONS.map((s) => s.section).sort());
  for (const s of SPEC_SECTIONS) {
    const row = table.get(s.section)!;
    assert.ok(row.pages.length > 0, `section ${s.section} links a page`);
    const text = row.pages.map((p) => readFileSync(new URL(p, API_DOCS), 'utf8')).join('\n');
    for (const r of s.routes) {
      for (const path of [r.path, ...(r.variantB ? [r.variantB] : [])]) {
        assert.ok(names(text, path), `section ${s.section}: ${path} is named on ${row.pages.join(' or ')}`);
      }
    }
  }
});

test('built means routed, with the method of the spec', () => {
  const table = docsTable();
  const routed = new Set(b.admin!.routes.map((r) => `${r.method} ${r.path}`));
  for (const s of SPEC_SECTIONS) {
    const wanted = s.routes.flatMap((r) => [`${r.method} ${r.path}`, ...(r.variantB ? [`${r.method} ${r.variantB}`] : [])]);
    const present = wanted.filter((w) => routed.has(w));
    const state = table.get(s.section)?.state;
    if (state === 'built') assert.deepEqual(present, wanted, `section ${s.section} is built: every route routed`);
    else if (state === 'partly') assert.ok(present.length > 0 && present.length < wanted.length, `section ${s.section} is partly built: some routes routed, not all (${present.join(', ')})`);
    else assert.deepEqual(present, [], `section ${s.section} is not built: no route routed`);
  }
});
