// Client tracing (EMQX's trace; an addition to spec 4.8): every packet of one client logged for
// a bounded time. Start, list, stop; applied at once on every worker (TraceManager).
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { int, object, onlyFields, reqStr } from '../validate.ts';
import { MAX_TRACE_SECONDS } from '../../trace/trace-manager.ts';

export function traceRoutes(ctx: AdminContext): Route[] {
  const traces = ctx.traces;
  return [
    {
      method: 'GET',
      path: '/api/log/traces',
      access: 'read',
      tag: 'logs',
      summary: 'Client traces on now: {clientId, startTime, endTime}',
      handler: () => ok(traces.list()),
    },
    {
      method: 'POST',
      path: '/api/log/trace/add',
      access: 'write',
      tag: 'logs',
      summary: `Trace a client id: every packet its connection reads or writes is logged at info, for duration seconds (default 600, at most ${MAX_TRACE_SECONDS})`,
      body: { type: 'object', required: ['clientId'], properties: { clientId: { type: 'string' }, duration: { type: 'integer' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['clientId', 'duration']);
        const clientId = reqStr(b, 'clientId', { max: 65535 });
        const duration = int(b, 'duration', 1, MAX_TRACE_SECONDS) ?? 600;
        return ok(await traces.add(clientId, duration));
      },
    },
    {
      method: 'POST',
      path: '/api/log/trace/delete',
      access: 'write',
      tag: 'logs',
      summary: 'Stop tracing a client id',
      body: { type: 'object', required: ['clientId'], properties: { clientId: { type: 'string' } } },
      async handler(req) {
        const clientId = reqStr(object(req.body), 'clientId');
        await traces.delete(clientId);
        return ok({ clientId });
      },
    },
  ];
}
