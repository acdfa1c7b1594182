// The console's message viewers without a browser or workers: the budget (messages and bytes a
// second), what is shown of a payload, and MessageViewers against a fake host and socket: a flood
// of one tick's matches becomes one bounded frame with the rest counted as dropped, a socket that
// does not drain gets nothing more, filters are checked (validity, ACL) before the routing core
// sees them, and a closed socket's handle leaves the routing core and the workers' set.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ViewerBudget, shownPayload } from '../../src/admin/console/viewer-budget.ts';
import { BACKPRESSURE, MESSAGE_RATE, MessageViewers, PAYLOAD_SHOWN, type ViewerHost } from '../../src/admin/console/message-viewers.ts';
import type { BridgeOutput, ViewerSkips } from '../../src/bridges/worker-bridges.ts';
import type { AdminSocket } from '../../src/admin/server.ts';
import { createLogger } from '../../src/log/index.ts';
import { waitFor } from '../helpers/wait.ts';

test('budget: a burst of one second, then the rate; bytes bound as well as messages', () => {
  const b = new ViewerBudget({ messages: 10, bytes: 1000 }, 0);
  let taken = 0;
  for (let i = 0; i < 50; i++) if (b.take(10, 0)) taken++;
  assert.equal(taken, 10, 'the burst');
  assert.equal(b.take(10, 50), false, 'half a message refilled after 50 ms');
  assert.equal(b.take(10, 100), true, 'one after 100 ms');
  const bytes = new ViewerBudget({ messages: 1000, bytes: 1000 }, 0);
  assert.equal(bytes.take(600, 0), true);
  assert.equal(bytes.take(600, 0), false, 'over the bytes');
  assert.equal(bytes.take(400, 0), true, 'what is left');
  assert.equal(bytes.take(600, 600), true, 'refilled with time');
  const capped = new ViewerBudget({ messages: 2, bytes: 100 }, 0);
  assert.equal([capped.take(1, 10_000), capped.take(1, 10_000), capped.take(1, 10_000)].filter(Boolean).length, 2, 'no more than one second saved up');
});

test('shown payload: text, base64 when not UTF-8, cut at the bound without splitting a character', () => {
  assert.deepEqual(shownPayload(Buffer.from('hello'), 8), { payload: 'hello', encoding: 'text', truncated: false });
  assert.deepEqual(shownPayload(Buffer.from([0xff, 0x00]), 8), { payload: '/wA=', encoding: 'base64', truncated: false });
  assert.deepEqual(shownPayload(Buffer.from('abcdefghij'), 4), { payload: 'abcd', encoding: 'text', truncated: true });
  // 'é' is two bytes: cut after its first, it is left out rather than shown broken or as base64.
  assert.deepEqual(shownPayload(Buffer.from('abcé'), 4), { payload: 'abc', encoding: 'text', truncated: true });
});

interface Fake {
  host: ViewerHost;
  filters: Map<number, Set<string>>;
  workerSets: number[][];
  deliver(items: BridgeOutput[], skipped?: ViewerSkips): void;
}

function fakeHost(): Fake {
  let next = 100;
  const filters = new Map<number, Set<string>>();
  const workerSets: number[][] = [];
  let outputs: (items: BridgeOutput[], skipped: ViewerSkips | null) => void = () => {};
  const host: ViewerHost = {
    newHandle: () => next++,
    setTapFilter(handle, filter, on) {
      const set = filters.get(handle) ?? new Set();
      if (on) set.add(filter);
      else set.delete(filter);
      filters.set(handle, set);
    },
    removeTap: (handle) => void filters.delete(handle),
    callAll: (async (op: string, args?: unknown) => {
      assert.equal(op, 'bridges.viewers');
      workerSets.push((args as { handles: number[] }).handles);
      return [];
    }) as ViewerHost['callAll'],
    call: (async () => undefined) as ViewerHost['call'],
    onWorkerStart: () => undefined,
    setViewers: (_handles, fn) => {
      outputs = fn;
    },
    logs: null,
  };
  return { host, filters, workerSets, deliver: (items, skipped) => outputs(items, skipped ?? null) };
}

function fakeSocket(buffered = () => 0): AdminSocket & { frames: { t: string; [k: string]: any }[] } {
  const frames: { t: string; [k: string]: any }[] = [];
  return { frames, send: (text) => frames.push(JSON.parse(text)) > 0, buffered, end: () => undefined };
}

const item = (handle: number, i: number, size = 10): BridgeOutput => ({
  handle, topic: `t/${i}`, payload: new Uint8Array(size).fill(97), qos: 0, retain: false, expiresAt: 0, props: null, plain: true, shares: null, publisherHash: 0, origin: '',
});

const log = createLogger({ level: 'error', name: 'test' });

test('a flood of matches becomes bounded frames; the rest is dropped and counted', async () => {
  const f = fakeHost();
  const viewers = new MessageViewers(f.host, async () => null, log);
  const socket = fakeSocket();
  const v = viewers.opened(socket, { username: 'admin', remoteAddress: '127.0.0.1' });
  viewers.message(v, JSON.stringify({ t: 'subscribe', filter: 'flood/#' }));
  await waitFor(() => socket.frames.find((x) => x.t === 'subscribed'));
  assert.deepEqual(f.workerSets, [[100]], 'the workers learn the handle');
  assert.deepEqual([...f.filters.get(100)!], ['flood/#']);
  // One tick's matches: 10,000 (one big payload among them, cut to PAYLOAD_SHOWN).
  f.deliver([item(100, 0, 5000), ...Array.from({ length: 9999 }, (_, i) => item(100, i + 1))]);
  const frame = await waitFor(() => socket.frames.find((x) => x.t === 'messages'));
  assert.ok(frame.items.length <= MESSAGE_RATE.messages, `at most a second's budget in the frame (${frame.items.length})`);
  assert.equal(frame.matched, 10_000);
  assert.equal(frame.dropped, 10_000 - frame.items.length);
  assert.equal(frame.items[0].size, 5000);
  assert.equal(frame.items[0].payload.length, PAYLOAD_SHOWN);
  assert.equal(frame.items[0].truncated, true);
  assert.equal(socket.frames.filter((x) => x.t === 'messages').length, 1, 'one frame for the tick');
  assert.equal(viewers.counters.dropped, frame.dropped);
  assert.equal(viewers.counters.sent, frame.items.length);
  // Another handle's items (a bridge's) are not this viewer's.
  f.deliver([item(7, 1)]);
  viewers.closed(v);
  await waitFor(() => f.workerSets.length === 2);
  assert.deepEqual(f.workerSets[1], [], 'the workers forget the handle');
  assert.equal(f.filters.has(100), false, 'the routing core forgets its filters');
  assert.equal(viewers.open, 0);
});

test('matches a worker only counted (over its own bound) are matched and dropped for the page', async () => {
  const f = fakeHost();
  const viewers = new MessageViewers(f.host, async () => null, log);
  const socket = fakeSocket();
  const v = viewers.opened(socket, { username: 'admin', remoteAddress: '127.0.0.1' });
  viewers.message(v, JSON.stringify({ t: 'subscribe', filter: 'busy/#' }));
  await waitFor(() => socket.frames.find((x) => x.t === 'subscribed'));
  f.deliver([item(100, 1), item(100, 2)], [[100, 5000], [7, 3]]);
  const frame = await waitFor(() => socket.frames.find((x) => x.t === 'messages'));
  assert.deepEqual([frame.items.length, frame.matched, frame.dropped], [2, 5002, 5000]);
  assert.equal(viewers.counters.dropped, 5000, 'another handle\'s count is not this viewer\'s');
  viewers.close();
});

test('a socket that does not drain gets nothing more: dropped and counted', async () => {
  const f = fakeHost();
  const viewers = new MessageViewers(f.host, async () => null, log);
  let buffered = 0;
  const socket = fakeSocket(() => buffered);
  const v = viewers.opened(socket, { username: 'admin', remoteAddress: '127.0.0.1' });
  viewers.message(v, JSON.stringify({ t: 'subscribe', filter: 'a' }));
  await waitFor(() => socket.frames.find((x) => x.t === 'subscribed'));
  buffered = BACKPRESSURE + 1;
  f.deliver([item(100, 1), item(100, 2)]);
  await waitFor(() => viewers.counters.dropped === 2, { message: 'both dropped at the flush' });
  assert.equal(socket.frames.filter((x) => x.t === 'messages').length, 0);
  buffered = 0;
  const frame = await waitFor(() => socket.frames.find((x) => x.t === 'messages'));
  assert.deepEqual([frame.items.length, frame.matched, frame.dropped], [0, 2, 2], 'the counts reach the page once it drains');
  viewers.close();
});

test('filters: invalid, shared and refused ones never reach the routing core', async () => {
  const f = fakeHost();
  const viewers = new MessageViewers(f.host, async (who, filter) => (filter.startsWith('secret/') ? `the ACL does not let ${who.username} subscribe to ${filter}` : null), log);
  const socket = fakeSocket();
  const v = viewers.opened(socket, { username: 'ops', remoteAddress: '127.0.0.1' });
  for (const filter of ['a/#/b', '$share/g/a', 'secret/x', '']) viewers.message(v, JSON.stringify({ t: 'subscribe', filter }));
  viewers.message(v, JSON.stringify({ t: 'subscribe' }));
  viewers.message(v, '[1');
  await waitFor(() => socket.frames.length === 6);
  const refused = socket.frames.filter((x) => x.t === 'refused').map((x) => x.message);
  assert.equal(refused.length, 5);
  for (const expected of [/'#' must be the last level/, /shared subscriptions/, /the ACL does not let ops subscribe to secret\/x/, /must not be empty/, /filter: a topic filter/]) {
    assert.ok(refused.some((m) => expected.test(m)), `refused: ${expected}`);
  }
  assert.equal(socket.frames.filter((x) => x.t === 'error').length, 1);
  assert.equal(f.filters.size, 0);
  assert.deepEqual(f.workerSets, []);
  assert.deepEqual([viewers.counters.refusedAcl, viewers.counters.refusedInvalid], [1, 4]);
  viewers.close();
});
