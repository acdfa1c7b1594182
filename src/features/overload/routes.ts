// Overload protection's routes: its state on every worker, its marks changed at run time, and a
// switch for tests that makes workers lag (answers 403 unless overload.debugBusy is on).
import { Type } from '@sinclair/typebox';

import { ok, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import { MARKS_CHANGE } from './marks.ts';
import type { Overload } from './overload.ts';

export function overloadRoutes(overload: Overload): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/overload',
      access: 'read',
      tag: 'system',
      summary: 'Overload protection: state (normal|overloaded: overloaded when any worker is), marks {enabled, lagHighMs, lagLowMs, heapHighMB, heapLowMB, rssHighMB, rssLowMB, sampleMs, shedQos0}, source (config|api) and workers [{worker, state, reasons (lag|heap|rss), since, lagMs, heapUsedBytes, rssBytes, refused, shed, episodes}]',
      handler: async () => ok(await overload.status()),
    },
    route({
      method: 'PUT',
      path: '/api/overload/marks',
      access: 'write',
      tag: 'system',
      summary: 'Change the overload marks (the fields given): on every worker at once, stored, and on every node of a cluster. A worker above a high mark refuses new connections (CONNACK 0x89 Server busy; MQTT 3.1.1: 3) until every measure is below its low mark. 400 names a low mark above its high one. Answers the marks',
      body: MARKS_CHANGE,
      handler: async (req) => ok(await overload.setMarks(req.body)),
    }),
    route({
      method: 'POST',
      path: '/api/overload/debug/busy',
      access: 'write',
      tag: 'system',
      summary: 'Testing only, 403 unless the configuration key overload.debugBusy is on: blocks the event loop of a worker (or of every worker) for blockMs at a time, with 20 ms breaks, for totalMs, to see overload protection act. Answers {workers}',
      body: Type.Object({
        worker: Type.Optional(Type.Integer({ minimum: 0, maximum: 255, description: 'one worker (default: every worker)' })),
        totalMs: Type.Integer({ minimum: 10, maximum: 60_000, description: 'how long the worker lags (ms)' }),
        blockMs: Type.Integer({ minimum: 1, maximum: 5_000, description: 'each block of the event loop (ms)' }),
      }, strict),
      handler: async (req) => ok({ workers: await overload.busy(req.body.worker, req.body.totalMs, req.body.blockMs) }),
    }),
  ];
}
