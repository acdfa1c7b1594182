// The README's shell examples must run as written when pasted into sh: a shell variable inside
// single quotes is not expanded (the scripts example sent the literal '$PASSWORD' and got 401),
// and a variable an example uses must be set by some example. Lower-case ${name} inside single
// quotes is left alone: that is a rule or action template, meant literally.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

interface Use {
  name: string;
  line: number;
  quoted: 'single' | 'double' | 'none';
}

/** The ```sh blocks of the README, each with the README line its first line is on. */
function shellBlocks(readme: string): { start: number; code: string }[] {
  const blocks: { start: number; code: string }[] = [];
  const lines = readme.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== '```sh') continue;
    const start = i + 2;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i].startsWith('```'); i++) body.push(lines[i]);
    blocks.push({ start, code: body.join('\n') });
  }
  return blocks;
}

/** Every `$NAME` / `${NAME}` of a block with its quoting (sh rules: '' literal, "" expands, # comments). */
function variableUses(code: string, start: number): Use[] {
  const uses: Use[] = [];
  let quote: Use['quoted'] = 'none';
  let line = start;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === '\n') line++;
    if (quote === 'none' && c === '#' && (i === 0 || /\s/.test(code[i - 1]))) {
      while (i + 1 < code.length && code[i + 1] !== '\n') i++;
      continue;
    }
    if (quote !== 'single' && c === '\\') {
      i++;
      if (code[i] === '\n') line++;
      continue;
    }
    if (c === "'" && quote !== 'double') quote = quote === 'single' ? 'none' : 'single';
    else if (c === '"' && quote !== 'single') quote = quote === 'double' ? 'none' : 'double';
    else if (c === '$') {
      const m = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)/.exec(code.slice(i));
      if (m) uses.push({ name: m[1], line, quoted: quote });
    }
  }
  return uses;
}

/** Names the README's shell examples set: NAME=..., export NAME=..., for NAME in, read NAME. */
function assignedNames(blocks: readonly { code: string }[]): Set<string> {
  const names = new Set<string>();
  for (const { code } of blocks) {
    for (const m of code.matchAll(/(?:^|[\s;(])([A-Za-z_][A-Za-z0-9_]*)=/gm)) names.add(m[1]);
    for (const m of code.matchAll(/\b(?:for|read)\s+([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(m[1]);
  }
  return names;
}

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const blocks = shellBlocks(readme);

test('the README has shell examples to check', () => {
  assert.ok(blocks.length > 10, `${blocks.length} sh blocks`);
});

test('no shell variable of a README example sits in single quotes, where sh would not expand it', () => {
  const assigned = assignedNames(blocks);
  const literal = blocks.flatMap((b) => variableUses(b.code, b.start))
    .filter((u) => u.quoted === 'single' && (assigned.has(u.name) || /^[A-Z][A-Z0-9_]*$/.test(u.name)));
  assert.deepEqual(literal.map((u) => `README.md:${u.line} $${u.name}`), []);
});

test('every variable a README example expands is set by an example', () => {
  const assigned = assignedNames(blocks);
  const unset = blocks.flatMap((b) => variableUses(b.code, b.start))
    .filter((u) => u.quoted !== 'single' && !assigned.has(u.name));
  assert.deepEqual(unset.map((u) => `README.md:${u.line} $${u.name}`), []);
});
