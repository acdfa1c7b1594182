// The README's table of spec sections says which modules of the admin API spec are built: it
// must list every section of the spec once, and agree with the routes: a section marked built has
// every path its spec table lists, one marked "partly" some but not all, one marked "not yet"
// none of them.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';

const SPEC = new URL('../../../shared/seed/000_8d42fc1d8d7d479f.txt', import.meta.url);
const README = new URL('../../README.md', import.meta.url);

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({ store: { storeType: 'MEMORY' } });
});
after(() => b.stop());

/** Section number -> the paths of its table (the first path of a cell; variant B's too). */
function specSections(): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of readFileSync(SPEC, 'utf8').split('\n')) {
    const heading = /^### (4\.\d+) /.exec(line);
    if (heading) {
      current = [];
      sections.set(heading[1], current);
      continue;
    }
    if (/^## /.test(line)) current = undefined;
    const row = /^\| (GET|POST|PUT|DELETE) \| (\/\S+)(?: \(B: (\/\S+)\))? \|/.exec(line);
    if (row && current) current.push(row[2], ...(row[3] ? [row[3]] : []));
  }
  return sections;
}

/** Section number -> "built", "partly" or "not yet", from the README table. */
function readmeTable(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(README, 'utf8').split('\n')) {
    const row = /^\| (4\.\d+) \| [^|]+ \| (built|partly|not yet)\b/.exec(line);
    if (row) {
      assert.ok(!out.has(row[1]), `section ${row[1]} listed once`);
      out.set(row[1], row[2]);
    }
  }
  return out;
}

test('the README lists every spec section once, and built means routed', () => {
  const spec = specSections();
  const table = readmeTable();
  assert.ok(spec.size >= 12, `found ${spec.size} spec sections`);
  assert.deepEqual([...table.keys()].sort(), [...spec.keys()].sort());
  const routed = new Set(b.admin!.routes.map((r) => r.path));
  for (const [section, paths] of spec) {
    assert.ok(paths.length > 0, `section ${section} lists paths`);
    const present = paths.filter((p) => routed.has(p));
    const state = table.get(section);
    if (state === 'built') assert.deepEqual(present, paths, `section ${section} is built: every path routed`);
    else if (state === 'partly') assert.ok(present.length > 0 && present.length < paths.length, `section ${section} is partly built: some paths routed, not all (${present.join(', ')})`);
    else assert.deepEqual(present, [], `section ${section} is not built: no path routed`);
  }
});
