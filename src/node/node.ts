// The node: the one root of the main thread, for the `spindle` command and the tests alike. Opens
// the store and the endpoints, builds every feature (node/features.ts), starts the workers (each
// gets every feature's state before it opens its listeners), joins the cluster, and serves the
// admin API when it is enabled. Stops in the reverse order.
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { Supervisor, type Ports } from './supervisor.ts';
import type { ClusterLink } from '../cluster/index.ts';
import type { AdminHandle } from '../admin/index.ts';
import { startFeatures, type Features } from './features.ts';
import { drain } from '../features/drain/index.ts';

export interface NodeHandle {
  readonly supervisor: Supervisor;
  readonly ports: Ports;
  readonly features: Features;
  /** This node's part of the cluster (null when cluster.enabled is off). */
  readonly cluster: ClusterLink | null;
  /** The admin API (null when admin.enabled is off). */
  readonly admin: AdminHandle | null;
  /** Graceful stop: with drain.onStop a drain first (features/drain), then the admin API, the
   * features, the cluster, then the workers and the store. */
  close(): Promise<void>;
}

export interface NodeOptions {
  /** The routing core's name (tests run several nodes in one process). */
  routerName?: string;
}

export async function startNode(config: BrokerConfig, log: Logger, options: NodeOptions = {}): Promise<NodeHandle> {
  const supervisor = new Supervisor(config, log, options.routerName);
  // Before anything subscribes: the cluster reserves its routing-core handles.
  // The cluster's modules (and the NATS client) load only when it is enabled.
  const cluster = config.cluster.enabled ? (await import('../cluster/index.ts')).createCluster(supervisor, config, log) : null;
  await supervisor.open();
  let features: Features | null = null;
  let admin: AdminHandle | null = null;
  let started = false;
  const close = async () => {
    // drain.onStop: the clients move away first, while the admin API still shows the progress.
    if (started) await features?.get(drain).beforeStop();
    await admin?.close();
    await features?.close();
    if (started) await cluster?.close();
    await supervisor.shutdown();
  };
  try {
    features = await startFeatures(supervisor, config, log, cluster);
    const ports = await supervisor.startWorkers();
    started = true;
    await cluster?.start();
    // The admin API adds its own replicated kinds (admin users, dashboards) before the
    // configuration is read from the other nodes, and listens only once it was.
    // Loaded now, not with this module: the workers' listeners open without waiting for the
    // admin API's modules (its routes and their schemas).
    if (config.admin.enabled) admin = await (await import('../admin/index.ts')).startAdmin(supervisor, config, log, cluster, features);
    else await features.replicate();
    return { supervisor, ports, features, cluster, admin, close };
  } catch (err) {
    await close().catch((e: unknown) => log.error('stopping after a failed start failed', { err: e }));
    throw err;
  }
}
