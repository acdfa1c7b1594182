// The ACL topic-filter matcher: MQTT matching rules including '$' topics, and covers() between
// a rule filter and a requested subscription filter, overlapLevels() between two filters.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { covers, matches, overlapLevels, parseFilter, topicFilterProblem, topicNameProblem } from '../../src/auth/topic-filter.ts';

test('matches()', () => {
  const table: [string, string, boolean][] = [
    ['a/b', 'a/b', true],
    ['a/b', 'a/c', false],
    ['a/b', 'a/b/c', false],
    ['a/+', 'a/b', true],
    ['a/+', 'a/b/c', false],
    ['a/+', 'a/', true],
    ['a/+', 'a', false],
    ['+/+', '/x', true],
    ['+', '', true],
    ['a/#', 'a', true],
    ['a/#', 'a/b/c', true],
    ['a/#', 'ab', false],
    ['#', 'a/b', true],
    ['#', '/', true],
    ['+/b/#', 'x/b', true],
    ['+/b/#', 'x/c', false],
    ['#', '$SYS/broker', false],
    ['+/broker', '$SYS/broker', false],
    ['$SYS/#', '$SYS/broker', true],
    ['$SYS/+', '$SYS/broker', true],
    ['a/$x', 'a/$x', true],
    ['+/$x', 'a/$x', true],
    ['sport/tennis/+', 'sport/tennis/player1', true],
    ['sport/tennis/+', 'sport/tennis/player1/ranking', false],
    ['sport/+', 'sport', false],
    ['sport/#', 'sport', true],
  ];
  for (const [filter, topic, want] of table) assert.equal(matches(filter, topic), want, `matches(${filter}, ${topic})`);
});

test('covers()', () => {
  const table: [string, string, boolean][] = [
    ['a/#', 'a/+/b', true],
    ['a/#', 'a/#', true],
    ['a/#', 'a', true],
    ['a/#', 'a/b/c', true],
    ['a/+', 'a/#', false],
    ['a/+', 'a/+', true],
    ['a/+', 'a/b', true],
    ['a/+', 'a', false],
    ['a/+', 'a/b/c', false],
    ['a/b', 'a/+', false],
    ['a/b', 'a/b', true],
    ['a', 'a/#', false],
    ['a/+/#', 'a/#', false],
    ['a/+/#', 'a/b/#', true],
    ['a/+/#', 'a/+', true],
    ['#', '#', true],
    ['#', '+/x', true],
    ['#', 'anything/at/all', true],
    ['#', '$SYS/#', false],
    ['#', '$SYS/broker', false],
    ['+/#', '$SYS/#', false],
    ['$SYS/#', '#', false],
    ['$SYS/#', '$SYS/+', true],
    ['+/+', '+/+', true],
    ['+/+', '+/#', false],
    ['+', '#', false],
  ];
  for (const [rule, requested, want] of table) assert.equal(covers(rule, requested), want, `covers(${rule}, ${requested})`);
});

test('covers() agrees with matches() on sample topics', () => {
  const filters = ['#', '+', 'a/#', 'a/+', 'a/b', '+/b', 'a/+/#', '+/+', '$SYS/#', 'a', '+/#'];
  const topics = ['a', 'a/b', 'a/c', 'b/b', 'a/b/c', '$SYS/x', 'x', '', 'a/', '/b'];
  for (const rule of filters) {
    for (const requested of filters) {
      if (!covers(rule, requested)) continue;
      for (const topic of topics) {
        if (matches(requested, topic)) assert.ok(matches(rule, topic), `${rule} covers ${requested} but misses ${topic}`);
      }
    }
  }
});

test('filter and topic-name validity', () => {
  assert.equal(topicFilterProblem('a/+/#'), undefined);
  assert.equal(topicFilterProblem('#'), undefined);
  assert.match(topicFilterProblem('a/#/b') ?? '', /last level/);
  assert.match(topicFilterProblem('a#') ?? '', /whole level/);
  assert.match(topicFilterProblem('a/b+') ?? '', /whole level/);
  assert.match(topicFilterProblem('') ?? '', /empty/);
  assert.match(topicFilterProblem('a\u0000') ?? '', /U\+0000/);
  assert.equal(topicNameProblem('a/b'), undefined);
  assert.match(topicNameProblem('a/+') ?? '', /wildcards/);
});

test('overlapLevels: some topic matched by both filters', () => {
  const overlap = (a: string, b: string) => overlapLevels(parseFilter(a), parseFilter(b));
  const yes: [string, string][] = [['a/b', 'a/b'], ['a/+', 'a/secret'], ['a/#', 'a'], ['a', 'a/#'], ['+/b', 'a/+'], ['#', 'x/y/z'], ['a/+/c', 'a/#'], ['$SYS/#', '$SYS/x']];
  const no: [string, string][] = [['a/b', 'a/c'], ['a/+', 'a/b/c'], ['a', 'a/+'], ['#', '$SYS/x'], ['+/x', '$SYS/x'], ['a/b/c', 'a/b'], ['a/+/c', 'a/b/d']];
  for (const [a, b] of yes) {
    assert.equal(overlap(a, b), true, `${a} ~ ${b}`);
    assert.equal(overlap(b, a), true, `${b} ~ ${a}`);
  }
  for (const [a, b] of no) {
    assert.equal(overlap(a, b), false, `${a} !~ ${b}`);
    assert.equal(overlap(b, a), false, `${b} !~ ${a}`);
  }
});
