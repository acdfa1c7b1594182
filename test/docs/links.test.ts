// Every relative link of README.md and docs/**/*.md points at a file of the repository that
// exists (and, with a #fragment into a Markdown page, at a heading of it), and no link or path
// points outside the repository.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}

const FILES = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];

/** GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const out = new Set<string>();
  let fence = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const h = !fence && /^#{1,6} (.*)$/.exec(line);
    if (h) out.add(anchor(h[1]));
  }
  return out;
}

/** The links of a Markdown text outside code blocks: [text](target) and ![alt](target). */
function links(text: string): string[] {
  const out: string[] = [];
  let fence = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    if (fence) continue;
    for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1]);
  }
  return out;
}

test('the docs are there', () => {
  assert.ok(FILES.length > 20, `found ${FILES.length} Markdown files`);
});

for (const file of FILES) {
  const rel = path.relative(ROOT, file);
  test(`${rel}: every relative link points at something that exists`, () => {
    const broken: string[] = [];
    for (const link of links(readFileSync(file, 'utf8'))) {
      if (/^[a-z]+:/i.test(link)) continue; // https:, mailto:
      const [target, fragment] = link.split('#');
      const dest = target === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(target));
      if (!dest.startsWith(ROOT)) broken.push(`${link} (outside the repository)`);
      else if (!existsSync(dest)) broken.push(`${link} (no such file)`);
      else if (fragment && dest.endsWith('.md') && statSync(dest).isFile() && !anchors(dest).has(fragment)) broken.push(`${link} (no such heading)`);
    }
    assert.deepEqual(broken, []);
  });
}

test('nothing in the docs or the sources points outside the repository', () => {
  const sources = ['src', 'test', 'scripts', 'bench'].flatMap((d) => walk(path.join(ROOT, d)));
  const outside = [...FILES, ...sources].filter((f) => /\.\.\/shared\//.test(readFileSync(f, 'utf8'))).map((f) => path.relative(ROOT, f));
  assert.deepEqual(outside, []);
});

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'results' || e.name === 'node_modules' || e.name === 'target' ? [] : walk(p);
    return /\.(ts|mjs|js|md|sh)$/.test(e.name) ? [p] : [];
  });
}
