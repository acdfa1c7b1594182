// The drain routes: drain this node, cancel it, rebalance the cluster, and the progress of both
// (this node's run, and every running node's load and state).
import { Type } from '@sinclair/typebox';

import { ok, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import type { Drain } from './drain.ts';

const RATE = Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: 'clients moved per second, per node (1..100000); default drain.rate' }));

export function drainRoutes(drain: Drain): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/cluster/drain',
      access: 'read',
      tag: 'system',
      summary: 'Drain and rebalance progress: self (this node: state idle|draining|drained|rebalancing, reason, started, finished, total, moved, remaining, awaitingHandover, handedOver, handoverTimeouts, rate, targets [{node, address, moved}]) and nodes (every running node: node, mqtt address, connections, state, moved, remaining)',
      async handler() {
        const self = await drain.load();
        return ok({ self: drain.status(), nodes: [self, ...drain.peers()].map(({ at: _at, ...l }) => l) });
      },
    },
    route({
      method: 'POST',
      path: '/api/cluster/drain',
      access: 'write',
      tag: 'system',
      summary: 'Drain this node: it accepts no new MQTT connection (readiness /health/ready answers 503) and moves its clients away at `rate` per second: MQTT 5 ones get DISCONNECT 0x9C with the Server Reference of the least loaded running node (single node: drain.serverReference, or 0x8B without one), MQTT 3.1.1 ones are closed; their persistent sessions go to the node they reconnect to. 409 when draining already',
      body: Type.Object({ rate: RATE }, strict),
      handler: async (req) => ok(await drain.drain(req.body.rate)),
    }),
    route({
      method: 'POST',
      path: '/api/cluster/drain/cancel',
      access: 'write',
      tag: 'system',
      summary: 'Stop draining or rebalancing this node: it accepts connections again (clients moved stay where they went). 409 when idle',
      body: Type.Object({}, strict),
      handler: async () => ok(await drain.cancel()),
    }),
    route({
      method: 'POST',
      path: '/api/cluster/rebalance',
      access: 'write',
      tag: 'system',
      summary: 'Even the connections across the running nodes: each node above its share (total / nodes) moves the excess at `rate` per second to the nodes below theirs, as a drain does, while every node keeps accepting. Answers the plan {moves: [{from, count, targets: [{node, address, quota}], error?}], status}. 409 on a single node or while this node drains or rebalances',
      body: Type.Object({ rate: RATE }, strict),
      handler: async (req) => ok(await drain.rebalance(req.body.rate)),
    }),
  ];
}
