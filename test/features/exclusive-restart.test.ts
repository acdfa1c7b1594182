// Exclusive subscriptions across a restart on the LOCAL store: a persistent session's place is
// held again by its session restored from the store (another client refused 0x97, the holder
// receives through it when it reconnects, and frees it by unsubscribing); a clean session's place
// is not kept.
// needs: broker
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { MqttClient } from 'mqtt';

import { connect, end, nextMessages, persistent, startBroker, type TestBroker } from '../helpers/broker.ts';

async function granted(c: MqttClient, filter: string): Promise<number> {
  try {
    return (await c.subscribeAsync(filter, { qos: 1 }))[0].qos;
  } catch (err) {
    const code = (err as { packet?: { granted?: number[] } }).packet?.granted?.[0];
    if (code === undefined) throw err;
    return code;
  }
}

test('a persistent session keeps its place across a restart; a clean session does not', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'spindle-exclusive-'));
  const options = { dataDir, workers: 2, store: { storeType: 'LOCAL' } };
  let b: TestBroker | null = await startBroker(options);
  try {
    const keeper = await connect(b.url, persistent('keeper'));
    assert.equal(await granted(keeper, '$exclusive/keep/#'), 1);
    const cleaner = await connect(b.url, { protocolVersion: 5, clientId: 'cleaner' });
    assert.equal(await granted(cleaner, '$exclusive/clean/#'), 1);
    await end(keeper);
    cleaner.end(true);
    await b.stop();
    b = null;

    b = await startBroker(options);
    const other = await connect(b.url, { protocolVersion: 5, clientId: 'other' });
    assert.equal(await granted(other, '$exclusive/keep/#'), 0x97, 'the restored session holds the place');
    assert.equal(await granted(other, '$exclusive/clean/#'), 1, 'the clean session\'s place is free');
    const back = await connect(b.url, persistent('keeper'));
    const got = nextMessages(back, 1);
    await other.publishAsync('keep/x', 'kept', { qos: 1 });
    assert.equal((await got)[0].payload, 'kept');
    assert.equal(await granted(back, '$exclusive/keep/#'), 1, 'the holder again');
    await back.unsubscribeAsync('$exclusive/keep/#');
    assert.equal(await granted(other, '$exclusive/keep/#'), 1, 'freed by its holder');
    await end(back, other);
  } finally {
    await b?.stop();
  }
});
