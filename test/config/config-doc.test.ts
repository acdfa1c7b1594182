// The configuration table of docs/operating/configuration.md is generated from the configuration
// code: this test fails when a key is added, renamed or re-documented without the page following
// (scripts/update-config-doc.ts rewrites it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { describeConfig } from '../../src/config/index.ts';

test('the configuration page documents every configuration key exactly as the code does', () => {
  const doc = readFileSync(new URL('../../docs/operating/configuration.md', import.meta.url), 'utf8');
  const m = /<!-- config-table:start[^\n]*-->\n([\s\S]*?)\n<!-- config-table:end -->/.exec(doc);
  assert.ok(m, 'docs/operating/configuration.md has the config-table markers');
  assert.equal(m[1].trim(), describeConfig().trim());
});
