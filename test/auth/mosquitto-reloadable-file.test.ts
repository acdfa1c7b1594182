// ReloadableFile: read at construction (unreadable or malformed files throw), replaced on reload
// only when the new text parses, generation counting successful reloads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ReloadableFile, parseAclFile, MosquittoFileError } from '../../src/auth/index.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'spindle-reload-'));

test('reload replaces the contents when the file parses, keeps them when it does not', async () => {
  const file = path.join(dir, 'acl');
  writeFileSync(file, 'topic read a/#\n');
  const acl = new ReloadableFile(file, parseAclFile);
  assert.equal(acl.generation, 0);
  assert.equal(acl.current.anonymous[0].pattern.source, 'a/#');
  writeFileSync(file, 'topic read b/#\n');
  await acl.reload();
  assert.equal(acl.generation, 1);
  assert.equal(acl.current.anonymous[0].pattern.source, 'b/#');
  writeFileSync(file, 'topic read b/#\nbogus line\n');
  await assert.rejects(acl.reload(), /acl line 2: expected "topic", "pattern" or "user"/);
  assert.equal(acl.generation, 1);
  assert.equal(acl.current.anonymous[0].pattern.source, 'b/#');
});

test('a missing or malformed file at construction throws a MosquittoFileError', () => {
  assert.throws(() => new ReloadableFile(path.join(dir, 'missing'), parseAclFile), (err: unknown) => {
    assert.ok(err instanceof MosquittoFileError);
    assert.equal(err.code, 'MOSQUITTO_FILE_UNREADABLE');
    return true;
  });
  const bad = path.join(dir, 'bad');
  writeFileSync(bad, '\n\npattern write a/%q\n');
  assert.throws(() => new ReloadableFile(bad, parseAclFile), /bad line 3: .*unknown placeholder/);
});
