// needs: broker
// Every schema is compiled on its first check (schema/check.ts), not when the broker starts: this
// compiles all of them once a broker with the admin API runs (its routes, the configuration's,
// the features'), so a schema Ajv's strict mode refuses fails here rather than at a user's first
// request.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { compileAllSchemas } from '../../src/schema/check.ts';
import { startAdminBroker } from '../helpers/admin.ts';

test('every schema made by compileSchema compiles', async () => {
  const broker = await startAdminBroker();
  try {
    const count = compileAllSchemas();
    assert.ok(count > 100, `the routes, the configuration and the features made their schemas (${count})`);
  } finally {
    await broker.stop();
  }
});
