#!/usr/bin/env node
// The broker from its TypeScript sources, for development: registers tsx and runs src/main.ts.
// What ships and what `make run` starts is bin/spindle (the compiled lib/ of `make build`).
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
