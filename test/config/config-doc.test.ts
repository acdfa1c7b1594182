// The README's configuration table is generated from the configuration code: this test fails
// when a key is added, renamed or re-documented without the README following.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { describeConfig } from '../../src/config/index.ts';

test('the README documents every configuration key exactly as the code does', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const m = /<!-- config-table:start[^\n]*-->\n([\s\S]*?)\n<!-- config-table:end -->/.exec(readme);
  assert.ok(m, 'README has the config-table markers');
  assert.equal(m[1].trim(), describeConfig().trim());
});
