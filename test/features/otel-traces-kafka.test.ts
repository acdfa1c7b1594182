// OpenTelemetry trace context through Kafka, both ways, with a real Kafka (scripts/ensure-kafka.sh)
// and a real OpenTelemetry Collector (helpers/otelcol.ts): an MQTT 5 publisher's traceparent
// continues into the record a rule's save_kafka action produces, as a `traceparent` header naming
// the rule's span (a message not traced gets none); a record a KAFKA command consumes with
// `traceparent` and `tracestate` headers is published as a span of that trace, traced as
// `command:<id>`, and its MQTT 5 subscribers receive a traceparent of the same trace naming the
// broker's span; an invalid traceparent is left out. On a broker that does not trace, the
// record's trace context reaches the subscribers as it came.
// needs: broker, kafka, otelcol
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, end, nextMessages } from '../helpers/broker.ts';
import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { childrenOf, randomHex, startCollector, traceOf, userProperty, type Collector } from '../helpers/otelcol.ts';
import { ensureKafka } from '../helpers/services.ts';
import { readKafka } from '../helpers/kafka.ts';
import { KAFKA, addCommand, produceKafka } from '../commands/helpers.ts';

let collector: Collector;
let b: AdminBroker;
const run = `${process.pid}-${Date.now()}`;

before(async () => {
  ensureKafka();
  collector = await startCollector();
  b = await startAdminBroker({
    workers: 1,
    mqtt: { ws: { enabled: false } },
    otel: { traces: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/traces`, sampleRatio: 0, delay: 20 } },
  });
});
after(async () => {
  await b?.stop();
  await collector?.stop();
});

test("a rule's save_kafka record carries a traceparent of the publisher's trace, naming the rule's span", async () => {
  const kafkaTopic = `otk-out-${run}`;
  const source = await b.api('POST', '/source/add', { body: { name: 'otk-kafka', type: 'kafka', config: { bootstrapServers: KAFKA } } });
  assert.equal(source.status, 200, source.text);
  const rule = await b.api('POST', '/rule/add', {
    body: { name: 'otk-out', sql: 'SELECT payload.v AS v FROM "otk/out/#"', actions: [{ type: 'save_kafka', config: { source: source.json.data.id, topic: kafkaTopic, headers: { site: 'north' } } }] },
  });
  assert.equal(rule.status, 200, rule.text);
  const pub = await connect(b.url, { protocolVersion: 5, clientId: 'otk-pub' });
  try {
    const traceId = randomHex(16);
    await pub.publishAsync('otk/out/1', JSON.stringify({ v: 1 }), { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-${randomHex(8)}-01` } } });
    // Not traced (sampling 0, no traceparent): no header.
    await pub.publishAsync('otk/out/2', JSON.stringify({ v: 2 }), { qos: 1 });
    const records = await readKafka(kafkaTopic, (rs) => rs.length >= 2);
    const traced = records.find((r) => r.value === '{"v":1}');
    const plain = records.find((r) => r.value === '{"v":2}');
    assert.ok(traced && plain, `both outputs produced: ${JSON.stringify(records)}`);
    assert.equal(plain.headers.traceparent, undefined);
    assert.equal(plain.headers.site, 'north');
    assert.equal(traced.headers.site, 'north', "the action's own headers stay");
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traced.headers.traceparent ?? '');
    assert.ok(m, `a traceparent header: ${traced.headers.traceparent}`);
    assert.equal(m[1], traceId);
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.some((s) => s.name === 'rule') ? mine : null;
    });
    assert.equal(spans.find((s) => s.name === 'rule')!.spanId, m[2], "the record's parent is the rule's span");
  } finally {
    await end(pub);
    const ruleId: string = (await b.api('POST', '/rule/query', { body: { name: 'otk-out' } })).json.data[0].id;
    await b.api('POST', '/rule/delete', { body: { id: ruleId } });
  }
});

test("a KAFKA command's record with a traceparent header is published in that trace, as command:<id>; an invalid one is left out", async () => {
  const topic = `otk-in-${run}`;
  const traceId = randomHex(16);
  const parent = randomHex(8);
  const sub = await connect(b.url, { protocolVersion: 5, clientId: 'otk-in-sub' });
  await sub.subscribeAsync('otk/in/#', { qos: 1 });
  // A new consumer group's first join can take seconds on a fresh Kafka (as helpers/kafka.ts says).
  const got = nextMessages(sub, 2, 90_000);
  await produceKafka(topic, [
    { key: 'traced', value: 'a', headers: { traceparent: `00-${traceId}-${parent}-01`, tracestate: 'vendor=k1' } },
    { key: 'bad', value: 'b', headers: { traceparent: '00-not-a-traceparent-01' } },
  ]);
  const c = await addCommand(b, { name: 'otk-in', type: 'KAFKA', config: { bootstrapServers: KAFKA, topic, fromBeginning: true, mqttTopic: 'otk/in/${key}', qos: 1 } });
  try {
    const list = await got;
    const traced = list.find((m) => m.topic === 'otk/in/traced');
    const bad = list.find((m) => m.topic === 'otk/in/bad');
    assert.ok(traced && bad, `both records published: ${list.map((m) => m.topic).join(', ')}`);
    assert.equal(userProperty(bad.packet, 'traceparent'), undefined, 'an invalid traceparent is not passed on');
    const spans = await collector.waitForSpans((all) => {
      const mine = traceOf(all, traceId);
      return mine.some((s) => s.name === 'publish otk/in/traced') && mine.some((s) => s.name === 'deliver') ? mine : null;
    });
    const root = spans.find((s) => s.name === 'publish otk/in/traced')!;
    assert.equal(root.parentSpanId, parent, "the broker's span continues the record's traceparent");
    assert.equal(root.attributes['messaging.client.id'], `command:${c.id}`);
    assert.deepEqual(childrenOf(spans, root, 'deliver').map((d) => d.attributes['messaging.client.id']), ['otk-in-sub']);
    assert.equal(userProperty(traced.packet, 'traceparent'), `00-${traceId}-${root.spanId}-01`, "the subscriber's traceparent names the broker's span");
    assert.equal(userProperty(traced.packet, 'tracestate'), 'vendor=k1');
  } finally {
    await end(sub);
    await b.api('POST', '/command/delete', { body: { id: c.id } });
  }
});

test("on a broker that does not trace, a KAFKA record's trace context reaches MQTT 5 subscribers as it came", async () => {
  const plain = await startAdminBroker({ workers: 1, mqtt: { ws: { enabled: false } } });
  try {
    const topic = `otk-pass-${run}`;
    const traceparent = `00-${randomHex(16)}-${randomHex(8)}-01`;
    const sub = await connect(plain.url, { protocolVersion: 5, clientId: 'otk-pass-sub' });
    await sub.subscribeAsync('otk/pass/#', { qos: 1 });
    const got = nextMessages(sub, 1, 90_000);
    await produceKafka(topic, [{ key: 'k', value: 'v', headers: { traceparent, tracestate: 'vendor=k2' } }]);
    await addCommand(plain, { name: 'otk-pass', type: 'KAFKA', config: { bootstrapServers: KAFKA, topic, fromBeginning: true, mqttTopic: 'otk/pass/${key}' } });
    const [m] = await got;
    assert.equal(userProperty(m.packet, 'traceparent'), traceparent);
    assert.equal(userProperty(m.packet, 'tracestate'), 'vendor=k2');
    await end(sub);
  } finally {
    await plain.stop();
  }
});
