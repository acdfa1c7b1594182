// Will messages end to end: published when the connection drops without DISCONNECT, not after
// a normal DISCONNECT, published after v5 DISCONNECT 0x04, the v5 Will Delay Interval (and the
// session ending before it), and the will's RETAIN flag.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startBroker, connect, connectionCount, nextMessages, noMessage, end, type TestBroker } from '../helpers/broker.ts';
import { RawClient } from '../helpers/raw-client.ts';
import { waitFor } from '../helpers/wait.ts';

let broker: TestBroker;
before(async () => { broker = await startBroker(); });
after(async () => { await broker.stop(); });

/** Waits until the broker counts `n` connections (a dropped one has been handled: its will
 * published or its delay started, in the same step). */
async function connectionsAre(n: number): Promise<void> {
  await waitFor(async () => (await connectionCount(broker)) === n, { message: `the broker to count ${n} connections` });
}

/**
 * "No will was published", without a timed silence: once the broker has handled the close (the
 * connection count fell), a marker published on the watched topic tree must be the next message
 * (a will is published in the step that handles the close, so it would have been routed first).
 */
async function nothingBefore(w: Awaited<ReturnType<typeof watcher>>, topic: string): Promise<void> {
  const next = nextMessages(w, 1);
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: `marker-${topic.replace(/\//g, '-')}` });
  await pub.publishAsync(topic, 'marker', { qos: 1 });
  assert.equal((await next)[0].payload, 'marker', 'no will before the marker');
  await end(pub);
}

async function watcher(topic: string) {
  const w = await connect(broker.url, { protocolVersion: 5, clientId: `watch-${topic.replace(/\//g, '-')}` });
  await w.subscribeAsync(topic, { qos: 1 });
  return w;
}

function will(topic: string, payload: string, extra: Record<string, unknown> = {}) {
  return { topic, payload: Buffer.from(payload), qos: 1 as const, retain: false, ...extra };
}

for (const protocolVersion of [4, 5] as const) {
  test(`v${protocolVersion}: the will is published when the connection drops without DISCONNECT [MQTT-3.1.2-8]`, async () => {
    const topic = `will/drop/${protocolVersion}`;
    const w = await watcher(topic);
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `will-drop-${protocolVersion}`, will: will(topic, 'gone') } as never);
    const got = nextMessages(w, 1);
    client.destroy();
    const [m] = await got;
    assert.equal(m.payload, 'gone');
    assert.equal(m.packet.qos, 1);
    await end(w);
  });

  test(`v${protocolVersion}: the will is published when the broker closes the connection for a protocol error [MQTT-3.1.2-8]`, async () => {
    const topic = `will/error/${protocolVersion}`;
    const w = await watcher(topic);
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `will-err-${protocolVersion}`, will: will(topic, 'broken') } as never);
    const got = nextMessages(w, 1);
    // A second CONNECT is a protocol violation [MQTT-3.1.0-2].
    client.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 0, clientId: 'x' } as never);
    assert.equal((await got)[0].payload, 'broken');
    await client.waitClosed();
    await end(w);
  });

  test(`v${protocolVersion}: the will is not published after a normal DISCONNECT [MQTT-3.1.2-10]`, async () => {
    const topic = `will/normal/${protocolVersion}`;
    const w = await watcher(topic);
    const n = await connectionCount(broker);
    const c = await connect(broker.url, { protocolVersion, clientId: `will-normal-${protocolVersion}`, will: will(topic, 'should not') });
    await c.endAsync();
    await connectionsAre(n);
    await nothingBefore(w, topic);
    await end(w);
  });

  test(`v${protocolVersion}: the will's RETAIN flag is honoured: a later subscriber gets it retained [MQTT-3.1.2-17]`, async () => {
    const topic = `will/retain/${protocolVersion}`;
    const w = await watcher(topic);
    const { client } = await RawClient.connect(broker.url, { protocolVersion, clientId: `will-ret-${protocolVersion}`, will: will(topic, 'kept', { retain: true }) } as never);
    const live = nextMessages(w, 1);
    client.destroy();
    await live;
    const late = await connect(broker.url, { protocolVersion, clientId: `will-late-${protocolVersion}` });
    const got = nextMessages(late, 1);
    await late.subscribeAsync(topic, { qos: 1 });
    const [m] = await got;
    assert.equal(m.payload, 'kept');
    assert.equal(m.packet.retain, true);
    // Clean up the retained message.
    await late.publishAsync(topic, '', { qos: 1, retain: true });
    await end(w, late);
  });
}

test('v5: DISCONNECT with reason 0x04 publishes the will [MQTT-3.14.2-1 (0x04 Disconnect with Will Message)]', async () => {
  const topic = 'will/with-will/5';
  const w = await watcher(topic);
  const { client } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'will-04', will: will(topic, 'asked for') } as never);
  const got = nextMessages(w, 1);
  client.send({ cmd: 'disconnect', reasonCode: 0x04 } as never);
  assert.equal((await got)[0].payload, 'asked for');
  await client.waitClosed();
  await end(w);
});

test('v5: DISCONNECT with reason 0x00 does not publish the will [MQTT-3.1.2-10]', async () => {
  const topic = 'will/disc-00/5';
  const w = await watcher(topic);
  const n = await connectionCount(broker);
  const { client } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'will-00', will: will(topic, 'no') } as never);
  client.send({ cmd: 'disconnect', reasonCode: 0x00 } as never);
  await client.waitClosed();
  await connectionsAre(n);
  await nothingBefore(w, topic);
  await end(w);
});

test('v5: a will with Will Delay Interval is published after the delay [MQTT-3.1.3-9]', async () => {
  const topic = 'will/delay/5';
  const w = await watcher(topic);
  const { client } = await RawClient.connect(broker.url, {
    protocolVersion: 5, clientId: 'will-delay', clean: true, properties: { sessionExpiryInterval: 60 },
    will: will(topic, 'late', { properties: { willDelayInterval: 1 } }),
  } as never);
  const start = Date.now();
  const got = nextMessages(w, 1, 4000);
  client.destroy();
  assert.equal((await got)[0].payload, 'late');
  const elapsed = Date.now() - start;
  assert.ok(elapsed >= 900, `published after ${elapsed} ms, before the 1 s delay`);
  await end(w);
});

test('v5: a will is not published if the client reconnects within the Will Delay Interval [MQTT-3.1.3-9]', async () => {
  const topic = 'will/reconnect/5';
  const w = await watcher(topic);
  const opts = {
    protocolVersion: 5, clientId: 'will-back', clean: false, properties: { sessionExpiryInterval: 60 },
    will: will(topic, 'should not', { properties: { willDelayInterval: 1 } }),
  };
  const n = await connectionCount(broker);
  const { client } = await RawClient.connect(broker.url, opts as never);
  client.destroy();
  await connectionsAre(n); // the drop is handled: the will waits for its delay
  const { client: back, connack } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: 'will-back', clean: false, properties: { sessionExpiryInterval: 60 } } as never);
  assert.equal(connack.sessionPresent, true);
  // Elapsed time is what is tested: the 1 s will delay must pass (a cancelled will has no event
  // to wait for, and a marker cannot overtake a timer), so this silence outlasts it.
  await noMessage(w, 1500);
  back.send({ cmd: 'disconnect', reasonCode: 0 } as never);
  await end(w);
});

test('v5: a will is not published if the client reconnects within the delay on another worker [MQTT-3.1.3-9]', async () => {
  const w = await connect(broker.url, { protocolVersion: 5, clientId: 'watch-will-back-many' });
  await w.subscribeAsync('will/back-many/#', { qos: 1 });
  const got: string[] = [];
  w.on('message', (t) => got.push(t));
  for (let i = 0; i < 6; i++) {
    const opts = {
      protocolVersion: 5, clientId: `will-back-${i}`, clean: false, properties: { sessionExpiryInterval: 60 },
      will: will(`will/back-many/${i}`, 'should not', { properties: { willDelayInterval: 1 } }),
    };
    const n = await connectionCount(broker);
    const { client } = await RawClient.connect(broker.url, opts as never);
    client.destroy();
    await connectionsAre(n); // the drop is handled: the will waits for its delay
    const { client: back } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: `will-back-${i}`, clean: false, properties: { sessionExpiryInterval: 60 } } as never);
    back.send({ cmd: 'disconnect', reasonCode: 0 } as never);
    await back.waitClosed();
  }
  // Elapsed time is what is tested: the 1 s will delays must pass before "no will" means anything.
  await new Promise((r) => setTimeout(r, 1500));
  assert.deepEqual(got, []);
  await end(w);
});

test('v5: a delayed will is published when the session ends first (Session Expiry shorter than the delay) [MQTT-3.1.3-9]', async () => {
  const topic = 'will/expiry/5';
  const w = await watcher(topic);
  const { client } = await RawClient.connect(broker.url, {
    protocolVersion: 5, clientId: 'will-expiry', clean: true, properties: { sessionExpiryInterval: 1 },
    will: will(topic, 'session ended', { properties: { willDelayInterval: 30 } }),
  } as never);
  const start = Date.now();
  const got = nextMessages(w, 1, 4000);
  client.destroy();
  assert.equal((await got)[0].payload, 'session ended');
  const elapsed = Date.now() - start;
  assert.ok(elapsed >= 900 && elapsed < 3000, `published after ${elapsed} ms`);
  await end(w);
});

test('v5: a delayed will with Session Expiry 0 is published at once (the session ends with the connection) [MQTT-3.1.3-9]', async () => {
  const topic = 'will/expiry0/5';
  const w = await watcher(topic);
  const { client } = await RawClient.connect(broker.url, {
    protocolVersion: 5, clientId: 'will-expiry0', clean: true,
    will: will(topic, 'now', { properties: { willDelayInterval: 30 } }),
  } as never);
  const start = Date.now();
  const got = nextMessages(w, 1, 2000);
  client.destroy();
  assert.equal((await got)[0].payload, 'now');
  assert.ok(Date.now() - start < 900);
  await end(w);
});

test('v5: a new connection cancels the pending delayed will of the session it takes over, also with Clean Start [MQTT-3.1.2-8] [MQTT-3.1.4-3]', async () => {
  const w = await connect(broker.url, { protocolVersion: 5, clientId: 'watch-will-to' });
  await w.subscribeAsync('will/takeover/#', { qos: 1 });
  const got: string[] = [];
  w.on('message', (t) => got.push(t));
  for (let i = 0; i < 6; i++) {
    const { client } = await RawClient.connect(broker.url, {
      protocolVersion: 5, clientId: `will-to-${i}`, clean: false, properties: { sessionExpiryInterval: 60 },
      will: will(`will/takeover/${i}`, 'ended', { properties: { willDelayInterval: 30 } }),
    } as never);
    // The new connection (clean for even i) arrives within the will delay: the will is not sent.
    const { client: next } = await RawClient.connect(broker.url, { protocolVersion: 5, clientId: `will-to-${i}`, clean: i % 2 === 0 } as never);
    await client.waitClosed();
    next.send({ cmd: 'disconnect', reasonCode: 0 } as never);
  }
  // A marker published after every takeover: a will, had one been sent, was routed before it.
  const pub = await connect(broker.url, { protocolVersion: 5, clientId: 'will-to-marker' });
  const marker = nextMessages(w, 1);
  await pub.publishAsync('will/takeover/marker', 'm', { qos: 1 });
  await marker;
  assert.deepEqual(got, ['will/takeover/marker']);
  await end(w, pub);
});
