// lazyImport (issue 26): one load per module however many callers, and a failure kept and named.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { lazyImport, ModuleLoadError } from '../../src/lazy/lazy-import.ts';

test('lazyImport loads once: every call, concurrent or later, answers the same module', async () => {
  let loads = 0;
  const load = lazyImport('fake', async () => {
    loads++;
    return { value: 42 };
  });
  assert.equal(loads, 0, 'nothing is loaded before the first call');
  const [a, b] = await Promise.all([load(), load()]);
  const c = await load();
  assert.equal(loads, 1);
  assert.equal(a, b);
  assert.equal(a, c);
  assert.equal(a.value, 42);
});

test('lazyImport: a module that fails to load rejects every call with a ModuleLoadError naming it, loaded once', async () => {
  let loads = 0;
  const cause = new Error("Cannot find package 'fake-driver'");
  const load = lazyImport('fake-driver', async () => {
    loads++;
    throw cause;
  });
  for (let i = 0; i < 2; i++) {
    await assert.rejects(load(), (err: unknown) => {
      assert.ok(err instanceof ModuleLoadError);
      assert.equal(err.module, 'fake-driver');
      assert.equal(err.message, "cannot load fake-driver: Cannot find package 'fake-driver'");
      assert.equal(err.cause, cause);
      return true;
    });
  }
  assert.equal(loads, 1);
});

test('lazyImport loads a real module with import()', async () => {
  const load = lazyImport('node:path', () => import('node:path'));
  assert.equal((await load()).posix.join('a', 'b'), 'a/b');
});
