// The delayed-publish routes: list (paged, by topic filter), one, cancel one, cancel by topic
// filter, and the counts. Cancels are audited.
import { Type } from '@sinclair/typebox';

import { ok, paged, type Route } from '../../admin/http.ts';
import { PAGING, pageOf, route, strict } from '../../admin/schema.ts';
import { topicFilterProblem } from '../../auth/topic-filter.ts';
import { invalid } from '../../errors/domain-error.ts';
import type { DelayedManager } from './manager.ts';

const FILTER = Type.String({ minLength: 1, maxLength: 65535, description: 'an MQTT topic filter (+ and # wildcards) the target topics match' });

function checkFilter(filter: string | undefined): void {
  if (filter === undefined) return;
  const problem = topicFilterProblem(filter);
  if (problem !== undefined) throw invalid('topic', problem);
}

export function delayedRoutes(m: DelayedManager): Route[] {
  return [
    route({
      method: 'GET',
      path: '/api/delayed',
      access: 'read',
      tag: 'delayed',
      summary: 'Delayed messages held, earliest due first, paged ({data, total, page, size}); `topic`: only those whose target topic matches this filter. Each: id, topic, qos, retain, payloadBytes, dueAt, receivedAt, expiresAt, clientId, username, node',
      query: Type.Object({ topic: Type.Optional(FILTER), ...PAGING }, strict),
      handler(req) {
        checkFilter(req.queryValues.topic);
        const { page, size } = pageOf(req.queryValues);
        return paged(m.list(req.queryValues.topic), page, size);
      },
    }),
    {
      method: 'GET',
      path: '/api/delayed/stats',
      access: 'read',
      tag: 'delayed',
      summary: 'Counts: pending, maxMessages, maxInterval, firing (whether this node fires), firingNode, nextDueAt, and this node\'s accepted, fired, cancelled, expired, refused {quota, invalid, store}, denied {receipt, due}',
      handler: () => ok(m.stats()),
    },
    {
      method: 'GET',
      path: '/api/delayed/:id',
      access: 'read',
      tag: 'delayed',
      summary: 'One delayed message, with its payload and MQTT 5 properties (base64); 404 when none',
      handler: (req) => ok(m.get(req.params.id)),
    },
    {
      method: 'DELETE',
      path: '/api/delayed/:id',
      access: 'write',
      tag: 'delayed',
      summary: 'Cancel one delayed message: it is never published. Answers the message cancelled; 404 when none',
      async handler(req) {
        const gone = await m.cancel(req.params.id);
        req.audit = { action: 'cancel', resource: 'delayed', resourceId: gone.id, before: gone };
        return ok(gone);
      },
    },
    route({
      method: 'DELETE',
      path: '/api/delayed',
      access: 'write',
      tag: 'delayed',
      summary: 'Cancel every delayed message whose target topic matches the filter `topic` (required; `#` cancels all). Answers {cancelled}',
      query: Type.Object({ topic: FILTER }, strict),
      async handler(req) {
        checkFilter(req.queryValues.topic);
        const cancelled = await m.cancelMatching(req.queryValues.topic);
        req.audit = { action: 'cancel', resource: 'delayed', resourceId: null, after: { topic: req.queryValues.topic, cancelled } };
        return ok({ cancelled });
      },
    }),
  ];
}
