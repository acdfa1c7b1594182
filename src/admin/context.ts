// What every admin route module is given: the running broker (the supervisor, which reaches the
// workers and the shared routing core), the configuration, the store admin objects live in, the
// admin users, the logger, and the main thread's metrics registry. One per admin server, in the main thread.
import type { Registry } from 'prom-client';

import type { Supervisor } from '../node/supervisor.ts';
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';
import type { AdminAuth } from './auth.ts';
import type { RuleManager } from '../rules/manager.ts';
import type { SourceRegistry } from '../sources/registry.ts';
import type { PolicyManager } from '../policies/manager.ts';
import type { BridgeManager } from '../bridges/manager.ts';
import type { ControlPlatform } from '../platform/platform.ts';
import type { AuditLog } from './audit.ts';
import type { ClusterLink } from '../cluster/index.ts';
import type { Features } from '../node/features.ts';

export interface AdminContext {
  readonly supervisor: Supervisor;
  readonly config: BrokerConfig;
  /** The broker's store; with MEMORY an in-process one (admin objects then last until exit). */
  readonly store: Store;
  readonly auth: AdminAuth;
  /** The rule engine's main-thread half, and the data sources its actions write to. */
  readonly rules: RuleManager;
  readonly sources: SourceRegistry;
  /** Auth and ACL policies (their chains answer the workers). */
  readonly policies: PolicyManager;
  /** MQTT bridges to remote brokers (the configuration file's and the API's). */
  readonly bridges: BridgeManager;
  /** The control platform (/api/v1): tenants, licences, alerts, channels. */
  readonly platform: ControlPlatform;
  /** Every write through both APIs. */
  readonly audit: AuditLog;
  /** This node's part of the cluster, or null when cluster.enabled is off. */
  readonly cluster: ClusterLink | null;
  readonly log: Logger;
  /** The main thread's Prometheus registry: /prometheus renders it beside the workers' metrics. */
  readonly registry: Registry;
  /** Every feature of the node (those of the FEATURES list by features.get(feature)). */
  readonly features: Features;
  /** The admin API's own address: `port` is the bound one, set once the server listens. */
  readonly http: { readonly host: string; port: number };
  /** Registers what a module must stop when the admin API closes (timers, connections). */
  onClose(fn: () => void | Promise<void>): void;
}
