// Topic rewrite end to end: rules from the configuration rewrite PUBLISH topics (mqtt.js and
// mosquitto_pub), SUBSCRIBE filters (also inside $share/{group}/), UNSUBSCRIBE filters and will
// topics, before the ACL; the first matching rule wins; rules replaced, added and deleted through
// the admin API take effect on the workers at once; bad rules refused with the field named;
// the per-rule counter in the metrics; `${clientid}` and `${username}` in a destination give each
// client its own topics. And the compiled rules' matching on its own.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

import { connect, nextMessages, noMessage, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { CompiledRewrite, checkRewriteRules } from '../../src/features/rewrite/index.ts';

const RULES = [
  { action: 'publish', sourceFilter: 'x/#', regex: '^x/y/(.+)$', destination: 'z/y/$1' },
  { action: 'subscribe', sourceFilter: 'y/+/z/#', regex: '^y/(.+)/z/(.+)$', destination: 'y/z/$2' },
  { action: 'all', sourceFilter: 'old/#', regex: '^old/(.+)$', destination: 'new/$1' },
  // Never reached for old/... (the rule above wins), nor for others (its regex fails).
  { action: 'all', sourceFilter: 'old/#', regex: '^old/(.+)$', destination: 'never/$1' },
  // Denied by the ACL only as rewritten.
  { action: 'publish', sourceFilter: 'open/+', regex: '^open/(.+)$', destination: 'secret/$1' },
];

const JSON_TYPE = { 'content-type': 'application/json' };
const WHO = { clientId: 'c1', username: 'u1' };

let b: AdminBroker;
before(async () => {
  b = await startAdminBroker({
    workers: 2,
    rewrite: RULES,
    auth: { acl: [{ permission: 'deny', action: 'publish', topic: 'secret/#' }, { permission: 'allow', action: 'pubsub', topic: '#' }] },
  });
});
after(async () => { await b?.stop(); });

test('the compiled rules: first match of filter and regex wins, groups substituted', () => {
  const r = new CompiledRewrite(checkRewriteRules(RULES), new Uint32Array(new SharedArrayBuffer(4 * RULES.length)));
  assert.equal(r.publish('x/y/a/b', WHO), 'z/y/a/b');
  assert.equal(r.publish('x/q/a', WHO), 'x/q/a'); // the filter matches, the regex does not
  assert.equal(r.publish('old/t', WHO), 'new/t');
  assert.equal(r.filter('y/1/z/2', WHO), 'y/z/2');
  assert.equal(r.publish('y/1/z/2', WHO), 'y/1/z/2'); // a subscribe rule
  assert.equal(r.filter('$share/g/old/+', WHO), '$share/g/new/+');
  assert.equal(r.filter('x/y/a', WHO), 'x/y/a'); // a publish rule
  assert.equal(r.publish('$SYS/x', WHO), '$SYS/x');
  const none = new CompiledRewrite([], null);
  assert.equal(none.active, false);
});

test('bad rules are refused naming the field', () => {
  assert.throws(() => checkRewriteRules([{ action: 'publish', sourceFilter: 'a/#', regex: '(', destination: 'b' }]), /\[0\]\.regex/);
  assert.throws(() => checkRewriteRules([{ action: 'publish', sourceFilter: 'a/#/b', regex: 'a', destination: 'b' }]), /\[0\]\.sourceFilter/);
  assert.throws(() => checkRewriteRules([{ action: 'publish', sourceFilter: 'a/#', regex: '^a/(.+)$', destination: 'b/$2' }]), /\[0\]\.destination/);
  assert.throws(() => checkRewriteRules([{ action: 'publish', sourceFilter: 'a/#', regex: 'a', destination: 'b/#' }]), /\[0\]\.destination/);
  assert.throws(() => checkRewriteRules([{ action: 'both', sourceFilter: 'a/#', regex: 'a', destination: 'b' }]), /\[0\]\.action/);
  assert.throws(() => checkRewriteRules([{ action: 'publish', sourceFilter: 'a/#', regex: 'a', destination: 'b/${peerhost}' }]), /\[0\]\.destination: \$\{peerhost\}: the placeholders are \$\{clientid\} and \$\{username\}/);
  assert.throws(() => checkRewriteRules([{ action: 'publish', sourceFilter: 'a/#', regex: 'a', destination: 'b/${clientid' }]), /\[0\]\.destination/);
});

test("the compiled rules: ${clientid} and ${username} are the client's; a value the topic cannot take passes to the next rule", () => {
  const r = new CompiledRewrite(checkRewriteRules([
    { action: 'all', sourceFilter: 'me/#', regex: '^me/(.+)$', destination: 'users/${username}/${clientid}/$1' },
    { action: 'all', sourceFilter: 'me/#', regex: '^me/(.+)$', destination: 'clients/${clientid}/$1' },
  ]), null);
  assert.equal(r.publish('me/t', { clientId: 'c1', username: 'alice' }), 'users/alice/c1/t');
  assert.equal(r.filter('me/+', { clientId: 'c1', username: 'alice' }), 'users/alice/c1/+');
  assert.equal(r.filter('$share/g/me/x', { clientId: 'c1', username: 'alice' }), '$share/g/users/alice/c1/x');
  assert.equal(r.publish('me/t', { clientId: 'c1' }), 'clients/c1/t', 'no username: the next rule');
  assert.equal(r.publish('me/t', { clientId: 'c1', username: '' }), 'clients/c1/t', 'an empty username: the next rule');
  assert.equal(r.publish('me/t', { clientId: 'c1', username: 'a/b' }), 'clients/c1/t', 'a username with a level separator: the next rule');
  assert.equal(r.publish('me/t', { clientId: 'c+1', username: 'alice' }), 'me/t', 'a client id with a wildcard: no rule applies');
});

test('PUBLISH topics, SUBSCRIBE filters ($share too) and wills are rewritten before the ACL', async () => {
  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync(['z/y/#', 'new/#', 'open/#', 'secret/#']);
  const pub = await connect(b.url, { protocolVersion: 5 });
  let got = nextMessages(sub, 2);
  await pub.publishAsync('x/y/hello', 'a', { qos: 1 });
  execFileSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv311', '-t', 'old/t', '-m', 'b']);
  assert.deepEqual((await got).map((m) => [m.topic, m.payload]).sort(), [['new/t', 'b'], ['z/y/hello', 'a']]);
  // open/x becomes secret/x, which the ACL denies: 0x87, nothing delivered.
  await assert.rejects(pub.publishAsync('open/x', 'c', { qos: 1 }), (err: { code?: number }) => err.code === 0x87);
  await noMessage(sub);

  // A subscription to y/1/z/t is to y/z/t; one to $share/g/old/# is to $share/g/new/#.
  const s2 = await connect(b.url, { protocolVersion: 5 });
  await s2.subscribeAsync(['y/1/z/t', '$share/g/old/#']);
  got = nextMessages(s2, 2);
  await pub.publishAsync('y/z/t', 'd', { qos: 1 });
  await pub.publishAsync('new/u', 'e', { qos: 1 });
  assert.deepEqual((await got).map((m) => [m.topic, m.payload]).sort(), [['new/u', 'e'], ['y/z/t', 'd']]);
  // UNSUBSCRIBE from the filter as written removes the rewritten one.
  const un = await s2.unsubscribeAsync('y/1/z/t');
  assert.equal((un as { reasonCode?: number } | undefined)?.reasonCode ?? 0, 0);
  await pub.publishAsync('y/z/t', 'f', { qos: 1 });
  await noMessage(s2);

  // A will to old/w comes as new/w.
  got = nextMessages(sub, 1);
  const dying = await connect(b.url, { protocolVersion: 5, will: { topic: 'old/w', payload: Buffer.from('bye'), qos: 1, retain: false } });
  dying.stream.destroy();
  const [will] = await got;
  assert.equal(will.topic, 'new/w');

  const st = await b.api('GET', '/api/rewrite');
  assert.equal(st.status, 200, st.text);
  const rules = st.json.data.rules as { position: number; rewritten: number }[];
  assert.equal(st.json.data.source, 'config');
  assert.ok(rules[0].rewritten >= 1);
  assert.equal(rules[3].rewritten, 0);
  assert.ok(rules[2].rewritten >= 3, JSON.stringify(rules));
  await end(sub, pub, s2);
});

test('rules changed through the admin API apply at once; bad ones get 400 naming the field', async () => {
  let r = await b.api('PUT', '/api/rewrite', { body: { rules: [{ action: 'publish', sourceFilter: 'a/#', regex: '(', destination: 'b' }] } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /\[0\]\.regex/);
  r = await b.api('PUT', '/api/rewrite', { body: { rules: [{ action: 'publish', sourceFilter: 'api/+', regex: '^api/(.+)$', destination: 'moved/$1' }] } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.source, 'api');
  r = await b.api('POST', '/api/rewrite', { body: { rule: { action: 'publish', sourceFilter: 'api/first', regex: '^api/first$', destination: 'first' }, position: 1 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.data.rules.map((x: { destination: string }) => x.destination), ['first', 'moved/$1']);

  const sub = await connect(b.url, { protocolVersion: 5 });
  await sub.subscribeAsync(['moved/#', 'first', 'x/#', 'z/#']);
  const pub = await connect(b.url, { protocolVersion: 5 });
  const got = nextMessages(sub, 3);
  await pub.publishAsync('api/first', '1', { qos: 1 });
  await pub.publishAsync('api/q', '2', { qos: 1 });
  await pub.publishAsync('x/y/k', '3', { qos: 1 }); // the configuration's rules are gone
  assert.deepEqual((await got).map((m) => m.topic).sort(), ['first', 'moved/q', 'x/y/k']);

  r = await b.api('DELETE', '/api/rewrite/1', { headers: JSON_TYPE });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.rules.length, 1);
  assert.equal((await b.api('DELETE', '/api/rewrite/9', { headers: JSON_TYPE })).status, 404);
  const metrics = await b.api('GET', '/prometheus');
  assert.match(metrics.text, /spindle_rewrite_total\{rule="1",source_filter="api\/\+"\} 1/);
  r = await b.api('PUT', '/api/rewrite', { body: { rules: [] } });
  assert.equal(r.json.data.rules.length, 0);
  await end(sub, pub);
});

test("${clientid} and ${username} in a destination: each client's PUBLISH and SUBSCRIBE go to its own topics", async () => {
  const r = await b.api('PUT', '/api/rewrite', { body: { rules: [{ action: 'all', sourceFilter: 'me/#', regex: '^me/(.+)$', destination: 'users/${username}/${clientid}/$1' }] } });
  assert.equal(r.status, 200, r.text);
  try {
    const watcher = await connect(b.url, { protocolVersion: 5, clientId: 'rw-watch' });
    await watcher.subscribeAsync('users/#', { qos: 1 });
    // alice subscribes to me/inbox: her filter is users/alice/rw-alice/inbox.
    const alice = await connect(b.url, { protocolVersion: 5, clientId: 'rw-alice', username: 'alice' });
    await alice.subscribeAsync('me/inbox', { qos: 1 });
    const bob = await connect(b.url, { protocolVersion: 5, clientId: 'rw-bob', username: 'bob' });
    const seen = nextMessages(watcher, 2);
    const inbox = nextMessages(alice, 1);
    await bob.publishAsync('me/status', 'up', { qos: 1 });
    await bob.publishAsync('users/alice/rw-alice/inbox', 'hi alice', { qos: 1 });
    assert.deepEqual((await seen).map((m) => m.topic).sort(), ['users/alice/rw-alice/inbox', 'users/bob/rw-bob/status']);
    const [m] = await inbox;
    assert.equal(m.topic, 'users/alice/rw-alice/inbox');
    assert.equal(m.payload, 'hi alice');
    await end(watcher, alice, bob);
  } finally {
    await b.api('PUT', '/api/rewrite', { body: { rules: [] } });
  }
});
