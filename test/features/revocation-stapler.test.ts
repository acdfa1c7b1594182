// The OCSP stapler's schedule (src/features/revocation/stapler.ts) on mocked timers, with the
// responder played by the test: the response stapled as soon as it comes, fetched again
// refreshBefore before its nextUpdate, failures tried again after 5 s doubling, the last good
// response stapled until its nextUpdate and then dropped, stapled again once the responder
// answers; a SIGHUP reload fetching at once for a new certificate and not for the same one.
// needs: ocsp-responder
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';

import { Stapler } from '../../src/features/revocation/stapler.ts';
import { OcspError, type OcspAnswer } from '../../src/features/revocation/ocsp.ts';
import { completeEndpoint } from '../../src/broker/endpoint-config.ts';
import type { OcspStaple } from '../../src/listener/listeners.ts';
import { createLogger } from '../../src/log/index.ts';
import { TestPki } from '../helpers/ocsp-pki.ts';

const T0 = 1_800_000_000_000;

/** Lets the stapler's promise continuations run (the answers the test gives resolve at once). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

test('stapled at once, refreshed before nextUpdate, retried with backoff, kept until it expires, then dropped; a reload with a new certificate fetches at once', async () => {
  // The certificates are made before the clock is mocked (openssl runs for real).
  const pki = await TestPki.create();
  const server = pki.issue('server', 'stapled', { server: true });
  const other = pki.issue('other', 'stapled-2', { server: true });
  copyFileSync(server.cert, pki.f('live.crt'));
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: T0 });
  try {
    const asks: { resolve(a: OcspAnswer): void; reject(e: Error): void; subject: string }[] = [];
    const published: Record<string, OcspStaple>[] = [];
    const stapler = new Stapler({
      log: createLogger({ level: 'error', name: 'stapler-test' }),
      publish: (s) => published.push(s),
      now: () => Date.now(),
      ask: (asked) => new Promise((resolve, reject) => asks.push({ resolve, reject, subject: asked.leaf.subject })),
    });
    const endpoint = completeEndpoint({
      id: 'tls', port: 8883,
      sslConfig: { cert: pki.f('live.crt'), key: server.key, ca: pki.ca, ocspStapling: { enabled: true, refreshBefore: 60 } },
    }, { messageMaxSize: 1 << 20 }, 'api');
    const answer = (status: OcspAnswer['status'], validFor: number): OcspAnswer => ({
      status, thisUpdate: Date.now(), nextUpdate: Date.now() + validFor, der: Buffer.from(`response at ${Date.now()}`),
    });
    const status = () => stapler.status()[0];

    stapler.configure([endpoint]);
    assert.equal(asks.length, 1, 'asked at once');
    assert.equal(asks[0].subject, 'CN=stapled');
    assert.equal(status().state, 'fetching');
    asks[0].resolve(answer('good', 600_000));
    await settle();
    assert.equal(Buffer.from(published.at(-1)!.tls.ocsp).toString(), `response at ${T0}`, 'stapled as soon as it came');
    assert.deepEqual([status().state, status().stapled, status().certStatus], ['stapled', true, 'good']);
    // refreshBefore (60 s) before its nextUpdate (600 s).
    assert.equal(status().nextFetch, new Date(T0 + 540_000).toISOString());

    mock.timers.tick(539_000);
    assert.equal(asks.length, 1, 'not before');
    mock.timers.tick(1_000);
    assert.equal(asks.length, 2, 'refreshed');
    const publishedBefore = published.length;
    asks[1].reject(new OcspError('unreachable', 'ECONNREFUSED'));
    await settle();
    assert.deepEqual([status().state, status().stapled, status().lastError], ['failing', true, 'ECONNREFUSED']);
    assert.equal(published.length, publishedBefore, 'the last good response is still stapled');
    assert.equal(stapler.counts.requests.unreachable, 1);

    // Retries after 5 s, 10 s, 20 s, 40 s ... while the response is still valid.
    const retries: number[] = [];
    while (Date.now() < T0 + 600_000) {
      const at = Date.parse(status().nextFetch!);
      retries.push(at - Date.now());
      mock.timers.tick(at - Date.now());
      await settle();
      if (Date.now() >= T0 + 600_000) break;
      asks.at(-1)!.reject(new OcspError('timeout', 'late'));
      await settle();
    }
    assert.deepEqual(retries, [5_000, 10_000, 20_000, 25_000], 'doubling, the last cut at the nextUpdate');
    // Expired with nothing newer: no staple from then on.
    assert.deepEqual(published.at(-1), {});
    asks.at(-1)!.reject(new OcspError('unreachable', 'still down'));
    await settle();
    assert.deepEqual([status().state, status().stapled], ['failing', false]);

    // The responder answers again: stapled again, and the backoff starts over.
    mock.timers.tick(Date.parse(status().nextFetch!) - Date.now());
    asks.at(-1)!.resolve(answer('good', 3_600_000));
    await settle();
    assert.deepEqual([status().state, status().stapled], ['stapled', true]);
    assert.ok(published.at(-1)!.tls);
    // Half its validity at most before the nextUpdate: refreshBefore is 60 s here.
    assert.equal(Date.parse(status().nextFetch!), Date.parse(status().nextUpdate!) - 60_000);

    // SIGHUP with the same certificate: nothing fetched. With a new one: its old response goes,
    // and the new certificate's is asked for at once.
    const asked = asks.length;
    stapler.reload();
    assert.equal(asks.length, asked);
    copyFileSync(other.cert, pki.f('live.crt'));
    stapler.reload();
    assert.deepEqual(published.at(-1), {});
    assert.equal(asks.length, asked + 1);
    assert.equal(asks.at(-1)!.subject, 'CN=stapled-2');
    asks.at(-1)!.resolve(answer('good', 600_000));
    await settle();
    assert.deepEqual(Buffer.from(published.at(-1)!.tls.leaf), new X509Certificate(readFileSync(other.cert)).raw, 'the staple names the certificate it is about');

    // An endpoint that stops stapling leaves the set.
    stapler.configure([]);
    assert.deepEqual(published.at(-1), {});
    assert.deepEqual(stapler.status(), []);
    stapler.close();
  } finally {
    mock.timers.reset();
  }
});
