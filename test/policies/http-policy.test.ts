// The http policy (auth and ACL) against a real node:http endpoint: the config and its mistakes,
// the answers (JSON result, is_superuser, 204, statuses and bodies that are failures), timeouts and
// unreachable endpoints (ignore with error, never a throw; the dry run refuses naming config.url),
// GET with URL-encoded query templates, form bodies, the in-flight bound, keep-alive, and the
// rate-limited warning.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

import { compileHttpAclPolicy, compileHttpAuthPolicy, DRY_RUN_VALUE, parseHttpPolicyConfig } from '../../src/policies/http.ts';
import { MAX_IN_FLIGHT, MAX_RESPONSE_BYTES } from '../../src/policies/http-exchange.ts';
import { PolicyConfigError, type AuthQuery, type CompiledAclPolicy, type CompiledAuthPolicy } from '../../src/policies/types.ts';
import { waitFor } from '../helpers/wait.ts';
import { CERT_KEY_PEM, CERT_PEM, closedPort, context, endpoint, json, keptLog, record, type Endpoint } from './helpers.ts';

const ALICE: AuthQuery = { clientid: 'c1', username: 'alice', password: Buffer.from('s3cret'), peerhost: '10.0.0.7' };

function auth(config: Record<string, unknown>, ctx = context()): CompiledAuthPolicy {
  return compileHttpAuthPolicy(record('http', parseHttpPolicyConfig(config, 'auth')), ctx);
}

function acl(config: Record<string, unknown>): CompiledAclPolicy {
  return compileHttpAclPolicy(record('http', parseHttpPolicyConfig(config, 'acl')), context());
}

async function using<P extends { close(): Promise<void> }, T>(e: Endpoint | null, p: P, body: (p: P) => Promise<T>): Promise<T> {
  try {
    return await body(p);
  } finally {
    await p.close();
    await e?.close();
  }
}

test('http config: the defaults written out, the same when parsed again', () => {
  const a = parseHttpPolicyConfig({ url: 'http://auth.local/check' }, 'auth');
  assert.deepEqual(a, {
    url: 'http://auth.local/check',
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: { username: '${username}', password: '${password}', clientid: '${clientid}', peerhost: '${peerhost}' },
    timeout: 5000,
    tls: null,
  });
  assert.deepEqual(parseHttpPolicyConfig(a, 'auth'), a);
  const b = parseHttpPolicyConfig({ url: 'https://acl.local/?t=${topic}', method: 'get', headers: { 'X-Token': 'abc' }, tls: { rejectUnauthorized: false } }, 'acl');
  assert.deepEqual(b, {
    url: 'https://acl.local/?t=${topic}',
    method: 'GET',
    headers: { 'x-token': 'abc' },
    body: { username: '${username}', clientid: '${clientid}', peerhost: '${peerhost}', topic: '${topic}', action: '${action}' },
    timeout: 5000,
    tls: { rejectUnauthorized: false },
  });
  assert.deepEqual(parseHttpPolicyConfig(b, 'acl'), b);
});

test('http config: each mistake names its field', () => {
  const cases: [unknown, 'auth' | 'acl', string][] = [
    [null, 'auth', 'config'],
    [{}, 'auth', 'config.url'],
    [{ url: 'ftp://x/' }, 'auth', 'config.url'],
    [{ url: 'not a url' }, 'auth', 'config.url'],
    [{ url: 'http://x/${username}/check' }, 'auth', 'config.url'],
    [{ url: 'http://${username}.x/check' }, 'auth', 'config.url'],
    [{ url: 'http://x/check?t=${topic}' }, 'auth', 'config.url'],
    [{ url: 'http://x/', method: 'PUT' }, 'auth', 'config.method'],
    [{ url: 'http://x/', headers: ['a'] }, 'auth', 'config.headers'],
    [{ url: 'http://x/', headers: { 'x-a': 1 } }, 'auth', 'config.headers.x-a'],
    [{ url: 'http://x/', headers: { 'bad header': 'v' } }, 'auth', 'config.headers.bad header'],
    [{ url: 'http://x/', headers: { 'x-a': 'line\r\nbreak' } }, 'auth', 'config.headers.x-a'],
    [{ url: 'http://x/', headers: { 'x-user': '${username}' } }, 'auth', 'config.headers.x-user'],
    [{ url: 'http://x/', headers: { 'Content-Length': '3' } }, 'auth', 'config.headers.Content-Length'],
    [{ url: 'http://x/', headers: { 'Content-Type': 'text/plain' } }, 'auth', 'config.headers.content-type'],
    [{ url: 'http://x/', method: 'GET', headers: { 'content-type': 'application/json' } }, 'auth', 'config.headers.content-type'],
    [{ url: 'http://x/', headers: { 'x-a': 'a', 'X-A': 'b' } }, 'auth', 'config.headers.X-A'],
    [{ url: 'http://x/', body: 'username' }, 'auth', 'config.body'],
    [{ url: 'http://x/', body: { user: 7 } }, 'auth', 'config.body.user'],
    [{ url: 'http://x/', body: { pw: '${password}' } }, 'acl', 'config.body.pw'],
    [{ url: 'http://x/', body: { u: '${user}' } }, 'auth', 'config.body.u'],
    [{ url: 'http://x/', timeout: 50 }, 'auth', 'config.timeout'],
    [{ url: 'http://x/', timeout: 1.5 }, 'auth', 'config.timeout'],
    [{ url: 'http://x/', tls: true }, 'auth', 'config.tls'],
    [{ url: 'https://x/', tls: { rejectUnauthorized: 'no' } }, 'auth', 'config.tls.rejectUnauthorized'],
  ];
  for (const [raw, kind, field] of cases) {
    assert.throws(() => parseHttpPolicyConfig(raw, kind), (err: unknown) => err instanceof PolicyConfigError && err.field === field, `${JSON.stringify(raw)} -> ${field}`);
  }
});

test('http auth: JSON answers give allow, superuser, deny and ignore; 204 is allow; the body carries the client', async () => {
  const e = await endpoint((req, res) => {
    const { username } = JSON.parse(req.body) as { username: string };
    if (username === 'alice') json(res, 200, { result: 'allow', is_superuser: false });
    else if (username === 'root') json(res, 200, { result: 'allow', is_superuser: true });
    else if (username === 'emqx-root') json(res, 200, { result: 'allow', is_superuser: 'true' });
    else if (username === 'bob') json(res, 200, { result: 'deny' });
    else if (username === 'carol') json(res, 200, { result: 'ignore' });
    else res.writeHead(204).end();
  });
  await using(e, auth({ url: `${e.url}/mqtt/auth` }), async (p) => {
    assert.deepEqual([...p.params].sort(), ['clientid', 'password', 'peerhost', 'username']);
    assert.deepEqual(await p.authenticate(ALICE), { result: 'allow', superuser: false });
    assert.deepEqual(e.received[0].url.pathname, '/mqtt/auth');
    assert.equal(e.received[0].method, 'POST');
    assert.equal(e.received[0].headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(e.received[0].body), { username: 'alice', password: 's3cret', clientid: 'c1', peerhost: '10.0.0.7' });
    assert.deepEqual(await p.authenticate({ ...ALICE, username: 'root' }), { result: 'allow', superuser: true });
    assert.deepEqual(await p.authenticate({ ...ALICE, username: 'emqx-root' }), { result: 'allow', superuser: true });
    assert.equal((await p.authenticate({ ...ALICE, username: 'bob' })).result, 'deny');
    const ignored = await p.authenticate({ ...ALICE, username: 'carol' });
    assert.equal(ignored.result, 'ignore');
    assert.ok(!('error' in ignored) || ignored.error !== true, 'an ignore the service chose is not an error');
    assert.deepEqual(await p.authenticate({ ...ALICE, username: 'dave' }), { result: 'allow', superuser: false });
    // Connections are kept alive: sequential requests share one.
    assert.equal(e.connections(), 1);
  });
});

test('http auth: a 500, a body that is not the JSON answer, or a strange is_superuser is ignore with error', async () => {
  const answers: [number, string][] = [
    [500, '{"result":"allow"}'],
    [403, '{"result":"allow"}'],
    [200, 'allow'],
    [200, '["allow"]'],
    [200, '{"result":"yes"}'],
    [200, '{}'],
    [200, '{"result":"allow","is_superuser":"maybe"}'],
  ];
  let next = 0;
  const e = await endpoint((_req, res) => {
    const [status, body] = answers[next++];
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await using(e, auth({ url: e.url }), async (p) => {
    for (const [status, body] of answers) {
      const a = await p.authenticate(ALICE);
      assert.equal(a.result, 'ignore', `${status} ${body}`);
      assert.equal('error' in a && a.error, true, `${status} ${body} is an error`);
    }
  });
});

test('http auth: an answer body past the bound is ignore with error', async () => {
  const e = await endpoint((_req, res) => json(res, 200, { result: 'allow', padding: 'x'.repeat(MAX_RESPONSE_BYTES) }));
  await using(e, auth({ url: e.url }), async (p) => {
    const a = await p.authenticate(ALICE);
    assert.equal(a.result, 'ignore');
    assert.match('reason' in a ? String(a.reason) : '', /larger than/);
    await p.dryRun(); // a status was answered: the endpoint is reachable
  });
});

test('http auth: an endpoint that never answers is ignore with error after the timeout; the dry run refuses', async () => {
  const e = await endpoint(() => {}); // holds every request
  await using(e, auth({ url: e.url, timeout: 200 }), async (p) => {
    const a = await p.authenticate(ALICE);
    assert.equal(a.result, 'ignore');
    assert.equal('error' in a && a.error, true);
    assert.match('reason' in a ? String(a.reason) : '', /timed out after 200 ms/);
    await assert.rejects(p.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.url' && /timed out/.test(err.message));
  });
});

test('http auth: an unreachable endpoint is ignore with error; the dry run refuses naming config.url; a 404 passes it', async () => {
  const port = await closedPort();
  const { log, lines } = keptLog();
  await using(null, auth({ url: `http://127.0.0.1:${port}/auth` }, context(log)), async (p) => {
    for (let i = 0; i < 5; i++) {
      const a = await p.authenticate(ALICE);
      assert.equal(a.result, 'ignore');
      assert.equal('error' in a && a.error, true);
      assert.match('reason' in a ? String(a.reason) : '', /connection refused/);
    }
    // Five failures within 10 s: one warn line, not five.
    const warnings = lines.filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0].policy, 'test-http');
    assert.equal(warnings[0].count, 1);
    await assert.rejects(p.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.url' && /connection refused/.test(err.message));
  });
  const e = await endpoint((_req, res) => res.writeHead(404).end('no such route'));
  await using(e, auth({ url: e.url }), async (p) => {
    await p.dryRun();
    assert.equal(JSON.parse(e.received[0].body).username, DRY_RUN_VALUE);
  });
});

test('http auth: an https endpoint with a self-signed certificate is refused unless tls.rejectUnauthorized is false', async () => {
  const server = https.createServer({ cert: CERT_PEM, key: CERT_KEY_PEM }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"result":"allow"}'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/auth`;
  try {
    await using(null, auth({ url }), async (p) => {
      const a = await p.authenticate(ALICE);
      assert.equal(a.result, 'ignore');
      assert.match('reason' in a ? String(a.reason) : '', /TLS failed/);
      await assert.rejects(p.dryRun(), (err: unknown) => err instanceof PolicyConfigError && err.field === 'config.url' && /TLS failed/.test(err.message));
    });
    await using(null, auth({ url, tls: { rejectUnauthorized: false } }), async (p) => {
      assert.deepEqual(await p.authenticate(ALICE), { result: 'allow', superuser: false });
    });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('http auth: GET puts the url templates and the body fields in the query string, URL-encoded', async () => {
  const e = await endpoint((_req, res) => res.writeHead(204).end());
  const policy = auth({ url: `${e.url}/auth?user=\${username}&from=\${peerhost}&fixed=1`, method: 'GET', body: { cid: '${clientid}', pw: '${password}' } });
  await using(e, policy, async (p) => {
    assert.deepEqual([...p.params].sort(), ['clientid', 'password', 'peerhost', 'username']);
    const tricky: AuthQuery = { clientid: 'id=1&x', username: 'a b&c=d/é', password: Buffer.from('p#?%'), peerhost: '::1' };
    assert.deepEqual(await p.authenticate(tricky), { result: 'allow', superuser: false });
    const r = e.received[0];
    assert.equal(r.method, 'GET');
    assert.equal(r.body, '');
    assert.equal(r.headers['content-type'], undefined);
    assert.equal(r.url.pathname, '/auth');
    assert.deepEqual([...r.url.searchParams], [['user', 'a b&c=d/é'], ['from', '::1'], ['fixed', '1'], ['cid', 'id=1&x'], ['pw', 'p#?%']]);
  });
});

test('http auth: a form content-type sends the body form-encoded', async () => {
  const e = await endpoint((req, res) => {
    const form = new URLSearchParams(req.body);
    json(res, 200, { result: form.get('u') === 'x&y=z' ? 'allow' : 'deny' });
  });
  const policy = auth({ url: e.url, headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: { u: '${username}', c: '${clientid}' } });
  await using(e, policy, async (p) => {
    assert.deepEqual(await p.authenticate({ ...ALICE, username: 'x&y=z' }), { result: 'allow', superuser: false });
    assert.equal(e.received[0].headers['content-type'], 'application/x-www-form-urlencoded');
    assert.deepEqual([...new URLSearchParams(e.received[0].body)], [['u', 'x&y=z'], ['c', 'c1']]);
  });
});

test('http auth: an answer in a form body is read too (EMQX accepts it)', async () => {
  const e = await endpoint((_req, res) => res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' }).end('result=allow&is_superuser=1'));
  await using(e, auth({ url: e.url }), async (p) => {
    assert.deepEqual(await p.authenticate(ALICE), { result: 'allow', superuser: true });
  });
});

test('http acl: topic and action in the body; JSON allow/deny/ignore and 204', async () => {
  const e = await endpoint((req, res) => {
    const b = JSON.parse(req.body) as { topic: string; action: string };
    if (b.topic === 'open/1') json(res, 200, { result: 'allow' });
    else if (b.topic === 'closed/1') json(res, 200, { result: 'deny' });
    else if (b.topic === 'other/1') json(res, 200, { result: 'ignore' });
    else if (b.action === 'subscribe') res.writeHead(204).end();
    else res.writeHead(500).end();
  });
  await using(e, acl({ url: e.url }), async (p) => {
    assert.deepEqual([...p.params].sort(), ['action', 'clientid', 'peerhost', 'topic', 'username']);
    const q = { clientid: 'c9', username: 'u9', peerhost: '10.1.1.1', action: 'publish' as const };
    assert.deepEqual(await p.authorize({ ...q, topic: 'open/1' }), { result: 'allow' });
    assert.deepEqual(JSON.parse(e.received[0].body), { username: 'u9', clientid: 'c9', peerhost: '10.1.1.1', topic: 'open/1', action: 'publish' });
    assert.deepEqual(await p.authorize({ ...q, topic: 'closed/1' }), { result: 'deny' });
    assert.equal((await p.authorize({ ...q, topic: 'other/1' })).result, 'ignore');
    // A wildcard filter the service allows is checked per delivered topic (auth/acl-scope.ts).
    assert.deepEqual(await p.authorize({ ...q, action: 'subscribe', topic: 'x/#' }), { result: 'allow', overlaps: { allow: false, deny: true } });
    const failed = await p.authorize({ ...q, topic: 'x/1' });
    assert.equal(failed.result, 'ignore');
    assert.equal('error' in failed && failed.error, true);
  });
});

test(`http auth: at most ${MAX_IN_FLIGHT} requests in flight per policy, the others wait and are answered`, async () => {
  const held: (() => void)[] = [];
  let inFlight = 0;
  let most = 0;
  const e = await endpoint((_req, res) => {
    inFlight++;
    most = Math.max(most, inFlight);
    held.push(() => {
      inFlight--;
      json(res, 200, { result: 'allow' });
    });
  });
  await using(e, auth({ url: e.url, timeout: 60_000 }), async (p) => {
    const total = MAX_IN_FLIGHT + 8;
    const answers = Array.from({ length: total }, (_, i) => p.authenticate({ ...ALICE, clientid: `c${i}` }));
    await waitFor(() => held.length === MAX_IN_FLIGHT, { message: `${MAX_IN_FLIGHT} requests reach the endpoint` });
    // Release one at a time: each release lets one waiting request in.
    let released = 0;
    while (released < total) {
      await waitFor(() => held.length > 0);
      held.shift()?.();
      released++;
    }
    const results = await Promise.all(answers);
    assert.ok(results.every((a) => a.result === 'allow'));
    assert.equal(most, MAX_IN_FLIGHT);
    assert.equal(e.received.length, total);
  });
});

test('http auth: a closed policy answers ignore with error', async () => {
  const e = await endpoint((_req, res) => res.writeHead(204).end());
  const p = auth({ url: e.url });
  await p.close();
  const a = await p.authenticate(ALICE);
  assert.equal(a.result, 'ignore');
  assert.equal('error' in a && a.error, true);
  assert.equal(e.received.length, 0);
  await e.close();
});
