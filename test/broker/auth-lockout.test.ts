// Failed MQTT authentications are limited per source address across every worker: past
// limits.authMaxFailures within the window the address is locked out (CONNACK 0x8A in v5, 5 in
// 3.1.1) before any password is checked, even with the right one, until the lockout ends; counted.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import mqtt from 'mqtt';

import { startBroker, type TestBroker } from '../helpers/broker.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { hashPassword } from '../../src/auth/password.ts';

let b: TestBroker;
let urls: string[];
before(async () => {
  b = await startBroker({
    auth: { allowAnonymous: false, users: [{ username: 'u', password: await hashPassword('right-password', 'bcrypt', 4) }] },
    limits: { authMaxFailures: 3, authFailureWindow: 60, authLockout: 2 },
  });
  urls = await workerUrls(b);
});
after(() => b.stop());

/** The CONNACK reason (v5) / return code (v3) a connection attempt gets; 0 when accepted. */
function attempt(url: string, password: string, protocolVersion: 4 | 5 = 5): Promise<number> {
  return new Promise((resolve) => {
    const c = mqtt.connect(url, { username: 'u', password, protocolVersion, reconnectPeriod: 0, connectTimeout: 5000 });
    c.once('connect', () => {
      c.end(true);
      resolve(0);
    });
    c.once('error', (err: Error & { code?: number }) => {
      c.end(true);
      resolve(err.code ?? -1);
    });
  });
}

test('three failures, spread over both workers, lock the address out: even the right password is refused with 0x8A until the lockout ends', async () => {
  assert.equal(await attempt(urls[0], 'wrong-1'), 0x86);
  assert.equal(await attempt(urls[1], 'wrong-2'), 0x86);
  assert.equal(await attempt(urls[0], 'wrong-3'), 0x86);
  assert.equal(await attempt(urls[1], 'right-password'), 0x8a);
  assert.equal(await attempt(urls[0], 'right-password', 4), 5, 'MQTT 3.1.1: not authorized');
  const stats = await b.supervisor.collectStats();
  assert.equal(stats.reduce((n, s) => n + s.authLockouts, 0), 1);
  assert.equal(stats.reduce((n, s) => n + s.authLockedOut, 0), 2);
  // Elapsed time is what is tested here: the lockout is 2 s.
  await new Promise((r) => setTimeout(r, 2100));
  assert.equal(await attempt(urls[1], 'right-password'), 0);
});
