// needs: broker
// Bans are kept in the store (LOCAL here): after a restart of the `spindle` process, the very
// first CONNECTs of banned clients are refused (the bans are on every worker before it opens its
// listeners), an expired ban is gone, and lifting one still works.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { freePort, startProcessBroker, tempDir } from '../helpers/process-broker.ts';
import { WAIT_MS } from '../helpers/wait.ts';

const PASSWORD = 'bans-restart-password';

async function api(adminPort: number, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${adminPort}${p}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${method} ${p}: ${text}`);
  return JSON.parse(text);
}

/** The CONNACK code of a client that tries as soon as the port accepts (0: connected). */
async function connackWhenOpen(url: string, clientId: string, username?: string): Promise<number> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 1000, protocolVersion: 5, clientId, username });
    const code = await new Promise<number | null>((resolve) => {
      client.once('connect', () => resolve(0));
      client.once('error', (err: Error & { code?: number }) => resolve(typeof err.code === 'number' ? err.code : null));
    }).finally(() => client.end(true));
    if (code !== null) return code;
    if (Date.now() > deadline) throw new Error('the broker never answered');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('bans survive a restart and refuse the first CONNECTs after it', async () => {
  const dataDir = tempDir();
  const port = await freePort();
  const adminPort = await freePort();
  const config = {
    dataDir,
    workers: 2,
    log: { level: 'info' },
    sys: { enabled: false },
    store: { storeType: 'LOCAL' },
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    admin: { enabled: true, host: '127.0.0.1', port: adminPort, password: PASSWORD },
  };
  const first = await startProcessBroker(config);
  await api(adminPort, 'POST', '/api/banned', { as: 'clientid', who: 'kept-out', reason: 'restart test' });
  await api(adminPort, 'POST', '/api/banned', { as: 'username', who: 'eve', until: new Date(Date.now() + 3_600_000).toISOString() });
  const shortUntil = Math.ceil(Date.now() / 1000) + 2;
  await api(adminPort, 'POST', '/api/banned', { as: 'clientid', who: 'short', until: shortUntil });
  await api(adminPort, 'POST', '/api/banned/bulk', { bans: [{ as: 'peerhost_net', who: '192.0.2.0/24' }, { as: 'peerhost_net', who: '2001:db8::/32' }] });
  assert.equal(await connackWhenOpen(first.url, 'short'), 0x8a);
  assert.equal(await first.kill('SIGTERM'), 0);
  // Past the short ban's end (its `until` is in whole seconds: up to 3 s after it was made): it
  // must not come back.
  await new Promise((r) => setTimeout(r, Math.max(0, shortUntil * 1000 + 50 - Date.now())));

  const second = await startProcessBroker(config);
  try {
    assert.equal(await connackWhenOpen(second.url, 'kept-out'), 0x8a, second.output.join('\n'));
    assert.equal(await connackWhenOpen(second.url, 'someone', 'eve'), 0x8a);
    assert.equal(await connackWhenOpen(second.url, 'short'), 0);
    const listed = await api(adminPort, 'GET', '/api/banned');
    assert.deepEqual(listed.data.map((d: any) => `${d.as}:${d.who}`).sort(), ['clientid:kept-out', 'peerhost_net:192.0.2.0/24', 'peerhost_net:2001:db8::/32', 'username:eve']);
    await api(adminPort, 'DELETE', '/api/banned/clientid/kept-out');
    assert.equal(await connackWhenOpen(second.url, 'kept-out'), 0);
  } finally {
    await second.kill('SIGTERM');
  }
});
