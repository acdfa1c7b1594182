// The cluster's surface for the composition roots (main.ts, the test broker): made before the
// supervisor starts (the routing core keeps the local interest from the first subscription),
// started once the workers run.
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { ClusterLink, type ClusterHost } from './cluster.ts';
import { NodeClaimsPart, type ClaimsHost } from './claims.ts';
import { SessionAdoption, type AdoptionHost } from './adoption.ts';
import { ClusterRetained, type RetainedHost } from './retained.ts';
import { ClusterAdminOps, type AdminOpsHost } from './admin-ops.ts';

export { ClusterLink, type ClusterNode } from './cluster.ts';
export type { ClusterPart, ClusterPartContext } from './part.ts';
export { ClusterRetained, type RetainedCounters } from './retained.ts';
export { registerClusterMetrics } from './metrics.ts';
export { ClusterAdminOps, ASK_TIMEOUT_MS, runsAcrossNodes, type MissingNode, type OpRefusal } from './admin-ops.ts';
export { ConfigSync, replicatingStore, type ConfigKind } from './config-sync.ts';

export function createCluster(host: ClusterHost & ClaimsHost & AdoptionHost & RetainedHost & AdminOpsHost, config: BrokerConfig, log: Logger): ClusterLink | null {
  if (!config.cluster.enabled) return null;
  const c = config.cluster;
  const link = new ClusterLink(host, {
    nodeName: config.nodeName, natsUrl: c.natsUrl, localAddress: c.localAddress, addresses: c.addresses, clientPort: c.clientPort,
    natsServer: c.natsServer, discovery: c.discovery, maxNodes: c.maxNodes, dataDir: config.dataDir,
  }, log.named('cluster'));
  link.reserve();
  link.claims = new NodeClaimsPart(host);
  void link.addPart(link.claims);
  link.claims.forwards = link.forwards;
  link.adoption = new SessionAdoption(host, (node, clientIds) => link.qos.takeOver(node, clientIds));
  link.claims.adoption = link.adoption;
  void link.addPart(link.adoption);
  // Retained messages visible from every node (a part: started with the link).
  void link.addPart(new ClusterRetained(host, config.nodeName));
  // The admin API of any node answers for the cluster: each node answers the others' questions.
  link.adminOps = new ClusterAdminOps(host);
  void link.addPart(link.adminOps);
  return link;
}
export { NodeFigureSampler, type NodeFigures } from './node-figures.ts';
