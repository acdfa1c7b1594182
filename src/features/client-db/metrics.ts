// The built-in client database's Prometheus metrics (main thread): its size read from the manager,
// its authentications summed over the workers' counters when scraped (a worker that restarts
// starts its counts at zero again).
import { Counter, Gauge, type Registry } from 'prom-client';

import type { FeatureWorkers } from '../feature.ts';
import type { ClientDbCountsHost } from './manager.ts';
import type { ClientDbCounters } from './worker-db.ts';

export function registerClientDbMetrics(registry: Registry, db: ClientDbCountsHost, workers: FeatureWorkers): void {
  new Gauge({
    name: 'spindle_client_db_clients',
    help: 'Clients in the built-in client database.',
    registers: [registry],
    collect() {
      this.set(db.clients);
    },
  });
  new Gauge({
    name: 'spindle_client_db_roles',
    help: 'Roles in the built-in client database.',
    registers: [registry],
    collect() {
      this.set(db.roles);
    },
  });
  const sum = async (): Promise<ClientDbCounters> => {
    const total: ClientDbCounters = { authSuccess: 0, authBadCredentials: 0, authDisabled: 0, authClientIdMismatch: 0, authCacheHits: 0 };
    const all = await workers.callAll('clientDb.counters').catch(() => [] as ClientDbCounters[]);
    for (const c of all) for (const k of Object.keys(total) as (keyof ClientDbCounters)[]) total[k] += c[k];
    return total;
  };
  new Counter({
    name: 'spindle_client_db_auth_total',
    help: 'CONNECTs the built-in client database decided, by result: success, bad_credentials (wrong password: 0x86 / 4), disabled (0x87 / 5), client_id_mismatch (a client id other than the bound one: 0x87 / 5).',
    labelNames: ['result'],
    registers: [registry],
    async collect() {
      const t = await sum();
      this.reset();
      this.inc({ result: 'success' }, t.authSuccess);
      this.inc({ result: 'bad_credentials' }, t.authBadCredentials);
      this.inc({ result: 'disabled' }, t.authDisabled);
      this.inc({ result: 'client_id_mismatch' }, t.authClientIdMismatch);
    },
  });
  new Counter({
    name: 'spindle_client_db_auth_cache_hits_total',
    help: 'Successful CONNECTs of built-in clients answered from the verified-credentials cache (auth.clientDbCache), without hashing the password.',
    registers: [registry],
    async collect() {
      const t = await sum();
      this.reset();
      this.inc(t.authCacheHits);
    },
  });
}
