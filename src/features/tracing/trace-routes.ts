// Client tracing (EMQX's trace; an addition to spec 4.8): every packet of one client logged for
// a bounded time. Start, list, stop; applied at once on every worker (TraceManager).
import { Type } from '@sinclair/typebox';

import { ok, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import { MAX_TRACE_SECONDS, type TraceManager } from './trace-manager.ts';

export function traceRoutes(traces: TraceManager): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/log/traces',
      access: 'read',
      tag: 'logs',
      summary: 'Client traces on now: {clientId, startTime, endTime}',
      handler: () => ok(traces.list()),
    },
    route({
      method: 'POST',
      path: '/api/log/trace/add',
      access: 'write',
      tag: 'logs',
      summary: `Trace a client id: every packet its connection reads or writes is logged at info, for duration seconds (default 600, at most ${MAX_TRACE_SECONDS})`,
      body: Type.Object(
        { clientId: Type.String({ minLength: 1, maxLength: 65535 }), duration: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TRACE_SECONDS, default: 600, description: 'seconds' })) },
        strict,
      ),
      handler: async (req) => ok(await traces.add(req.body.clientId, req.body.duration ?? 600)),
    }),
    route({
      method: 'POST',
      path: '/api/log/trace/delete',
      access: 'write',
      tag: 'logs',
      summary: 'Stop tracing a client id',
      body: Type.Object({ clientId: Type.String({ minLength: 1 }) }),
      async handler(req) {
        await traces.delete(req.body.clientId);
        return ok({ clientId: req.body.clientId });
      },
    }),
  ];
}
