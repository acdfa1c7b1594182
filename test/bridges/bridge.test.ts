// MQTT bridges end to end against a real Mosquitto (Debian's, started by test/helpers/mosquitto.ts
// with persistence on): messages both ways with prefixes and QoS 1, no loops with overlapping
// filters, the remote stopped and started mid-stream with nothing acknowledged lost, messages
// published on the remote while the bridge was stopped (its persistent session there), and the
// admin API (bad config named by field, passwords never answered, file bridges read-only).
// needs: broker, mosquitto
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import mqtt, { type MqttClient } from 'mqtt';

import { connect, end, nextMessages } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { startMosquitto, type Mosquitto } from '../helpers/mosquitto.ts';
import { waitFor, waitForEvent } from '../helpers/wait.ts';
import { freePort, startProcessBroker, tempDir } from '../helpers/process-broker.ts';


let remote: Mosquitto;
before(async () => {
  remote = await startMosquitto();
});
after(async () => {
  await remote?.stop();
});

async function runtime(b: AdminBroker, name: string): Promise<any> {
  const r = await b.api('POST', '/bridge/runtime', { body: { name } });
  assert.equal(r.status, 200, r.text);
  return r.json.data[0];
}

/** Waits until the bridge is connected and its remote subscriptions are acknowledged. */
async function ready(b: AdminBroker, name: string): Promise<void> {
  await waitFor(async () => {
    const r = await runtime(b, name);
    return r.state === 'connected' && r.subscribed;
  }, { message: `bridge ${name} connected and subscribed` });
}

/** Every message a client receives, in order. */
function record(client: MqttClient): { topic: string; payload: string; qos: number }[] {
  const got: { topic: string; payload: string; qos: number }[] = [];
  client.on('message', (topic, payload, packet) => got.push({ topic, payload: payload.toString(), qos: packet.qos }));
  return got;
}

test('messages both ways, prefixes mapped, QoS 1 end to end (a bridge of the configuration file, MQTT 3.1.1)', async () => {
  const b = await startAdminBroker({
    bridges: [{
      name: 'site1',
      url: remote.url,
      reconnectPeriod: 200,
      forwards: [{ filter: 'up/#', qos: 1, localPrefix: 'local/', remotePrefix: 'site1/' }],
      subscriptions: [{ filter: 'down/#', qos: 1, localPrefix: 'fromremote/', remotePrefix: 'site1/' }],
    }],
  });
  const remoteSub = await connect(remote.url, { clientId: 't1-remote-sub' });
  const remotePub = await connect(remote.url, { clientId: 't1-remote-pub' });
  const localSub = await connect(b.url);
  const localPub = await connect(b.url);
  try {
    await ready(b, 'site1');
    await remoteSub.subscribeAsync('site1/#', { qos: 1 });
    await localSub.subscribeAsync('fromremote/#', { qos: 1 });

    const out = nextMessages(remoteSub, 2);
    await localPub.publishAsync('local/up/t1', 'hello', { qos: 1 });
    await localPub.publishAsync('local/up/t0', 'qos0', { qos: 0 });
    const [m1, m0] = await out;
    assert.deepEqual([m1.topic, m1.payload, m1.packet.qos], ['site1/up/t1', 'hello', 1]);
    // A message goes with the lower of its QoS and the mapping's.
    assert.deepEqual([m0.topic, m0.payload, m0.packet.qos], ['site1/up/t0', 'qos0', 0]);

    const inbound = nextMessages(localSub, 1);
    await remotePub.publishAsync('site1/down/t2', 'from the remote', { qos: 1 });
    const [m2] = await inbound;
    assert.deepEqual([m2.topic, m2.payload, m2.packet.qos], ['fromremote/down/t2', 'from the remote', 1]);

    // The bridge counts a batch once the worker has answered for it, which may come after the
    // local subscriber already has the message.
    await waitFor(async () => (await runtime(b, 'site1')).messagesIn === 1, { message: 'the inbound message counted' });
    const rt = await runtime(b, 'site1');
    assert.equal(rt.source, 'config');
    assert.equal(rt.messagesOut, 2);
    assert.equal(rt.messagesIn, 1);
    assert.equal(rt.queued, 0);
    const metrics = (await b.api('GET', '/prometheus')).text;
    assert.match(metrics, /spindle_bridge_connected\{bridge="site1"\} 1/);
    assert.match(metrics, /spindle_bridge_messages_total\{bridge="site1",direction="out"\} 2/);
    assert.match(metrics, /spindle_bridge_messages_total\{bridge="site1",direction="in"\} 1/);
    assert.match(metrics, /spindle_bridge_dropped_total\{bridge="site1",reason="queue_full"\} 0/);
  } finally {
    await end(remoteSub, remotePub, localSub, localPub);
    await b.stop();
  }
});

for (const protocolVersion of [4, 5] as const) {
  test(`no loop with overlapping in and out filters: what came in is not sent back (MQTT ${protocolVersion})`, async () => {
    const name = `ring${protocolVersion}`;
    const topic = (t: string) => `${name}/${t}`;
    const b = await startAdminBroker({
      bridges: [{ name, url: remote.url, protocolVersion, reconnectPeriod: 200, forwards: [{ filter: `${name}/#` }], subscriptions: [{ filter: `${name}/#` }] }],
    });
    const remoteSub = await connect(remote.url, { clientId: `${name}-remote-sub` });
    const remotePub = await connect(remote.url, { clientId: `${name}-remote-pub` });
    const localSub = await connect(b.url);
    const localPub = await connect(b.url);
    try {
      await ready(b, name);
      await remoteSub.subscribeAsync(`${name}/#`, { qos: 1 });
      await localSub.subscribeAsync(`${name}/#`, { qos: 1 });
      const atRemote = record(remoteSub);
      const atLocal = record(localSub);

      await remotePub.publishAsync(topic('a'), 'remote', { qos: 1 });
      await waitFor(() => atLocal.length >= 1, { message: 'the remote message arrived here' });
      // A local message after it: had `a` been forwarded back, its copy would reach the remote first.
      await localPub.publishAsync(topic('b'), 'local', { qos: 1 });
      await waitFor(() => atRemote.some((m) => m.topic === topic('b')), { message: 'the local message arrived at the remote' });
      assert.deepEqual(atRemote.map((m) => m.topic), [topic('a'), topic('b')]);
      const skipped = await b.supervisor.callAll('bridges.counters');
      assert.ok(skipped.reduce((n, c) => n + c.loopsSkipped, 0) >= 1, 'the worker skipped the match of the message that came in over the bridge');

      if (protocolVersion === 5) {
        // No Local on the remote subscription: `b` does not come back in either.
        await remotePub.publishAsync(topic('end'), 'marker', { qos: 1 });
        await waitFor(() => atLocal.some((m) => m.topic === topic('end')), { message: 'the marker arrived here' });
        assert.deepEqual(atLocal.map((m) => m.topic), [topic('a'), topic('b'), topic('end')]);
      }
      const rt = await runtime(b, name);
      assert.equal(rt.messagesIn, protocolVersion === 5 ? 2 : rt.messagesIn);
      assert.equal(rt.messagesOut, 1);
    } finally {
      await end(remoteSub, remotePub, localSub, localPub);
      await b.stop();
    }
  });
}

test('the remote restarted mid-stream: every QoS 1 message arrives, both ways; messages published while the bridge was stopped arrive from its persistent session', async () => {
  const b = await startAdminBroker({
    bridges: [{
      name: 'flow',
      url: remote.url,
      reconnectPeriod: 200,
      queueLimit: 1000,
      forwards: [{ filter: 'flow/#', qos: 1, remotePrefix: 'edge/' }],
      subscriptions: [{ filter: 'back/#', qos: 1, remotePrefix: 'edge/' }],
    }],
  });
  // The remote subscriber has a persistent session there and is offline during the stream: what
  // the remote acknowledged to the bridge must survive the remote's restart in its queue.
  const subOptions = { clientId: 'flow-remote-sub', clean: false, reconnectPeriod: 0, resubscribe: false };
  const first = await connect(remote.url, subOptions);
  await first.subscribeAsync('edge/flow/#', { qos: 1 });
  await first.endAsync();
  const remotePub = await connect(remote.url, { clientId: 'flow-remote-pub', reconnectPeriod: 200 });
  const localSub = await connect(b.url, { clientId: 'flow-local-sub' });
  const localPub = await connect(b.url);
  let remoteSub: MqttClient | null = null;
  try {
    await ready(b, 'flow');
    await localSub.subscribeAsync('back/#', { qos: 1 });
    const atLocal = new Set<string>();
    localSub.on('message', (_t, payload) => atLocal.add(payload.toString()));

    // Mid-stream: the remote stops while the first messages are on their way.
    for (let i = 1; i <= 30; i++) await localPub.publishAsync(`flow/${i % 3}`, `m${i}`, { qos: 1 });
    await remote.stop();
    assert.ok(remote.persisted(), 'Mosquitto saved its sessions');
    await waitFor(async () => (await runtime(b, 'flow')).state === 'connecting', { message: 'the bridge saw the remote go' });
    // Published here while the remote is down: held in the bridge's queue (within its bound).
    for (let i = 31; i <= 80; i++) await localPub.publishAsync(`flow/${i % 3}`, `m${i}`, { qos: 1 });
    // A message is acknowledged here before the worker's batch of the tick reaches the bridge.
    let down: unknown = null;
    await waitFor(async () => {
      const rt = await runtime(b, 'flow');
      down = rt;
      return rt.queued >= 50;
    }, { message: () => `queued while down: ${JSON.stringify(down)}` });
    await remote.start();
    await ready(b, 'flow');
    await waitFor(async () => (await runtime(b, 'flow')).queued === 0, { message: 'the bridge emptied its queue into the remote' });

    // The subscriber comes back to its session: every message, none lost.
    const atRemote = new Set<string>();
    const sub = mqtt.connect(remote.url, subOptions);
    remoteSub = sub;
    sub.on('message', (_t, payload) => atRemote.add(payload.toString()));
    const [connack] = await waitForEvent(sub, 'connect');
    assert.equal((connack as { sessionPresent: boolean }).sessionPresent, true, 'the remote kept the subscriber\'s session across its restart');
    await waitFor(() => atRemote.size === 80, { message: 'all 80 messages at the remote subscriber' }).catch((err: Error) => {
      throw new Error(`${err.message}; missing: ${missing(atRemote, 80)}`);
    });

    // Remote -> local across the restart.
    await waitFor(() => remotePub.connected, { message: 'the remote publisher reconnected' });
    for (let i = 1; i <= 10; i++) await remotePub.publishAsync(`edge/back/${i}`, `r${i}`, { qos: 1 });
    await waitFor(() => atLocal.size === 10, { message: `10 remote messages here (got ${atLocal.size})` });

    // The bridge stopped (it disconnects; its session stays on the remote): what the remote
    // gets meanwhile arrives once it is started again.
    assert.equal((await b.api('POST', '/bridge/stop', { body: { name: 'flow' } })).status, 200);
    assert.equal((await runtime(b, 'flow')).state, 'stopped');
    for (let i = 11; i <= 20; i++) await remotePub.publishAsync(`edge/back/${i}`, `r${i}`, { qos: 1 });
    assert.equal(atLocal.size, 10);
    assert.equal((await b.api('POST', '/bridge/start', { body: { name: 'flow' } })).status, 200);
    await waitFor(() => atLocal.size === 20, { message: `20 remote messages here (got ${atLocal.size})` });

    const rt = await runtime(b, 'flow');
    assert.equal(rt.dropped.queue_full, 0);
    assert.ok(rt.messagesOut >= 80, JSON.stringify(rt));
  } finally {
    await end(...(remoteSub ? [remoteSub] : []), remotePub, localSub, localPub);
    await b.stop();
    // The remote runs again for the tests after this one, whatever step failed.
    await remote.start();
  }
});

test('a worker restarted: the bridge forwards from the new worker, and a remote message published meanwhile is retried until it is stored here', async () => {
  const b = await startAdminBroker({
    workers: 1,
    // terminate() of a worker with a uWS WebSocket listener aborts Node (see worker-crash.test.ts).
    mqtt: { ws: { enabled: false } },
    bridges: [{ name: 'crash', url: remote.url, reconnectPeriod: 200, forwards: [{ filter: 'c/#', remotePrefix: 'crash/' }], subscriptions: [{ filter: 'in/#', remotePrefix: 'crash/' }] }],
  });
  const remoteSub = await connect(remote.url, { clientId: 'crash-remote-sub' });
  const remotePub = await connect(remote.url, { clientId: 'crash-remote-pub' });
  // A persistent session here: the message published while the worker is down reaches it later.
  const localOptions = { clientId: 'crash-local-sub', clean: false, reconnectPeriod: 0 };
  const localSub = await connect(b.url, localOptions);
  let back: MqttClient | null = null;
  let localPub: MqttClient | null = null;
  try {
    await ready(b, 'crash');
    await remoteSub.subscribeAsync('crash/#', { qos: 1 });
    await localSub.subscribeAsync('in/#', { qos: 1 });
    const dead = b.supervisor.workers[0]!;
    await dead.terminate();
    await remotePub.publishAsync('crash/in/while-down', 'kept', { qos: 1 });
    await waitFor(() => b.supervisor.workers[0] !== dead && b.supervisor.workerStates()[0].running, { message: 'the worker restarted' });

    const got: string[] = [];
    const client = mqtt.connect(b.url, localOptions);
    back = client;
    client.on('message', (topic) => got.push(topic));
    await waitFor(() => got.includes('in/while-down'), { message: 'the message published while the worker was down' });
    const rt = await runtime(b, 'crash');
    assert.equal(rt.messagesIn, 1);
    // It came while no worker ran: the publish failed and was retried.
    assert.match(rt.lastError, /publishing a remote message here failed \(retried\): (no worker is|worker 0 is not) running/);

    // The restarted worker knows the bridge's handle: local messages go out again.
    localPub = await connect(b.url);
    const out = nextMessages(remoteSub, 1);
    await localPub.publishAsync('c/after', 'after the restart', { qos: 1 });
    assert.equal((await out)[0].topic, 'crash/c/after');
  } finally {
    await end(...[back, localPub].filter((c): c is MqttClient => c !== null), remoteSub, remotePub);
    localSub.end(true);
    await b.stop();
  }
});

test('without the admin API (the spindle command, admin.enabled false) the file\'s bridges run', async () => {
  const port = await freePort();
  const proc = await startProcessBroker({
    dataDir: tempDir(),
    workers: 1,
    log: { level: 'info' },
    mqtt: { host: '127.0.0.1', tcp: { port }, ws: { enabled: false } },
    admin: { enabled: false },
    sys: { enabled: false },
    bridges: [{ name: 'noadmin', url: remote.url, reconnectPeriod: 200, forwards: [{ filter: 'na/#', remotePrefix: 'noadmin/' }] }],
  });
  let remoteSub: MqttClient | null = null;
  let localPub: MqttClient | null = null;
  try {
    remoteSub = await connect(remote.url, { clientId: 'noadmin-remote-sub' });
    localPub = await connect(proc.url);
    await remoteSub.subscribeAsync('noadmin/#', { qos: 1 });
    await waitFor(() => proc.output.some((l) => l.includes('bridge connected to the remote broker')), { message: 'the bridge connected' });
    const got = nextMessages(remoteSub, 1);
    await localPub.publishAsync('na/x', 'no admin API', { qos: 1 });
    assert.deepEqual((await got).map((m) => [m.topic, m.payload]), [['noadmin/na/x', 'no admin API']]);
  } finally {
    await end(...[remoteSub, localPub].filter((c): c is MqttClient => c !== null));
    assert.equal(await proc.kill('SIGTERM'), 0, proc.output.join('\n'));
  }
});

function missing(got: Set<string>, n: number): string {
  const out: string[] = [];
  for (let i = 1; i <= n; i++) if (!got.has(`m${i}`)) out.push(`m${i}`);
  return out.slice(0, 20).join(' ');
}

test('admin API: add, query, update, start, stop, delete; bad config named by field; passwords never answered; file bridges read-only', async () => {
  const b = await startAdminBroker({
    bridges: [{ name: 'fromfile', url: remote.url, username: 'u', password: 'file-secret', reconnectPeriod: 200, forwards: [{ filter: 'ff/#' }] }],
  });
  const remoteSub = await connect(remote.url, { clientId: 'api-remote-sub' });
  const localPub = await connect(b.url);
  try {
    // Bad input: 400 naming the field, nothing added.
    const bad: [unknown, string][] = [
      [{ name: 'x', url: 'http://127.0.0.1:1', forwards: [{ filter: 'a' }] }, 'url'],
      [{ name: 'x', url: remote.url, forwards: [{ filter: 'a', qos: 3 }] }, 'forwards[0].qos'],
      [{ name: 'x', url: remote.url, subscriptions: [{ filter: 'a/#/b' }] }, 'subscriptions[0].filter'],
      [{ name: 'x', url: remote.url, forwards: [{ filter: 'a' }], protocolVersion: 6 }, 'protocolVersion'],
      [{ name: 'x', url: remote.url, forwards: [{ filter: 'a' }], tls: { ca: '/nonexistent/ca.pem' } }, 'tls.ca'],
      [{ name: 'x', url: remote.url, forwards: [{ filter: 'a' }], colour: 1 }, 'colour'],
      [{ url: remote.url, forwards: [{ filter: 'a' }] }, 'name'],
    ];
    for (const [body, field] of bad) {
      const r = await b.api('POST', '/bridge/add', { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.field, field, r.text);
    }
    assert.equal((await b.api('POST', '/bridge/query', { body: {} })).json.total, 1);

    const add = await b.api('POST', '/bridge/add', {
      body: { name: 'api1', url: remote.url, protocolVersion: 5, username: 'bridge', password: 'api-secret', reconnectPeriod: 200, forwards: [{ filter: 'api/#', remotePrefix: 'viaapi/' }] },
    });
    assert.equal(add.status, 200, add.text);
    assert.equal(add.json.data.passwordSet, true);
    assert.equal((await b.api('POST', '/bridge/add', { body: { name: 'api1', url: remote.url, forwards: [{ filter: 'x' }] } })).status, 409);

    // It works: a local message goes out with the remote prefix.
    await ready(b, 'api1');
    await remoteSub.subscribeAsync('viaapi/#', { qos: 1 });
    const got = nextMessages(remoteSub, 1);
    await localPub.publishAsync('api/x', 'via the API bridge', { qos: 1 });
    assert.equal((await got)[0].topic, 'viaapi/api/x');

    // No password anywhere in what the API answers.
    const q = await b.api('POST', '/bridge/query', { body: {} });
    assert.equal(q.json.total, 2);
    assert.deepEqual(q.json.data.map((x: any) => [x.name, x.source, x.passwordSet]), [['fromfile', 'config', true], ['api1', 'api', true]]);
    for (const path of ['/bridge/query', '/bridge/runtime']) {
      const text = (await b.api('POST', path, { body: {} })).text;
      assert.ok(!text.includes('secret') && !text.includes('"password"'), `${path}: ${text}`);
    }
    const exported = await b.api('GET', '/system/config/export');
    assert.equal(exported.status, 200, exported.text);
    assert.ok(!exported.text.includes('file-secret'), exported.text);
    assert.ok(exported.text.includes('fromfile'));

    // Update keeps the password when none is given, and reconnects.
    const up = await b.api('POST', '/bridge/update', { body: { name: 'api1', url: remote.url, protocolVersion: 5, username: 'bridge', reconnectPeriod: 200, queueLimit: 5, forwards: [{ filter: 'api/#', remotePrefix: 'viaapi2/' }] } });
    assert.equal(up.status, 200, up.text);
    assert.equal(up.json.data.passwordSet, true);
    assert.equal(up.json.data.queueLimit, 5);
    const badUpdate = await b.api('POST', '/bridge/update', { body: { name: 'api1', url: remote.url, forwards: [{ filter: 'api/#', qos: 9 }] } });
    assert.equal(badUpdate.status, 400);
    assert.equal(badUpdate.json.field, 'forwards[0].qos');
    assert.equal((await b.api('POST', '/bridge/query', { body: { name: 'api1' } })).json.data[0].queueLimit, 5, 'a refused update changes nothing');

    // The file's bridge: read-only (start and stop work).
    for (const [path, body] of [['/bridge/update', { name: 'fromfile', url: remote.url, forwards: [{ filter: 'x' }] }], ['/bridge/delete', { name: 'fromfile' }]] as const) {
      const r = await b.api('POST', path, { body });
      assert.equal(r.status, 409, r.text);
      assert.equal(r.json.error, 'BRIDGE_FROM_CONFIG');
    }
    assert.equal((await b.api('POST', '/bridge/stop', { body: { name: 'fromfile' } })).json.data.enabled, false);
    assert.equal((await runtime(b, 'fromfile')).state, 'stopped');
    assert.equal((await b.api('POST', '/bridge/start', { body: { name: 'fromfile' } })).json.data.enabled, true);
    await ready(b, 'fromfile');

    // Delete: gone from the list and the runtime.
    assert.equal((await b.api('POST', '/bridge/delete', { body: { name: 'api1' } })).status, 200);
    assert.equal((await b.api('POST', '/bridge/runtime', { body: { name: 'api1' } })).status, 404);
    assert.equal((await b.api('POST', '/bridge/delete', { body: { name: 'api1' } })).status, 404);
    assert.equal((await b.api('POST', '/bridge/query', { body: {} })).json.total, 1);
    // A viewer reads, does not write.
    assert.equal((await b.api('POST', '/bridge/query', { body: {}, as: 'viewer' })).status, 200);
    assert.equal((await b.api('POST', '/bridge/stop', { body: { name: 'fromfile' }, as: 'viewer' })).status, 403);
  } finally {
    await end(remoteSub, localPub);
    await b.stop();
  }
});
