// The log store's files: the rotating writer keeps each file under maxSize and at most maxFiles
// files, loses nothing on flush/close, and the store reads its lines back across files (newest
// first and oldest first, across 64 KiB chunk edges), stamps ids that grow, and deletes whole files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { RotatingFile } from '../../src/log/rotating-file.ts';
import { LogStore } from '../../src/log/log-store.ts';

function dir(): string {
  return mkdtempSync(path.join(tmpdir(), 'spindle-logfile-'));
}

test('rotating file: each file stays under maxSize, at most maxFiles, newest lines in the live file', () => {
  const d = dir();
  const f = new RotatingFile({ dir: d, base: 'spindle.log', maxSize: 1000, maxFiles: 3 });
  f.open();
  for (let i = 0; i < 100; i++) f.append(`line ${String(i).padStart(3, '0')} ${'x'.repeat(40)}\n`);
  f.close();
  assert.deepEqual(readdirSync(d).sort(), ['spindle.log', 'spindle.log.1', 'spindle.log.2']);
  for (const name of readdirSync(d)) assert.ok(statSync(path.join(d, name)).size <= 1000, name);
  const all = ['spindle.log.2', 'spindle.log.1', 'spindle.log'].map((n) => readFileSync(path.join(d, n), 'utf8')).join('').trimEnd().split('\n');
  // The last lines, in order, none split or repeated.
  assert.equal(all.at(-1), `line 099 ${'x'.repeat(40)}`);
  all.forEach((l, i) => assert.equal(Number(l.slice(5, 8)), 100 - all.length + i));
});

test('rotating file: a line longer than maxSize goes whole into a file; maxFiles 1 keeps the live file only', () => {
  const d = dir();
  const f = new RotatingFile({ dir: d, base: 'spindle.log', maxSize: 1024, maxFiles: 1 });
  f.open();
  f.append('a\n');
  f.append(`${'b'.repeat(2000)}\n`);
  f.append('c\n');
  f.close();
  assert.deepEqual(readdirSync(d), ['spindle.log']);
  assert.equal(readFileSync(path.join(d, 'spindle.log'), 'utf8'), 'c\n');
});

test('rotating file: reopening appends; files past a lowered maxFiles are dropped', () => {
  const d = dir();
  writeFileSync(path.join(d, 'spindle.log'), 'old\n');
  writeFileSync(path.join(d, 'spindle.log.1'), 'older\n');
  writeFileSync(path.join(d, 'spindle.log.2'), 'oldest\n');
  const f = new RotatingFile({ dir: d, base: 'spindle.log', maxSize: 1024, maxFiles: 2 });
  f.open();
  f.append('new\n');
  f.flush();
  assert.equal(readFileSync(path.join(d, 'spindle.log'), 'utf8'), 'old\nnew\n');
  assert.deepEqual(readdirSync(d).sort(), ['spindle.log', 'spindle.log.1']);
  f.close();
});

test('log store: ids grow, lines read back newest first and oldest first across files and chunk edges', async () => {
  const d = dir();
  const s = new LogStore({ dir: d, maxSize: 100_000, maxFiles: 5 });
  s.open();
  const ids: number[] = [];
  const N = 3000; // ~130 bytes a line: several files, each more than one 64 KiB chunk
  for (let i = 0; i < N; i++) ids.push(s.append(JSON.stringify({ time: new Date().toISOString(), level: 'info', name: 'unit', msg: `entry ${i}`, pad: 'p'.repeat(40) }) + '\n'));
  s.append('a stray print', 'worker-3');
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1]);
  assert.ok(readdirSync(d).length >= 4);
  const first = await s.query({}, 1, 3);
  assert.equal(first.total, N + 1);
  assert.deepEqual(first.data.map((e) => e.message), ['a stray print', `entry ${N - 1}`, `entry ${N - 2}`]);
  assert.equal(first.data[0].module, 'worker-3');
  assert.equal(first.data[1].id, ids[N - 1]);
  assert.deepEqual(first.data[1].fields, { pad: 'p'.repeat(40) });
  const last = await s.query({ module: 'unit' }, N, 1);
  assert.deepEqual(last.data.map((e) => e.message), ['entry 0']);
  const lines: string[] = [];
  for await (const l of s.export({ text: 'entry 1' })) lines.push(l);
  assert.equal(lines[0], readFileSync(path.join(d, 'spindle.log.4'), 'utf8').split('\n').find((l) => l.includes('"entry 1"'))! + '\n');
  assert.equal(lines.length, 1 + 10 + 100 + 1000);
  // Whole files at or before an id go; the file holding a newer entry stays.
  const removed = await s.deleteOld((e) => e.id <= ids[1500]);
  assert.ok(removed >= 1);
  const after = await s.query({}, 1, 1);
  assert.ok(after.total < N && after.total > N - 1500);
  s.close();
});
