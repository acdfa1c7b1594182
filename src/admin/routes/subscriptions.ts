// Subscriptions made by the operator (spec 4.4): subscribe or unsubscribe an existing session on
// its client's behalf, and the routes of the proxy subscriptions (src/features/proxy-subscriptions:
// filters the broker adds to every client that connects, which run with or without these routes).
import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { route, strict } from '../schema.ts';
import { proxySubscriptions } from '../../features/proxy-subscriptions/index.ts';
import { CLIENT_ID, QOS, SUBSCRIPTION_OPTIONS, TOPIC_FILTER, onOwner, subscriptionOptions, topicFilter } from './mqtt-common.ts';

export function subscriptionRoutes(ctx: AdminContext): Route[] {
  const proxies = ctx.features.get(proxySubscriptions);

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
        const topic = topicFilter(ctx, req.body.topic);
        return ok(await proxies.add(topic, (req.body.qos ?? 0) as 0 | 1 | 2));
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
        return ok(await proxies.status());
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
        await proxies.remove(topicFilter(ctx, req.body.topic));
        return ok();
      },
    }),
  ];
}
