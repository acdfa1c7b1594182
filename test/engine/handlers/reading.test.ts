// A connection's reading paused for several reasons at once (src/engine/handlers/reading.ts):
// a rule stage's hold and a rate limit's pause (throttle.ts pauseUntil) each resume reading only
// when the other no longer holds it, whichever lets go first; the publish pipeline's bound keeps
// it paused too; a closed connection is not resumed.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { holdForRules, releaseForRules } from '../../../src/engine/handlers/reading.ts';
import { pauseUntil } from '../../../src/engine/handlers/throttle.ts';
import type { Client, HandlerHost } from '../../../src/engine/handlers/client.ts';
import { waitFor } from '../../helpers/wait.ts';

const MAX = 4;

function client() {
  const c = {
    paused: false,
    closed: false,
    resumes: 0,
    heldByRules: false,
    throttledUntil: 0,
    publishPending: 0,
    endpoint: { stats: { throttled: [0, 0, 0, 0, 0] } },
    isClosed() {
      return c.closed;
    },
    pauseReading() {
      c.paused = true;
    },
    resumeReading() {
      c.paused = false;
      c.resumes++;
    },
  };
  return c;
}
const host = { config: { limits: { receiveMaximum: MAX } } } as unknown as HandlerHost;
const asClient = (c: ReturnType<typeof client>) => c as unknown as Client;

test('the rule stage holds reading once, and lets go of it', () => {
  const c = client();
  assert.equal(holdForRules(asClient(c)), true);
  assert.equal(c.paused, true);
  assert.equal(holdForRules(asClient(c)), false, 'held already');
  releaseForRules(asClient(c), MAX);
  assert.deepEqual([c.paused, c.heldByRules, c.resumes], [false, false, 1]);
  c.closed = true;
  assert.equal(holdForRules(asClient(c)), false, 'closed: nothing to hold');
});

test('held by the rule stage and a rate limit: reading resumes when both have let go, either first', async () => {
  // The rate limit ends first: still held by the rules.
  const a = client();
  holdForRules(asClient(a));
  pauseUntil(host, asClient(a), 0, Date.now(), Date.now() + 20);
  await waitFor(() => a.throttledUntil === 0 || null);
  assert.deepEqual([a.paused, a.resumes], [true, 0], 'the rate limit ended; the rule stage still holds it');
  releaseForRules(asClient(a), MAX);
  assert.deepEqual([a.paused, a.resumes], [false, 1]);

  // The rule stage lets go first: still paused by the rate limit, which resumes it.
  const b = client();
  holdForRules(asClient(b));
  pauseUntil(host, asClient(b), 0, Date.now(), Date.now() + 20);
  releaseForRules(asClient(b), MAX);
  assert.deepEqual([b.paused, b.resumes], [true, 0], 'the rate limit still holds it');
  await waitFor(() => b.throttledUntil === 0 || null);
  assert.deepEqual([b.paused, b.resumes], [false, 1]);
});

test('the publish pipeline at its bound keeps reading paused when the rule stage lets go; a closed connection stays as it is', () => {
  const c = client();
  c.publishPending = MAX;
  holdForRules(asClient(c));
  releaseForRules(asClient(c), MAX);
  assert.deepEqual([c.paused, c.heldByRules], [true, false], 'the pipeline resumes it when it settles');
  const d = client();
  holdForRules(asClient(d));
  d.closed = true;
  releaseForRules(asClient(d), MAX);
  assert.equal(d.resumes, 0);
});
