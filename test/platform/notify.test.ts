// Notification channels (src/platform/notify): config validation naming the field, redaction and
// the "******" round trip, and delivery over each channel type against real receivers: a node:http
// server in the test for webhook and Slack (bodies, headers, retries on 5xx and 429, none on 4xx,
// timeouts, refused connections), Mailpit (scripts/ensure-mailpit.sh) for email, read back through
// its HTTP API; the in-flight bound and close().
// needs: mailpit
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';

import { Registry } from 'prom-client';

import { createLogger } from '../../src/log/index.ts';
import {
  ChannelConfigError,
  Notifier,
  REDACTED,
  mergeSecrets,
  normalizeChannel,
  redactChannel,
  type AlertNotice,
  type ChannelSpec,
  type EmailConfig,
  type NotifierOptions,
  type WebhookConfig,
} from '../../src/platform/notify/index.ts';
import { closedPort, ensureMailpit } from '../helpers/services.ts';
import { waitFor } from '../helpers/wait.ts';

const log = createLogger({ level: (process.env.SPINDLE_TEST_LOG as 'warn' | undefined) ?? 'error', name: 'notify-test' });
const MAILPIT_API = 'http://127.0.0.1:8025/api/v1';

function notice(over: Partial<AlertNotice> = {}): AlertNotice {
  return {
    kind: 'firing',
    alertId: 'a-1',
    ruleId: 'r-1',
    ruleName: 'Too many connections',
    severity: 'critical',
    organizationId: 'org-7',
    signal: 'connections',
    value: 120,
    threshold: 100,
    message: 'connections 120 > 100 over 60 s',
    firstTime: '2026-01-02T03:04:05.000Z',
    time: '2026-01-02T03:05:05.000Z',
    nodeName: 'spindle@test',
    ...over,
  };
}

/** A Notifier with its own registry, fast backoff (the delays' sizes are not what is tested). */
function notifier(options: NotifierOptions = {}): { n: Notifier; registry: Registry } {
  const registry = new Registry();
  return { n: new Notifier(log, registry, { backoffBaseMs: 20, ...options }), registry };
}

/** A sample of metric `name` (`series`: a histogram's `<name>_count`, ...) with these labels; 0 when absent. */
async function metric(registry: Registry, name: string, labels: Record<string, string>, series = name): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  assert.ok(m, `metric ${name} registered`);
  const v = (m.values as Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>)
    .find((x) => (x.metricName ?? name) === series && Object.entries(labels).every(([k, val]) => String(x.labels[k]) === val));
  return v?.value ?? 0;
}

// ---- A real HTTP receiver --------------------------------------------------------------------

interface Received { method: string; url: string; headers: IncomingHttpHeaders; body: string }
type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

interface Receiver {
  url: string;
  requests: Received[];
  /** Responses held by 'hang' answers, to answer later. */
  held: ServerResponse[];
  close(): Promise<void>;
}

async function receiver(answer: (req: Received, index: number) => Answer): Promise<Receiver> {
  const requests: Received[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(r);
      const a = answer(r, requests.length - 1);
      if (a === 'hang') {
        held.push(res);
        return;
      }
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook?x=1`,
    requests,
    held,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const webhook = (url: string, over: Partial<WebhookConfig> = {}): ChannelSpec => normalizeChannel('webhook', { url, ...over });

// ---- Validation --------------------------------------------------------------------------------

describe('normalizeChannel', () => {
  const okEmail = { host: '127.0.0.1', port: 1025, secure: false, from: 'alerts@example.com', to: ['ops@example.com'] };
  const refused: Array<[string, unknown, unknown, string, RegExp?]> = [
    ['unknown type', 'pager', {}, 'type', /webhook, slack, email/],
    ['missing type', undefined, {}, 'type'],
    ['config not an object', 'webhook', [1], 'config'],
    ['missing config', 'slack', undefined, 'config'],
    ['webhook without url', 'webhook', {}, 'config.url', /required/],
    ['url not http(s)', 'webhook', { url: 'ftp://example.com/x' }, 'config.url', /http/],
    ['url not a URL', 'slack', { url: 'not a url' }, 'config.url'],
    ['url with credentials', 'webhook', { url: 'https://u:p@example.com/' }, 'config.url', /user:password/],
    ['unknown field', 'slack', { url: 'https://example.com/', channel: '#x' }, 'config.channel', /not a field/],
    ['retries over 10', 'webhook', { url: 'https://example.com/', retries: 11 }, 'config.retries', /between 0 and 10/],
    ['retries not an integer', 'webhook', { url: 'https://example.com/', retries: 1.5 }, 'config.retries'],
    ['timeoutMs under 100', 'slack', { url: 'https://example.com/', timeoutMs: 99 }, 'config.timeoutMs', /between 100 and 60000/],
    ['timeoutMs over 60000', 'slack', { url: 'https://example.com/', timeoutMs: 60_001 }, 'config.timeoutMs'],
    ['bad header name', 'webhook', { url: 'https://example.com/', headers: { 'x bad': 'v' } }, 'config.headers.x bad', /header name/],
    ['header value with a line break', 'webhook', { url: 'https://example.com/', headers: { 'x-a': 'v\r\nx-b: 1' } }, 'config.headers.x-a'],
    ['header value not a string', 'webhook', { url: 'https://example.com/', headers: { 'x-a': 1 } }, 'config.headers.x-a'],
    ['reserved header', 'webhook', { url: 'https://example.com/', headers: { 'Content-Type': 'text/plain' } }, 'config.headers.Content-Type', /set by Spindle/],
    ['header given twice', 'webhook', { url: 'https://example.com/', headers: { 'X-A': '1', 'x-a': '2' } }, 'config.headers.x-a', /twice/],
    ['headers not an object', 'webhook', { url: 'https://example.com/', headers: ['x'] }, 'config.headers'],
    ['email without host', 'email', { ...okEmail, host: undefined }, 'config.host', /required/],
    ['port 0', 'email', { ...okEmail, port: 0 }, 'config.port', /between 1 and 65535/],
    ['port 65536', 'email', { ...okEmail, port: 65_536 }, 'config.port'],
    ['secure not a boolean', 'email', { ...okEmail, secure: 'yes' }, 'config.secure'],
    ['bad from', 'email', { ...okEmail, from: 'alerts.example.com' }, 'config.from', /email address/],
    ['to not a list', 'email', { ...okEmail, to: 'ops@example.com' }, 'config.to'],
    ['to empty', 'email', { ...okEmail, to: [] }, 'config.to', /at least one/],
    ['second recipient invalid', 'email', { ...okEmail, to: ['ops@example.com', 'oops@'] }, 'config.to[1]'],
    ['recipient with a bad domain', 'email', { ...okEmail, to: ['a@-x.com'] }, 'config.to[0]', /domain/],
    ['recipient with a line break', 'email', { ...okEmail, to: ['a@x.com\r\nBcc: b@y.com'] }, 'config.to[0]'],
    ['password without username', 'email', { ...okEmail, password: 'p' }, 'config.username', /required when a password/],
    ['rejectUnauthorized not a boolean', 'email', { ...okEmail, rejectUnauthorized: 0 }, 'config.rejectUnauthorized'],
  ];
  for (const [what, type, config, field, message] of refused) {
    test(`refuses ${what}, naming ${field}`, () => {
      assert.throws(() => normalizeChannel(type, config), (err: unknown) => {
        assert.ok(err instanceof ChannelConfigError, `a ChannelConfigError, got ${String(err)}`);
        assert.equal(err.field, field);
        assert.equal(err.status, 400);
        if (message) assert.match(err.message, message);
        return true;
      });
    });
  }

  test('fills in the defaults', () => {
    assert.deepEqual(normalizeChannel('webhook', { url: 'https://example.com/x' }), {
      type: 'webhook',
      config: { url: 'https://example.com/x', headers: {}, timeoutMs: 5000, retries: 3 },
    });
    assert.deepEqual(normalizeChannel('slack', { url: 'http://example.com/x', retries: 0, timeoutMs: 100 }), {
      type: 'slack',
      config: { url: 'http://example.com/x', retries: 0, timeoutMs: 100 },
    });
    const email = normalizeChannel('email', { host: 'smtp.example.com', secure: true, from: 'Spindle Alerts <alerts@example.com>', to: ['ops@example.com', 'root@localhost'] });
    assert.deepEqual(email.config, {
      host: 'smtp.example.com', port: 465, secure: true, from: 'Spindle Alerts <alerts@example.com>', to: ['ops@example.com', 'root@localhost'],
      timeoutMs: 5000, retries: 3, rejectUnauthorized: true,
    });
    assert.equal((normalizeChannel('email', { host: 'h', from: 'a@b.c', to: ['d@e.f'] }).config as EmailConfig).port, 587);
  });
});

describe('redaction', () => {
  const email = normalizeChannel('email', { host: 'smtp.example.com', port: 587, username: 'bot', password: 's3cret', from: 'a@example.com', to: ['b@example.com'] });
  const hook = normalizeChannel('webhook', { url: 'https://hooks.example.com/a', headers: { Authorization: 'Bearer t0k', 'X-Api-Key': 'k3y', 'X-Team': 'ops' } });

  test('hides the password and credential-like header values, and changes nothing in place', () => {
    const e = redactChannel(email);
    assert.equal((e.config as EmailConfig).password, REDACTED);
    assert.equal((e.config as EmailConfig).username, 'bot');
    assert.equal((email.config as EmailConfig).password, 's3cret');
    const h = redactChannel(hook);
    assert.deepEqual((h.config as WebhookConfig).headers, { Authorization: REDACTED, 'X-Api-Key': REDACTED, 'X-Team': 'ops' });
    assert.equal((hook.config as WebhookConfig).headers!.Authorization, 'Bearer t0k');
    assert.ok(!JSON.stringify(h).includes('t0k') && !JSON.stringify(e).includes('s3cret'));
  });

  test('an update sending the placeholder back keeps the old secret', () => {
    const updated = normalizeChannel('email', { ...redactChannel(email).config, to: ['c@example.com'] });
    const merged = mergeSecrets(email, updated);
    assert.equal((merged.config as EmailConfig).password, 's3cret');
    assert.deepEqual((merged.config as EmailConfig).to, ['c@example.com']);
    const hookUpdate = normalizeChannel('webhook', { ...redactChannel(hook).config, url: 'https://hooks.example.com/b', headers: { authorization: REDACTED, 'X-Team': 'dev' } });
    assert.deepEqual((mergeSecrets(hook, hookUpdate).config as WebhookConfig).headers, { authorization: 'Bearer t0k', 'X-Team': 'dev' });
    // A new value replaces the old one.
    const fresh = normalizeChannel('email', { ...redactChannel(email).config, password: 'n3w' });
    assert.equal((mergeSecrets(email, fresh).config as EmailConfig).password, 'n3w');
  });

  test('the placeholder is refused where there is nothing to keep or the channel goes elsewhere', () => {
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        assert.ok(err instanceof ChannelConfigError);
        return err.field;
      }
      assert.fail('no error');
    };
    const moved = normalizeChannel('email', { ...redactChannel(email).config, host: 'evil.example.net' });
    assert.equal(field(() => mergeSecrets(email, moved)), 'config.password');
    assert.equal(field(() => mergeSecrets(null, redactChannel(email))), 'config.password');
    const elsewhere = normalizeChannel('webhook', { url: 'https://evil.example.net/', headers: { Authorization: REDACTED } });
    assert.equal(field(() => mergeSecrets(hook, elsewhere)), 'config.headers.Authorization');
    const unknownHeader = normalizeChannel('webhook', { url: 'https://hooks.example.com/a', headers: { 'X-Token': REDACTED } });
    assert.equal(field(() => mergeSecrets(hook, unknownHeader)), 'config.headers.X-Token');
  });
});

// ---- Webhook -----------------------------------------------------------------------------------

describe('webhook', () => {
  test('POSTs the notice as JSON with the configured headers', async () => {
    const r = await receiver(() => ({ status: 204 }));
    const { n, registry } = notifier();
    try {
      const res = await n.send(webhook(r.url, { headers: { Authorization: 'Bearer abc', 'X-Team': 'ops' } }), notice());
      assert.deepEqual({ ok: res.ok, attempts: res.attempts, status: res.status }, { ok: true, attempts: 1, status: 204 });
      assert.equal(r.requests.length, 1);
      const [req] = r.requests;
      assert.equal(req.method, 'POST');
      assert.equal(req.url, '/hook?x=1');
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['user-agent'], 'spindle');
      assert.equal(req.headers.authorization, 'Bearer abc');
      assert.equal(req.headers['x-team'], 'ops');
      assert.deepEqual(JSON.parse(req.body), notice());
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'sent' }), 1);
      assert.equal(await metric(registry, 'spindle_notification_duration_seconds', { type: 'webhook' }, 'spindle_notification_duration_seconds_count'), 1);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('500 twice then 200: three attempts, two retries counted', async () => {
    const r = await receiver((_req, i) => (i < 2 ? { status: 500, body: 'down for a moment' } : { status: 200 }));
    const { n, registry } = notifier();
    try {
      const res = await n.send(webhook(r.url), notice());
      assert.equal(res.ok, true, res.error);
      assert.equal(res.attempts, 3);
      assert.equal(r.requests.length, 3);
      assert.equal(await metric(registry, 'spindle_notification_retries_total', { type: 'webhook' }), 2);
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'sent' }), 1);
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'failed' }), 0);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('5xx beyond the retries: failed after retries + 1 attempts, with the last status and body', async () => {
    const r = await receiver(() => ({ status: 503, body: 'maintenance' }));
    const { n, registry } = notifier();
    try {
      const res = await n.send(webhook(r.url, { retries: 2 }), notice());
      assert.deepEqual({ ok: res.ok, attempts: res.attempts, status: res.status }, { ok: false, attempts: 3, status: 503 });
      assert.match(res.error!, /HTTP 503: maintenance/);
      assert.equal(r.requests.length, 3);
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'failed' }), 1);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('a 400 is not retried', async () => {
    const r = await receiver(() => ({ status: 400, body: '{"error":"bad payload"}' }));
    const { n, registry } = notifier();
    try {
      const res = await n.send(webhook(r.url), notice());
      assert.deepEqual({ ok: res.ok, attempts: res.attempts, status: res.status }, { ok: false, attempts: 1, status: 400 });
      assert.match(res.error!, /bad payload/);
      assert.equal(r.requests.length, 1);
      assert.equal(await metric(registry, 'spindle_notification_retries_total', { type: 'webhook' }), 0);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('429 with Retry-After: the wait it asks for is honoured', async () => {
    const r = await receiver((_req, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    const { n } = notifier();
    try {
      const res = await n.send(webhook(r.url), notice());
      assert.equal(res.ok, true, res.error);
      assert.equal(res.attempts, 2);
      // The backoff alone would have waited 20 ms.
      assert.ok(res.ms >= 950, `waited ${res.ms} ms`);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('a receiver that never answers: the attempt times out', async () => {
    const r = await receiver(() => 'hang');
    const { n } = notifier();
    try {
      const res = await n.send(webhook(r.url, { timeoutMs: 300, retries: 1 }), notice());
      assert.equal(res.ok, false);
      assert.equal(res.attempts, 2);
      assert.match(res.error!, /timed out after 300 ms/);
      assert.equal(r.requests.length, 2);
      assert.ok(res.ms >= 600, `took ${res.ms} ms`);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('a refused connection is retried and reported', async () => {
    const port = await closedPort();
    const { n } = notifier();
    try {
      const res = await n.send(webhook(`http://127.0.0.1:${port}/`, { retries: 1 }), notice());
      assert.equal(res.ok, false);
      assert.equal(res.attempts, 2);
      assert.match(res.error!, /ECONNREFUSED/);
    } finally {
      await n.close();
    }
  });

  test('a redirect is not followed', async () => {
    const r = await receiver(() => ({ status: 302, headers: { location: 'http://example.com/elsewhere' } }));
    const { n } = notifier();
    try {
      const res = await n.send(webhook(r.url), notice());
      assert.deepEqual({ ok: res.ok, attempts: res.attempts, status: res.status }, { ok: false, attempts: 1, status: 302 });
      assert.match(res.error!, /elsewhere, not followed/);
    } finally {
      await n.close();
      await r.close();
    }
  });

  test('the test action sends a test notice once, without retries', async () => {
    const r = await receiver(() => ({ status: 500 }));
    const { n } = notifier();
    try {
      const res = await n.sendTest(webhook(r.url), 'node-a');
      assert.deepEqual({ ok: res.ok, attempts: res.attempts, status: res.status }, { ok: false, attempts: 1, status: 500 });
      const body = JSON.parse(r.requests[0].body) as AlertNotice;
      assert.equal(body.kind, 'test');
      assert.equal(body.nodeName, 'node-a');
    } finally {
      await n.close();
      await r.close();
    }
  });
});

// ---- Slack -------------------------------------------------------------------------------------

describe('slack', () => {
  test('POSTs an incoming-webhook message: readable text and a coloured attachment', async () => {
    const r = await receiver(() => ({ status: 200, body: 'ok' }));
    const { n, registry } = notifier();
    try {
      const spec = normalizeChannel('slack', { url: r.url });
      const res = await n.send(spec, notice({ ruleName: 'Queue <depth> & lag' }));
      assert.equal(res.ok, true, res.error);
      const [req] = r.requests;
      assert.equal(req.headers['content-type'], 'application/json');
      const body = JSON.parse(req.body) as { text: string; attachments: Array<{ color: string; title: string; fields: Array<{ title: string; value: string }> }> };
      assert.match(body.text, /FIRING critical: Queue &lt;depth&gt; &amp; lag/);
      assert.match(body.text, /connections 120 > 100 over 60 s|connections 120 &gt; 100 over 60 s/);
      assert.equal(body.attachments.length, 1);
      assert.equal(body.attachments[0].color, '#d32f2f');
      const fields = Object.fromEntries(body.attachments[0].fields.map((f) => [f.title, f.value]));
      assert.equal(fields.Value, '120');
      assert.equal(fields.Threshold, '100');
      assert.equal(fields.Node, 'spindle@test');
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'slack', result: 'sent' }), 1);

      await n.send(spec, notice({ kind: 'resolved' }));
      const resolved = JSON.parse(r.requests[1].body) as { text: string; attachments: Array<{ color: string }> };
      assert.match(resolved.text, /RESOLVED critical/);
      assert.equal(resolved.attachments[0].color, '#388e3c');
    } finally {
      await n.close();
      await r.close();
    }
  });
});

// ---- Email through Mailpit -------------------------------------------------------------------

interface MailpitAddress { Name: string; Address: string }
interface MailpitSummary { ID: string; Subject: string }
interface MailpitMessage { ID: string; Subject: string; From: MailpitAddress; To: MailpitAddress[]; Text: string; HTML: string }

async function mailpitMessage(subjectToken: string): Promise<MailpitMessage> {
  const summary = await waitFor(async () => {
    const res = await fetch(`${MAILPIT_API}/search?query=${encodeURIComponent(`subject:"${subjectToken}"`)}`);
    const list = (await res.json()) as { messages: MailpitSummary[] };
    return list.messages.find((m) => m.Subject.includes(subjectToken));
  }, { message: `a message with "${subjectToken}" in its subject in Mailpit` });
  const res = await fetch(`${MAILPIT_API}/message/${summary.ID}`);
  assert.equal(res.status, 200);
  return (await res.json()) as MailpitMessage;
}

describe('email', () => {
  before(() => ensureMailpit());

  const mailpit = (over: Record<string, unknown> = {}) =>
    normalizeChannel('email', { host: '127.0.0.1', port: 1025, secure: false, from: 'Spindle <alerts@spindle.test>', to: ['ops@spindle.test', 'oncall@spindle.test'], ...over });

  test('sends through SMTP: subject, recipients and body', async () => {
    const { n, registry } = notifier();
    const ruleName = `Disk full ${randomUUID()}`;
    try {
      const res = await n.send(mailpit(), notice({ ruleName }));
      assert.equal(res.ok, true, res.error);
      assert.equal(res.attempts, 1);
      assert.equal(res.status, 250);
      const msg = await mailpitMessage(ruleName);
      assert.equal(msg.Subject, `[Spindle] FIRING critical: ${ruleName}`);
      assert.deepEqual(msg.To.map((a) => a.Address).sort(), ['oncall@spindle.test', 'ops@spindle.test']);
      assert.equal(msg.From.Address, 'alerts@spindle.test');
      assert.match(msg.Text, new RegExp(`Rule: +${ruleName}`));
      assert.match(msg.Text, /connections 120 > 100 over 60 s/);
      assert.match(msg.HTML, /<table/);
      assert.match(msg.HTML, /connections 120 &gt; 100 over 60 s/);
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'email', result: 'sent' }), 1);
    } finally {
      await n.close();
    }
  });

  test('with credentials (Mailpit accepts any) and the test action', async () => {
    const { n } = notifier();
    try {
      const res = await n.sendTest(mailpit({ username: 'bot', password: 'pw' }), `node-${randomUUID()}`);
      assert.equal(res.ok, true, res.error);
      const msg = await mailpitMessage('[Spindle] TEST info: Test notification');
      assert.match(msg.Text, /test notification from Spindle node/);
    } finally {
      await n.close();
    }
  });

  test('a server that accepts but never greets: the attempt times out', async () => {
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { n } = notifier();
    try {
      const res = await n.send(mailpit({ port: (silent.address() as AddressInfo).port, retries: 1, timeoutMs: 300 }), notice());
      assert.equal(res.ok, false);
      assert.equal(res.attempts, 2);
      assert.match(res.error!, /timed out after 300 ms/);
      assert.equal(sockets.length, 2, 'one connection per attempt');
    } finally {
      await n.close(0);
      sockets.forEach((socket) => socket.destroy());
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test('a server that refuses connections: retried, then failed', async () => {
    const port = await closedPort();
    const { n, registry } = notifier();
    try {
      const res = await n.send(mailpit({ port, retries: 1, timeoutMs: 2000 }), notice());
      assert.equal(res.ok, false);
      assert.equal(res.attempts, 2);
      assert.match(res.error!, /ECONNREFUSED|ESOCKET|ECONNECTION/);
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'email', result: 'failed' }), 1);
    } finally {
      await n.close();
    }
  });
});

// ---- Bounds and shutdown --------------------------------------------------------------------

describe('in flight', () => {
  let r: Receiver;
  before(async () => {
    r = await receiver(() => 'hang');
  });
  after(() => r.close());

  test('past the bound a notice is dropped and counted; those in flight still complete', async () => {
    const { n, registry } = notifier({ maxInFlight: 2 });
    try {
      const spec = webhook(r.url, { timeoutMs: 60_000, retries: 0 });
      const first = n.send(spec, notice());
      const second = n.send(spec, notice());
      await waitFor(() => r.held.length === 2, { message: 'both deliveries reached the receiver' });
      assert.equal(n.inFlight, 2);
      assert.equal(await metric(registry, 'spindle_notifications_in_flight', {}), 2);

      const third = await n.send(spec, notice());
      assert.equal(third.ok, false);
      assert.equal(third.attempts, 0);
      assert.match(third.error!, /dropped: 2 notifications in flight/);
      assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'dropped' }), 1);
      assert.equal(r.held.length, 2, 'the dropped notice was not sent');

      for (const res of r.held.splice(0)) res.writeHead(200).end();
      const results = await Promise.all([first, second]);
      assert.deepEqual(results.map((x) => x.ok), [true, true]);
      assert.equal(n.inFlight, 0);
      assert.equal((await n.send(webhook(r.url.replace(/\/hook.*/, '/none'), { retries: 0, timeoutMs: 100 }), notice())).attempts, 1, 'room again after they ended');
    } finally {
      r.held.splice(0).forEach((res) => res.destroy());
      await n.close(0);
    }
  });

  test('close() stops retries, abandons what hangs after the grace period, then drops new sends', async () => {
    const { n, registry } = notifier();
    const spec = webhook(r.url, { timeoutMs: 60_000, retries: 5 });
    const before = r.held.length;
    const hanging = n.send(spec, notice());
    await waitFor(() => r.held.length === before + 1, { message: 'the delivery reached the receiver' });
    await n.close(50);
    const res = await hanging;
    assert.equal(res.ok, false);
    assert.equal(res.attempts, 1);
    assert.match(res.error!, /abandoned: the notifier closed/);
    assert.equal(n.inFlight, 0);
    const late = await n.send(spec, notice());
    assert.match(late.error!, /dropped: the notifier is closed/);
    assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'failed' }), 1);
    assert.equal(await metric(registry, 'spindle_notifications_total', { type: 'webhook', result: 'dropped' }), 1);
  });
});
