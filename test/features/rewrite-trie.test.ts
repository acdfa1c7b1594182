// The compiled topic rewrite rules against the definition: for random rule lists (many siblings
// per level, so the trie's open-addressing tables probe past collisions of their slots; `+`, `#`,
// `$` topics) and random topics, the rule that rewrites a topic is the first rule whose action
// applies and whose source filter matches it (src/auth/topic-filter.ts's matches()), and a topic
// no filter matches comes back as the same string.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CompiledRewrite, type RewriteRule } from '../../src/features/rewrite/index.ts';
import { matches } from '../../src/auth/topic-filter.ts';
import { Rng, seeds } from '../helpers/random.ts';

function level(rng: Rng, siblings: number): string {
  const names = ['a', 'b', 'ab', 'ba', '$x', 'long-level-name', '', 'é'];
  return rng.bool(0.5) ? `l${rng.int(siblings)}` : rng.pick(names);
}

function filter(rng: Rng, siblings: number): string {
  const n = 1 + rng.int(4);
  const levels: string[] = [];
  for (let i = 0; i < n; i++) {
    if (i === n - 1 && rng.bool(0.2)) {
      levels.push('#');
      break;
    }
    levels.push(rng.bool(0.2) ? '+' : level(rng, siblings));
  }
  return levels.join('/');
}

const WHO = { clientId: 'c1' };

function topic(rng: Rng, siblings: number): string {
  const n = 1 + rng.int(5);
  return Array.from({ length: n }, () => level(rng, siblings)).join('/');
}

for (const seed of seeds(8)) {
  test(`compiled rules pick the first matching rule (seed ${seed})`, () => {
    const rng = new Rng(seed);
    const siblings = 1 + rng.int(300);
    const rules: RewriteRule[] = Array.from({ length: 1 + rng.int(400) }, (_, i) => ({
      action: rng.pick(['publish', 'subscribe', 'all'] as const),
      sourceFilter: filter(rng, siblings),
      regex: '^(.*)$',
      destination: `r${i}/$1`,
    }));
    const compiled = new CompiledRewrite(rules, new Uint32Array(new SharedArrayBuffer(4 * rules.length)));
    for (let k = 0; k < 3000; k++) {
      const t = topic(rng, siblings);
      const expected = (bit: 'publish' | 'subscribe') => {
        const i = rules.findIndex((r) => (r.action === bit || r.action === 'all') && matches(r.sourceFilter, t));
        return i === -1 ? t : `r${i}/${t}`;
      };
      assert.equal(compiled.publish(t, WHO), expected('publish'), `publish ${JSON.stringify(t)}`);
      if (!t.startsWith('$share/') && !t.startsWith('$exclusive/')) assert.equal(compiled.filter(t, WHO), expected('subscribe'), `filter ${JSON.stringify(t)}`);
    }
  });
}

test("a client's last topic is remembered: the same topic again gives the same answer and is counted, other rules are not used", () => {
  const rules: RewriteRule[] = [{ action: 'publish', sourceFilter: 'old/#', regex: '^old/(.+)$', destination: 'new/$1' }];
  const counts = new Uint32Array(new SharedArrayBuffer(4));
  const compiled = new CompiledRewrite(rules, counts);
  const client: { rewriteMemo?: any; identity: { clientId: string } } = { identity: WHO };
  assert.equal(compiled.publishFrom(client, 'old/a'), 'new/a');
  assert.equal(compiled.publishFrom(client, `old/${'a'}`), 'new/a', 'remembered');
  assert.equal(counts[0], 2, 'a remembered rewrite is counted too');
  assert.equal(compiled.publishFrom(client, 'other'), 'other');
  assert.equal(compiled.publishFrom(client, 'other'), 'other');
  assert.equal(counts[0], 2);
  const replaced = new CompiledRewrite([{ action: 'publish', sourceFilter: 'other', regex: '^other$', destination: 'x' }], null);
  assert.equal(replaced.publishFrom(client, 'other'), 'x', 'a memo of other rules is not used');
});
