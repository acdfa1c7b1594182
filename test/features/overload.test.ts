// Overload protection end to end: a worker made to lag (POST /api/overload/debug/busy, on only
// with overload.debugBusy) refuses new clients with CONNACK 0x89 Server busy (mqtt.js, MQTT 5) and
// 3 Server unavailable (mosquitto_sub, MQTT 3.1.1), while a client connected before keeps
// publishing and receiving; once the lag is gone the worker accepts again. The state, marks and
// counters through the admin API and the metrics; marks changed at run time, a bad one refused.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';

import mqtt from 'mqtt';

import { connect, nextMessages, end } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { ownChild } from '../helpers/children.ts';
import { waitFor } from '../helpers/wait.ts';

let b: AdminBroker;
before(async () => {
  try {
    execFileSync('which', ['mosquitto_sub'], { stdio: 'ignore' });
  } catch {
    throw new Error('mosquitto_sub not found: install Debian\'s mosquitto-clients (make system-packages runs scripts/ensure-system-packages.sh)');
  }
  b = await startAdminBroker({ workers: 1, overload: { enabled: true, lagHighMs: 250, lagLowMs: 100, sampleMs: 100, debugBusy: true } });
});
after(async () => { await b?.stop(); });

async function state(): Promise<{ state: string; marks: Record<string, unknown>; source: string; workers: { state: string; refused: number; lagMs: number; reasons: string[] }[] }> {
  const r = await b.api('GET', '/api/overload');
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

/** The CONNACK reason code mqtt.js (MQTT 5) gets, or 0 when it connected (then it disconnects). */
function connackCode(): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(b.url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 10_000 });
    c.once('connect', () => {
      c.end(true);
      resolve(0);
    });
    c.once('error', (err: Error & { code?: number }) => {
      c.end(true);
      if (typeof err.code === 'number') resolve(err.code);
      else reject(err);
    });
  });
}

/** mosquitto_sub with MQTT 3.1.1: its debug output up to its exit. */
function mosquittoSub311(): Promise<{ code: number | null; out: string }> {
  const p = ownChild(spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(b.ports.tcp), '-V', 'mqttv311', '-t', 'ov/#', '-C', '1', '-W', '10', '-d']));
  let out = '';
  p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => p.on('exit', (code) => resolve({ code, out })));
}

test('a lagging worker refuses new clients with 0x89 / 3, serves those connected, and accepts again after', async () => {
  assert.equal((await state()).state, 'normal');
  const sub = await connect(b.url, { protocolVersion: 5 });
  const pub = await connect(b.url, { protocolVersion: 4 });
  await sub.subscribeAsync('ov/#', { qos: 1 });
  try {
    const r = await b.api('POST', '/api/overload/debug/busy', { body: { totalMs: 5000, blockMs: 400 } });
    assert.equal(r.status, 200, r.text);
    const over = await waitFor(async () => {
      const s = await state();
      return s.state === 'overloaded' && s;
    }, { message: 'the worker becomes overloaded' });
    assert.deepEqual(over.workers[0].reasons, ['lag']);

    // New clients are refused: MQTT 5 with 0x89 Server busy, MQTT 3.1.1 with 3 Server unavailable.
    assert.equal(await connackCode(), 0x89);
    const m = await mosquittoSub311();
    assert.match(m.out, /received CONNACK \(3\)/, m.out);
    assert.notEqual(m.code, 0);

    // Those connected keep working, both ways.
    const got = nextMessages(sub, 3);
    for (let i = 0; i < 3; i++) await pub.publishAsync(`ov/${i}`, `during ${i}`, { qos: 1 });
    assert.deepEqual((await got).map((x) => x.payload), ['during 0', 'during 1', 'during 2']);
    assert.equal((await state()).state, 'overloaded', 'still overloaded while the connected clients were served');

    // The lag ends: below the low mark the worker accepts again.
    await waitFor(async () => (await state()).state === 'normal', { message: 'the worker is no longer overloaded' });
    assert.equal(await connackCode(), 0);
    const after = await state();
    assert.ok(after.workers[0].refused >= 2, `refusals counted: ${after.workers[0].refused}`);
    const metrics = (await b.api('GET', '/prometheus')).text;
    assert.match(metrics, /spindle_overload_refused_total [2-9]\d*|spindle_overload_refused_total \d{2,}/);
    assert.match(metrics, /spindle_overload_state\{worker="0"\} 0/);
    assert.match(metrics, /svc_endpoint_connection_errors_total\{[^}]*error_code="0x89"[^}]*\} [1-9]/);
  } finally {
    await end(sub, pub);
  }
});

test('the marks change at run time; a low mark above its high one is refused naming it', async () => {
  let r = await b.api('PUT', '/api/overload/marks', { body: { lagHighMs: 100, lagLowMs: 200 } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /lagLowMs/);
  r = await b.api('PUT', '/api/overload/marks', { body: { lagHighMs: 400, lagLowMs: 100 } });
  assert.equal(r.status, 200, r.text);
  const s = await state();
  assert.equal(s.source, 'api');
  assert.equal(s.marks.lagHighMs, 400);
  assert.equal(s.marks.lagLowMs, 100);
  r = await b.api('PUT', '/api/overload/marks', { body: { enabled: false }, as: 'viewer' });
  assert.equal(r.status, 403, 'a viewer may not change the marks');
});
