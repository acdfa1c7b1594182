// The proxy subscriptions feature: loaded from the store at start, so every worker has them
// before its first client, with or without the admin API (whose routes use this feature's API).
import type { Feature } from '../feature.ts';
import { ProxySubscriptions } from './proxy-subscriptions.ts';

export const proxySubscriptions: Feature<ProxySubscriptions> = {
  name: 'proxy-subscriptions',
  async start(ctx) {
    const proxies = new ProxySubscriptions(ctx.store, ctx.workers, ctx.log);
    await proxies.load();
    return { api: proxies };
  },
};
