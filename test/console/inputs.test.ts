// The console's form fields against a Preact trap: Preact sets an input's `value` (and `checked`)
// again on every render whenever it differs from what the field shows, so a field that takes its
// value from the server without keeping what the user types in state is reset by the next render.
// On a page that reads its figures every 2 seconds, that is what the user typed, gone before Save
// (the Limits page's overload marks lost a test's typed mark this way). A field is either
// controlled (`value` with an onInput or onChange that keeps it) or starts from the server's
// value with `defaultValue`/`defaultChecked`, which Preact sets only when the value given changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const SRC = fileURLToPath(new URL('../../console/src/', import.meta.url));

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? jsFiles(p) : e.name.endsWith('.js') ? [p] : [];
  });
}

/** The tag's text from `<` to its closing `>`, with each `${...}` expression replaced by `${}`. */
function tagAt(text: string, start: number): string {
  let out = '';
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (depth === 0 && c === '$' && text[i + 1] === '{') {
      depth = 1;
      out += '${}';
      i++;
      continue;
    }
    if (depth > 0) {
      if (c === '{') depth++;
      else if (c === '}') depth--;
      continue;
    }
    out += c;
    if (c === '>') return out;
  }
  return out;
}

/** The fields of a source whose shown value comes from an expression that nothing keeps. */
function resetFields(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/<(input|textarea|select)\b/g)) {
    const tag = tagAt(text, m.index);
    const checkable = /type="(checkbox|radio)"/.test(tag);
    const shown = /\schecked=\$\{\}/.test(tag) || (!checkable && /\svalue=\$\{\}/.test(tag));
    const kept = /\son(Input|Change)=\$\{\}/.test(tag);
    if (shown && !kept) found.push(`line ${text.slice(0, m.index).split('\n').length}: ${tag}`);
  }
  return found;
}

test('the scanner finds a field reset by each render, and passes a controlled or default-valued one', () => {
  assert.deepEqual(resetFields('html`<input name="a" value=${m.a} />`').length, 1);
  assert.deepEqual(resetFields('html`<input type="checkbox" checked=${m.on} />`').length, 1);
  assert.deepEqual(resetFields('html`<select value=${v}>${xs.map((x) => html`<option>${x}</option>`)}</select>`').length, 1);
  assert.deepEqual(resetFields('html`<input value=${v} onInput=${(e) => setV(e.target.value > 1)} />`'), []);
  assert.deepEqual(resetFields('html`<input name="a" defaultValue=${m.a} />`'), []);
  assert.deepEqual(resetFields('html`<input type="checkbox" name="ids" value=${c.id} defaultChecked=${c.on} />`'), []);
});

test("no console field shows the server's value in a way the next render resets", () => {
  const found = jsFiles(SRC).flatMap((f) => resetFields(readFileSync(f, 'utf8')).map((s) => `${path.relative(SRC, f)} ${s}`));
  assert.deepEqual(found, []);
});
