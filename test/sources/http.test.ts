// The http source against a real node:http receiver: requests with merged headers and the path
// appended, statuses mapped to SourceError (5xx and 429 transient, 4xx not), the pool bound, the
// deadline, and check/health from TCP connects (refused, dns).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { createHttpSource, joinUrl, parseHttpConfig } from '../../src/sources/http.ts';
import { SourceConfigError, SourceError, type HttpSource } from '../../src/sources/types.ts';
import { waitFor } from '../helpers/wait.ts';
import { closedPort, quietLog } from './helpers.ts';

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function receiver(answer: (req: Received, res: http.ServerResponse) => void) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() };
      received.push(r);
      answer(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function withSource<T>(raw: Record<string, unknown>, body: (s: HttpSource) => Promise<T>): Promise<T> {
  const s = createHttpSource('test-http', parseHttpConfig(raw), quietLog());
  try {
    return await body(s);
  } finally {
    await s.close();
  }
}

test('http config: defaults, and mistakes name their field', () => {
  assert.deepEqual(parseHttpConfig({ url: 'https://hooks.example/in' }), { url: 'https://hooks.example/in', method: 'POST', headers: {}, timeout: 5000, poolSize: 8, tls: null });
  const cases: [unknown, string][] = [
    [{}, 'config.url'],
    [{ url: 'ftp://x/' }, 'config.url'],
    [{ url: 'http://x/', method: 'TRACE' }, 'config.method'],
    [{ url: 'http://x/', headers: { 'x-a': 1 } }, 'config.headers.x-a'],
    [{ url: 'http://x/', headers: { 'bad header': 'v' } }, 'config.headers.bad header'],
    [{ url: 'http://x/', timeout: 0 }, 'config.timeout'],
    [{ url: 'http://x/', poolSize: 0 }, 'config.poolSize'],
  ];
  for (const [raw, field] of cases) {
    assert.throws(() => parseHttpConfig(raw), (err: unknown) => err instanceof SourceConfigError && err.field === field, `${JSON.stringify(raw)} -> ${field}`);
  }
});

test('http: the path is joined with one slash and its query merged with the url\'s', () => {
  const cases: [string, string, string][] = [
    ['http://h/', '/a', 'http://h/a'],
    ['http://h/hooks/', 'a/b', 'http://h/hooks/a/b'],
    ['http://h/hooks?token=1', '/dev?x=2', 'http://h/hooks/dev?token=1&x=2'],
    ['http://h/hooks', '', 'http://h/hooks'],
  ];
  for (const [base, path, want] of cases) assert.equal(joinUrl(new URL(base), path).href, want, `${base} + ${path}`);
});

test('http: request appends the path, merges headers (the request wins) and sends the body', async () => {
  const r = await receiver((_req, res) => res.writeHead(201, { 'x-reply': 'yes' }).end('created'));
  try {
    await withSource({ url: `${r.url}/hooks`, headers: { Authorization: 'Bearer t', 'X-Source': 'spindle' } }, async (s) => {
      const res = await s.request({ path: '/dev/c1?x=1', headers: { 'x-source': 'rule', 'content-type': 'application/json' }, body: '{"t":31}' });
      assert.equal(res.status, 201);
      assert.equal(res.body, 'created');
      assert.equal(res.headers['x-reply'], 'yes');
      const [got] = r.received;
      assert.equal(got.method, 'POST');
      assert.equal(got.url, '/hooks/dev/c1?x=1');
      assert.equal(got.headers.authorization, 'Bearer t');
      assert.equal(got.headers['x-source'], 'rule');
      assert.equal(got.body, '{"t":31}');
      assert.equal(s.health().state, 'up');
    });
  } finally {
    await r.close();
  }
});

test('http: 5xx and 429 are transient SourceErrors, 4xx are not; the source stays up', async () => {
  const statuses = [503, 429, 404, 400];
  const r = await receiver((req, res) => res.writeHead(Number(req.url.slice(1))).end('no'));
  try {
    await withSource({ url: r.url }, async (s) => {
      for (const status of statuses) {
        await assert.rejects(s.request({ path: `/${status}` }), (err: unknown) =>
          err instanceof SourceError && err.kind === 'http' && err.transient === (status >= 500 || status === 429) && err.message.includes(String(status)));
      }
      assert.equal(s.health().state, 'up');
    });
  } finally {
    await r.close();
  }
});

test('http: at most poolSize requests in flight; a slow receiver hits the deadline', async () => {
  let open = 0;
  let most = 0;
  const r = await receiver((req, res) => {
    open++;
    most = Math.max(most, open);
    const delay = req.url === '/slow' ? 2000 : 30;
    setTimeout(() => {
      open--;
      res.end('ok');
    }, delay);
  });
  try {
    await withSource({ url: r.url, poolSize: 3, timeout: 400 }, async (s) => {
      await Promise.all(Array.from({ length: 12 }, () => s.request({ body: 'x' })));
      assert.equal(most, 3);
      const started = Date.now();
      await assert.rejects(s.request({ path: '/slow' }), (err: unknown) => err instanceof SourceError && err.kind === 'timeout' && err.transient);
      assert.ok(Date.now() - started < 1500);
    });
  } finally {
    await r.close();
  }
});

test('http: a closed port is refused (check, request, health down); the probe finds it back', async () => {
  const port = await closedPort();
  await withSource({ url: `http://127.0.0.1:${port}/in` }, async (s) => {
    const check = await s.check(2000);
    assert.equal(check.ok, false);
    assert.equal(check.failure, 'refused');
    await assert.rejects(s.request({ body: 'x' }), (err: unknown) => err instanceof SourceError && err.kind === 'refused' && err.transient);
    assert.equal(s.health().state, 'down');
    const server = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      await waitFor(() => s.health().state === 'up', { timeout: 8000, message: 'the probe reaches the receiver' });
      assert.equal(s.health().reconnects, 1);
      assert.equal((await s.request({ body: 'x' })).status, 200);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

test('http: check of a name that does not resolve is dns', async () => {
  await withSource({ url: 'http://nonexistent.invalid/hook' }, async (s) => {
    const check = await s.check(3000);
    assert.equal(check.ok, false);
    assert.equal(check.failure, 'dns', check.message);
  });
});
