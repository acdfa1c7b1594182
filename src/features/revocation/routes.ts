// The revocation feature's route: what every stapling endpoint staples now.
import { ok, type Route } from '../../admin/http.ts';
import type { Stapler } from './stapler.ts';

export function revocationRoutes(stapler: Stapler): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/tls/ocsp-staples',
      access: 'read',
      tag: 'endpoints',
      summary: 'OCSP stapling of the TLS endpoints that have sslConfig.ocspStapling enabled: [{endpoint, responder, state (fetching|stapled|failing|error), stapled (a current response is served), thisUpdate, nextUpdate, certStatus (good|revoked|unknown), lastError, nextFetch}]',
      handler: async () => ok(stapler.status()),
    },
  ];
}
