// needs: broker
// The ban list against a real broker (admin API on): bans by client id, username, address and
// CIDR block refuse CONNECT before authentication with 0x8A Banned (v5) or 5 (3.1.1), seen by
// mqtt.js and by mosquitto_sub; a ban kicks the clients it names (v5: DISCONNECT 0x98 Administrative action, reason "banned"); expiry and delete lift it;
// bad input is 400 naming the field; the bound is 409; a bulk of 10,000 is quick.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

import mqtt, { type IClientOptions } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect } from '../helpers/broker.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';
import { workerUrls } from '../helpers/worker-ports.ts';

let b: AdminBroker;
/** Every request but a GET says JSON, also one without a body (the admin API's CSRF rule). */
const JSON_TYPE = { 'content-type': 'application/json' };

before(async () => {
  // '::' listens on IPv6 and IPv4 (IPv4 clients arrive as ::ffff:127.0.0.1).
  b = await startAdminBroker({ mqtt: { host: '::' }, banned: { maxEntries: 10_050, sweepInterval: 1 } });
});
after(() => b.stop());

/** The CONNACK reason code a client gets: 0 when it connects (then it is ended). */
async function connackCode(url: string, options: IClientOptions = {}): Promise<number> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options });
  try {
    return await new Promise<number>((resolve, reject) => {
      client.once('connect', () => resolve(0));
      client.once('error', (err: Error & { code?: number }) => (typeof err.code === 'number' ? resolve(err.code) : reject(err)));
      client.once('close', () => setTimeout(() => reject(new Error('closed without CONNACK')), 50));
    });
  } finally {
    client.end(true);
  }
}

const v5 = (clientId: string, extra: IClientOptions = {}) => ({ protocolVersion: 5 as const, clientId, ...extra });
const v4 = (clientId: string, extra: IClientOptions = {}) => ({ protocolVersion: 4 as const, clientId, ...extra });

/** mosquitto_sub's exit code and output for one CONNECT. */
function mosquittoSub(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-t', 'x', '-W', '2', ...args], { timeout: 10_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: stdout + stderr });
    });
  });
}

async function ban(body: Record<string, unknown>): Promise<any> {
  const r = await b.api('POST', '/api/banned', { body });
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

async function unban(as: string, who: string): Promise<void> {
  const r = await b.api('DELETE', `/api/banned/${as}/${encodeURIComponent(who)}`, { headers: JSON_TYPE });
  assert.equal(r.status, 200, r.text);
}

test('a client id ban refuses with 0x8A (v5) and 5 (3.1.1), in mqtt.js and mosquitto_sub, before authentication', async () => {
  const made = await ban({ as: 'clientid', who: 'bad-client', reason: 'testing' });
  assert.equal(made.by, 'admin');
  assert.equal(made.until, null);
  assert.equal(await connackCode(b.url, v5('bad-client')), 0x8a);
  assert.equal(await connackCode(b.url, v4('bad-client')), 5);
  assert.equal(await connackCode(b.url, v5('good-client')), 0);
  const m5 = await mosquittoSub(['-i', 'bad-client', '-V', 'mqttv5']);
  assert.notEqual(m5.code, 0);
  assert.match(m5.output, /[Bb]anned/);
  const m4 = await mosquittoSub(['-i', 'bad-client', '-V', 'mqttv311']);
  assert.notEqual(m4.code, 0);
  assert.match(m4.output, /not authori[sz]ed/i);
  const list = await b.api('GET', '/api/banned?as=clientid');
  assert.ok(list.json.data.some((d: any) => d.who === 'bad-client' && d.reason === 'testing'));
  const metrics = (await b.api('GET', '/prometheus')).text;
  assert.match(metrics, /spindle_banned_refused_total\{kind="clientid"\} [1-9]/);
  assert.match(metrics, /svc_endpoint_connection_errors_total\{[^}]*error_code="0x8a"[^}]*\} [1-9]/, 'counted in the endpoint\'s connection errors');
  await unban('clientid', 'bad-client');
  assert.equal(await connackCode(b.url, v5('bad-client')), 0, 'delete lifts the ban');
  // Both writes are in the audit log, by the admin, naming the ban.
  await b.admin!.context.audit.flush();
  const audited = (await b.admin!.context.audit.query({ resource: 'ban', offset: 0, limit: 100 })).entries;
  const ours = audited.filter((e) => e.resourceId === 'clientid:bad-client');
  assert.deepEqual(ours.map((e) => e.action).sort(), ['create', 'delete']);
  assert.ok(ours.every((e) => e.username === 'admin'));
});

test('a username ban refuses whatever the client id', async () => {
  await ban({ as: 'username', who: 'mallory' });
  assert.equal(await connackCode(b.url, v5('m1', { username: 'mallory' })), 0x8a);
  assert.equal(await connackCode(b.url, v4('m2', { username: 'mallory' })), 5);
  const m = await mosquittoSub(['-i', 'm3', '-u', 'mallory', '-V', 'mqttv5']);
  assert.notEqual(m.code, 0);
  assert.match(m.output, /[Bb]anned/);
  assert.equal(await connackCode(b.url, v5('m4', { username: 'alice' })), 0);
  await unban('username', 'mallory');
  assert.equal(await connackCode(b.url, v5('m1', { username: 'mallory' })), 0);
});

test('an IPv4 address and CIDR block refuse IPv4 clients (seen as IPv4-mapped IPv6 on a dual-stack listener)', async () => {
  await ban({ as: 'peerhost', who: '::ffff:127.0.0.1' }); // kept as 127.0.0.1
  const listed = await b.api('GET', '/api/banned?as=peerhost');
  assert.ok(listed.json.data.some((d: any) => d.who === '127.0.0.1'), listed.text);
  assert.equal(await connackCode(b.url, v5('ip-1')), 0x8a);
  await unban('peerhost', '127.0.0.1');
  assert.equal(await connackCode(b.url, v5('ip-1')), 0);
  await ban({ as: 'peerhost_net', who: '127.0.0.0/8' });
  assert.equal(await connackCode(b.url, v5('net-1')), 0x8a);
  assert.equal(await connackCode(b.url, v4('net-1')), 5);
  assert.equal(await connackCode(b.wsUrl, v5('net-ws')), 0x8a, 'a WebSocket client too');
  assert.equal(await connackCode(`mqtt://[::1]:${b.ports.tcp}`, v5('net-v6')), 0, 'an IPv6 client is outside 127.0.0.0/8');
  await unban('peerhost_net', '127.0.0.0/8');
  assert.equal(await connackCode(b.url, v5('net-1')), 0);
});

test('an IPv6 CIDR block refuses IPv6 clients only', async () => {
  await ban({ as: 'peerhost_net', who: '0:0:0:0:0:0:0:0/127' }); // ::/127 holds ::1
  assert.equal(await connackCode(`mqtt://[::1]:${b.ports.tcp}`, v5('v6-1')), 0x8a);
  assert.equal(await connackCode(b.url, v5('v4-1')), 0);
  await unban('peerhost_net', '::/127');
  assert.equal(await connackCode(`mqtt://[::1]:${b.ports.tcp}`, v5('v6-1')), 0);
});

test('a ban kicks the connected clients it names: DISCONNECT 0x98 with reason "banned" for v5, a close for 3.1.1', async () => {
  // One on each worker.
  const urls = await workerUrls(b);
  const c5 = await connect(urls[0], v5('kick-me'));
  const c4 = await connect(urls[1], v4('kick-me-too', { username: 'kicked-user' }));
  const other = await connect(b.url, v5('stay'));
  const disconnect = waitForEvent<[mqtt.IDisconnectPacket]>(c5, 'disconnect');
  const closed4 = waitForEvent(c4, 'close');
  await ban({ as: 'clientid', who: 'kick-me' });
  await ban({ as: 'username', who: 'kicked-user' });
  const [packet] = await disconnect;
  assert.equal(packet.reasonCode, 0x98, 'Administrative action: 0x8A is no DISCONNECT reason code (MQTT 5.0 3.14.2.1)');
  assert.equal(packet.properties?.reasonString, 'banned');
  await closed4;
  assert.equal(other.connected, true);
  other.end(true);
  c5.end(true);
  c4.end(true);
  await unban('clientid', 'kick-me');
  await unban('username', 'kicked-user');
});

test('an expired ban refuses nobody, and the sweep removes it', async () => {
  const until = new Date(Date.now() + 1500).toISOString();
  await ban({ as: 'clientid', who: 'brief', until });
  assert.equal(await connackCode(b.url, v5('brief')), 0x8a);
  await waitFor(async () => (await connackCode(b.url, v5('brief'))) === 0, { timeout: 5000 });
  await waitFor(async () => !(await b.api('GET', '/api/banned?as=clientid')).json.data.some((d: any) => d.who === 'brief'), { timeout: 5000 });
});

test('bad bans are 400 naming the field; an unknown ban is 404', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ as: 'peerhost', who: '300.1.2.3' }, 'who'],
    [{ as: 'peerhost_net', who: '10.0.0.0/33' }, 'who'],
    [{ as: 'peerhost_net', who: '10.0.0.1/8' }, 'who'],
    [{ as: 'peerhost', who: '10.0.0.0/8' }, 'who'],
    [{ as: 'clientid', who: '' }, 'who'],
    [{ as: 'device', who: 'x' }, 'as'],
    [{ as: 'clientid', who: 'x', until: '2001-01-01T00:00:00Z' }, 'until'],
    [{ as: 'clientid', who: 'x', until: 'tomorrow' }, 'until'],
    [{ as: 'clientid', who: 'x', until: Date.now() * 1000 }, 'until'],
  ];
  for (const [body, field] of cases) {
    const r = await b.api('POST', '/api/banned', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.field, field, `${JSON.stringify(body)}: ${r.text}`);
  }
  const bulk = await b.api('POST', '/api/banned/bulk', { body: { bans: [{ as: 'clientid', who: 'ok' }, { as: 'peerhost', who: 'nope' }] } });
  assert.equal(bulk.status, 400);
  assert.equal(bulk.json.field, 'bans[1].who');
  assert.equal((await b.api('DELETE', '/api/banned/clientid/nobody', { headers: JSON_TYPE })).status, 404);
  assert.equal((await b.api('POST', '/api/banned', { body: { as: 'clientid', who: 'v' }, as: 'viewer' })).status, 403);
});

test('10,000 bans in one bulk request are quick, checked per CONNECT, bounded, and cleared at once', async () => {
  const bans = [];
  for (let i = 0; i < 5000; i++) bans.push({ as: 'clientid', who: `bulk-${i}` });
  for (let i = 0; i < 5000; i++) bans.push({ as: 'peerhost', who: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` });
  const started = performance.now();
  const r = await b.api('POST', '/api/banned/bulk', { body: { bans } });
  const ms = performance.now() - started;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.count, 10_000);
  assert.ok(ms < 10_000, `bulk of 10,000 took ${ms.toFixed(0)} ms`);
  assert.equal(await connackCode(b.url, v5('bulk-4321')), 0x8a);
  assert.equal(await connackCode(b.url, v5('bulk-x')), 0);
  // The bound (10,050): 100 more do not fit, and nothing of the request is made.
  const more = Array.from({ length: 100 }, (_, i) => ({ as: 'clientid', who: `over-${i}` }));
  const over = await b.api('POST', '/api/banned/bulk', { body: { bans: more } });
  assert.equal(over.status, 409, over.text);
  assert.match(over.json.message, /banned\.maxEntries/);
  const metrics = (await b.api('GET', '/prometheus')).text;
  assert.match(metrics, /spindle_banned_refused_adds_total 100/);
  assert.match(metrics, /spindle_banned_entries\{kind="peerhost"\} 5000/);
  const cleared = await b.api('DELETE', '/api/banned', { headers: JSON_TYPE });
  assert.equal(cleared.status, 200);
  assert.ok(cleared.json.data.deleted >= 10_000);
  assert.equal(await connackCode(b.url, v5('bulk-4321')), 0);
  const page = await b.api('GET', '/api/banned');
  assert.equal(page.json.total, 0);
});
