// Slow subscribers' routes: the top list, clearing it, and the settings.
import { Type } from '@sinclair/typebox';

import { ok, okFromNodes, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import type { SlowSubs } from './slow-subs.ts';
import { MAX_TOP_K, MAX_WINDOW } from './types.ts';

export function slowSubsRoutes(s: SlowSubs): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/slow-subscriptions',
      access: 'read',
      tag: 'mqtt',
      summary: 'The slowest subscribers of the cluster (this node alone without one; nodesMissing: the running nodes that did not answer), slowest first: [{clientId, topic, latency (ms), lastUpdate (epoch ms)}], at most topK, each the largest latency of its client and topic within the window (empty while disabled)',
      handler: async () => {
        const { records, missing } = await s.clusterList();
        return okFromNodes(records, missing);
      },
    },
    {
      method: 'DELETE',
      path: '/api/slow-subscriptions',
      access: 'write',
      tag: 'mqtt',
      summary: 'Clear the top list, on every node of a cluster',
      handler: async () => {
        return okFromNodes({ cleared: true }, await s.clear());
      },
    },
    {
      method: 'GET',
      path: '/api/slow-subscriptions/settings',
      access: 'read',
      tag: 'mqtt',
      summary: 'Slow subscriber settings: {enable, threshold (ms), topK, window (s), statsType (whole|internal|response), source (config|api)}',
      handler: async () => ok(s.settings()),
    },
    route({
      method: 'PUT',
      path: '/api/slow-subscriptions/settings',
      access: 'write',
      tag: 'mqtt',
      summary: 'Change slow subscriber settings (the fields given; the others are kept): stored, on every worker and every node of a cluster. Answers the settings',
      body: Type.Object({
        enable: Type.Optional(Type.Boolean({ description: 'time QoS 1/2 deliveries until acknowledged' })),
        threshold: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'ms: latencies below it are not recorded' })),
        topK: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOP_K, description: 'records kept' })),
        window: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WINDOW, description: 'seconds a record stays without a new latency above the threshold' })),
        statsType: Type.Optional(Type.Union([Type.Literal('whole'), Type.Literal('internal'), Type.Literal('response')], { description: 'whole: received to acknowledged; internal: received to sent (queue time); response: sent to acknowledged' })),
      }, strict),
      handler: async (req) => ok(await s.update(req.body)),
    }),
  ];
}
