// The control platform's tenants without sockets: the shared counters (quota, rate, epochs), a
// worker's link into them, namespaces, and the directory's checks over a real MemoryStore.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TenantCounters, createTenantBuffer } from '../../src/broker/tenant-counters.ts';
import { spawnWorker } from '../../src/threads/spawn.ts';
import { SharedTenantLink } from '../../src/policies/worker/tenant-link.ts';
import { checkNamespace, overlaps } from '../../src/platform/names.ts';
import { PlatformError } from '../../src/platform/errors.ts';
import { TenantDirectory } from '../../src/platform/tenants.ts';
import { TenantSlots } from '../../src/platform/tenant-slots.ts';
import { LicenseBook } from '../../src/platform/licenses.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

test('a connection quota holds across threads taking places at once', async () => {
  const counters = new TenantCounters(createTenantBuffer(4, 4));
  counters.claim(1, 100, null);
  // Four threads each try 100 times on the same slot: exactly 100 get a place.
  const results = await Promise.all([0, 1, 2, 3].map((worker) => new Promise<number>((resolve, reject) => {
    const w = spawnWorker(new URL('./fixtures/take-places.ts', import.meta.url), { buffer: counters.buffer, slot: 1, tries: 100, worker });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  assert.equal(results.reduce((a, b) => a + b, 0), 100);
  assert.equal(counters.usage(1).connections, 100);
  // A worker that dies gives back exactly the places it held.
  counters.dropWorker(2);
  assert.equal(counters.usage(1).connections, 100 - results[2]);
  counters.dropWorker(2);
  assert.equal(counters.usage(1).connections, 100 - results[2], 'given back once');
});

test('a link takes a place in the application and the organization, and gives both back', () => {
  const counters = new TenantCounters(createTenantBuffer(4, 4));
  const orgEpoch = counters.claim(0, 2, null);
  const appEpoch = counters.claim(1, 1, null);
  const ref = { applicationId: 'app', organizationId: 'org', appSlot: 1, orgSlot: 0, appEpoch, orgEpoch };
  const a = new SharedTenantLink(counters, ref, 0);
  const b = new SharedTenantLink(counters, ref, 0);
  assert.equal(a.connect(), true);
  assert.equal(b.connect(), false, 'the application holds one');
  assert.equal(counters.usage(0).connections, 1, 'the organization\'s place was given back');
  assert.equal(counters.usage(1).quotaRefused, 1);
  a.release();
  a.release();
  assert.equal(counters.usage(1).connections, 0, 'released once');
  assert.equal(counters.usage(0).connections, 0);
});

test('the message rate counts per second; over it the link says so and counts a throttle', () => {
  const counters = new TenantCounters(createTenantBuffer(2, 4));
  const orgEpoch = counters.claim(0, null, 3);
  const appEpoch = counters.claim(1, null, null);
  const link = new SharedTenantLink(counters, { applicationId: 'a', organizationId: 'o', appSlot: 1, orgSlot: 0, appEpoch, orgEpoch }, 0);
  const t = 1_000_000;
  assert.deepEqual([link.message(t), link.message(t + 1), link.message(t + 2), link.message(t + 3)], [true, true, true, false]);
  assert.equal(counters.usage(0, t).throttled, 1);
  assert.equal(link.message(t + 1000), true, 'a new second');
  assert.equal(counters.usage(1, t).messages, 5);
});

test('a slot given to another tenant: an old link neither counts in it nor releases into it', () => {
  const counters = new TenantCounters(createTenantBuffer(2, 4));
  const orgEpoch = counters.claim(0, null, null);
  const oldEpoch = counters.claim(1, null, null);
  const old = new SharedTenantLink(counters, { applicationId: 'gone', organizationId: 'o', appSlot: 1, orgSlot: 0, appEpoch: oldEpoch, orgEpoch }, 0);
  assert.equal(old.connect(), true);
  counters.retire(1);
  counters.claim(1, 1, null);
  old.release();
  old.message(Date.now());
  old.denied();
  assert.deepEqual(counters.usage(1), { connections: 0, rate: 0, messages: 0, denied: 0, throttled: 0, quotaRefused: 0 });
  assert.equal(new SharedTenantLink(counters, { applicationId: 'gone', organizationId: 'o', appSlot: 1, orgSlot: 0, appEpoch: oldEpoch, orgEpoch }, 0).connect(), false);
});

test('namespaces: prefixes without wildcards, overlap by whole levels', () => {
  assert.equal(checkNamespace('namespace', 'a/b/#', 128), 'a/b');
  assert.equal(checkNamespace('namespace', 'a/b', 128), 'a/b');
  for (const bad of ['', '#', 'a/+/b', '$SYS/x', 'a//b', 'a/%u', 'a/b#']) {
    assert.throws(() => checkNamespace('namespace', bad, 128), (err: PlatformError) => err.status === 400 && err.field === 'namespace', bad);
  }
  assert.throws(() => checkNamespace('namespace', 'a/b/c', 3), /levels/);
  assert.equal(overlaps('a/b', 'a/b/c'), true);
  assert.equal(overlaps('a/b', 'a/bc'), false);
  assert.equal(overlaps('a/b', 'a/b'), true);
});

test('the directory: names, conflicts, credentials, cascade', async () => {
  const store = new MemoryStore();
  await store.open();
  const counters = new TenantCounters(createTenantBuffer(8, 4));
  let changed = 0;
  const kicked: string[] = [];
  const dir = new TenantDirectory(store, new TenantSlots(counters), 128, { credentialsChanged: () => changed++, kick: (ids) => kicked.push(...ids) });
  const org = await dir.addOrganization({ name: 'acme' });
  await assert.rejects(dir.addOrganization({ name: 'acme' }), (e: PlatformError) => e.status === 409 && e.field === 'name');
  await assert.rejects(dir.addOrganization({ name: 'acme', colour: 'red' }), (e: PlatformError) => e.status === 400 && e.field === 'colour');
  const p = await dir.addProject({ organizationId: org.id, name: 'p' });
  const { application, secret } = await dir.addApplication({ projectId: p.id, name: 'a' }, false);
  assert.equal(application.namespace, 'acme/p/a');
  assert.deepEqual(dir.authenticate(application.appKey, Buffer.from(secret)).result, 'allow');
  assert.deepEqual(dir.authenticate(application.appKey, Buffer.from('nope')).result, 'deny');
  assert.deepEqual(dir.authenticate('ak_unknown', Buffer.from('x')).result, 'deny');
  assert.deepEqual(dir.authenticate('someone', Buffer.from('x')).result, 'unknown');
  await assert.rejects(dir.addApplication({ projectId: p.id, name: 'b', namespace: 'elsewhere/#' }, false), (e: PlatformError) => e.field === 'namespace' && e.status === 400);
  const rotated = await dir.rotateSecret(application.id);
  assert.equal(dir.authenticate(application.appKey, Buffer.from(secret)).result, 'deny', 'the old secret is refused');
  assert.equal(dir.authenticate(application.appKey, Buffer.from(rotated.secret)).result, 'allow');
  await assert.rejects(dir.deleteOrganization(org.id, false), (e: PlatformError) => e.status === 409 && e.field === 'cascade');
  const gone = await dir.deleteOrganization(org.id, true);
  assert.equal(gone.applications.length, 1);
  assert.deepEqual(kicked, [application.id]);
  assert.ok(changed >= 4);
  assert.deepEqual(await store.listAdmin('platform-app'), []);
  // The slots went back: a full table refuses with 409 naming the limit.
  const small = new TenantDirectory(store, new TenantSlots(new TenantCounters(createTenantBuffer(1, 4))), 128, { credentialsChanged: () => {}, kick: () => {} });
  await small.addOrganization({ name: 'one' });
  await assert.rejects(small.addOrganization({ name: 'two' }), (e: PlatformError) => e.status === 409 && e.field === 'platform.maxTenants');
  await store.close();
});

test('licences write their limits into the counters; an expired one admits no connection', async () => {
  const store = new MemoryStore();
  await store.open();
  const counters = new TenantCounters(createTenantBuffer(8, 4));
  const slots = new TenantSlots(counters);
  const dir = new TenantDirectory(store, slots, 128, { credentialsChanged: () => {}, kick: () => {} });
  const book = new LicenseBook(store, dir);
  const org = await dir.addOrganization({ name: 'acme' });
  const l = await book.add({ organizationId: org.id, maxConnections: 1, maxMessageRate: 10 });
  const s = slots.of(org.id)!.slot;
  assert.equal(counters.tryConnection(s, 0), true);
  assert.equal(counters.tryConnection(s, 1), false);
  counters.releaseConnection(s, 0);
  await book.update(l.id, { expires: new Date(Date.now() - 1000).toISOString() });
  assert.equal(counters.tryConnection(s, 0), false, 'expired');
  assert.equal(book.usage(org.id, null).maxConnections, 0);
  await assert.rejects(book.add({ organizationId: org.id }), (e: PlatformError) => e.status === 409);
  await assert.rejects(book.update(l.id, { maxConnections: -1 }), (e: PlatformError) => e.status === 400 && e.field === 'maxConnections');
  await book.delete(l.id);
  assert.equal(counters.tryConnection(s, 0), true, 'no licence: no limit');
  await store.close();
});
