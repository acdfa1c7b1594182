// Owns the choice of store backend from the configuration (store.storeType).
import path from 'node:path';

import type { BrokerConfig } from '../config/index.ts';
import { MemoryStore } from './memory/memory-store.ts';
import { LocalStore } from './local/local-store.ts';
import type { Store } from './types.ts';

export type { Store } from './types.ts';
export { StoreError } from './errors.ts';

/** A store for the configured backend, not yet opened. */
export async function createStore(config: Pick<BrokerConfig, 'store' | 'dataDir'>): Promise<Store> {
  const { storeType, datasource } = config.store;
  switch (storeType) {
    case 'MEMORY':
      return new MemoryStore();
    case 'LOCAL':
      return new LocalStore({ dataDir: path.resolve(config.dataDir) });
    case 'POSTGRESQL': {
      // Loaded only when chosen, like the driver it needs.
      const { PostgresStore } = await import('./postgres/postgres-store.ts');
      return new PostgresStore({ url: datasource.url, username: datasource.username || undefined, password: datasource.password || undefined });
    }
    case 'MYSQL': {
      // Loaded only when chosen, like the driver it needs.
      const { MysqlStore } = await import('./mysql/mysql-store.ts');
      return new MysqlStore({ url: datasource.url, username: datasource.username || undefined, password: datasource.password || undefined });
    }
  }
}
