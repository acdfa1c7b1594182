// The built-in client database survives a restart: a `spindle` process with the LOCAL store gets a
// role and a client through the admin API, is stopped (SIGTERM) and started again on the same
// data, and the client connects with its password and its role's rules still hold.
// needs: broker
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connect, end } from '../helpers/broker.ts';
import { startProcessBroker, freePort, tempDir } from '../helpers/process-broker.ts';

const ADMIN_PW = 'restart-admin-pw';

async function api(port: number, method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_PW}`).toString('base64')}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
}

async function pubCode(url: string, topic: string): Promise<number> {
  const c = await connect(url, { username: 'keeper', password: 'keeper-pw', protocolVersion: 5 });
  try {
    await c.publishAsync(topic, 'x', { qos: 1 });
    return 0;
  } catch (err) {
    return (err as { code: number }).code;
  } finally {
    await end(c);
  }
}

test('clients and roles are stored (LOCAL) and in force after a restart', async () => {
  const dataDir = tempDir();
  const adminPort = await freePort();
  const config = {
    dataDir,
    workers: 2,
    log: { level: 'info' },
    mqtt: { host: '127.0.0.1', tcp: { port: await freePort() }, ws: { enabled: false } },
    store: { storeType: 'LOCAL' },
    auth: { allowAnonymous: false },
    admin: { enabled: true, host: '127.0.0.1', port: adminPort, password: ADMIN_PW },
  };
  let broker = await startProcessBroker(config);
  try {
    const role = await api(adminPort, 'POST', '/api/client-db/roles', { name: 'keep', rules: [{ action: 'publish', permission: 'allow', topic: 'kept/#' }] });
    assert.equal(role.status, 200, role.text);
    const client = await api(adminPort, 'POST', '/api/client-db/clients', { username: 'keeper', password: 'keeper-pw', roles: [{ name: 'keep' }] });
    assert.equal(client.status, 200, client.text);
    assert.equal(await pubCode(broker.url, 'kept/1'), 0);
    assert.equal(await broker.kill('SIGTERM'), 0);

    broker = await startProcessBroker(config);
    assert.equal(await pubCode(broker.url, 'kept/1'), 0, 'the client signs in after the restart');
    assert.equal(await pubCode(broker.url, 'other/1'), 0x87, "the role's rules still hold");
    const listed = await api(adminPort, 'GET', '/api/client-db/clients');
    assert.deepEqual(listed.json.data.map((c: { username: string }) => c.username), ['keeper']);
  } finally {
    await broker.kill('SIGTERM');
  }
});
