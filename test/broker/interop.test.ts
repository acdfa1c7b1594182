// Interoperability with Eclipse Mosquitto's command line clients (Debian's mosquitto-clients):
// mosquitto_sub and mosquitto_pub against the broker, MQTT 3.1.1 and 5.0, QoS 0-2, retained,
// and messages crossing between them and mqtt.js.
// needs: broker
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';

import { startBroker, connect, nextMessages, end, type TestBroker } from '../helpers/broker.ts';

let broker: TestBroker;
before(async () => {
  // System packages are installed before the tests (make test runs scripts/ensure-system-packages.sh),
  // never from inside a test.
  try {
    execFileSync('which', ['mosquitto_sub', 'mosquitto_pub'], { stdio: 'ignore' });
  } catch {
    throw new Error('mosquitto_sub/mosquitto_pub not found: install Debian\'s mosquitto-clients (make system-packages runs scripts/ensure-system-packages.sh)');
  }
  broker = await startBroker();
});
after(async () => { await broker.stop(); });

const VERSIONS = [['mqttv311', 4], ['mqttv5', 5]] as const;

interface Received { topic: string; payload: string; qos: number; retain: boolean }

/** mosquitto_sub until `count` messages: resolves `subscribed` at SUBACK, `done` with what it
 * received (QoS and RETAIN from its debug output). */
function mosquittoSub(args: string[], count: number): { subscribed: Promise<void>; done: Promise<Received[]> } {
  // stdbuf: line-buffered stdout, so the SUBACK line arrives when it is printed, not at exit.
  const p = spawn('stdbuf', ['-oL', 'mosquitto_sub', '-h', '127.0.0.1', '-p', String(broker.ports.tcp), '-C', String(count), '-W', '10', '-v', '-d', ...args]);
  let out = '';
  let err = '';
  let onSubscribed: () => void = () => {};
  const subscribed = new Promise<void>((resolve) => { onSubscribed = resolve; });
  p.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (/received SUBACK/.test(out)) onSubscribed();
  });
  p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const done = new Promise<Received[]>((resolve, reject) => {
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`mosquitto_sub exited ${code}: ${err}\n${out}`));
      // PUBLISH debug lines and message lines ("topic payload") each come in order, but a QoS 2
      // message is printed at PUBREL, after later PUBLISH lines: zip the two sequences.
      const lines = out.split('\n').filter((l) => l !== '');
      const flags = lines.map((l) => /received PUBLISH \(d\d, q(\d), r(\d), m\d+, '([^']*)'/.exec(l)).filter((m) => m !== null);
      const texts = lines.filter((l) => !l.startsWith('Client ') && !l.startsWith('Subscribed '));
      const got: Received[] = flags.map((m, i) => ({ topic: m[3], payload: texts[i].slice(m[3].length + 1), qos: Number(m[1]), retain: m[2] === '1' }));
      for (const [i, g] of got.entries()) assert.ok(texts[i].startsWith(`${g.topic} `), `message line ${texts[i]}`);
      resolve(got);
    });
  });
  return { subscribed, done };
}

function mosquittoPub(args: string[]): void {
  execFileSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(broker.ports.tcp), ...args], { stdio: 'pipe', timeout: 10_000 });
}

for (const [V, protocolVersion] of VERSIONS) {
  for (const qos of [0, 1, 2] as const) {
    test(`${V} QoS ${qos}: mosquitto_sub receives from mqtt.js, in order, at the QoS asked for`, async () => {
      const sub = mosquittoSub(['-V', V, '-q', String(qos), '-t', `io/${V}/${qos}/#`, '-i', `mosq-sub-${V}-${qos}`], 3);
      await sub.subscribed;
      const pub = await connect(broker.url, { protocolVersion, clientId: `js-pub-${V}-${qos}` });
      for (const p of ['one', 'two', 'three four']) await pub.publishAsync(`io/${V}/${qos}/x`, p, { qos: 2 });
      const got = await sub.done;
      assert.deepEqual(got.map((g) => g.payload), ['one', 'two', 'three four']);
      assert.ok(got.every((g) => g.topic === `io/${V}/${qos}/x` && g.qos === qos && !g.retain), JSON.stringify(got));
      await end(pub);
    });

    test(`${V} QoS ${qos}: mqtt.js receives from mosquitto_pub`, async () => {
      const sub = await connect(broker.url, { protocolVersion, clientId: `js-sub-${V}-${qos}` });
      await sub.subscribeAsync(`io2/${V}/${qos}`, { qos: 2 });
      const w = nextMessages(sub, 2);
      mosquittoPub(['-V', V, '-q', String(qos), '-t', `io2/${V}/${qos}`, '-m', 'from mosquitto']);
      mosquittoPub(['-V', V, '-q', String(qos), '-t', `io2/${V}/${qos}`, '-n']); // empty payload
      // Two publisher connections (possibly on two workers): no order between them [MQTT-4.6.0-5 is per connection].
      const got = (await w).map((g) => [g.payload, g.packet.qos]).sort();
      assert.deepEqual(got, [['', qos], ['from mosquitto', qos]]);
      await end(sub);
    });
  }

  test(`${V}: a retained message from mosquitto_pub -r reaches a later mosquitto_sub with RETAIN set, and -r -n clears it`, async () => {
    mosquittoPub(['-V', V, '-q', '1', '-r', '-t', `io/ret/${V}`, '-m', 'kept']);
    const sub = mosquittoSub(['-V', V, '-q', '1', '-t', `io/ret/${V}`], 1);
    const [m] = await sub.done;
    assert.deepEqual(m, { topic: `io/ret/${V}`, payload: 'kept', qos: 1, retain: true });
    mosquittoPub(['-V', V, '-q', '1', '-r', '-n', '-t', `io/ret/${V}`]);
    // Cleared: a new subscriber sees only the next live message.
    const after = mosquittoSub(['-V', V, '-q', '1', '-t', `io/ret/${V}`], 1);
    await after.subscribed;
    mosquittoPub(['-V', V, '-q', '1', '-t', `io/ret/${V}`, '-m', 'live']);
    assert.deepEqual((await after.done).map((g) => [g.payload, g.retain]), [['live', false]]);
  });

  test(`${V}: mosquitto_sub on # receives what mqtt.js publishes, mqtt.js on # receives what mosquitto_pub publishes`, async () => {
    const js = await connect(broker.url, { protocolVersion, clientId: `js-all-${V}` });
    await js.subscribeAsync('wild/#', { qos: 1 });
    const sub = mosquittoSub(['-V', V, '-q', '1', '-t', '#', '-i', `mosq-all-${V}`], 1);
    await sub.subscribed;
    const fromMosq = nextMessages(js, 1);
    await js.publishAsync(`wild/${V}/js`, 'from mqtt.js', { qos: 1 });
    const [m] = await sub.done;
    assert.deepEqual([m.topic, m.payload], [`wild/${V}/js`, 'from mqtt.js']);
    // mqtt.js also hears its own message first (no No Local); then the one from mosquitto_pub.
    const mine = await fromMosq;
    assert.equal(mine[0].payload, 'from mqtt.js');
    const w = nextMessages(js, 1);
    mosquittoPub(['-V', V, '-q', '1', '-t', `wild/${V}/mosq`, '-m', 'from mosquitto_pub']);
    const [n] = await w;
    assert.deepEqual([n.topic, n.payload], [`wild/${V}/mosq`, 'from mosquitto_pub']);
    await end(js);
  });
}

test('mqttv5: mosquitto_pub user properties and content type reach an mqtt.js v5 subscriber', async () => {
  const sub = await connect(broker.url, { protocolVersion: 5, clientId: 'js-props' });
  await sub.subscribeAsync('io/props', { qos: 1 });
  const w = nextMessages(sub, 1);
  mosquittoPub(['-V', 'mqttv5', '-q', '1', '-t', 'io/props', '-m', '{}', '-D', 'publish', 'user-property', 'k', 'v', '-D', 'publish', 'content-type', 'application/json']);
  const [m] = await w;
  assert.deepEqual({ ...m.packet.properties?.userProperties }, { k: 'v' });
  assert.equal(m.packet.properties?.contentType, 'application/json');
  await end(sub);
});
