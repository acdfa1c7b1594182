// The one abstract Store test suite: every backend (memory, local, postgres, mysql) registers it
// with its own factory. `make` returns an OPENED store on fresh, empty data; `reopen`, when the
// backend persists, returns a new opened store on the same data (the suite closes the first one
// before calling it). The suite closes every store it was given before calling `cleanup`, which
// only removes the data (schema, database, files).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AUDIT_PRUNE_CHUNK, MAX_AUDIT_PAGE } from '../../src/store/audit.ts';
import { StoreError } from '../../src/store/errors.ts';
import type {
  AuditEntry,
  AuditQuery,
  DeliveryState,
  LoadedDelivery,
  Store,
  StoredDelivery,
  StoredMessage,
  StoredSession,
  StoredSubscription,
} from '../../src/store/types.ts';

export interface StoreHarness {
  store: Store;
  reopen?: () => Promise<Store>;
  cleanup: () => Promise<void>;
}

type NewDelivery = Omit<StoredDelivery, 'messageId' | 'state' | 'packetId'>;

/** Ids above 2^53 (not representable as a JS number) and below 2^63 (fits a signed BIGINT). */
const BIG = 2n ** 62n + 12_345n;
const NON_UTF8 = Buffer.from([0x00, 0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x90, 0x28, 0xbc, 0x80, 0x0a, 0x0d, 0x5c, 0x27, 0x22]);

function message(id: bigint, over: Partial<StoredMessage> = {}): StoredMessage {
  return {
    id,
    topic: `t/${id}`,
    payload: Buffer.from(`payload ${id}`),
    qos: 1,
    retain: false,
    properties: null,
    expiresAt: 0,
    ...over,
  };
}

function session(clientId: string, over: Partial<StoredSession> = {}): StoredSession {
  return { clientId, expiryInterval: 3600, disconnectedAt: null, username: null, will: null, ...over };
}

function delivery(clientId: string, seq: bigint, over: Partial<NewDelivery> = {}): NewDelivery {
  return { clientId, seq, qos: 1, retain: false, subscriptionIds: [], ...over };
}

function loaded(m: StoredMessage, d: NewDelivery, state: DeliveryState = 'queued', packetId = 0): LoadedDelivery {
  return { ...d, messageId: m.id, state, packetId, message: m };
}

function audit(id: string, time: number, over: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id,
    time,
    username: 'alice',
    role: 'admin',
    organizationId: null,
    projectId: null,
    action: 'update',
    resource: 'rule',
    resourceId: 'r1',
    method: 'PUT',
    path: `/api/v5/rules/r1`,
    status: 200,
    address: '127.0.0.1',
    before: null,
    after: null,
    ...over,
  };
}

/** Newest first: time desc, then id desc. */
const newestFirst = (a: AuditEntry, b: AuditEntry) => b.time - a.time || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** Five entries across users, actions, resources, tenants and times 1000..5000. */
const AUDIT_SET: AuditEntry[] = [
  audit('a1', 1000, { username: 'alice', organizationId: 'o1', projectId: 'p1', action: 'create', resource: 'rule', resourceId: 'r1', method: 'POST', status: 201 }),
  audit('a2', 2000, { username: 'bob', role: 'viewer', organizationId: 'o1', projectId: 'p2', action: 'update', resource: 'rule', resourceId: 'r2' }),
  audit('a3', 3000, { username: 'alice', organizationId: 'o2', action: 'delete', resource: 'endpoint', resourceId: 'e1', method: 'DELETE', status: 204 }),
  audit('a4', 4000, { username: 'carol', role: '', action: 'login_failed', resource: 'session', resourceId: null, method: 'POST', path: '/api/v5/login', status: 401, address: '::1' }),
  audit('a5', 5000, { username: 'alice', organizationId: 'o1', projectId: 'p1', action: 'update', resource: 'rule', resourceId: 'r1' }),
];

async function auditIds(store: Store, q: Partial<AuditQuery>): Promise<{ ids: string[]; total: number }> {
  const { entries, total } = await store.queryAudit({ offset: 0, limit: 100, ...q });
  return { ids: entries.map((e) => e.id), total };
}

const byClient = (a: { clientId: string }, b: { clientId: string }) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0);
const bySubKey = (a: StoredSubscription, b: StoredSubscription) => byClient(a, b) || (a.filter < b.filter ? -1 : a.filter > b.filter ? 1 : 0);
const byTopic = (a: { topic: string }, b: { topic: string }) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0);
const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

async function rejectsWithCode(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof StoreError, `expected a StoreError, got ${String(err)}`);
    assert.equal(err.code, code);
    return true;
  });
}

/** `persists: false` (MEMORY) leaves out the tests of what survives a reopen; such a store
 * tests its own "nothing survives" contract instead. */
export function storeSuite(name: string, make: () => Promise<StoreHarness>, options: { persists?: boolean } = {}): void {
  /** Runs `body` with a fresh store; closes every store handed out, then cleans up. */
  function storeTest(title: string, body: (h: { store: Store; reopen: () => Promise<Store> }) => Promise<void>, opts: { needsReopen?: boolean } = {}): void {
    if (opts.needsReopen && options.persists === false) return;
    test(`${name}: ${title}`, { timeout: 120_000 }, async () => {
      const h = await make();
      if (opts.needsReopen && !h.reopen) throw new Error(`${name}: the suite needs reopen() to test durability`);
      const open: Store[] = [h.store];
      const closed = new Set<Store>();
      const closeOne = async (s: Store) => {
        if (closed.has(s)) return;
        closed.add(s);
        await s.close();
      };
      const reopen = async () => {
        if (!h.reopen) throw new Error('reopen not available');
        for (const s of open) await closeOne(s);
        const s = await h.reopen();
        open.push(s);
        return s;
      };
      try {
        await body({ store: h.store, reopen });
      } finally {
        try {
          for (const s of open) await closeOne(s);
        } finally {
          await h.cleanup();
        }
      }
    });
  }

  storeTest('opens empty', async ({ store }) => {
    assert.deepEqual(await store.stats(), { sessions: 0, messages: 0, deliveries: 0, retained: 0 });
    assert.deepEqual(await store.loadSessions(), []);
    assert.deepEqual(await store.loadSubscriptions(), []);
    assert.deepEqual(await store.loadRetained(), []);
    assert.deepEqual(await store.loadDeliveries('nobody'), []);
    assert.deepEqual(await store.loadIncomingQos2('nobody'), []);
    assert.deepEqual(await store.listAdmin('users'), []);
  });

  storeTest('sessions: save, replace, load, delete', async ({ store }) => {
    const willMsg = { topic: 'will/a', payload: NON_UTF8, qos: 2 as const, retain: true, properties: Buffer.from([0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x3c]) };
    const a = session('a', { username: 'alice', will: { message: willMsg, delay: 30, expiryInterval: 60 } });
    const b = session('b', { disconnectedAt: 1_700_000_000_123, expiryInterval: 0xffffffff });
    await store.saveSession(a);
    await store.saveSession(b);
    assert.deepEqual((await store.loadSessions()).sort(byClient), [a, b]);

    const a2 = session('a', { username: null, will: null, disconnectedAt: 1_700_000_001_000, expiryInterval: 10 });
    await store.saveSession(a2);
    assert.deepEqual((await store.loadSessions()).sort(byClient), [a2, b]);
    assert.equal((await store.stats()).sessions, 2);

    await store.deleteSession('a');
    assert.deepEqual(await store.loadSessions(), [b]);
    await store.deleteSession('no-such-client');
    assert.equal((await store.stats()).sessions, 1);
  });

  storeTest("sessions: a will's delay and Message Expiry Interval round-trip, 0 and the largest included", async ({ store }) => {
    const message = { topic: 'will/x', payload: Buffer.from('bye'), qos: 1 as const, retain: false, properties: null };
    const wills = [
      session('none', { will: { message, delay: 0, expiryInterval: 0 } }),
      session('one', { will: { message, delay: 1, expiryInterval: 1 } }),
      session('max', { will: { message, delay: 0xffffffff, expiryInterval: 0xffffffff } }),
    ];
    for (const s of wills) await store.saveSession(s);
    const loaded = (await store.loadSessions()).sort(byClient);
    assert.deepEqual(loaded, [...wills].sort(byClient));
    assert.deepEqual(loaded.map((s) => [s.clientId, s.will?.expiryInterval]), [['max', 0xffffffff], ['none', 0], ['one', 1]]);
  });

  storeTest('sessions: unicode client ids and usernames round-trip', async ({ store }) => {
    const s = session('clïent/😀 #+', { username: 'ユーザー' });
    await store.saveSession(s);
    assert.deepEqual(await store.loadSessions(), [s]);
  });

  storeTest('deleteSession cascades to subscriptions, deliveries and incoming QoS 2 ids', async ({ store }) => {
    await store.saveSession(session('a'));
    await store.saveSession(session('b'));
    await store.addSubscription({ clientId: 'a', filter: 'x/#', options: 1, subscriptionId: 0 });
    await store.addSubscription({ clientId: 'b', filter: 'x/#', options: 2, subscriptionId: 0 });
    const shared = message(1n);
    const onlyA = message(2n);
    await store.addMessage(shared, [delivery('a', 1n), delivery('b', 1n)]);
    await store.addMessage(onlyA, [delivery('a', 2n)]);
    await store.addIncomingQos2('a', 17);
    await store.addIncomingQos2('b', 18);

    await store.deleteSession('a');
    assert.deepEqual(await store.loadSubscriptions('a'), []);
    assert.deepEqual(await store.loadDeliveries('a'), []);
    assert.deepEqual(await store.loadIncomingQos2('a'), []);
    // b keeps everything; the message only a referred to is gone.
    assert.equal((await store.loadSubscriptions('b')).length, 1);
    assert.deepEqual(await store.loadDeliveries('b'), [loaded(shared, delivery('b', 1n))]);
    assert.deepEqual(await store.loadIncomingQos2('b'), [18]);
    assert.deepEqual(await store.stats(), { sessions: 1, messages: 1, deliveries: 1, retained: 0 });
  });

  storeTest('subscriptions: add, replace, remove, load by client and all', async ({ store }) => {
    await store.saveSession(session('a'));
    await store.saveSession(session('b'));
    const a1 = { clientId: 'a', filter: 'sensors/+/temp', options: 0x01, subscriptionId: 0 };
    const a2 = { clientId: 'a', filter: '$share/g/x/#', options: 0x2e, subscriptionId: 268_435_455 };
    const b1 = { clientId: 'b', filter: 'sensors/+/temp', options: 0x02, subscriptionId: 7 };
    await store.addSubscription(a1);
    await store.addSubscription(a2);
    await store.addSubscription(b1);
    assert.deepEqual((await store.loadSubscriptions('a')).sort(bySubKey), [a2, a1].sort(bySubKey));
    assert.deepEqual(await store.loadSubscriptions('b'), [b1]);
    assert.deepEqual((await store.loadSubscriptions()).sort(bySubKey), [a1, a2, b1].sort(bySubKey));

    const a1b = { ...a1, options: 0x02, subscriptionId: 99 };
    await store.addSubscription(a1b);
    assert.deepEqual((await store.loadSubscriptions('a')).sort(bySubKey), [a1b, a2].sort(bySubKey));
    assert.equal((await store.loadSubscriptions()).length, 3);

    await store.removeSubscription('a', 'sensors/+/temp');
    await store.removeSubscription('a', 'not/subscribed');
    assert.deepEqual(await store.loadSubscriptions('a'), [a2]);
    assert.deepEqual(await store.loadSubscriptions('b'), [b1]);
    assert.deepEqual(await store.loadSubscriptions('nobody'), []);
  });

  storeTest('messages: stored once with N deliveries, loaded in seq order with the message', async ({ store }) => {
    for (const c of ['a', 'b', 'c']) await store.saveSession(session(c));
    const m1 = message(10n, { topic: 'x/1', qos: 2, retain: true, properties: Buffer.from([0x26, 0x00, 0x01, 0x6b, 0x00, 0x01, 0x76]), expiresAt: 4_102_444_800_000 });
    const m2 = message(11n, { topic: 'x/2', qos: 0 });
    const m3 = message(12n, { topic: 'x/3' });
    const da = delivery('a', 5n, { qos: 2, retain: true, subscriptionIds: [1, 268_435_455] });
    const db = delivery('b', 1n, { qos: 1 });
    const dc = delivery('c', 1n, { qos: 0, subscriptionIds: [3] });
    await store.addMessage(m1, [da, db, dc]);
    assert.deepEqual(await store.stats(), { sessions: 3, messages: 1, deliveries: 3, retained: 0 });

    // Lower seq added later still comes first: the order is seq, not insertion.
    const da2 = delivery('a', 2n, { qos: 0 });
    const da3 = delivery('a', 9n);
    await store.addMessage(m2, [da2]);
    await store.addMessage(m3, [da3]);
    assert.deepEqual(await store.loadDeliveries('a'), [loaded(m2, da2), loaded(m1, da), loaded(m3, da3)]);
    assert.deepEqual(await store.loadDeliveries('b'), [loaded(m1, db)]);
    assert.deepEqual(await store.loadDeliveries('c'), [loaded(m1, dc)]);
    assert.deepEqual(await store.stats(), { sessions: 3, messages: 3, deliveries: 5, retained: 0 });
  });

  storeTest('deliveries: update state and packet id, remove; the message goes with its last delivery', async ({ store }) => {
    await store.saveSession(session('a'));
    await store.saveSession(session('b'));
    const m = message(20n, { qos: 2 });
    const da = delivery('a', 1n, { qos: 2 });
    const db = delivery('b', 1n, { qos: 2 });
    await store.addMessage(m, [da, db]);

    await store.updateDelivery('a', m.id, 'inflight', 65_535);
    assert.deepEqual(await store.loadDeliveries('a'), [loaded(m, da, 'inflight', 65_535)]);
    assert.deepEqual(await store.loadDeliveries('b'), [loaded(m, db)]);
    await store.updateDelivery('a', m.id, 'pubrel', 65_535);
    assert.deepEqual(await store.loadDeliveries('a'), [loaded(m, da, 'pubrel', 65_535)]);
    await store.updateDelivery('b', m.id, 'inflight', 1);
    assert.deepEqual(await store.loadDeliveries('b'), [loaded(m, db, 'inflight', 1)]);

    await store.removeDelivery('a', m.id);
    assert.deepEqual(await store.loadDeliveries('a'), []);
    assert.deepEqual(await store.stats(), { sessions: 2, messages: 1, deliveries: 1, retained: 0 });
    await store.removeDelivery('b', m.id);
    assert.deepEqual(await store.loadDeliveries('b'), []);
    assert.deepEqual(await store.stats(), { sessions: 2, messages: 0, deliveries: 0, retained: 0 });
    await store.removeDelivery('b', m.id);
  });

  storeTest('a message that is also retained stays until both its deliveries and the retained entry go', async ({ store }) => {
    await store.saveSession(session('a'));
    const m = message(30n, { topic: 'r/x', retain: true });
    await store.addMessage(m, [delivery('a', 1n)]);
    await store.setRetained('r/x', m);
    assert.deepEqual(await store.stats(), { sessions: 1, messages: 1, deliveries: 1, retained: 1 });
    await store.removeDelivery('a', m.id);
    assert.deepEqual(await store.stats(), { sessions: 1, messages: 1, deliveries: 0, retained: 1 });
    assert.deepEqual(await store.loadRetained(), [{ topic: 'r/x', message: m }]);
    await store.deleteRetained('r/x');
    assert.deepEqual(await store.stats(), { sessions: 1, messages: 0, deliveries: 0, retained: 0 });
  });

  storeTest('payload and properties bytes round-trip exactly (non-UTF-8, empty, 1 MB)', async ({ store }) => {
    await store.saveSession(session('a'));
    const big = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 131 + (i >> 8)) & 0xff;
    const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const m1 = message(40n, { payload: NON_UTF8, properties: every });
    const m2 = message(41n, { payload: Buffer.alloc(0), properties: Buffer.alloc(0) });
    const m3 = message(42n, { payload: big, properties: null });
    await store.addMessage(m1, [delivery('a', 1n)]);
    await store.addMessage(m2, [delivery('a', 2n)]);
    await store.addMessage(m3, [delivery('a', 3n)]);
    await store.setRetained('bytes/1', m1);
    const got = await store.loadDeliveries('a');
    assert.equal(got.length, 3);
    assert.ok(Buffer.isBuffer(got[0].message.payload));
    assert.ok(got[0].message.payload.equals(NON_UTF8));
    assert.ok(got[0].message.properties!.equals(every));
    assert.equal(got[1].message.payload.length, 0);
    assert.ok(Buffer.isBuffer(got[1].message.properties));
    assert.equal(got[1].message.properties!.length, 0);
    assert.ok(got[2].message.payload.equals(big), '1 MB payload differs');
    assert.equal(got[2].message.properties, null);
    const [r] = await store.loadRetained();
    assert.ok(r.message.payload.equals(NON_UTF8));
    assert.ok(r.message.properties!.equals(every));
  });

  storeTest('bigint message ids and seqs beyond 2^53', async ({ store }) => {
    await store.saveSession(session('a'));
    const ids = [BIG, BIG + 1n, 2n ** 63n - 1n];
    let seq = 2n ** 60n;
    for (const id of ids) await store.addMessage(message(id), [delivery('a', seq++)]);
    const got = await store.loadDeliveries('a');
    assert.deepEqual(got.map((d) => d.messageId), ids);
    assert.deepEqual(got.map((d) => d.message.id), ids);
    assert.deepEqual(got.map((d) => d.seq), [2n ** 60n, 2n ** 60n + 1n, 2n ** 60n + 2n]);
    assert.equal(typeof got[0].messageId, 'bigint');
    assert.equal(typeof got[0].seq, 'bigint');
    await store.updateDelivery('a', BIG + 1n, 'inflight', 3);
    await store.removeDelivery('a', BIG);
    const after = await store.loadDeliveries('a');
    assert.deepEqual(after.map((d) => [d.messageId, d.state]), [[BIG + 1n, 'inflight'], [2n ** 63n - 1n, 'queued']]);
    assert.equal((await store.stats()).messages, 2);
  });

  storeTest('incoming QoS 2 ids: add, remove, load', async ({ store }) => {
    await store.saveSession(session('a'));
    await store.saveSession(session('b'));
    await store.addIncomingQos2('a', 1);
    await store.addIncomingQos2('a', 65_535);
    await store.addIncomingQos2('a', 300);
    await store.addIncomingQos2('a', 300);
    await store.addIncomingQos2('b', 1);
    assert.deepEqual((await store.loadIncomingQos2('a')).sort((x, y) => x - y), [1, 300, 65_535]);
    assert.deepEqual(await store.loadIncomingQos2('b'), [1]);
    await store.removeIncomingQos2('a', 300);
    await store.removeIncomingQos2('a', 4);
    assert.deepEqual((await store.loadIncomingQos2('a')).sort((x, y) => x - y), [1, 65_535]);
    assert.deepEqual(await store.loadIncomingQos2('b'), [1]);
  });

  storeTest('retained: set, replace, delete, load', async ({ store }) => {
    const m1 = message(50n, { topic: 'r/1', retain: true, properties: Buffer.from([0x03, 0x00, 0x01, 0x61]) });
    const m2 = message(51n, { topic: 'r/2', retain: true, qos: 0 });
    await store.setRetained('r/1', m1);
    await store.setRetained('r/2', m2);
    assert.deepEqual((await store.loadRetained()).sort(byTopic), [{ topic: 'r/1', message: m1 }, { topic: 'r/2', message: m2 }]);
    assert.deepEqual(await store.stats(), { sessions: 0, messages: 2, deliveries: 0, retained: 2 });

    const m1b = message(52n, { topic: 'r/1', retain: true, payload: Buffer.from('newer') });
    await store.setRetained('r/1', m1b);
    assert.deepEqual((await store.loadRetained()).sort(byTopic), [{ topic: 'r/1', message: m1b }, { topic: 'r/2', message: m2 }]);
    // The replaced message is referred to by nothing any more.
    assert.deepEqual(await store.stats(), { sessions: 0, messages: 2, deliveries: 0, retained: 2 });

    await store.deleteRetained('r/2');
    await store.deleteRetained('r/none');
    assert.deepEqual(await store.loadRetained(), [{ topic: 'r/1', message: m1b }]);
    assert.deepEqual(await store.stats(), { sessions: 0, messages: 1, deliveries: 0, retained: 1 });
  });

  storeTest('deleteExpired: expired messages go with their deliveries and retained entries', async ({ store }) => {
    const now = 1_800_000_000_000;
    await store.saveSession(session('a'));
    const expired = message(60n, { expiresAt: now - 1 });
    const atNow = message(61n, { expiresAt: now });
    const later = message(62n, { expiresAt: now + 1 });
    const never = message(63n, { expiresAt: 0 });
    const expiredRetained = message(64n, { topic: 'r/old', retain: true, expiresAt: now - 1000 });
    const liveRetained = message(65n, { topic: 'r/live', retain: true, expiresAt: 0 });
    await store.addMessage(expired, [delivery('a', 1n)]);
    await store.addMessage(atNow, [delivery('a', 2n)]);
    await store.addMessage(later, [delivery('a', 3n)]);
    await store.addMessage(never, [delivery('a', 4n)]);
    await store.setRetained('r/old', expiredRetained);
    await store.setRetained('r/live', liveRetained);

    const res = await store.deleteExpired(now);
    assert.deepEqual(res.sessions, []);
    assert.equal(res.messages, 3);
    assert.deepEqual((await store.loadDeliveries('a')).map((d) => d.messageId), [62n, 63n]);
    assert.deepEqual(await store.loadRetained(), [{ topic: 'r/live', message: liveRetained }]);
    assert.deepEqual(await store.stats(), { sessions: 1, messages: 3, deliveries: 2, retained: 1 });
    assert.deepEqual(await store.deleteExpired(now), { sessions: [], messages: 0 });
  });

  storeTest('deleteExpired: sessions past disconnectedAt + expiryInterval go with what they own', async ({ store }) => {
    const now = 1_800_000_000_000;
    const due = session('due', { disconnectedAt: now - 10_000, expiryInterval: 10 });
    const zero = session('zero', { disconnectedAt: now - 1, expiryInterval: 0 });
    const notYet = session('not-yet', { disconnectedAt: now - 9_999, expiryInterval: 10 });
    const connected = session('connected', { disconnectedAt: null, expiryInterval: 0 });
    const forever = session('forever', { disconnectedAt: 0, expiryInterval: 0xffffffff });
    for (const s of [due, zero, notYet, connected, forever]) await store.saveSession(s);
    await store.addSubscription({ clientId: 'due', filter: 'a/b', options: 1, subscriptionId: 0 });
    await store.addIncomingQos2('due', 5);
    const m = message(70n);
    await store.addMessage(m, [delivery('due', 1n), delivery('forever', 1n)]);
    await store.addMessage(message(71n), [delivery('due', 2n)]);

    const res = await store.deleteExpired(now);
    assert.deepEqual([...res.sessions].sort(), ['due', 'zero']);
    assert.deepEqual((await store.loadSessions()).sort(byClient), [connected, forever, notYet]);
    assert.deepEqual(await store.loadSubscriptions('due'), []);
    assert.deepEqual(await store.loadIncomingQos2('due'), []);
    assert.deepEqual(await store.loadDeliveries('due'), []);
    assert.deepEqual(await store.loadDeliveries('forever'), [loaded(m, delivery('forever', 1n))]);
    const stats = await store.stats();
    assert.equal(stats.sessions, 3);
    assert.equal(stats.deliveries, 1);
    assert.equal(stats.messages, 1, 'the message only the expired session referred to is gone');
  });

  storeTest('admin documents: put, get, delete, list per kind, JSON round-trip', async ({ store }) => {
    const doc = { name: 'ünïcode ✓', n: 42, f: 1.5, neg: -7, ok: true, none: null, list: [1, 'two', { three: [3] }], nested: { a: { b: { c: 'd' } } } };
    await store.putAdmin('users', 'alice', doc);
    await store.putAdmin('users', 'bob', { n: 1 });
    await store.putAdmin('rules', 'alice', ['same id, other kind']);
    assert.deepEqual(await store.getAdmin('users', 'alice'), doc);
    assert.deepEqual(await store.getAdmin('rules', 'alice'), ['same id, other kind']);
    assert.equal(await store.getAdmin('users', 'carol'), undefined);
    assert.equal(await store.getAdmin('secrets', 'alice'), undefined);
    assert.deepEqual((await store.listAdmin('users')).sort(byId), [{ id: 'alice', doc }, { id: 'bob', doc: { n: 1 } }]);
    assert.deepEqual(await store.listAdmin('rules'), [{ id: 'alice', doc: ['same id, other kind'] }]);
    assert.deepEqual(await store.listAdmin('endpoints'), []);

    await store.putAdmin('users', 'bob', { n: 2, replaced: true });
    assert.deepEqual(await store.getAdmin('users', 'bob'), { n: 2, replaced: true });
    await store.putAdmin('scalars', 's', 'just a string');
    assert.equal(await store.getAdmin('scalars', 's'), 'just a string');

    assert.equal(await store.deleteAdmin('users', 'alice'), true);
    assert.equal(await store.deleteAdmin('users', 'alice'), false);
    assert.deepEqual(await store.listAdmin('users'), [{ id: 'bob', doc: { n: 2, replaced: true } }]);
    assert.deepEqual(await store.listAdmin('rules'), [{ id: 'alice', doc: ['same id, other kind'] }]);
  });

  storeTest('concurrency: 2000 addMessage calls in flight at once all resolve and are all there', async ({ store }) => {
    await store.saveSession(session('a'));
    await store.saveSession(session('b'));
    const n = 2000;
    const calls: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const id = BIG + BigInt(i);
      const targets = i % 2 === 0 ? [delivery('a', BigInt(i))] : [delivery('a', BigInt(i)), delivery('b', BigInt(i))];
      calls.push(store.addMessage(message(id, { payload: Buffer.from([i & 0xff, i >> 8]) }), targets));
    }
    await Promise.all(calls);
    assert.deepEqual(await store.stats(), { sessions: 2, messages: n, deliveries: n + n / 2, retained: 0 });
    const a = await store.loadDeliveries('a');
    assert.equal(a.length, n);
    a.forEach((d, i) => {
      assert.equal(d.seq, BigInt(i));
      assert.equal(d.messageId, BIG + BigInt(i));
      assert.ok(d.message.payload.equals(Buffer.from([i & 0xff, i >> 8])));
    });
    assert.equal((await store.loadDeliveries('b')).length, n / 2);
  });

  storeTest('ordering: calls issued without awaiting apply in issue order', async ({ store }) => {
    const pending: Promise<unknown>[] = [];
    pending.push(store.saveSession(session('a')));
    const m = message(80n);
    const d = delivery('a', 1n, { qos: 2 });
    pending.push(store.addMessage(m, [d]));
    pending.push(store.updateDelivery('a', m.id, 'inflight', 9));
    pending.push(store.updateDelivery('a', m.id, 'pubrel', 9));
    const gone = message(81n);
    pending.push(store.addMessage(gone, [delivery('a', 2n)]));
    pending.push(store.removeDelivery('a', gone.id));
    pending.push(store.addSubscription({ clientId: 'a', filter: 'f', options: 0, subscriptionId: 0 }));
    pending.push(store.addSubscription({ clientId: 'a', filter: 'f', options: 2, subscriptionId: 4 }));
    pending.push(store.saveSession(session('b')));
    pending.push(store.deleteSession('b'));
    pending.push(store.deleteSession('c'));
    pending.push(store.saveSession(session('c', { username: 'again' })));
    pending.push(store.putAdmin('k', 'x', 1));
    pending.push(store.deleteAdmin('k', 'x'));
    pending.push(store.putAdmin('k', 'y', 1));
    pending.push(store.putAdmin('k', 'y', 2));
    await Promise.all(pending);

    assert.deepEqual(await store.loadDeliveries('a'), [loaded(m, d, 'pubrel', 9)]);
    assert.deepEqual(await store.loadSubscriptions('a'), [{ clientId: 'a', filter: 'f', options: 2, subscriptionId: 4 }]);
    assert.deepEqual((await store.loadSessions()).sort(byClient), [session('a'), session('c', { username: 'again' })]);
    assert.deepEqual(await store.listAdmin('k'), [{ id: 'y', doc: 2 }]);
    assert.deepEqual(await store.stats(), { sessions: 2, messages: 1, deliveries: 1, retained: 0 });
  });

  storeTest('reads issued right after writes see them', async ({ store }) => {
    const write = store.saveSession(session('a'));
    const read = store.loadSessions();
    await write;
    assert.deepEqual(await read, [session('a')]);
  });

  storeTest('after close, calls reject with STORE_CLOSED', async ({ store }) => {
    await store.close();
    await rejectsWithCode(store.saveSession(session('a')), 'STORE_CLOSED');
    await rejectsWithCode(store.loadSessions(), 'STORE_CLOSED');
    await rejectsWithCode(store.stats(), 'STORE_CLOSED');
  });

  storeTest(
    'durability: everything written is there after close and reopen',
    async ({ store, reopen }) => {
      const willMsg = { topic: 'will/t', payload: NON_UTF8, qos: 1 as const, retain: false, properties: null };
      const s1 = session('a', { username: 'alice', will: { message: willMsg, delay: 5, expiryInterval: 120 }, disconnectedAt: 1_700_000_000_000, expiryInterval: 0xffffffff });
      const s2 = session('b');
      await store.saveSession(s1);
      await store.saveSession(s2);
      const sub = { clientId: 'a', filter: 'x/+', options: 0x1e, subscriptionId: 12 };
      await store.addSubscription(sub);
      const m1 = message(BIG, { payload: NON_UTF8, properties: Buffer.from([0x01, 0x00]), expiresAt: 4_102_444_800_000, qos: 2 });
      const d1 = delivery('a', 2n ** 60n, { qos: 2, subscriptionIds: [12] });
      await store.addMessage(m1, [d1, delivery('b', 1n)]);
      await store.updateDelivery('a', BIG, 'pubrel', 42);
      await store.addIncomingQos2('a', 77);
      const r = message(90n, { topic: 'keep', retain: true });
      await store.setRetained('keep', r);
      await store.putAdmin('users', 'alice', { role: 'admin' });
      // Not awaited: close() must flush these before it resolves.
      const late = message(91n);
      const lateWrite = store.addMessage(late, [delivery('b', 2n)]);
      const lateAdmin = store.putAdmin('users', 'bob', { role: 'viewer' });

      const again = await reopen();
      await lateWrite;
      await lateAdmin;
      assert.deepEqual((await again.loadSessions()).sort(byClient), [s1, s2]);
      assert.deepEqual(await again.loadSubscriptions(), [sub]);
      assert.deepEqual(await again.loadDeliveries('a'), [loaded(m1, d1, 'pubrel', 42)]);
      assert.deepEqual(await again.loadDeliveries('b'), [loaded(m1, delivery('b', 1n)), loaded(late, delivery('b', 2n))]);
      assert.deepEqual(await again.loadIncomingQos2('a'), [77]);
      assert.deepEqual(await again.loadRetained(), [{ topic: 'keep', message: r }]);
      assert.deepEqual(await again.getAdmin('users', 'alice'), { role: 'admin' });
      assert.deepEqual(await again.getAdmin('users', 'bob'), { role: 'viewer' });
      assert.deepEqual(await again.stats(), { sessions: 2, messages: 3, deliveries: 3, retained: 1 });

      // A reopened store writes as usual, and a second reopen (migrations already applied) works.
      await again.deleteSession('b');
      const third = await reopen();
      assert.deepEqual(await third.stats(), { sessions: 1, messages: 2, deliveries: 1, retained: 1 });
    },
    { needsReopen: true },
  );

  storeTest('audit: appended entries come back newest first (time desc, then id desc), every field intact', async ({ store }) => {
    const sameTime = [audit('b', 2000), audit('a', 2000), audit('c', 2000)];
    // Two calls, the second holding older entries than the first.
    await store.appendAudit([audit('x', 3000, { organizationId: 'o', projectId: 'p', before: { n: 1 }, after: { n: 2 } }), ...sameTime]);
    await store.appendAudit([audit('old', 1000, { resourceId: null, status: 500, role: 'OrganizationAdmin' })]);
    const { entries, total } = await store.queryAudit({ offset: 0, limit: 100 });
    assert.equal(total, 5);
    assert.deepEqual(entries, [
      audit('x', 3000, { organizationId: 'o', projectId: 'p', before: { n: 1 }, after: { n: 2 } }),
      audit('c', 2000),
      audit('b', 2000),
      audit('a', 2000),
      audit('old', 1000, { resourceId: null, status: 500, role: 'OrganizationAdmin' }),
    ]);
    await store.appendAudit([]);
    assert.equal((await store.queryAudit({ offset: 0, limit: 100 })).total, 5);
  });

  storeTest('audit: each filter alone and combined', async ({ store }) => {
    await store.appendAudit(AUDIT_SET);
    assert.deepEqual(await auditIds(store, {}), { ids: ['a5', 'a4', 'a3', 'a2', 'a1'], total: 5 });
    assert.deepEqual(await auditIds(store, { username: 'alice' }), { ids: ['a5', 'a3', 'a1'], total: 3 });
    assert.deepEqual(await auditIds(store, { action: 'update' }), { ids: ['a5', 'a2'], total: 2 });
    assert.deepEqual(await auditIds(store, { resource: 'rule' }), { ids: ['a5', 'a2', 'a1'], total: 3 });
    assert.deepEqual(await auditIds(store, { resourceId: 'r1' }), { ids: ['a5', 'a1'], total: 2 });
    assert.deepEqual(await auditIds(store, { organizationId: 'o1' }), { ids: ['a5', 'a2', 'a1'], total: 3 });
    assert.deepEqual(await auditIds(store, { projectId: 'p1' }), { ids: ['a5', 'a1'], total: 2 });
    assert.deepEqual(await auditIds(store, { from: 4000 }), { ids: ['a5', 'a4'], total: 2 });
    assert.deepEqual(await auditIds(store, { to: 2000 }), { ids: ['a2', 'a1'], total: 2 });
    // Byte-wise equality: case and trailing spaces count.
    assert.deepEqual(await auditIds(store, { username: 'Alice' }), { ids: [], total: 0 });
    assert.deepEqual(await auditIds(store, { username: 'alice ' }), { ids: [], total: 0 });
    assert.deepEqual(await auditIds(store, { username: 'nobody' }), { ids: [], total: 0 });
    // Combined: every filter must match.
    assert.deepEqual(await auditIds(store, { username: 'alice', resource: 'rule', organizationId: 'o1' }), { ids: ['a5', 'a1'], total: 2 });
    assert.deepEqual(await auditIds(store, { username: 'alice', resource: 'rule', organizationId: 'o1', from: 2000 }), { ids: ['a5'], total: 1 });
    assert.deepEqual(await auditIds(store, { action: 'update', projectId: 'p2', to: 4000 }), { ids: ['a2'], total: 1 });
    assert.deepEqual(await auditIds(store, { username: 'bob', action: 'delete' }), { ids: [], total: 0 });
    assert.deepEqual(
      await auditIds(store, { username: 'alice', action: 'update', resource: 'rule', resourceId: 'r1', organizationId: 'o1', projectId: 'p1', from: 5000, to: 5000 }),
      { ids: ['a5'], total: 1 },
    );
  });

  storeTest('audit: time range bounds are inclusive', async ({ store }) => {
    await store.appendAudit(AUDIT_SET);
    assert.deepEqual(await auditIds(store, { from: 2000, to: 4000 }), { ids: ['a4', 'a3', 'a2'], total: 3 });
    assert.deepEqual(await auditIds(store, { from: 3000, to: 3000 }), { ids: ['a3'], total: 1 });
    assert.deepEqual(await auditIds(store, { from: 2001, to: 3999 }), { ids: ['a3'], total: 1 });
    assert.deepEqual(await auditIds(store, { from: 1000, to: 5000 }), { ids: ['a5', 'a4', 'a3', 'a2', 'a1'], total: 5 });
    assert.deepEqual(await auditIds(store, { from: 1001, to: 4999 }), { ids: ['a4', 'a3', 'a2'], total: 3 });
    assert.deepEqual(await auditIds(store, { from: 4000, to: 2000 }), { ids: [], total: 0 });
    assert.deepEqual(await auditIds(store, { from: 5001 }), { ids: [], total: 0 });
    assert.deepEqual(await auditIds(store, { to: 999 }), { ids: [], total: 0 });
  });

  storeTest('audit: paging by offset and limit, with the total of every match', async ({ store }) => {
    // 25 entries, some sharing a time, appended in a scrambled order over three calls.
    const all = Array.from({ length: 25 }, (_, i) => audit(`e${String(i).padStart(2, '0')}`, 10_000 + Math.floor(i / 3) * 1000, { username: i % 2 === 0 ? 'even' : 'odd' }));
    const scrambled = [...all].sort((a, b) => (a.id.charCodeAt(2) % 3) - (b.id.charCodeAt(2) % 3) || (a.id < b.id ? 1 : -1));
    await store.appendAudit(scrambled.slice(0, 10));
    await store.appendAudit(scrambled.slice(10, 11));
    await store.appendAudit(scrambled.slice(11));
    const expected = [...all].sort(newestFirst);
    const pages = [];
    for (const offset of [0, 10, 20]) {
      const page = await store.queryAudit({ offset, limit: 10 });
      assert.equal(page.total, 25);
      pages.push(...page.entries);
    }
    assert.deepEqual(pages, expected);
    assert.deepEqual(await store.queryAudit({ offset: 25, limit: 10 }), { entries: [], total: 25 });
    assert.deepEqual(await store.queryAudit({ offset: 1000, limit: 10 }), { entries: [], total: 25 });
    assert.deepEqual(await store.queryAudit({ offset: 0, limit: 0 }), { entries: [], total: 25 });
    assert.deepEqual(await store.queryAudit({ offset: 3, limit: 2 }), { entries: expected.slice(3, 5), total: 25 });
    // Paging a filtered query counts the matches only.
    const odd = expected.filter((e) => e.username === 'odd');
    assert.deepEqual(await store.queryAudit({ username: 'odd', offset: 5, limit: 5 }), { entries: odd.slice(5, 10), total: 12 });
    assert.deepEqual(await store.queryAudit({ username: 'odd', from: 12_000, to: 14_000, offset: 1, limit: 100 }), {
      entries: odd.filter((e) => e.time >= 12_000 && e.time <= 14_000).slice(1),
      total: odd.filter((e) => e.time >= 12_000 && e.time <= 14_000).length,
    });
  });

  storeTest('audit: values with quotes, backslashes, unicode and nesting come back as written; null stays null', async ({ store }) => {
    const tricky = `it's "quoted" \\ back\\slash '); DROP TABLE spindle_audit_log; -- ñ 中文 😀 \u2028`;
    const entries = [
      audit('q1', 1000, {
        username: `o'brien "😀"`,
        resourceId: `rule "ü" 'x'`,
        path: '/api/v5/rules/a%20b?x="1"',
        before: { name: tricky, nested: { list: [1, 2.5, -3, { deep: null }], flag: true }, empty: {}, emptyList: [], emoji: '😀' },
        after: { name: 'new', quote: '"', backslash: '\\', newline: 'a\nb', tab: '\t', control: '\u0001' },
      }),
      audit('q2', 2000, { before: 'just a string', after: 42 }),
      audit('q3', 3000, { before: [tricky, 0, false], after: true }),
      audit('q4', 4000, { before: null, after: null }),
      audit('q5', 5000, { before: { created: null }, after: 0 }),
    ];
    await store.appendAudit(entries);
    assert.deepEqual((await store.queryAudit({ offset: 0, limit: 10 })).entries, [...entries].sort(newestFirst));
    assert.deepEqual((await store.queryAudit({ username: `o'brien "😀"`, offset: 0, limit: 10 })).entries, [entries[0]]);
    assert.deepEqual((await store.queryAudit({ resourceId: `rule "ü" 'x'`, offset: 0, limit: 10 })).entries, [entries[0]]);
    const [q4] = (await store.queryAudit({ from: 4000, to: 4000, offset: 0, limit: 1 })).entries;
    assert.equal(q4.before, null);
    assert.equal(q4.after, null);
  });

  storeTest('audit: prune removes the entries older than the bound and returns how many', async ({ store }) => {
    await store.appendAudit(AUDIT_SET);
    assert.equal(await store.pruneAudit(1000), 0);
    assert.equal(await store.pruneAudit(3000), 2);
    assert.deepEqual(await auditIds(store, {}), { ids: ['a5', 'a4', 'a3'], total: 3 });
    assert.equal(await store.pruneAudit(3000), 0);
    assert.equal(await store.pruneAudit(3001), 1);
    assert.equal(await store.pruneAudit(Date.now()), 2);
    assert.deepEqual(await auditIds(store, {}), { ids: [], total: 0 });
    // A pruned id may be written again (the log keeps no memory of it).
    await store.appendAudit([audit('a1', 6000)]);
    assert.deepEqual(await auditIds(store, {}), { ids: ['a1'], total: 1 });
  });

  storeTest('audit: a prune larger than one transaction removes every entry older than the bound', async ({ store }) => {
    const n = AUDIT_PRUNE_CHUNK + 37;
    await store.appendAudit(Array.from({ length: n }, (_, i) => audit(`p${i}`, 1_000 + i, { after: { i } })));
    await store.appendAudit([audit('keep', 1_000 + n)]);
    assert.equal(await store.pruneAudit(1_000 + n), n);
    assert.deepEqual(await auditIds(store, {}), { ids: ['keep'], total: 1 });
  });

  storeTest('audit: a repeated id is skipped, the stored entry kept unchanged', async ({ store }) => {
    await store.appendAudit([audit('same', 1000, { username: 'first', after: { v: 1 } })]);
    await store.appendAudit([audit('same', 2000, { username: 'second', after: { v: 2 } }), audit('other', 1500)]);
    await store.appendAudit([audit('twice', 3000), audit('twice', 3000, { username: 'ignored' })]);
    assert.deepEqual((await store.queryAudit({ offset: 0, limit: 10 })).entries, [
      audit('twice', 3000),
      audit('other', 1500),
      audit('same', 1000, { username: 'first', after: { v: 1 } }),
    ]);
  });

  storeTest('audit: bad entries and queries are refused with STORE_INVALID and nothing of the call is written', async ({ store }) => {
    const good = audit('good', 1000);
    const bad: Partial<AuditEntry>[] = [
      { status: 'ok' as unknown as number },
      { status: 1000 },
      { time: 1.5 },
      { time: -1 },
      { id: '' },
      { username: 'nul\u0000byte' },
      { username: 'x'.repeat(1025) },
      { resourceId: undefined },
      { organizationId: 7 as unknown as string },
      { before: { big: 1n } },
      { after: 'y'.repeat(70_000) },
    ];
    for (const over of bad) {
      await rejectsWithCode(store.appendAudit([good, audit('bad', 2000, over)]), 'STORE_INVALID');
    }
    // A refused call takes nothing down with it: the store keeps working and the good entry was not written.
    assert.deepEqual(await auditIds(store, {}), { ids: [], total: 0 });
    await store.appendAudit([good]);
    assert.deepEqual(await auditIds(store, {}), { ids: ['good'], total: 1 });
    for (const q of [
      { offset: -1, limit: 10 },
      { offset: 1.5, limit: 10 },
      { offset: 0, limit: -1 },
      { offset: 0, limit: MAX_AUDIT_PAGE + 1 },
      { offset: 0, limit: 10, from: 1.5 },
      { offset: 0, limit: 10, username: 'nul\u0000byte' },
      { offset: 0, limit: 10, action: 3 as unknown as string },
    ]) {
      await rejectsWithCode(store.queryAudit(q), 'STORE_INVALID');
    }
    await rejectsWithCode(store.pruneAudit(Number.NaN), 'STORE_INVALID');
    assert.deepEqual(await auditIds(store, {}), { ids: ['good'], total: 1 });
  });

  storeTest('audit: after close, calls reject with STORE_CLOSED', async ({ store }) => {
    await store.close();
    await rejectsWithCode(store.appendAudit([audit('a', 1)]), 'STORE_CLOSED');
    await rejectsWithCode(store.queryAudit({ offset: 0, limit: 1 }), 'STORE_CLOSED');
    await rejectsWithCode(store.pruneAudit(1), 'STORE_CLOSED');
  });

  storeTest(
    'audit: durability: appended entries are there after close and reopen, pruning too',
    async ({ store, reopen }) => {
      await store.appendAudit(AUDIT_SET.slice(0, 3));
      assert.equal(await store.pruneAudit(2000), 1);
      // Not awaited: close() must flush it before it resolves.
      const late = store.appendAudit(AUDIT_SET.slice(3));
      const again = await reopen();
      await late;
      assert.deepEqual((await again.queryAudit({ offset: 0, limit: 10 })).entries, AUDIT_SET.slice(1).sort(newestFirst));
      await again.appendAudit([audit('a6', 6000, { before: { x: "'" }, after: null })]);
      const third = await reopen();
      assert.deepEqual(await auditIds(third, { username: 'alice' }), { ids: ['a6', 'a5', 'a3'], total: 3 });
    },
    { needsReopen: true },
  );

  storeTest('node slots: each node name holds one slot, the same at every start; none left is an error', async ({ store, reopen }) => {
    if (!store.claimNodeSlot) return; // a store of one node's own (LOCAL, MEMORY)
    const a = await store.claimNodeSlot('node-a', 3);
    const [b, again] = await Promise.all([store.claimNodeSlot('node-b', 3), store.claimNodeSlot('node-a', 3)]);
    assert.equal(again, a);
    assert.notEqual(a, b);
    const c = await store.claimNodeSlot('node-c', 3);
    assert.deepEqual(new Set([a, b, c]), new Set([0, 1, 2]));
    await assert.rejects(store.claimNodeSlot('node-d', 3), /every one of the 3 node slots/);
    const other = await reopen();
    assert.equal(await other.claimNodeSlot!('node-b', 3), b);
  }, { needsReopen: true });
}
