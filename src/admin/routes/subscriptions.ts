// Subscriptions made by the operator (spec 4.4): subscribe or unsubscribe an existing session on
// its client's behalf, and proxy subscriptions: filters the broker adds to every client that
// connects (and, when one is added, to every client connected now). Proxy subscriptions are kept
// in the store (admin kind 'proxy-subscription'), pushed to every worker, and pushed again to a
// worker that restarts. Deleting one stops it being added; sessions that have it keep it.
import { createHash } from 'node:crypto';

import { Type } from '@sinclair/typebox';

import { conflict, notFound } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import type { ProxySubscription } from '../../engine/session/proxy-subscriptions.ts';
import { CLIENT_ID, QOS, SUBSCRIPTION_OPTIONS, TOPIC_FILTER, onAllWorkers, onOwner, onWorker, subscriptionOptions, topicFilter } from './mqtt-common.ts';

const KIND = 'proxy-subscription';

interface ProxyDoc extends ProxySubscription {
  id: string;
  createTime: string;
}

/** A store id for a topic filter (filters may be longer than a store key allows). */
export function topicId(topic: string): string {
  return createHash('sha256').update(topic).digest('hex').slice(0, 32);
}

export function subscriptionRoutes(ctx: AdminContext): Route[] {
  const proxies = new Map<string, ProxyDoc>();
  const list = (): ProxySubscription[] => [...proxies.values()].map((p) => ({ topic: p.topic, qos: p.qos }));
  const loaded = (async () => {
    for (const { doc } of await ctx.store.listAdmin<ProxyDoc>(KIND)) proxies.set(doc.topic, doc);
    if (proxies.size > 0) await onAllWorkers(ctx, 'proxy.set', { list: list() });
  })();
  loaded.catch((err: unknown) => ctx.log.error('proxy subscriptions could not be restored', { err }));
  ctx.supervisor.onWorkerStart((worker) => {
    if (proxies.size === 0) return;
    return onWorker(ctx, worker, 'proxy.set', { list: list() }).catch((err: unknown) => ctx.log.error('proxy subscriptions not pushed to a restarted worker', { worker, err }));
  });

  return [
    route({
      method: 'POST',
      path: '/mqtt/connection/subscribe',
      access: 'write',
      tag: 'subscriptions',
      summary: "Subscribe a client's session (connected or offline persistent) on its behalf; matching retained messages follow by Retain Handling",
      body: Type.Object({ clientId: CLIENT_ID, topic: TOPIC_FILTER, qos: Type.Optional(QOS), ...SUBSCRIPTION_OPTIONS }, strict),
      async handler(req) {
        const { clientId, qos = 0 } = req.body;
        const topic = topicFilter(ctx, req.body.topic);
        const options = subscriptionOptions(qos, req.body);
        return ok(await onOwner(ctx, clientId, 'clients.subscribe', { clientId, topic, options }));
      },
    }),
    route({
      method: 'POST',
      path: '/mqtt/connection/unsubscribe',
      access: 'write',
      tag: 'subscriptions',
      summary: "Remove a subscription of a client's session; 404 when it has none to that filter",
      body: Type.Object({ clientId: CLIENT_ID, topic: TOPIC_FILTER }, strict),
      async handler(req) {
        const { clientId } = req.body;
        const topic = topicFilter(ctx, req.body.topic);
        return ok(await onOwner(ctx, clientId, 'clients.unsubscribe', { clientId, topic }));
      },
    }),
    route({
      method: 'POST',
      path: '/mqtt/proxy/subscribe/add',
      access: 'write',
      tag: 'subscriptions',
      summary: 'Add a proxy subscription: every client that connects is subscribed to it, and so is every client connected now; 409 when it exists',
      body: Type.Object({ topic: TOPIC_FILTER, qos: Type.Optional(QOS) }, strict),
      async handler(req) {
        await loaded;
        const topic = topicFilter(ctx, req.body.topic);
        const qos = (req.body.qos ?? 0) as 0 | 1 | 2;
        if (proxies.has(topic)) throw conflict('topic', `proxy subscription ${topic} exists`);
        const doc: ProxyDoc = { id: topicId(topic), topic, qos, createTime: new Date().toISOString() };
        await ctx.store.putAdmin(KIND, doc.id, doc);
        proxies.set(topic, doc);
        await onAllWorkers(ctx, 'proxy.set', { list: list() });
        return ok(doc);
      },
    }),
    route({
      method: 'POST',
      path: '/mqtt/proxy/subscribe/status',
      access: 'read',
      readOnly: true,
      tag: 'subscriptions',
      summary: 'The proxy subscriptions, each with how many times it was added to a session (since start) and how many sessions hold it now',
      body: Type.Object({}),
      async handler() {
        await loaded;
        const parts = await onAllWorkers(ctx, 'proxy.status');
        const data = [...proxies.values()].sort((a, c) => (a.createTime < c.createTime ? -1 : 1)).map((p) => {
          let applied = 0;
          let sessions = 0;
          for (const part of parts) {
            const s = part.find((x) => x.topic === p.topic);
            applied += s?.applied ?? 0;
            sessions += s?.sessions ?? 0;
          }
          return { ...p, applied, sessions };
        });
        return ok(data);
      },
    }),
    route({
      method: 'POST',
      path: '/mqtt/proxy/subscribe/delete',
      access: 'write',
      tag: 'subscriptions',
      summary: 'Delete a proxy subscription: new clients no longer get it (sessions that have it keep it); 404 when unknown',
      body: Type.Object({ topic: TOPIC_FILTER }, strict),
      async handler(req) {
        await loaded;
        const topic = topicFilter(ctx, req.body.topic);
        const doc = proxies.get(topic);
        if (!doc) throw notFound(`proxy subscription ${topic} not found`);
        await ctx.store.deleteAdmin(KIND, doc.id);
        proxies.delete(topic);
        await onAllWorkers(ctx, 'proxy.set', { list: list() });
        return ok();
      },
    }),
  ];
}
