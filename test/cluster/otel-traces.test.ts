// OpenTelemetry traces across a two-node cluster (the test's own nats-server, a real
// OpenTelemetry Collector both nodes export to): a traced message published on one node and
// delivered to a subscriber of the other has its `deliver` and `acknowledge (PUBACK)` spans
// recorded by that other node, under the publishing node's `publish` span, in the same trace.
// needs: broker, nats, otelcol
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { startAdminBroker, type AdminBroker } from '../helpers/admin.ts';
import { connect, end, nextMessages } from '../helpers/broker.ts';
import { freePort, TestNats } from '../helpers/nats.ts';
import { startCollector, type Collector } from '../helpers/otelcol.ts';
import { waitFor } from '../helpers/wait.ts';

let nats: TestNats;
let collector: Collector;
const nodes: AdminBroker[] = [];

before(async () => {
  nats = await TestNats.start({ jetstream: true });
  collector = await startCollector();
  for (const name of ['ot-a', 'ot-b']) {
    nodes.push(await startAdminBroker({
      nodeName: name,
      workers: 1,
      cluster: { enabled: true, natsUrl: nats.url, localAddress: `127.0.0.1:${await freePort()}` },
      otel: { traces: { enabled: true, endpoint: `${collector.httpEndpoint}/v1/traces`, sampleRatio: 0, delay: 20 } },
    }));
  }
  await waitFor(() => nodes.every((n) => n.cluster!.nodes().filter((x) => x.status === 'running').length === 2), { message: 'both nodes see two running' });
});

after(async () => {
  for (const n of nodes) await n.stop();
  await collector?.stop();
  await nats?.stop();
});

test("a traced message delivered on the other node: that node's deliver and acknowledge spans, under the publishing node's span", async () => {
  const [a, b] = nodes;
  const sub = await connect(b.url, { protocolVersion: 5, clientId: 'ot-far-sub' });
  await sub.subscribeAsync('otc/#', { qos: 1 });
  const pub = await connect(a.url, { protocolVersion: 5, clientId: 'ot-near-pub' });
  try {
    const traceId = Buffer.from(Array.from({ length: 16 }, () => Math.floor(Math.random() * 256))).toString('hex');
    // The subscription reaches node a through the cluster: published until one arrives.
    const got = nextMessages(sub, 1);
    let delivered = false;
    void got.then(() => (delivered = true));
    await waitFor(async () => {
      if (!delivered) await pub.publishAsync('otc/x', 'hi', { qos: 1, properties: { userProperties: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } } });
      return delivered;
    }, { message: 'a message from node a reached the subscriber on node b' });
    const [m] = await got;
    const tp = m.packet.properties?.userProperties?.traceparent;
    const parts = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(Array.isArray(tp) ? tp[0] : tp ?? '');
    assert.ok(parts, `the subscriber got a traceparent: ${tp}`);
    assert.equal(parts[1], traceId, 'the subscriber continues the same trace');
    const rootId = parts[2];
    const spans = await collector.waitForSpans((all) => {
      const mine = all.filter((s) => s.traceId === traceId);
      const deliver = mine.find((s) => s.name === 'deliver' && s.parentSpanId === rootId);
      return deliver && mine.some((s) => s.spanId === rootId) && mine.some((s) => s.name === 'acknowledge (PUBACK)' && s.parentSpanId === deliver.spanId) ? mine : null;
    });
    const root = spans.find((s) => s.spanId === rootId)!;
    assert.equal(root.name, 'publish otc/x');
    assert.equal(root.resource['service.instance.id'], 'ot-a', "the subscriber's traceparent names node a's span");
    const deliver = spans.find((s) => s.name === 'deliver' && s.parentSpanId === rootId)!;
    assert.equal(deliver.attributes['messaging.client.id'], 'ot-far-sub');
    assert.equal(deliver.resource['service.instance.id'], 'ot-b', 'recorded by the node the subscriber is on');
    const ack = spans.find((s) => s.name === 'acknowledge (PUBACK)' && s.parentSpanId === deliver.spanId)!;
    assert.equal(ack.resource['service.instance.id'], 'ot-b');
  } finally {
    await end(sub, pub);
  }
});
