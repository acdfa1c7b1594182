// OpenTelemetry traces end to end: an in-process broker (two workers) exports to a real
// OpenTelemetry Collector (helpers/otelcol.ts) over OTLP/HTTP. An mqtt.js publisher's traceparent
// continues through the broker: its spans arrive with that trace id and parent chain (publish,
// authorize, route, deliver per subscriber on both workers, acknowledge), the MQTT 5 subscribers
// receive a traceparent of the same trace whose parent is the broker's span, a script's output
// goes on in it, a rule's webhook gets a `traceparent` header of it and its republish goes on in
// the trace; so do messages the broker publishes for someone (the admin API, a will, a delayed
// message when due); a denied publish is an error; with sampling 0, a message without a traceparent (or with its
// sampled flag clear) exports nothing; a client under a client trace is always traced.
// needs: broker, otelcol
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import type { MqttClient } from 'mqtt';

import { connect, end, nextMessages } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { childrenOf, randomHex as hex, startCollector, traceOf, userProperty, type Collector } from '../helpers/otelcol.ts';
import { workerUrls } from '../helpers/worker-ports.ts';
import { waitFor } from '../helpers/wait.ts';

let collector: Collector;
let b: AdminBroker;
let urls: string[];

before(async () => {
  collector = await startCollector();
  b = await startAdminBroker({
    otel: { traces: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/traces`, sampleRatio: 0, delay: 20 } },
    // An ACL, so that publishing is authorized (a client that may publish everywhere is not asked).
    auth: { acl: [{ permission: 'deny', action: 'publish', topic: 'ot/denied/#' }] },
  });
  urls = await workerUrls(b);
});
after(async () => {
  await b?.stop();
  await collector?.stop();
});

async function subscribe(url: string, clientId: string, filter: string): Promise<MqttClient> {
  const c = await connect(url, { protocolVersion: 5, clientId });
  await c.subscribeAsync(filter, { qos: 1 });
  return c;
}

test("a publisher's traceparent continues through the broker: spans with its trace id and parent chain, a traceparent to the subscribers on both workers", async () => {
  const near = await subscribe(urls[0], 'ot-near', 'ot/path/#');
  const far = await subscribe(urls[1], 'ot-far', 'ot/path/#');
  const pub = await connect(urls[0], { protocolVersion: 5, clientId: 'ot-pub' });
  try {
    const traceId = hex(16);
    const publisherSpan = hex(8);
    const nearGot = nextMessages(near, 1);
    const farGot = nextMessages(far, 1);
    await pub.publishAsync('ot/path/a', 'hello', { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-${publisherSpan}-01`, tracestate: 'vendor=x1', other: 'kept' } } });
    const [[n], [f]] = await Promise.all([nearGot, farGot]);

    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.filter((s) => s.name.startsWith('acknowledge')).length === 2 && mine.filter((s) => s.name === 'deliver').length === 2 ? mine : null;
    });
    const root = spans.find((s) => s.name === 'publish ot/path/a');
    assert.ok(root, `the broker's span of the message: ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(root.parentSpanId, publisherSpan, "the broker's span continues the publisher's");
    assert.equal(root.kind, 2, 'SERVER');
    assert.equal(root.attributes['messaging.destination.name'], 'ot/path/a');
    assert.equal(root.attributes['messaging.client.id'], 'ot-pub');
    assert.equal(root.attributes['spindle.matched'], 2);
    assert.equal(root.resource['service.name'], 'spindle');
    assert.equal(typeof root.resource['service.instance.id'], 'string', 'the node name');
    assert.equal(typeof root.resource['service.version'], 'string');
    assert.equal(childrenOf(spans, root, 'authorize').length, 1);
    assert.equal(childrenOf(spans, root, 'route').length, 1);
    const deliveries = childrenOf(spans, root, 'deliver');
    assert.deepEqual(deliveries.map((d) => d.attributes['messaging.client.id']).sort(), ['ot-far', 'ot-near']);
    for (const d of deliveries) {
      assert.equal(d.kind, 4, 'PRODUCER');
      const acks = childrenOf(spans, d, 'acknowledge (PUBACK)');
      assert.equal(acks.length, 1, `the PUBACK of ${d.attributes['messaging.client.id']}`);
    }

    // The subscribers continue the same trace, under the broker's span.
    for (const got of [n, f]) {
      assert.equal(userProperty(got.packet, 'traceparent'), `00-${traceId}-${root.spanId}-01`);
      assert.equal(userProperty(got.packet, 'tracestate'), 'vendor=x1');
      assert.equal(userProperty(got.packet, 'other'), 'kept');
      assert.equal(got.payload, 'hello');
    }
  } finally {
    await end(near, far, pub);
  }
});

test('a rule with a webhook action: the HTTP request carries a traceparent of the same trace, under the rule\'s span', async () => {
  const received: { traceparent: string | undefined; body: unknown }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ traceparent: req.headers.traceparent as string | undefined, body: JSON.parse(Buffer.concat(chunks).toString()) });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const pub = await connect(urls[1], { protocolVersion: 5, clientId: 'ot-hook-pub' });
  try {
    const port = (server.address() as AddressInfo).port;
    const source = await b.api('POST', '/source/add', { body: { name: 'ot-hook', type: 'http', config: { url: `http://127.0.0.1:${port}/in` } } });
    assert.equal(source.status, 200, source.text);
    const rule = await b.api('POST', '/rule/add', { body: { name: 'ot-hook', sql: 'SELECT clientid, payload.v AS v FROM "ot/hook/#"', actions: [{ type: 'webhook', config: { source: source.json.data.id } }] } });
    assert.equal(rule.status, 200, rule.text);
    const traceId = hex(16);
    await pub.publishAsync('ot/hook/1', JSON.stringify({ v: 1 }), { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-${hex(8)}-01` } } });
    // Not traced: no header.
    await pub.publishAsync('ot/hook/2', JSON.stringify({ v: 2 }), { qos: 1 });
    await waitFor(() => received.length === 2);
    const traced = received.find((r) => (r.body as { v: number }).v === 1)!;
    const plain = received.find((r) => (r.body as { v: number }).v === 2)!;
    assert.deepEqual(traced.body, { clientid: 'ot-hook-pub', v: 1 }, 'the body is the output alone');
    assert.equal(plain.traceparent, undefined);
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traced.traceparent ?? '');
    assert.ok(m, `a traceparent header: ${traced.traceparent}`);
    assert.equal(m[1], traceId);
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.some((s) => s.name === 'rule') && mine.some((s) => s.name === 'publish ot/hook/1') ? mine : null;
    });
    const ruleSpan = spans.find((s) => s.name === 'rule')!;
    assert.equal(ruleSpan.spanId, m[2], "the webhook's parent is the rule's span");
    const ruleId = (await b.api('POST', '/rule/query', { body: { name: 'ot-hook' } })).json.data[0].id;
    assert.equal(ruleSpan.attributes['spindle.rule.id'], ruleId);
    assert.equal(ruleSpan.parentSpanId, spans.find((s) => s.name === 'publish ot/hook/1')!.spanId);
  } finally {
    await end(pub);
    server.close();
  }
});

test("a rule's republish of a traced message goes on in its trace: its own publish span under the rule's, and a traceparent to its subscriber", async () => {
  const rule = await b.api('POST', '/rule/add', { body: { name: 'ot-republish', sql: 'SELECT payload.v AS v FROM "ot/in/#"', actions: [{ type: 'republish', config: { topic: 'ot/out/${v}', payload: '${v}' } }] } });
  assert.equal(rule.status, 200, rule.text);
  const ruleId: string = (await b.api('POST', '/rule/query', { body: { name: 'ot-republish' } })).json.data[0].id;
  const sub = await subscribe(urls[1], 'ot-republish-sub', 'ot/out/#');
  const pub = await connect(urls[0], { protocolVersion: 5, clientId: 'ot-republish-pub' });
  try {
    const traceId = hex(16);
    const got = nextMessages(sub, 2);
    await pub.publishAsync('ot/in/1', JSON.stringify({ v: 7 }), { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-${hex(8)}-01` } } });
    // Not traced: its republish carries no traceparent.
    await pub.publishAsync('ot/in/2', JSON.stringify({ v: 8 }), { qos: 1 });
    const messages = await got;
    const traced = messages.find((m) => m.topic === 'ot/out/7')!;
    const plain = messages.find((m) => m.topic === 'ot/out/8')!;
    assert.equal(userProperty(plain.packet, 'traceparent'), undefined);
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.some((x) => x.name === 'publish ot/out/7') && mine.some((x) => x.name === 'rule') && mine.some((x) => x.name === 'deliver' && x.attributes['messaging.client.id'] === 'ot-republish-sub') ? mine : null;
    });
    const ruleSpan = spans.find((x) => x.name === 'rule')!;
    assert.equal(ruleSpan.parentSpanId, spans.find((x) => x.name === 'publish ot/in/1')!.spanId);
    const republished = spans.find((x) => x.name === 'publish ot/out/7')!;
    assert.equal(republished.parentSpanId, ruleSpan.spanId, "the republish's span is a child of the rule's");
    assert.equal(republished.attributes['messaging.client.id'], `rule:${ruleId}`);
    assert.equal(childrenOf(spans, republished, 'route').length, 1);
    assert.equal(childrenOf(spans, republished, 'deliver').length, 1);
    assert.equal(userProperty(traced.packet, 'traceparent'), `00-${traceId}-${republished.spanId}-01`, "the subscriber's traceparent names the republish's span");
  } finally {
    await end(sub, pub);
    await b.api('POST', '/rule/delete', { body: { id: ruleId } });
  }
});

test("messages the broker publishes for someone (the admin API, a will, a delayed message when due) go on in their traceparent's trace", async () => {
  const sub = await subscribe(urls[1], 'ot-origin-sub', 'ot/origin/#');
  try {
    const apiTrace = hex(16);
    const apiParent = hex(8);
    const willTrace = hex(16);
    const willParent = hex(8);
    const delayedTrace = hex(16);
    const delayedParent = hex(8);
    const got = nextMessages(sub, 3);
    const api = await b.api('POST', '/api/publish', { body: { topic: 'ot/origin/api', payload: 'a', qos: 1, properties: { userProperties: { traceparent: `00-${apiTrace}-${apiParent}-01` } } } });
    assert.equal(api.status, 200, api.text);
    const dying = await connect(urls[0], { protocolVersion: 5, clientId: 'ot-dying', will: { topic: 'ot/origin/will', payload: Buffer.from('w'), qos: 1, retain: false, properties: { userProperties: { traceparent: `00-${willTrace}-${willParent}-01` } } } });
    dying.stream.destroy();
    const later = await connect(urls[0], { protocolVersion: 5, clientId: 'ot-later' });
    const heldAt = Date.now() - 5; // the broker's clock reads it a little later
    await later.publishAsync('$delayed/1/ot/origin/delayed', 'd', { qos: 1, properties: { userProperties: { traceparent: `00-${delayedTrace}-${delayedParent}-01` } } });
    await end(later);
    const messages = await got;

    const expect = [
      { trace: apiTrace, parent: apiParent, topic: 'ot/origin/api', client: 'api' },
      { trace: willTrace, parent: willParent, topic: 'ot/origin/will', client: 'ot-dying' },
      { trace: delayedTrace, parent: delayedParent, topic: 'ot/origin/delayed', client: 'ot-later' },
    ];
    for (const e of expect) {
      const spans = await collector.waitForSpans((all) => {
        const mine = traceOf(all, e.trace);
        return mine.some((x) => x.name === `publish ${e.topic}`) && mine.some((x) => x.name === 'deliver') && (e.topic !== 'ot/origin/delayed' || mine.some((x) => x.name.startsWith('publish $delayed/'))) ? mine : null;
      });
      const root = spans.find((x) => x.name === `publish ${e.topic}`)!;
      if (e.topic === 'ot/origin/delayed') {
        // The PUBLISH to $delayed/ has its span, ended when the message was held; the release
        // goes on under it.
        const held = spans.find((x) => x.name === 'publish $delayed/1/ot/origin/delayed');
        assert.ok(held, `the held PUBLISH's span: ${spans.map((x) => x.name).join(', ')}`);
        assert.equal(held.parentSpanId, e.parent, "the held PUBLISH's span continues the given traceparent");
        assert.equal(held.attributes['messaging.client.id'], 'ot-later');
        assert.ok(Date.parse(String(held.attributes['spindle.delayed.due'])) >= heldAt + 1000, `due a second after: ${held.attributes['spindle.delayed.due']}`);
        assert.equal(root.parentSpanId, held.spanId, "the release's span is a child of the held PUBLISH's");
      } else assert.equal(root.parentSpanId, e.parent, `${e.topic}: the broker's span continues the given traceparent`);
      assert.equal(root.attributes['messaging.client.id'], e.client);
      assert.equal(root.attributes['spindle.matched'], 1);
      assert.equal(childrenOf(spans, root, 'route').length, 1);
      const deliveries = childrenOf(spans, root, 'deliver');
      assert.deepEqual(deliveries.map((d) => d.attributes['messaging.client.id']), ['ot-origin-sub']);
      const m = messages.find((x) => x.topic === e.topic);
      assert.ok(m, `${e.topic} delivered`);
      assert.equal(userProperty(m.packet, 'traceparent'), `00-${e.trace}-${root.spanId}-01`, `${e.topic}: the subscriber's traceparent names the broker's span`);
    }
  } finally {
    await end(sub);
  }
});

test('a publish the ACL denies: its authorize span says so, and the broker\'s span is an error', async () => {
  const pub = await connect(urls[0], { protocolVersion: 5, clientId: 'ot-denied' });
  try {
    const traceId = hex(16);
    const rc = await new Promise<number>((resolve, reject) => pub.publish('ot/denied/1', 'x', { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-${hex(8)}-01` } } }, (err, packet) => {
      const code = (err as { code?: number } | undefined)?.code ?? (packet as { reasonCode?: number } | undefined)?.reasonCode;
      if (typeof code === 'number') resolve(code);
      else reject(err ?? new Error('no reason code'));
    }));
    assert.equal(rc, 0x87);
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.length === 2 ? mine : null;
    });
    const root = spans.find((s) => s.name === 'publish ot/denied/1')!;
    assert.equal(root.status?.code, 2, 'ERROR');
    assert.equal(root.attributes['spindle.refused'], 'not_authorized');
    const [authorize] = childrenOf(spans, root, 'authorize');
    assert.equal(authorize.attributes['spindle.acl.allowed'], false);
  } finally {
    await end(pub);
  }
});

test('a script converts a traced message: a scripts span, and the converted message goes on in the same trace', async () => {
  const add = await b.api('POST', '/script/add', { body: { name: 'ot-shout', type: 'javascript', content: 'function convert(t, p) { return p.toString().toUpperCase(); }', topic: 'ot/script/#' } });
  assert.equal(add.status, 200, add.text);
  const sub = await subscribe(urls[1], 'ot-script-sub', 'ot/script/#');
  const pub = await connect(urls[0], { protocolVersion: 5, clientId: 'ot-script-pub' });
  try {
    const traceId = hex(16);
    const got = nextMessages(sub, 1);
    await pub.publishAsync('ot/script/1', 'quiet', { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-${hex(8)}-01` } } });
    const [m] = await got;
    assert.equal(m.payload, 'QUIET');
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.some((x) => x.name === 'acknowledge (PUBACK)') && mine.some((x) => x.name === 'publish ot/script/1') ? mine : null;
    });
    const root = spans.find((x) => x.name === 'publish ot/script/1')!;
    const [scripts] = childrenOf(spans, root, 'scripts');
    assert.equal(scripts.attributes['spindle.scripts.outputs'], 1);
    assert.equal(childrenOf(spans, root, 'deliver').length, 1);
    assert.equal(userProperty(m.packet, 'traceparent'), `00-${traceId}-${root.spanId}-01`);
  } finally {
    await end(sub, pub);
    await b.api('POST', '/script/delete', { body: { id: add.json.data.id } });
  }
});

test('sampling 0: a message without a traceparent, or with its sampled flag clear, exports nothing', async () => {
  const sub = await subscribe(urls[0], 'ot-zero-sub', 'ot/zero/#');
  const pub = await connect(urls[1], { protocolVersion: 5, clientId: 'ot-zero-pub' });
  try {
    const got = nextMessages(sub, 3);
    await pub.publishAsync('ot/zero/plain', 'x', { qos: 1 });
    const unsampled = `00-${hex(16)}-${hex(8)}-00`;
    await pub.publishAsync('ot/zero/unsampled', 'x', { qos: 1, properties: { userProperties: { traceparent: unsampled } } });
    // A marker after them: once its spans are in, theirs would be too.
    const marker = hex(16);
    await pub.publishAsync('ot/zero/marker', 'x', { qos: 1, properties: { userProperties: { traceparent: `00-${marker}-${hex(8)}-01` } } });
    const messages = await got;
    await collector.waitForSpans((all) => traceOf(all, marker).some((s) => s.name.startsWith('acknowledge')));
    const names = collector.spans().filter((s) => s.attributes['messaging.destination.name']?.toString().startsWith('ot/zero/')).map((s) => s.name);
    assert.deepEqual(names, ['publish ot/zero/marker']);
    // Not traced: the subscriber gets the properties as they were published.
    assert.equal(userProperty(messages[0].packet, 'traceparent'), undefined);
    assert.equal(userProperty(messages[1].packet, 'traceparent'), unsampled);
  } finally {
    await end(sub, pub);
  }
});

test('a client under a client trace is always traced (MQTT 3.1.1 too), in a new trace the subscriber continues', async () => {
  const add = await b.api('POST', '/api/log/trace/add', { body: { clientId: 'ot-traced', duration: 60 } });
  assert.equal(add.status, 200, add.text);
  const sub = await subscribe(urls[1], 'ot-traced-sub', 'ot/traced/#');
  const pub = await connect(urls[0], { protocolVersion: 4, clientId: 'ot-traced' });
  try {
    const got = nextMessages(sub, 1);
    await pub.publishAsync('ot/traced/1', 'x', { qos: 0 });
    const [m] = await got;
    const tp = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(userProperty(m.packet, 'traceparent') ?? '');
    assert.ok(tp, 'the v5 subscriber gets a traceparent');
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, tp[1]);
      return mine.some((s) => s.name === 'deliver') && mine.some((s) => s.name === 'publish ot/traced/1') ? mine : null;
    });
    const root = spans.find((s) => s.name === 'publish ot/traced/1')!;
    assert.equal(root.parentSpanId, undefined, 'a trace of its own');
    assert.equal(root.spanId, tp[2]);
    assert.equal(childrenOf(spans, root, 'deliver')[0].attributes['messaging.client.id'], 'ot-traced-sub');
  } finally {
    await end(sub, pub);
    await b.api('POST', '/api/log/trace/delete', { body: { clientId: 'ot-traced' } });
  }
});

test('the exported spans are counted in the metrics', async () => {
  const text = (await b.api('GET', '/prometheus')).text;
  const exported = Number(/^spindle_otel_traces_spans_exported_total (\d+)/m.exec(text)?.[1]);
  assert.ok(exported >= 10, `spans exported: ${exported}`);
  assert.match(text, /^spindle_otel_traces_spans_dropped_total\{reason="queue_full"\} 0$/m);
});
