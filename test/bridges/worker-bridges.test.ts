// WorkerBridges, a worker's half of the bridges, the cluster's node handles and the console's
// message viewers: what it posts to the main thread per tick. A viewer's matches are copied up to
// VIEWER_COPIES_PER_SECOND a second and only counted beyond, so watching a busy filter costs the
// worker a bounded number of copies; a bridge's matches are never bounded here (its own queue is).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { VIEWER_COPIES_PER_SECOND, WorkerBridges, type BridgeOutput, type ViewerSkips } from '../../src/bridges/worker-bridges.ts';
import type { Message } from '../../src/broker/message.ts';
import { waitFor } from '../helpers/wait.ts';

interface Post {
  items: BridgeOutput[];
  skipped: ViewerSkips | null;
}

function bridges(): { wb: WorkerBridges; posts: Post[] } {
  const posts: Post[] = [];
  const wb = new WorkerBridges({ postOutputs: (items, _transfer, _ticket, skipped) => void posts.push({ items, skipped }) });
  return { wb, posts };
}

const message = (i: number): Message => ({
  topic: `busy/${i}`, topicBytes: Buffer.from(`busy/${i}`), payload: Buffer.from(`m${i}`), qos: 0, retain: false, props: null, expiresAt: 0, receivedAt: 0, seq: i,
});

const PUBLISHER = 1;

test('a viewer\'s matches are copied up to its bound in a second and only counted beyond; a bridge\'s are not bounded', async () => {
  const { wb, posts } = bridges();
  const VIEWER = 50;
  const BRIDGE = 60;
  wb.set([BRIDGE]);
  wb.setViewers([VIEWER]);
  const N = VIEWER_COPIES_PER_SECOND * 5;
  for (let i = 0; i < N; i++) {
    wb.matched(VIEWER, message(i), PUBLISHER);
    wb.matched(BRIDGE, message(i), PUBLISHER);
  }
  await waitFor(() => posts.length > 0, { message: 'the tick\'s post' });
  assert.equal(posts.length, 1, 'one post for the tick');
  const [post] = posts;
  const copied = (h: number) => post.items.filter((x) => x.handle === h).length;
  assert.equal(copied(VIEWER), VIEWER_COPIES_PER_SECOND);
  assert.equal(copied(BRIDGE), N);
  assert.deepEqual(post.skipped, [[VIEWER, N - VIEWER_COPIES_PER_SECOND]]);
  // The viewer's copies are the first matches, in order.
  assert.deepEqual(post.items.filter((x) => x.handle === VIEWER).slice(0, 3).map((x) => x.topic), ['busy/0', 'busy/1', 'busy/2']);

  // Still within the same second: a tick with only skipped matches is posted too (the counts).
  wb.matched(VIEWER, message(N), PUBLISHER);
  await waitFor(() => posts.length === 2);
  assert.deepEqual([posts[1].items.length, posts[1].skipped], [0, [[VIEWER, 1]]]);

  // A handle no longer a viewer is a bridge's again: nothing bounds or counts it.
  wb.setViewers([]);
  wb.set([BRIDGE, VIEWER]);
  for (let i = 0; i < 3; i++) wb.matched(VIEWER, message(i), PUBLISHER);
  await waitFor(() => posts.length === 3);
  assert.deepEqual([posts[2].items.length, posts[2].skipped], [3, null]);
});

test('without viewers a post carries no counts', async () => {
  const { wb, posts } = bridges();
  wb.set([9]);
  wb.matched(9, message(1), PUBLISHER);
  await waitFor(() => posts.length === 1);
  assert.equal(posts[0].skipped, null);
});
