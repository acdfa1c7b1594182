// The MQTT-facing admin modules (spec 4.3, 4.4 and the session and retained parts of 4.10), as
// one entry of the admin module list.
import type { AdminContext } from '../context.ts';
import type { Route } from '../http.ts';
import { connectionRoutes } from './connections.ts';
import { publishRoutes } from './publish.ts';
import { topicRoutes } from './topics.ts';
import { subscriptionRoutes } from './subscriptions.ts';
import { localRoutes } from './local.ts';
import { sessionRoutes } from './sessions.ts';
import { retainedRoutes } from './retained.ts';

export function mqttRoutes(ctx: AdminContext): Route[] {
  return [
    ...connectionRoutes(ctx),
    ...publishRoutes(ctx),
    ...topicRoutes(ctx),
    ...subscriptionRoutes(ctx),
    ...localRoutes(ctx),
    ...sessionRoutes(ctx),
    ...retainedRoutes(ctx),
  ];
}
