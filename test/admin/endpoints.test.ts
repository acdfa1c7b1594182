// Endpoints at run time (spec 4.1, both variants): add, update, remove over HTTP take effect on
// every worker at once, are validated (400/409 naming the field, nothing changes), enforced
// (connection, session, rate and packet limits; auth and ACL switches), persisted and restored.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import mqtt, { type MqttClient } from 'mqtt';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect } from '../helpers/broker.ts';
import { waitFor } from '../helpers/wait.ts';
import { hashPassword } from '../../src/auth/index.ts';

let b: AdminBroker;
const clients: MqttClient[] = [];

before(async () => {
  b = await startAdminBroker({
    auth: { allowAnonymous: false, users: [{ username: 'u', password: await hashPassword('p') }], aclDefault: 'deny', acl: [{ permission: 'allow', action: 'pubsub', topic: 'open/#' }] },
  });
});
after(async () => {
  for (const c of clients) c.end(true);
  await b.stop();
});

async function freePort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function client(port: number, options: mqtt.IClientOptions = {}): Promise<MqttClient> {
  const c = await connect(`mqtt://127.0.0.1:${port}`, options);
  clients.push(c);
  return c;
}

/** The CONNACK refusal code of a connection attempt (0 when accepted). */
function refusal(port: number, options: mqtt.IClientOptions = {}): Promise<number> {
  return new Promise((resolve) => {
    const c = mqtt.connect(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 3000, ...options });
    c.once('connect', () => {
      clients.push(c);
      resolve(0);
    });
    c.once('error', (err: Error & { code?: number }) => {
      c.end(true);
      resolve(err.code ?? -1);
    });
    // Refused before CONNACK (accept-rate limit): the socket just closes.
    c.once('close', () => {
      c.end(true);
      resolve(-1);
    });
  });
}

const auth = { username: 'u', password: 'p' };

/** Waits until the endpoint `id` counts `n` connections (a client's close has reached the broker). */
async function connectionsOn(id: string, n: number): Promise<void> {
  await waitFor(async () => (await b.api('GET', `/endpoints/status?id=${id}`)).json.endpointNumber === n, { message: `endpoint ${id} to count ${n} connections` });
}

test('the configuration file endpoints are listed in both shapes', async () => {
  const a = await b.api('GET', '/endpoints/list');
  assert.equal(a.status, 200);
  assert.equal(a.json.endpoints.tcp.port, b.ports.tcp);
  assert.equal(a.json.endpoints.tcp.isDefault, true);
  assert.equal(a.json.endpoints.ws.useWebsocket, true);
  const bl = await b.api('GET', '/api/endpoints/list');
  assert.equal(bl.json.code, 200);
  assert.equal(bl.json.data.endpoints[String(b.ports.tcp)].id, 'tcp');
  assert.deepEqual(bl.json.data.activePorts, [b.ports.tcp!, b.ports.ws!].sort((x, y) => x - y));
  assert.equal(bl.json.data.total, 2);
});

test('variant A: an endpoint added by id accepts MQTT clients on every worker; status counts them', async () => {
  const port = await freePort();
  const r = await b.api('POST', '/endpoints/add', { body: { id: 'extra', port } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.id, 'extra');
  // Several connections land on both workers (SO_REUSEPORT spreads them).
  const cs = await Promise.all([1, 2, 3, 4].map(() => client(port, auth)));
  const st = await b.api('GET', '/endpoints/status?id=extra');
  assert.deepEqual(st.json, { id: 'extra', running: true, endpointNumber: 4 });
  for (const c of cs) c.end(true);
  const rm = await b.api('POST', '/endpoints/remove', { body: { id: 'extra' } });
  assert.equal(rm.status, 200);
  assert.equal((await b.api('GET', '/endpoints/status?id=extra')).status, 404);
});

test('variant B: added by port with the id endpoint-<port>; get, status and check-port', async () => {
  const port = await freePort();
  const r = await b.api('POST', '/api/endpoints/add', { body: { port, maxConnectionSize: 100 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.data.id, `endpoint-${port}`);
  const g = await b.api('GET', `/api/endpoints/get?port=${port}`);
  assert.equal(g.json.data.maxConnectionSize, 100);
  const status = await b.api('GET', `/api/endpoints/status?port=${port}`);
  assert.deepEqual({ ...status.json, data: undefined }, { code: 200, message: 'success', data: undefined }, 'variant B answers the envelope');
  assert.equal(status.json.data.running, true);
  assert.equal(status.json.data.id, `endpoint-${port}`);
  assert.equal((await b.api('GET', `/endpoints/status?id=endpoint-${port}`)).json.running, true, 'variant A answers the bare shape');
  const used = await b.api('GET', `/api/endpoints/check-port?port=${port}`);
  assert.deepEqual(used.json, { code: 200, message: 'success', data: { port, available: false, usedBy: `endpoint-${port}` } });
  assert.deepEqual((await b.api('GET', `/endpoints/check-port?port=${port}`)).json, { port, available: false, usedBy: `endpoint-${port}` });
  const free = await freePort();
  assert.deepEqual((await b.api('GET', `/endpoints/check-port?port=${free}`)).json, { port: free, available: true });
  const holder = net.createServer().listen(free, '0.0.0.0');
  await once(holder, 'listening');
  assert.equal((await b.api('GET', `/endpoints/check-port?port=${free}`)).json.available, false, 'check-port really tries the port');
  holder.close();
  assert.equal((await b.api('POST', '/api/endpoints/remove', { body: { port } })).status, 200);
  assert.equal((await b.api('POST', '/api/endpoints/remove', { body: { port } })).status, 404);
  assert.equal((await b.api('GET', `/api/endpoints/get?port=${port}`)).status, 404);
});

test('validation: out-of-range limits, bad types, unknown fields are 400 naming the field; nothing changes', async () => {
  const before = (await b.api('GET', '/endpoints/list')).json;
  const port = await freePort();
  const cases: [Record<string, unknown>, string][] = [
    [{ maxConnectionSize: 0 }, 'maxConnectionSize'],
    [{ maxConnectionSize: 65536 }, 'maxConnectionSize'],
    [{ maxSessionSize: 10001 }, 'maxSessionSize'],
    [{ maxSessionSize: 0 }, 'maxSessionSize'],
    [{ messageMaxSize: 1023 }, 'messageMaxSize'],
    [{ messageMaxSize: 16777217 }, 'messageMaxSize'],
    [{ messageMaxSize: '2048' }, 'messageMaxSize'],
    [{ useWebsocket: 'yes' }, 'useWebsocket'],
    [{ path: 'mqtt' }, 'path'],
    [{ colour: 'red' }, 'colour'],
    [{ enableBridge: true }, 'enableBridge'],
    [{ sslConfig: { cert: '/nonexistent.pem', key: '/nonexistent.key' } }, 'sslConfig.cert'],
    [{ childOptions: { nagle: true } }, 'childOptions.nagle'],
  ];
  for (const [fields, field] of cases) {
    const r = await b.api('POST', '/endpoints/add', { body: { id: 'bad', port, ...fields } });
    assert.equal(r.status, 400, `${JSON.stringify(fields)}: ${r.text}`);
    assert.equal(r.json.field, field, JSON.stringify(fields));
  }
  const noPort = await b.api('POST', '/api/endpoints/add', { body: {} });
  assert.equal(noPort.status, 400);
  assert.equal(noPort.json.field, 'port');
  const noId = await b.api('POST', '/endpoints/add', { body: { port } });
  assert.equal(noId.json.field, 'id');
  assert.deepEqual((await b.api('GET', '/endpoints/list')).json, before);
});

test('a missing required field is a 400 INVALID_PARAMETER naming it on every add and check route (variant A without port was a 500)', async () => {
  const before = (await b.api('GET', '/endpoints/list')).json;
  const cases: [string, Record<string, unknown>, string][] = [
    ['/endpoints/add', { id: 'no-port' }, 'port'],
    ['/endpoints/add', {}, 'id'],
    ['/endpoints/update', { port: 1 }, 'id'],
    ['/endpoints/remove', {}, 'id'],
    ['/api/endpoints/add', {}, 'port'],
    ['/api/endpoints/update', {}, 'port'],
    ['/api/endpoints/remove', {}, 'port'],
    ['/api/endpoints/validate', { id: 'no-port' }, 'port'],
    ['/api/endpoints/validate-config', { id: 'no-port' }, 'port'],
    ['/api/endpoints/import', { endpoints: [{ id: 'no-port' }] }, 'endpoints[0].port'],
    ['/api/endpoints/import', {}, 'endpoints'],
  ];
  for (const [path, body, field] of cases) {
    const r = await b.api('POST', path, { body });
    assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.code, 400, `${path}: ${r.text}`);
    assert.equal(r.json.error, 'INVALID_PARAMETER', `${path}: ${r.text}`);
    assert.equal(r.json.field, field, `${path}: ${r.text}`);
    assert.ok(r.json.message.includes(field.replace(/^endpoints\[0\]\./, '')) && r.json.message.includes('required'), `${path}: the message names the field: ${r.text}`);
  }
  assert.deepEqual((await b.api('GET', '/endpoints/list')).json, before);
});

test('conflicts: a duplicate id, a port of another endpoint, a port in use elsewhere: 409 naming the field', async () => {
  const port = await freePort();
  const dupId = await b.api('POST', '/endpoints/add', { body: { id: 'tcp', port } });
  assert.equal(dupId.status, 409);
  assert.equal(dupId.json.field, 'id');
  const dupPort = await b.api('POST', '/endpoints/add', { body: { id: 'other', port: b.ports.tcp } });
  assert.equal(dupPort.status, 409);
  assert.equal(dupPort.json.field, 'port');
  const holder = net.createServer().listen(port, '0.0.0.0');
  await once(holder, 'listening');
  const busy = await b.api('POST', '/api/endpoints/add', { body: { port } });
  holder.close();
  assert.equal(busy.status, 409);
  assert.equal(busy.json.field, 'port');
  assert.equal((await b.api('GET', '/endpoints/list')).json.endpoints.other, undefined);
});

test('maxConnectionSize: past the limit v5 gets CONNACK 0x97, v3.1.1 0x03; raising it applies live', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'limited', port, maxConnectionSize: 2 } });
  const a1 = await client(port, { ...auth, protocolVersion: 5 });
  await client(port, { ...auth, protocolVersion: 4 });
  assert.equal(await refusal(port, { ...auth, protocolVersion: 5 }), 0x97);
  assert.equal(await refusal(port, { ...auth, protocolVersion: 4 }), 3);
  const metrics = await b.api('GET', `/api/endpoints/metrics?port=${port}&format=prometheus`);
  const refused = new RegExp(`svc_endpoint_connection_errors_total\\{[^}]*error_code="0x97"[^}]*\\} 2\\b`);
  assert.match(metrics.text, refused, 'both refusals counted under error_code 0x97');
  a1.end(true);
  await connectionsOn('limited', 1);
  assert.equal(await refusal(port, { ...auth, protocolVersion: 5 }), 0, 'a freed place is usable again');
  const up = await b.api('POST', '/endpoints/update', { body: { id: 'limited', maxConnectionSize: 5 } });
  assert.equal(up.status, 200, up.text);
  assert.equal(await refusal(port, { ...auth, protocolVersion: 5 }), 0);
  const cleared = await b.api('POST', '/endpoints/update', { body: { id: 'limited', maxConnectionSize: null } });
  assert.equal(cleared.json.data.maxConnectionSize, undefined, 'null makes it unlimited');
  await b.api('POST', '/endpoints/remove', { body: { id: 'limited' } });
});

test('maxSessionSize bounds the sessions an endpoint creates; resuming takes no new place', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'sessions', port, maxSessionSize: 1 } });
  const c = await client(port, { ...auth, clientId: 'keeper', clean: false, protocolVersion: 4 });
  assert.equal(await refusal(port, { ...auth, clientId: 'second', protocolVersion: 5 }), 0x97);
  c.end(true);
  await connectionsOn('sessions', 0);
  assert.equal(await refusal(port, { ...auth, clientId: 'keeper', clean: false, protocolVersion: 4 }), 0, 'its own session resumes');
  await b.api('POST', '/endpoints/remove', { body: { id: 'sessions' } });
});

test('maxConnectionPerSecond refuses accepts beyond the rate', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'rate', port, maxConnectionPerSecond: 3 } });
  const results = await Promise.all(Array.from({ length: 10 }, () => refusal(port, { ...auth, connectTimeout: 1500 })));
  const accepted = results.filter((r) => r === 0).length;
  assert.ok(accepted >= 1 && accepted <= 6, `at most the rate per second window got in (accepted ${accepted}, results ${results})`);
  assert.ok(results.some((r) => r !== 0), 'some were refused');
  await b.api('POST', '/endpoints/remove', { body: { id: 'rate' } });
});

test('messageMaxSize: advertised in the v5 CONNACK; a larger packet gets DISCONNECT 0x95', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'small', port, messageMaxSize: 2048 } });
  const c = await client(port, { ...auth, protocolVersion: 5 });
  const connack = await new Promise<mqtt.IConnackPacket>((resolve) => {
    const probe = mqtt.connect(`mqtt://127.0.0.1:${port}`, { ...auth, protocolVersion: 5, reconnectPeriod: 0 });
    probe.once('connect', (p) => {
      probe.end(true);
      resolve(p);
    });
  });
  assert.equal(connack.properties?.maximumPacketSize, 2048);
  const disconnected = new Promise<number | undefined>((resolve) => c.once('disconnect', (p) => resolve(p.reasonCode)));
  c.publish('open/big', Buffer.alloc(4096));
  assert.equal(await disconnected, 0x95);
  await b.api('POST', '/endpoints/remove', { body: { id: 'small' } });
});

test('enableAuth off admits clients without credentials; enableAcl off allows every topic', async () => {
  assert.equal(await refusal(b.ports.tcp!, { protocolVersion: 5 }), 0x87, 'the default endpoint checks credentials (anonymous: not authorized)');
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'open', port, enableAuth: false, enableAcl: false } });
  const anon = await client(port, { protocolVersion: 5 });
  const granted = await anon.subscribeAsync('closed/topic', { qos: 1 });
  assert.equal(granted[0].qos, 1, 'ACL off: a topic the ACL denies is granted');
  const strict = await client(b.ports.tcp!, { ...auth, protocolVersion: 5 });
  const denied = await new Promise<number>((resolve) => strict.subscribe('closed/topic', { qos: 1 }, (err, granted) => {
    resolve(err ? ((err as { packet?: { granted?: number[] } }).packet?.granted?.[0] ?? -1) : granted![0].qos);
  }));
  assert.equal(denied, 0x87, 'ACL on: denied on the default endpoint');
  await b.api('POST', '/endpoints/update', { body: { id: 'open', enableAuth: true } });
  assert.equal(await refusal(port, { protocolVersion: 5 }), 0x87, 'turning auth on applies to new connections at once');
  await b.api('POST', '/endpoints/remove', { body: { id: 'open' } });
});

test('remove: connected v5 clients get DISCONNECT 0x8B and the port closes', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'doomed', port } });
  const c5 = await client(port, { ...auth, protocolVersion: 5 });
  const c4 = await client(port, { ...auth, protocolVersion: 4 });
  const reason = new Promise<number | undefined>((resolve) => c5.once('disconnect', (p) => resolve(p.reasonCode)));
  const closed4 = new Promise<void>((r) => c4.once('close', () => r()));
  assert.equal((await b.api('POST', '/endpoints/remove', { body: { id: 'doomed' } })).status, 200);
  assert.equal(await reason, 0x8b);
  await closed4;
  const err = await new Promise<NodeJS.ErrnoException>((resolve) => net.connect(port, '127.0.0.1').once('error', resolve));
  assert.equal(err.code, 'ECONNREFUSED');
});

test('a WebSocket endpoint added at run time accepts MQTT over WebSocket', async () => {
  const port = await freePort();
  const r = await b.api('POST', '/endpoints/add', { body: { id: 'ws2', port, useWebsocket: true, path: '/m' } });
  assert.equal(r.status, 200, r.text);
  const c = await connect(`ws://127.0.0.1:${port}/m`, auth);
  clients.push(c);
  assert.ok(c.connected);
  await b.api('POST', '/endpoints/remove', { body: { id: 'ws2' } });
});

test('disable and enable: the listener stops and starts, the endpoint stays', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'toggle', port } });
  const c = await client(port, { ...auth, protocolVersion: 5 });
  const gone = new Promise<void>((r) => c.once('close', () => r()));
  await b.api('POST', '/endpoints/update', { body: { id: 'toggle', enabled: false } });
  await gone;
  assert.equal((await b.api('GET', '/endpoints/status?id=toggle')).json.running, false);
  await b.api('POST', '/endpoints/update', { body: { id: 'toggle', enabled: true } });
  assert.equal((await b.api('GET', '/endpoints/status?id=toggle')).json.running, true);
  assert.equal(await refusal(port, auth), 0);
  await b.api('POST', '/endpoints/remove', { body: { id: 'toggle' } });
});

test('isDefault moves to the endpoint given it; the default cannot be removed', async () => {
  const port = await freePort();
  await b.api('POST', '/endpoints/add', { body: { id: 'next-default', port, isDefault: true } });
  let list = (await b.api('GET', '/endpoints/list')).json.endpoints;
  assert.equal(list['next-default'].isDefault, true);
  assert.equal(list.tcp.isDefault, false);
  const rm = await b.api('POST', '/endpoints/remove', { body: { id: 'next-default' } });
  assert.equal(rm.status, 409);
  assert.equal(rm.json.field, 'isDefault');
  await b.api('POST', '/endpoints/update', { body: { id: 'tcp', isDefault: true } });
  list = (await b.api('GET', '/endpoints/list')).json.endpoints;
  assert.equal(list.tcp.isDefault, true);
  assert.equal(list['next-default'].isDefault, false);
  assert.equal((await b.api('POST', '/endpoints/remove', { body: { id: 'next-default' } })).status, 200);
});

test('export and import: an invalid import changes nothing; a valid one adds and updates', async () => {
  const exported = (await b.api('GET', '/api/endpoints/export')).json.data;
  assert.equal(exported.endpoints.length, 2);
  const p1 = await freePort();
  const bad = await b.api('POST', '/api/endpoints/import', { body: { endpoints: [{ id: 'imp1', port: p1 }, { id: 'imp2', port: p1 + 1, maxConnectionSize: 70000 }] } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'endpoints[1].maxConnectionSize');
  assert.equal((await b.api('GET', '/endpoints/list')).json.endpoints.imp1, undefined, 'nothing applied');
  const good = await b.api('POST', '/api/endpoints/import', { body: { endpoints: [...exported.endpoints.map((e: Record<string, unknown>) => (e.id === 'tcp' ? { ...e, maxConnectionSize: 1000 } : e)), { id: 'imp1', port: p1 }] } });
  assert.equal(good.status, 200, good.text);
  assert.deepEqual(good.json.data.added, ['imp1']);
  assert.deepEqual(good.json.data.updated.sort(), ['tcp', 'ws']);
  assert.equal((await b.api('GET', '/endpoints/list')).json.endpoints.tcp.maxConnectionSize, 1000);
  await b.api('POST', '/endpoints/update', { body: { id: 'tcp', maxConnectionSize: null } });
  await b.api('POST', '/endpoints/remove', { body: { id: 'imp1' } });
});

test('validate and validate-config check without changing anything', async () => {
  const port = await freePort();
  const v = await b.api('POST', '/api/endpoints/validate', { body: { port } });
  assert.equal(v.status, 200);
  assert.equal(v.json.data.valid, true);
  assert.equal(v.json.data.config.id, `endpoint-${port}`);
  const taken = await b.api('POST', '/api/endpoints/validate', { body: { port: b.ports.tcp } });
  assert.equal(taken.status, 409);
  const cfg = await b.api('POST', '/api/endpoints/validate-config', { body: { port: b.ports.tcp, messageMaxSize: 10 } });
  assert.equal(cfg.status, 400);
  assert.equal(cfg.json.field, 'messageMaxSize');
  assert.equal((await b.api('POST', '/api/endpoints/validate-config', { body: { port: b.ports.tcp } })).status, 200, 'validate-config ignores conflicts');
  assert.equal((await b.api('GET', `/api/endpoints/get?port=${port}`)).status, 404);
});

test('viewers read endpoints but cannot change them; no credentials is 401', async () => {
  assert.equal((await b.api('GET', '/endpoints/list', { as: 'viewer' })).status, 200);
  assert.equal((await b.api('POST', '/endpoints/add', { as: 'viewer', body: { id: 'v', port: 1 } })).status, 403);
  assert.equal((await b.api('POST', '/api/endpoints/remove', { as: 'viewer', body: { port: b.ports.tcp } })).status, 403);
  assert.equal((await b.api('GET', '/endpoints/list', { as: 'none' })).status, 401);
  assert.equal((await b.api('GET', '/api/endpoints/status?port=abc')).status, 400);
});

test('endpoints are stored and restored at start (LOCAL store)', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-endpoints-'));
  const port = await freePort();
  const first = await startAdminBroker({ dataDir, store: { storeType: 'LOCAL' } });
  try {
    assert.equal((await first.api('POST', '/endpoints/add', { body: { id: 'kept', port, maxConnectionSize: 7 } })).status, 200);
    assert.equal((await first.api('POST', '/endpoints/remove', { body: { id: 'ws' } })).status, 200);
  } finally {
    await first.stop();
  }
  const second = await startAdminBroker({ dataDir, store: { storeType: 'LOCAL' } });
  try {
    const list = (await second.api('GET', '/endpoints/list')).json.endpoints;
    assert.equal(list.kept.maxConnectionSize, 7);
    assert.equal(list.ws, undefined, 'a removed configuration endpoint stays removed');
    const c = await connect(`mqtt://127.0.0.1:${port}`);
    c.end(true);
  } finally {
    await second.stop();
  }
});
