// Rewrites the configuration table of docs/operating/configuration.md from the configuration code
// (test/config/config-doc.test.ts fails until this has been run after a key changes):
// node --import tsx scripts/update-config-doc.ts
import { readFileSync, writeFileSync } from 'node:fs';

import { describeConfig } from '../src/config/index.ts';

const file = new URL('../docs/operating/configuration.md', import.meta.url);
const doc = readFileSync(file, 'utf8');
const next = doc.replace(/(<!-- config-table:start[^\n]*-->\n)[\s\S]*?(\n<!-- config-table:end -->)/, (_, a: string, b: string) => `${a}${describeConfig().trim()}${b}`);
writeFileSync(file, next);
