// Monitoring: /prometheus (every broker-wide spindle_* metric and every endpoint's svc_endpoint_*
// metrics, text exposition) and the per-endpoint metrics, health and performance of variant B
// (by port). The numbers come from src/metrics (aggregated across the worker threads).
import { Type } from '@sinclair/typebox';

import { notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, text, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { choice } from '../../schema/check.ts';
import { CONTENT_TYPE, HEALTH_ERROR_RATE_LIMIT, HEALTH_USAGE_LIMIT, RATE_WINDOW_MS, SAMPLE_INTERVAL_MS } from '../../metrics/collector.ts';

const PORT = Type.Integer({ minimum: 1, maximum: 65535 });
const PORT_QUERY = Type.Object({ port: PORT }, strict);

function noEndpoint(port: number) {
  return notFound(`no endpoint on port ${port}`);
}

export function metricsRoutes(ctx: AdminContext): Route[] {
  const collector = ctx.features.metrics;
  const window = `${RATE_WINDOW_MS / 1000} s window sampled every ${SAMPLE_INTERVAL_MS / 1000} s`;
  return [
    {
      method: 'GET',
      path: '/prometheus',
      access: 'read',
      tag: 'monitoring',
      summary: 'Prometheus text exposition: broker-wide spindle_* metrics (connections, sessions, subscriptions, retained, messages and bytes by QoS, drops by reason, delivery latency histogram, process CPU and memory, event-loop lag per worker) and every endpoint\'s svc_endpoint_* metrics (labels port and endpoint), summed over the worker threads',
      handler: async () => text(await collector.prometheus(), CONTENT_TYPE),
    },
    route({
      method: 'GET',
      path: '/api/endpoints/metrics',
      access: 'read',
      tag: 'monitoring',
      summary: `One endpoint's svc_endpoint_* metrics. format=prometheus: text exposition; format=json (the default): {code, message, data:{port, timestamp, metrics:{connections{current,max,rate,total}, messages{received,sent,dropped,receivedRate,sentRate}, sessions{current,max,persistent}, performance{cpuUsage (percent of one core), memoryUsage (bytes), responseTime (seconds, average of connect/publish/subscribe)}, errors{rate (per second), authFailed, aclDenied, connectionErrors}}}}. Rates per second over a ${window}; max is null when unlimited. 404: no endpoint on the port`,
      query: Type.Object({ port: PORT, format: Type.Optional(choice(['prometheus', 'json'] as const, { default: 'json' })) }, strict),
      async handler(req) {
        const { port, format = 'json' } = req.queryValues;
        if (format === 'prometheus') {
          const body = await collector.endpointPrometheus(port);
          if (body === null) throw noEndpoint(port);
          return text(body, CONTENT_TYPE);
        }
        const data = await collector.endpointJson(port);
        if (!data) throw noEndpoint(port);
        return ok(data);
      },
    }),
    route({
      method: 'GET',
      path: '/api/endpoints/health',
      access: 'read',
      tag: 'monitoring',
      summary: `Health of one endpoint: data {port, id, status: UP | DEGRADED | DOWN, running, workers{listening,total}, connections{current,max,usage}, sessions{current,max,usage}, errors{rate,authFailedRate,aclDeniedRate,protocolErrorRate}, reasons[], timestamp}. DOWN: listening on no worker (disabled or failed); DEGRADED: listening on only some workers, connections or sessions at >= ${HEALTH_USAGE_LIMIT * 100}% of their maximum, or more than ${HEALTH_ERROR_RATE_LIMIT} error/s (auth_failed + acl_denied + protocol_error, ${window}). 404: no endpoint on the port`,
      query: PORT_QUERY,
      async handler(req) {
        const { port } = req.queryValues;
        const data = await collector.endpointHealth(port);
        if (!data) throw noEndpoint(port);
        return ok(data);
      },
    }),
    route({
      method: 'GET',
      path: '/api/endpoints/performance',
      access: 'read',
      tag: 'monitoring',
      summary: `Performance of one endpoint: data {port, id, window (seconds), rates{connections,messagesReceived,messagesSent,bytesReceived,bytesSent,errors} per second (${window}), responseTime{connect,publish,subscribe: {average (since start), recent (over the window), count}} in seconds (publish: one in 64 timed), messageSize{in,out: {count, sum, average, buckets[{le, count}]}} in bytes of whole PUBLISH packets, process{cpuUsage, memory{heap,nonHeap,rss}}, timestamp}. 404: no endpoint on the port`,
      query: PORT_QUERY,
      async handler(req) {
        const { port } = req.queryValues;
        const data = await collector.endpointPerformance(port);
        if (!data) throw noEndpoint(port);
        return ok(data);
      },
    }),
  ];
}
