// Rewrites the README's configuration table from the configuration code (test/config/readme.test.ts
// fails until this has been run after a key changes): node --import tsx scripts/update-readme-config.ts
import { readFileSync, writeFileSync } from 'node:fs';

import { describeConfig } from '../src/config/index.ts';

const file = new URL('../README.md', import.meta.url);
const readme = readFileSync(file, 'utf8');
const next = readme.replace(/(<!-- config-table:start[^\n]*-->\n)[\s\S]*?(\n<!-- config-table:end -->)/, (_, a: string, b: string) => `${a}${describeConfig().trim()}${b}`);
writeFileSync(file, next);
