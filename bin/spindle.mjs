#!/usr/bin/env node
// The `spindle` command: registers tsx and runs src/main.ts.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
