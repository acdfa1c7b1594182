// The revocation feature (docs/features/tls-revocation.md): OCSP stapling, fetched in the main
// thread once per endpoint and handed to every worker as the `ocspStaples` state; its metrics and
// its route. The rest of revocation lives where it acts: CRLs in the listeners' TLS (the native
// driver's rustls, Node's tls), the OCSP check of client certificates in each worker
// (client-check.ts, made by the worker for the endpoints that ask for it).
import type { Feature } from '../feature.ts';
import { registerRevocationMetrics } from './metrics.ts';
import { revocationRoutes } from './routes.ts';
import { Stapler } from './stapler.ts';

export const revocation: Feature<Stapler> = {
  name: 'revocation',
  async start(ctx) {
    const stapler = new Stapler({ log: ctx.log, publish: (staples) => ctx.setWorkerState('ocspStaples', staples) });
    ctx.setWorkerState('ocspStaples', {});
    stapler.configure(ctx.broker.endpointConfigs());
    ctx.broker.onEndpointsChange((why) => {
      if (why === 'tls-reload') stapler.reload();
      else stapler.configure(ctx.broker.endpointConfigs());
    });
    registerRevocationMetrics(ctx.registry, stapler);
    return { api: stapler, routes: () => revocationRoutes(stapler), close: () => stapler.close() };
  },
};
