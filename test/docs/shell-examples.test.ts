// The shell examples of README.md and docs/**/*.md run as written: no shell variable ($PW,
// $TOKEN, ...) inside single quotes, where the shell would not expand it. `${field}` templates of
// the rule engine and the commands are meant literally and stay allowed there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}

/** The single-quoted strings of a shell text (comments skipped, double quotes and escapes followed). */
export function singleQuoted(sh: string): string[] {
  const out: string[] = [];
  let state: 'none' | 'single' | 'double' = 'none';
  let buf = '';
  for (let i = 0; i < sh.length; i++) {
    const c = sh[i];
    if (state === 'none') {
      if (c === '#' && (i === 0 || sh[i - 1] === ' ' || sh[i - 1] === '\n')) {
        const end = sh.indexOf('\n', i);
        i = end < 0 ? sh.length : end;
      } else if (c === "'") {
        state = 'single';
        buf = '';
      } else if (c === '"') state = 'double';
      else if (c === '\\') i++;
    } else if (state === 'single') {
      if (c === "'") {
        out.push(buf);
        state = 'none';
      } else buf += c;
    } else if (c === '\\') i++;
    else if (c === '"') state = 'none';
  }
  return out;
}

test('the scanner finds a variable in single quotes, and not in double quotes', () => {
  const vars = (sh: string) => singleQuoted(sh).filter((s) => /\$[A-Za-z_(]/.test(s));
  assert.deepEqual(vars(`A='-u admin:$PASSWORD'`), ['-u admin:$PASSWORD']);
  assert.deepEqual(vars(`curl -d "{\\"p\\":\\"$PW\\"}" -H 'x: y' # it's fine`), []);
  assert.deepEqual(vars(`curl -d '{"t":"\${site}"}'`), []);
});

for (const file of [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))]) {
  test(`${path.relative(ROOT, file)}: no shell variable inside single quotes`, () => {
    const text = readFileSync(file, 'utf8');
    const found: string[] = [];
    for (const m of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
      for (const s of singleQuoted(m[1])) if (/\$[A-Za-z_(]/.test(s)) found.push(s);
    }
    assert.deepEqual(found, []);
  });
}
