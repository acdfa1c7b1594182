// Local subscriptions (spec 4.4, /api/local/subscribe): the broker itself subscribes to a topic
// filter and keeps the latest messages (src/worker/ops/subscriptions.ts: at most 1000, 16 MiB of
// payload per subscription), readable with GET /api/local/messages. Each is an internal session of
// one worker (not a client: no MQTT client can reach or take it over). The filters are kept in the
// store (admin kind 'local-subscription') and subscribed again at start and when their worker
// restarts; the kept messages live in memory only.
import { Type } from '@sinclair/typebox';

import { DomainError, conflict, notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { QOS, TOPIC_FILTER, onWorker, topicFilter } from './mqtt-common.ts';
import { topicId } from '../../features/proxy-subscriptions/index.ts';

const KIND = 'local-subscription';

interface LocalDoc {
  id: string;
  topic: string;
  qos: 0 | 1 | 2;
  createTime: string;
}

interface Local extends LocalDoc {
  /** The internal session's handle (from the client registry's counter; new at each start). */
  handle: number;
  worker: number;
}

export function localRoutes(ctx: AdminContext): Route[] {
  const locals = new Map<string, Local>();
  const sup = ctx.supervisor;

  function pickWorker(): number {
    const running = sup.runningWorkers();
    if (running.length === 0) throw new DomainError('UNAVAILABLE', 'no worker is running');
    const load = new Map(running.map((w) => [w, 0]));
    for (const l of locals.values()) if (load.has(l.worker)) load.set(l.worker, load.get(l.worker)! + 1);
    return [...load].sort((a, b) => a[1] - b[1] || a[0] - b[0])[0][0];
  }

  function open(l: Local): Promise<unknown> {
    return onWorker(ctx, l.worker, 'local.open', { handle: l.handle, topic: l.topic, qos: l.qos });
  }

  const loaded = (async () => {
    for (const { doc } of await ctx.store.listAdmin<LocalDoc>(KIND)) {
      const l: Local = { ...doc, handle: sup.newHandle(), worker: pickWorker() };
      locals.set(l.topic, l);
      await open(l);
    }
  })();
  loaded.catch((err: unknown) => ctx.log.error('local subscriptions could not be restored', { err }));
  sup.onWorkerStart((worker) => Promise.all([...locals.values()].filter((l) => l.worker === worker).map((l) =>
    open(l).catch((err: unknown) => ctx.log.error('local subscription not reopened on a restarted worker', { topic: l.topic, worker, err })))));

  const view = (l: Local) => ({ id: l.id, topic: l.topic, qos: l.qos, worker: l.worker, createTime: l.createTime });

  return [
    route({
      method: 'POST',
      path: '/api/local/subscribe',
      access: 'write',
      tag: 'local',
      summary: 'The broker subscribes to a topic filter itself and keeps the latest 1000 messages (read them with GET /api/local/messages); 409 when it exists',
      body: Type.Object({ topic: TOPIC_FILTER, qos: Type.Optional(QOS) }, strict),
      async handler(req) {
        await loaded;
        const topic = topicFilter(ctx, req.body.topic);
        const qos = (req.body.qos ?? 0) as 0 | 1 | 2;
        if (locals.has(topic)) throw conflict('topic', `local subscription ${topic} exists`);
        const l: Local = { id: topicId(topic), topic, qos, createTime: new Date().toISOString(), handle: sup.newHandle(), worker: pickWorker() };
        await open(l);
        locals.set(topic, l);
        try {
          await ctx.store.putAdmin(KIND, l.id, { id: l.id, topic, qos, createTime: l.createTime } satisfies LocalDoc);
        } catch (err) {
          locals.delete(topic);
          await onWorker(ctx, l.worker, 'local.close', { handle: l.handle }).catch(() => undefined);
          throw err;
        }
        return ok(view(l));
      },
    }),
    route({
      method: 'POST',
      path: '/api/local/unsubscribe',
      access: 'write',
      tag: 'local',
      summary: 'Remove a local subscription and the messages it kept; 404 when unknown',
      body: Type.Object({ topic: Type.String({ minLength: 1, description: 'the filter of the local subscription' }) }, strict),
      async handler(req) {
        await loaded;
        const { topic } = req.body;
        const l = locals.get(topic);
        if (!l) throw notFound(`local subscription ${topic} not found`);
        await ctx.store.deleteAdmin(KIND, l.id);
        locals.delete(topic);
        await onWorker(ctx, l.worker, 'local.close', { handle: l.handle });
        return ok();
      },
    }),
    {
      method: 'GET',
      path: '/api/local/subscriptions',
      access: 'read',
      tag: 'local',
      summary: 'The local subscriptions',
      async handler() {
        await loaded;
        return ok([...locals.values()].map(view));
      },
    },
    route({
      method: 'GET',
      path: '/api/local/messages',
      access: 'read',
      tag: 'local',
      summary: 'The latest messages a local subscription received (oldest first), with counts of received and dropped ones',
      query: Type.Object({ topic: Type.String({ minLength: 1, description: 'the filter of the local subscription' }), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })) }),
      async handler(req) {
        await loaded;
        const { topic, limit = 100 } = req.queryValues;
        const l = locals.get(topic);
        if (!l) throw notFound(`local subscription ${topic} not found`);
        const r = await onWorker(ctx, l.worker, 'local.messages', { handle: l.handle, limit });
        return ok({ ...view(l), ...r });
      },
    }),
  ];
}
