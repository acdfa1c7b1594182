// The layout page (docs/development/layout.md) against the tree: every folder of src/ is named
// on it, and every src/ path it names exists. A folder is named by its full path (`src/rules/`)
// or, inside the entry of its parent folder, by its own name (`actions/` in the entry that starts
// with `src/rules/`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = path.join(ROOT, 'docs/development/layout.md');

/** Every directory under src/, as 'src/a/b', depth first. */
function srcDirs(dir = 'src'): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const rel = `${dir}/${e.name}`;
    out.push(rel, ...srcDirs(rel));
  }
  return out;
}

/** The layout block's entries: a line starting at column 0 and the indented lines after it. */
function entries(text: string): string[] {
  const block = /```\n([\s\S]*?)\n```/.exec(text);
  assert.ok(block, 'the layout page has its layout block');
  const out: string[] = [];
  for (const line of block[1].split('\n')) {
    if (/^\S/.test(line) || out.length === 0) out.push(line);
    else out[out.length - 1] += '\n' + line;
  }
  return out;
}

/** Whether `word` occurs in `text` as a path part (not inside a longer name). */
function hasPart(text: string, word: string): boolean {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w.-])${escaped}(?![\\w-])`).test(text);
}

test('every folder of src/ is named on the layout page', () => {
  const text = readFileSync(PAGE, 'utf8');
  const list = entries(text);
  const dirs = srcDirs();
  assert.ok(dirs.length > 20, `found ${dirs.length} folders under src/`);
  const missing = dirs.filter((dir) => {
    if (hasPart(text, `${dir}/`)) return false;
    const parent = path.posix.dirname(dir);
    const own = list.filter((e) => hasPart(e.split('\n')[0], `${parent}/`));
    return !own.some((e) => hasPart(e, `${path.posix.basename(dir)}/`));
  });
  assert.deepEqual(missing, [], 'folders of src/ the layout page does not name');
});

test('every src/ path the layout page names exists', () => {
  const text = readFileSync(PAGE, 'utf8');
  const named = new Set([...text.matchAll(/(?<![\w/.-])src\/[\w./-]*[\w/]/g)].map((m) => m[0]));
  assert.ok(named.size > 20, `found ${named.size} src/ paths on the page`);
  const gone = [...named].filter((p) => !existsSync(path.join(ROOT, p)));
  assert.deepEqual(gone, [], 'src/ paths named on the layout page that do not exist');
});
