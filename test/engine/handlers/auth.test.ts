// handle_auth unit tests on the in-memory engine, with a made-up two-step method (any AuthMethod
// goes through the same exchange): CONNECT -> AUTH 0x18 -> AUTH 0x18 -> CONNACK with the method's
// data, a refusal with its data, a method that throws or answers late, the exchange timeout; the
// protocol errors of MQTT 5.0 section 4.12 (another method, AUTH 0x19 before CONNACK, AUTH 0x00
// from a client, AUTH without a method in CONNECT); re-authentication (AUTH 0x00, DISCONNECT 0x87
// for a refusal or another username, 0x82 for another method) while the client's traffic goes on.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';

import type { AuthContinuation, AuthExchangeRequest, AuthMethod, AuthStep } from '../../../src/auth/index.ts';
import { engineConfig, startEngine, type Engine } from '../../helpers/engine.ts';
import { waitFor } from '../../helpers/wait.ts';
import { reasonOf } from './common.ts';

/** The client's data says what the second step answers: "ok:<user>", "no", "late:<user>" (after a
 * turn), "hang" (never), "throw". The first step answers "challenge" ("hang"/"throw" at once). */
class TwoSteps implements AuthMethod {
  started: AuthExchangeRequest[] = [];
  start(req: AuthExchangeRequest): AuthStep | Promise<AuthStep> {
    this.started.push(req);
    const first = req.data?.toString() ?? '';
    if (first === 'hang') return new Promise<AuthStep>(() => {});
    if (first === 'throw') throw new Error('the method broke');
    const next: AuthContinuation = { step: (data) => second(data?.toString() ?? '') };
    return { kind: 'continue', data: Buffer.from('challenge'), next };
  }
}

function second(text: string): AuthStep | Promise<AuthStep> {
  if (text.startsWith('ok:')) return { kind: 'done', result: { ok: true, username: text.slice(3) }, data: Buffer.from('welcome') };
  if (text.startsWith('late:')) return new Promise((resolve) => setImmediate(() => resolve({ kind: 'done', result: { ok: true, username: text.slice(5) }, data: Buffer.from('welcome') })));
  if (text === 'hang') return new Promise<AuthStep>(() => {});
  return { kind: 'done', result: { ok: false, reason: 'not_authorized' }, data: Buffer.from('nope') };
}

const METHOD = 'TWO-STEPS';
let current: Engine | null = null;
afterEach(() => {
  current?.close();
  current = null;
});

function engine(overrides: Record<string, unknown> = {}): { e: Engine; method: TwoSteps } {
  const method = new TwoSteps();
  current = startEngine({ config: engineConfig({ auth: { allowAnonymous: true, ...overrides } }), authMethods: new Map([[METHOD, method]]) });
  return { e: current, method };
}

const connect = (clientId: string, data: string, extra: Record<string, unknown> = {}) => ({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId, clean: true, keepalive: 60, properties: { authenticationMethod: METHOD, authenticationData: Buffer.from(data) }, ...extra });
const auth = (reasonCode: number, data: string, method = METHOD) => ({ cmd: 'auth', reasonCode, properties: { authenticationMethod: method, authenticationData: Buffer.from(data) } });

test('CONNECT -> AUTH 0x18 -> AUTH 0x18 -> CONNACK 0x00 with the method and its last data; the method names the user', async () => {
  const { e, method } = engine();
  const c = e.client();
  await c.send(connect('two', 'hello', { username: 'given' }));
  const challenge = c.packets('auth')[0];
  assert.deepEqual([challenge.reasonCode, challenge.properties.authenticationMethod, challenge.properties.authenticationData.toString()], [0x18, METHOD, 'challenge']);
  assert.deepEqual(method.started.map((r) => [r.username, r.data?.toString(), r.reauthenticating]), [['given', 'hello', false]]);
  assert.equal(c.packets('connack').length, 0);
  assert.equal(c.state, 'connecting');
  await c.send(auth(0x18, 'late:alice'));
  const ack = c.packets('connack')[0];
  assert.deepEqual([reasonOf(ack), ack.properties.authenticationMethod, ack.properties.authenticationData.toString()], [0, METHOD, 'welcome']);
  assert.equal(c.username, 'alice');
  assert.equal(c.state, 'connected');
  assert.equal(c.authExchange, null);
});

test('a refusal is CONNACK 0x87 with the method\'s data, then close; a method that throws is 0x88', async () => {
  const { e } = engine();
  const c = e.client();
  await c.send(connect('no', 'hello'), auth(0x18, 'no'));
  const ack = c.packets('connack')[0];
  assert.deepEqual([reasonOf(ack), ack.properties.authenticationData.toString()], [0x87, 'nope']);
  assert.equal(c.isClosed(), true);
  assert.equal(e.workers[0].stats.authFailed, 1);
  const t = e.client();
  await t.send(connect('throws', 'throw'));
  assert.equal(reasonOf(t.packets('connack')[0]), 0x88);
  assert.equal(t.isClosed(), true);
});

test('protocol errors of the exchange get CONNACK 0x82: another method, AUTH 0x19 or 0x00 before CONNACK [MQTT-4.12.0-5]', async () => {
  const { e } = engine();
  for (const [name, packets] of [
    ['another method', [auth(0x18, 'ok:a', 'OTHER')]],
    ['0x19 before CONNACK', [auth(0x19, 'x')]],
    ['0x00 from a client', [auth(0x00, 'x')]],
  ] as const) {
    const c = e.client();
    await c.send(connect(`pe-${name}`, 'hello'), ...packets);
    const ack = c.packets('connack')[0];
    assert.equal(reasonOf(ack), 0x82, name);
    assert.equal(c.isClosed(), true, name);
  }
});

test('an exchange longer than auth.exchangeTimeout is refused with 0x87 (the wait is what is tested: 1 s)', async () => {
  const { e } = engine({ exchangeTimeout: 1 });
  const c = e.client();
  // The step never answers: the CONNECT waits (and the fake client with it) until the timeout.
  void c.send(connect('slow', 'hello'), auth(0x18, 'hang'));
  await waitFor(() => c.packets('auth').length === 1);
  assert.equal(c.packets('connack').length, 0);
  await waitFor(() => c.isClosed(), { timeout: 5000, message: 'closed by the exchange timeout' });
  assert.equal(reasonOf(c.packets('connack')[0]), 0x87);
  assert.equal(e.workers[0].stats.enhancedAuth.timeouts, 1);
});

test('re-authentication: AUTH 0x19 -> 0x18 -> AUTH 0x00 with data; traffic goes on meanwhile; a refusal or another user is DISCONNECT 0x87', async () => {
  const { e, method } = engine();
  const c = e.client();
  await c.send(connect('re', 'hello'), auth(0x18, 'ok:rob'));
  assert.equal(reasonOf(c.packets('connack')[0]), 0);
  await c.send(auth(0x19, 'again'));
  assert.deepEqual(method.started.at(-1), { clientId: 're', username: 'rob', data: Buffer.from('again'), remoteAddress: '127.0.0.1', reauthenticating: true });
  assert.equal(c.packets('auth').at(-1)!.reasonCode, 0x18);
  // The client's traffic is not held by the exchange.
  await c.send({ cmd: 'pingreq' });
  assert.equal(c.packets('pingresp').length, 1);
  await c.send(auth(0x18, 'ok:rob'));
  const done = c.packets('auth').at(-1)!;
  assert.deepEqual([reasonOf(done) ?? 0, done.properties.authenticationMethod, done.properties.authenticationData.toString()], [0, METHOD, 'welcome']);
  assert.equal(e.workers[0].stats.enhancedAuth.reauthSuccess, 1);

  await c.send(auth(0x19, 'again'), auth(0x18, 'ok:eve'));
  assert.equal(reasonOf(c.packets('disconnect')[0]), 0x87);
  assert.equal(c.isClosed(), true);

  const d = e.client();
  await d.send(connect('re2', 'hello'), auth(0x18, 'ok:rob'), auth(0x19, 'again'), auth(0x18, 'no'));
  assert.equal(reasonOf(d.packets('disconnect')[0]), 0x87);
  assert.equal(e.workers[0].stats.enhancedAuth.reauthFailure, 2);
});

test('re-authentication with another method, AUTH 0x19 during one, AUTH 0x18 while a step is computed, and AUTH on a connection without a method are protocol errors (DISCONNECT 0x82) [MQTT-4.12.1-1, MQTT-4.12.0-7]', async () => {
  const { e } = engine();
  const a = e.client();
  await a.send(connect('other', 'hello'), auth(0x18, 'ok:x'), auth(0x19, 'again', 'OTHER'));
  assert.equal(reasonOf(a.packets('disconnect')[0]), 0x82);
  const b = e.client();
  await b.send(connect('twice', 'hello'), auth(0x18, 'ok:x'), auth(0x19, 'again'), auth(0x19, 'again'));
  assert.equal(reasonOf(b.packets('disconnect')[0]), 0x82);
  const d = e.client();
  await d.send(connect('busy', 'hello'), auth(0x18, 'ok:x'), auth(0x19, 'again'), auth(0x18, 'hang'), auth(0x18, 'ok:x'));
  assert.equal(reasonOf(d.packets('disconnect')[0]), 0x82);
  const plain = e.client();
  await plain.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 5, clientId: 'plain', clean: true, keepalive: 60 }, auth(0x19, 'x'));
  assert.equal(reasonOf(plain.packets('connack')[0]), 0);
  assert.equal(reasonOf(plain.packets('disconnect')[0]), 0x82);
});

test('MQTT 3.1.1 and plain v5 CONNECTs are untouched by the registered method; an unknown method is 0x8C', async () => {
  const { e, method } = engine();
  const v4 = e.client();
  await v4.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: 'v4', clean: true, keepalive: 60 });
  assert.equal(v4.packets('connack')[0].returnCode, 0);
  const unknown = e.client();
  await unknown.send({ ...connect('unknown', 'x'), properties: { authenticationMethod: 'NOPE', authenticationData: Buffer.from('x') } });
  assert.equal(reasonOf(unknown.packets('connack')[0]), 0x8c);
  assert.equal(method.started.length, 0);
});
