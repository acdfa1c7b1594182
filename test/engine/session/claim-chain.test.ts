// ClaimChain unit tests (no engine, no sockets): one or two chains over a real ClientRegistry,
// messages between them passed on the next turn as ports do, and what a session's lifecycle
// would do (giveUp, keepLate) recorded by a fake. They pin the order of takeover: the next claim
// gets the session only once the claim before it settled, claims racing on one client id take it
// in the order they claimed, a session leaves another worker as its state, a worker gone sends a
// resumed claim to the store, and a hand-over slower than HANDOVER_WAIT_MS (mocked timers) fails
// the CONNECT but keeps the session.
import { test, mock, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { ClientRegistry } from '../../../src/native/index.ts';
import { createLogger } from '../../../src/log/index.ts';
import { ClaimChain, HANDOVER_WAIT_MS, type Claim, type HandoverRequest, type PreviousClaim, type Received } from '../../../src/engine/session/claim-chain.ts';
import { Session } from '../../../src/engine/session/session.ts';
import { exportState } from '../../../src/engine/session/handover.ts';

const limits = { maxQueued: 10, dropPolicy: 'drop-newest' as const };
const log = createLogger({ level: 'error', name: 'claim-chain-test' });

interface Given {
  worker: number;
  session: Session;
  req: HandoverRequest;
  cross: boolean;
}

function chains(workers = 1) {
  const name = `chain-${randomUUID()}`;
  const registry = ClientRegistry.open(name);
  const given: Given[] = [];
  const late: { claim: Claim; received: Received; resume: boolean }[] = [];
  const loads: string[] = [];
  const stored = new Map<string, Session>();
  const stats = { takeoverTimeouts: 0 };
  const list: ClaimChain[] = [];
  for (let id = 0; id < workers; id++) {
    list.push(new ClaimChain({
      workerId: id,
      registry,
      stats,
      log,
      sendControl: (w, msg) => setImmediate(() => list[w].onMessage(msg, id)),
      loadStored: async (clientId) => {
        loads.push(clientId);
        return stored.get(clientId) ?? null;
      },
      holds: () => true,
      // As SessionLifecycle.giveUp: the session itself on the same worker, its state to another.
      giveUp: (session, req, cross, reply) => {
        given.push({ worker: id, session, req, cross });
        if (!req.resume) reply({ kind: 'none' });
        else if (cross) reply({ kind: 'state', state: exportState(session), from: id });
        else reply({ kind: 'session', session });
      },
      keepLate: (claim, received, resume) => late.push({ claim, received, resume }),
    }));
  }
  return { registry, chains: list, given, late, loads, stored, stats, close: () => ClientRegistry.close(name) };
}

/** A claim that has its session (as after CONNECT), settled or not. */
function holding(chain: ClaimChain, clientId: string, settled: boolean): { claim: Claim; session: Session } {
  const { claim } = chain.claim(clientId, false);
  const session = new Session(claim.handle, clientId, limits);
  chain.bind(claim, session);
  if (settled) chain.settle(claim);
  return { claim, session };
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

let close: (() => void) | null = null;
afterEach(() => {
  mock.timers.reset();
  close?.();
  close = null;
});

test('a claim of a free client id has none before it, and the registry names its worker and handle', () => {
  const h = chains(2);
  close = h.close;
  const { claim, previous } = h.chains[1].claim('free', false);
  assert.equal(previous, null);
  assert.deepEqual(h.registry.lookup('free'), [claim.handle, 1, claim.generation]);
});

test('the next claim gets the session only once the claim before it settled (CONNACK before takeover)', async () => {
  const h = chains();
  close = h.close;
  const first = holding(h.chains[0], 'c', false);
  const { claim, previous } = h.chains[0].claim('c', false);
  assert.deepEqual(previous, { worker: 0, generation: first.claim.generation } satisfies PreviousClaim);
  assert.equal(claim.handle, first.claim.handle, 'a resumed claim keeps the session handle');
  const received = h.chains[0].receive(claim, previous, true);
  await nextTurn();
  assert.equal(h.given.length, 0, 'not given up before its claim settled');
  h.chains[0].settle(first.claim);
  assert.deepEqual(await received, { kind: 'session', session: first.session });
  assert.deepEqual(h.given.map((g) => [g.cross, g.req.forGeneration]), [[false, claim.generation]]);
});

test('claims racing for one client id take the session in the order they claimed', async () => {
  const h = chains();
  close = h.close;
  const chain = h.chains[0];
  const first = holding(chain, 'race', true);
  const second = chain.claim('race', false);
  const third = chain.claim('race', false);
  // The third asks first: it still waits for the second, which has not even received the session.
  const toThird = chain.receive(third.claim, third.previous!, true);
  const toSecond = chain.receive(second.claim, second.previous!, true);
  assert.deepEqual(await toSecond, { kind: 'session', session: first.session });
  await nextTurn();
  assert.deepEqual(h.given.map((g) => g.req.forGeneration), [second.claim.generation]);
  chain.bind(second.claim, first.session);
  chain.settle(second.claim);
  assert.deepEqual(await toThird, { kind: 'session', session: first.session });
  assert.deepEqual(h.given.map((g) => g.req.forGeneration), [second.claim.generation, third.claim.generation]);
});

test('a session that ended releases its client id; a claim asking for it gets none', async () => {
  const h = chains();
  close = h.close;
  const chain = h.chains[0];
  const alone = holding(chain, 'e1', true);
  chain.ended(alone.session);
  assert.equal(h.registry.lookup('e1'), null);

  const first = holding(chain, 'e2', false);
  const next = chain.claim('e2', false);
  chain.ended(first.session);
  assert.deepEqual(await chain.receive(next.claim, next.previous!, true), { kind: 'none' });
  assert.equal(h.given.length, 0);
  assert.equal(h.registry.lookup('e2')?.[2], next.claim.generation, 'the newer claim keeps the client id');
});

test('a withdrawn claim settles: the claim after it gets none, and keeps the client id', async () => {
  const h = chains();
  close = h.close;
  const chain = h.chains[0];
  const first = chain.claim('w', false);
  const next = chain.claim('w', false);
  const received = chain.receive(next.claim, next.previous!, true);
  chain.withdraw(first.claim);
  assert.deepEqual(await received, { kind: 'none' });
  assert.equal(first.claim.settled, true);
  assert.equal(h.registry.lookup('w')?.[2], next.claim.generation);
});

test('across workers the session leaves as its state, once the claim there settled; Clean Start receives none', async () => {
  const h = chains(2);
  close = h.close;
  const first = holding(h.chains[0], 'x', false);
  first.session.subscriptions.set('x/#', { filter: 'x/#', options: 1, subscriptionId: undefined } as never);
  const { claim, previous } = h.chains[1].claim('x', false);
  assert.equal(previous?.worker, 0);
  const received = h.chains[1].receive(claim, previous!, true);
  await nextTurn();
  await nextTurn();
  assert.equal(h.given.length, 0, 'the request waits on worker 0 for its claim to settle');
  h.chains[0].settle(first.claim);
  const r = await received;
  assert.equal(r?.kind, 'state');
  assert.equal(r.kind === 'state' && r.from, 0);
  assert.deepEqual(r.kind === 'state' && r.state.subscriptions.map((s) => s.filter), ['x/#']);
  assert.deepEqual(h.given.map((g) => [g.worker, g.cross, g.req.from]), [[0, true, 1]]);

  const clean = h.chains[0].claim('x', true);
  h.chains[1].bind(claim, first.session);
  h.chains[1].settle(claim);
  assert.deepEqual(await h.chains[0].receive(clean.claim, clean.previous!, false), { kind: 'none' });
  assert.equal(h.given[1].req.resume, false);
});

test('the worker holding the session died: a resumed claim loads it from the store, a clean one gets none', async () => {
  const h = chains(2);
  close = h.close;
  holding(h.chains[0], 'gone', false);
  holding(h.chains[0], 'gone-clean', false);
  const fromStore = new Session(0, 'gone', limits);
  h.stored.set('gone', fromStore);
  const resumed = h.chains[1].claim('gone', false);
  const clean = h.chains[1].claim('gone-clean', true);
  const r1 = h.chains[1].receive(resumed.claim, resumed.previous!, true);
  const r2 = h.chains[1].receive(clean.claim, clean.previous!, false);
  h.chains[1].peerGone(0);
  assert.deepEqual(await r1, { kind: 'loaded', session: fromStore });
  assert.deepEqual(await r2, { kind: 'none' });
  assert.deepEqual(h.loads, ['gone']);
});

test('a hand-over slower than HANDOVER_WAIT_MS: the CONNECT gets null and is counted; the session, when it comes, is kept and the claim settles', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  const h = chains();
  close = h.close;
  const chain = h.chains[0];
  const first = holding(chain, 'slow', false);
  const next = chain.claim('slow', false);
  const received = chain.receive(next.claim, next.previous!, true);
  mock.timers.tick(HANDOVER_WAIT_MS - 1);
  assert.equal(h.stats.takeoverTimeouts, 0);
  mock.timers.tick(1);
  assert.equal(await received, null);
  assert.equal(h.stats.takeoverTimeouts, 1);
  assert.equal(next.claim.settled, false);
  chain.settle(first.claim);
  assert.deepEqual(h.late.map((l) => [l.claim, l.received, l.resume]), [[next.claim, { kind: 'session', session: first.session }, true]]);
  assert.equal(next.claim.settled, true);
});
