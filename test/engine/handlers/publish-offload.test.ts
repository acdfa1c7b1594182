// handle_publish with schema checks decoded off the thread (PayloadCheck answering
// PAYLOAD_OFFLOAD, as the schema registry's CheckStage does for large payloads), on the in-memory
// engine with a check whose verdicts the test releases: nothing is routed or acknowledged before
// the verdict; then acknowledgements and deliveries keep the client's order across offloaded and
// inline messages of every QoS, with and without a store; a v5 refusal is 0x99 and ends a QoS 2
// exchange; MQTT 3.1.1 acknowledges and drops.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { PAYLOAD_OFFLOAD, PAYLOAD_PASS, PAYLOAD_REFUSED, type PayloadCheck } from '../../../src/engine/handlers/client.ts';
import { MemoryStore } from '../../../src/store/memory/memory-store.ts';
import { startEngine, type Engine } from '../../helpers/engine.ts';
import { connected, reasonOf } from './common.ts';

/** Topics under big/ are offloaded; a payload starting with "bad" does not decode. */
class HeldCheck implements PayloadCheck {
  active = true;
  private readonly held: (() => void)[] = [];
  offloaded = 0;

  verdict(topic: string, payload: Uint8Array): number {
    if (topic.startsWith('big/')) return PAYLOAD_OFFLOAD;
    return Buffer.from(payload).toString().startsWith('bad') ? PAYLOAD_REFUSED : PAYLOAD_PASS;
  }

  offload<T>(payload: Uint8Array, _version: number, done: (owner: T, refused: boolean) => void, owner: T): void {
    this.offloaded++;
    const refused = Buffer.from(payload).toString().startsWith('bad');
    this.held.push(() => done(owner, refused));
  }

  /** Answers every held verdict, in order (as the stage does). */
  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }
}

const engines: Engine[] = [];
async function engineWith(check: PayloadCheck, withStore = false): Promise<Engine> {
  let store: MemoryStore | undefined;
  if (withStore) {
    store = new MemoryStore();
    await store.open();
  }
  const e = startEngine({ payloadCheck: check, store });
  engines.push(e);
  return e;
}
test.afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});

const settled = () => new Promise((r) => setTimeout(r, 20));

for (const store of [false, true]) {
  test(`v5: offloaded and inline PUBLISHes of QoS 0, 1 and 2 keep their order; refusals are 0x99 (${store ? 'with a store' : 'no store'})`, async () => {
    const check = new HeldCheck();
    const e = await engineWith(check, store);
    const sub = await connected(e, 's');
    await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '#', qos: 2 }] });
    const pub = await connected(e, 'p');
    const sent = [
      { topic: 'big/1', payload: 'good-1', qos: 1, messageId: 1 },
      { topic: 'small/2', payload: 'good-2', qos: 1, messageId: 2 },
      { topic: 'big/3', payload: 'bad-3', qos: 2, messageId: 3 },
      { topic: 'small/4', payload: 'bad-4', qos: 1, messageId: 4 },
      { topic: 'big/5', payload: 'good-5', qos: 0 },
      { topic: 'small/6', payload: 'good-6', qos: 0 },
      { topic: 'big/7', payload: 'good-7', qos: 2, messageId: 7 },
    ];
    await pub.send(...sent.map((m) => ({ cmd: 'publish', ...m, payload: Buffer.from(m.payload) })));
    await settled();
    assert.equal(check.offloaded, 4);
    assert.deepEqual(pub.received.filter((p) => p.cmd === 'puback' || p.cmd === 'pubrec'), [], 'nothing acknowledged before the first verdict');
    assert.deepEqual(sub.packets('publish'), [], 'nothing delivered before the first verdict');
    check.release();
    await e.settle();
    await settled();
    const acks = pub.received.filter((p) => p.cmd === 'puback' || p.cmd === 'pubrec').map((p) => [p.cmd, (p as { messageId: number }).messageId, reasonOf(p) ?? 0]);
    assert.deepEqual(acks, [['puback', 1, 0], ['puback', 2, 0], ['pubrec', 3, 0x99], ['puback', 4, 0x99], ['pubrec', 7, 0]]);
    assert.deepEqual(sub.packets('publish').map((p) => p.payload.toString()), ['good-1', 'good-2', 'good-5', 'good-6', 'good-7']);
    // The refused QoS 2 exchange is over: the same packet id is a new message.
    await pub.send({ cmd: 'publish', topic: 'small/3', payload: Buffer.from('good-3'), qos: 2, messageId: 3 });
    await e.settle();
    assert.equal(sub.packets('publish').at(-1)!.payload.toString(), 'good-3');
  });
}

test('3.1.1: an offloaded payload that does not decode is acknowledged and dropped; QoS 2 completes with PUBREL', async () => {
  const check = new HeldCheck();
  const e = await engineWith(check);
  const sub = await connected(e, 's');
  await sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: '#', qos: 2 }] });
  const pub = await connected(e, 'p', { protocolVersion: 4 });
  await pub.send(
    { cmd: 'publish', topic: 'big/a', payload: Buffer.from('bad-a'), qos: 2, messageId: 5 },
    { cmd: 'publish', topic: 'big/b', payload: Buffer.from('good-b'), qos: 1, messageId: 6 },
  );
  check.release();
  await e.settle();
  await settled();
  assert.deepEqual(pub.received.filter((p) => p.cmd === 'puback' || p.cmd === 'pubrec').map((p) => [p.cmd, (p as { messageId: number }).messageId]), [['pubrec', 5], ['puback', 6]]);
  assert.deepEqual(sub.packets('publish').map((p) => p.payload.toString()), ['good-b']);
  await pub.send({ cmd: 'pubrel', messageId: 5 });
  assert.equal(pub.packets('pubcomp').length, 1);
});
