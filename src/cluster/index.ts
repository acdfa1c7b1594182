// The cluster's surface for the composition roots (main.ts, the test broker): made before the
// supervisor starts (the routing core keeps the local interest from the first subscription),
// started once the workers run.
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { ClusterLink, type ClusterHost } from './cluster.ts';

export { ClusterLink, type ClusterNode, type ClusterPart, type ClusterPartContext } from './cluster.ts';

export function createCluster(host: ClusterHost, config: BrokerConfig, log: Logger): ClusterLink | null {
  if (!config.cluster.enabled) return null;
  const c = config.cluster;
  const link = new ClusterLink(host, {
    nodeName: config.nodeName, natsUrl: c.natsUrl, localAddress: c.localAddress, addresses: c.addresses, clientPort: c.clientPort,
    natsServer: c.natsServer, discovery: c.discovery, maxNodes: c.maxNodes, dataDir: config.dataDir,
  }, log.named('cluster'));
  link.reserve();
  return link;
}
