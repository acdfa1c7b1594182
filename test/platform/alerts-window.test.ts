// SignalWindow: the aggregations over a window, counter resets, too little history, samples
// falling out of the window, the bucket bound, and series pruned once stale.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SignalWindow, counterIncrease } from '../../src/platform/alerts/index.ts';

const T0 = 1_700_000_000_000;

test('gauge aggregations over the window: avg, max, min, last; old samples leave it', () => {
  const w = new SignalWindow();
  const values = [10, 40, 20, 30]; // at 0, 10, 20, 30 s
  values.forEach((v, i) => w.append('g', 30_000, T0 + i * 10_000, v));
  const at = T0 + 30_000;
  assert.equal(w.aggregate('g', 'last', at), 30);
  assert.equal(w.aggregate('g', 'max', at), 40);
  assert.equal(w.aggregate('g', 'min', at), 10);
  assert.equal(w.aggregate('g', 'avg', at), 25);
  // At 40 s the sample of 0 s (10) is out of the 30 s window.
  w.append('g', 30_000, T0 + 40_000, 35);
  assert.equal(w.aggregate('g', 'min', T0 + 40_000), 20);
  assert.equal(w.aggregate('g', 'avg', T0 + 40_000), (40 + 20 + 30 + 35) / 4);
});

test('one sample answers a gauge but not a rate or increase; a stale or older sample is ignored', () => {
  const w = new SignalWindow();
  w.append('c', 60_000, T0, 100);
  assert.equal(w.aggregate('c', 'last', T0), 100);
  assert.equal(w.aggregate('c', 'rate', T0), undefined);
  assert.equal(w.aggregate('c', 'increase', T0), undefined);
  w.append('c', 60_000, T0, 500); // same time: ignored
  w.append('c', 60_000, T0 - 1, 500); // older: ignored
  assert.equal(w.aggregate('c', 'last', T0), 100);
  assert.equal(w.aggregate('missing', 'last', T0), undefined);
});

test('counter increase and rate count a reset as a restart from zero', () => {
  assert.equal(counterIncrease(100, 130), 30);
  assert.equal(counterIncrease(130, 10), 10);
  const w = new SignalWindow();
  // 100 -> 130 (+30) -> reset to 10 (+10) -> 25 (+15): 55 over 30 s.
  [100, 130, 10, 25].forEach((v, i) => w.append('c', 60_000, T0 + i * 10_000, v));
  assert.equal(w.aggregate('c', 'increase', T0 + 30_000), 55);
  assert.ok(Math.abs(w.aggregate('c', 'rate', T0 + 30_000)! - 55 / 30) < 1e-9);
});

test('many samples in a long window stay within the bucket bound and keep increase, max and avg exact', () => {
  const w = new SignalWindow({ maxBuckets: 10 });
  // 1000 samples one second apart in a 1000 s window: 10 buckets of 100 s.
  for (let i = 0; i < 1000; i++) w.append('c', 1_000_000, T0 + i * 1000, i * 2);
  assert.ok(w.size.buckets <= 11, `buckets ${w.size.buckets}`);
  const at = T0 + 999_000;
  assert.equal(w.aggregate('c', 'increase', at), 1998);
  assert.equal(w.aggregate('c', 'max', at), 1998);
  assert.equal(w.aggregate('c', 'avg', at), 999);
  assert.ok(Math.abs(w.aggregate('c', 'rate', at)! - 2) < 1e-9);
});

test('prune drops a series with no sample for a whole window; dropPrefix drops a rule\'s series', () => {
  const w = new SignalWindow();
  w.append('a1', 10_000, T0, 1);
  w.append('a2', 10_000, T0, 1);
  w.append('b', 60_000, T0, 1);
  w.prune(T0 + 5_000);
  assert.equal(w.size.series, 3);
  w.prune(T0 + 20_000);
  assert.equal(w.size.series, 1, 'the 10 s series went, the 60 s one stays');
  w.dropPrefix('b');
  assert.equal(w.size.series, 0);
});
