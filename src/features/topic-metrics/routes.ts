// Topic metrics' routes: list, create, get, delete and reset the metrics of topic filters (stored,
// on every worker and node of a cluster).
import { Type } from '@sinclair/typebox';

import { ok, okFromNodes, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import type { TopicMetrics } from './topic-metrics.ts';

export function topicMetricsRoutes(tm: TopicMetrics): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/topic-metrics',
      access: 'read',
      tag: 'mqtt',
      summary: 'Topic metrics of every configured filter: [{filter, source (config|api), createdAt, resetAt, metrics: {messages: {in, out: {total, qos0, qos1, qos2, rate}, dropped: {total, rate}}, bytes: {in, out: {total, rate}}}}]; every node\'s workers summed (in a cluster, nodesMissing: the running nodes that did not answer), rates per second over the last 30 s',
      handler: async () => {
        const { value, missing } = await tm.list();
        return okFromNodes(value, missing);
      },
    },
    route({
      method: 'POST',
      path: '/api/topic-metrics',
      access: 'write',
      tag: 'mqtt',
      summary: 'Count the messages of a topic filter (wildcards allowed): stored, on every worker and on every node of a cluster. 409 when it exists or past topicMetrics.max (field filter). Answers its metrics',
      body: Type.Object({ filter: Type.String({ minLength: 1, maxLength: 65535, description: 'an MQTT topic filter, e.g. sensors/+/temp or alerts/#' }) }, strict),
      handler: async (req) => ok(await tm.create(req.body.filter)),
    }),
    {
      method: 'PUT',
      path: '/api/topic-metrics/reset',
      access: 'write',
      tag: 'mqtt',
      summary: 'Set the counts of every filter to zero (on every node of a cluster)',
      handler: async () => {
        await tm.reset();
        return ok({ reset: true });
      },
    },
    {
      method: 'GET',
      path: '/api/topic-metrics/:filter',
      access: 'read',
      tag: 'mqtt',
      summary: 'The metrics of one filter (URL-encoded: sensors%2F%2B%2Ftemp); 404 when it has none',
      handler: async (req) => {
        const { value, missing } = await tm.get(req.params.filter);
        return okFromNodes(value, missing);
      },
    },
    {
      method: 'PUT',
      path: '/api/topic-metrics/:filter/reset',
      access: 'write',
      tag: 'mqtt',
      summary: 'Set the counts of one filter to zero (on every node of a cluster); 404 when it has none',
      handler: async (req) => {
        await tm.reset(req.params.filter);
        const { value, missing } = await tm.get(req.params.filter);
        return okFromNodes(value, missing);
      },
    },
    {
      method: 'DELETE',
      path: '/api/topic-metrics/:filter',
      access: 'write',
      tag: 'mqtt',
      summary: 'Stop counting a filter (on every node); 404 when it has none, 409 for a filter of topicMetrics.filters in the configuration file',
      handler: async (req) => {
        await tm.remove(req.params.filter);
        return ok({ deleted: req.params.filter });
      },
    },
  ];
}
