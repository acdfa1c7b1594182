// Exclusive subscriptions' route: who holds which place on this node.
import { ok, type Route } from '../../admin/http.ts';
import type { FeatureWorkers } from '../feature.ts';
import type { Exclusive } from './types.ts';

export function exclusiveRoutes(workers: FeatureWorkers, exclusive: Exclusive): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/exclusive',
      access: 'read',
      tag: 'subscriptions',
      summary: 'Exclusive subscriptions ($exclusive/{filter}) held on this node: {enabled (mqtt.exclusiveSubscription), holders [{filter, clientId, connected}]}',
      handler: async () => {
        const all = exclusive.enabled ? (await workers.callAll('exclusive.holders')).flat() : [];
        all.sort((a, b) => (a.filter < b.filter ? -1 : a.filter > b.filter ? 1 : 0));
        return ok({ enabled: exclusive.enabled, holders: all });
      },
    },
  ];
}
