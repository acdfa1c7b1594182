// The node's endpoints at start: the ports of the configuration file's listeners (port 0, in
// tests, picks a free one), the stored endpoints restored over them, and the check that nothing
// else holds their ports. Holds no state: the EndpointManager it answers owns the endpoints.
import net from 'node:net';

import { reuseportListener, listenerPort, closeFd } from '../native/index.ts';
import type { BrokerConfig } from '../config/index.ts';
import { EndpointManager, type EndpointDeps } from '../broker/endpoints.ts';
import { checkRevocation, configEndpoints, LIMITS } from '../broker/endpoint-config.ts';

export interface Ports {
  tcp?: number;
  tls?: number;
  ws?: number;
}

/** Opens the endpoints of `config` (and the stored ones); fills `ports` with the ports in use. */
export async function openEndpoints(config: BrokerConfig, ports: Ports, deps: Omit<EndpointDeps, 'host' | 'defaultMessageMaxSize'>): Promise<EndpointManager> {
  const c = config.mqtt;
  // Port 0 (tests): the first socket picks a free port, the others join it.
  if (c.tcp.enabled) ports.tcp = c.tcp.port || await freePort(c.host);
  if (c.tls.enabled) ports.tls = c.tls.port || await freePort(c.host);
  if (c.ws.enabled) ports.ws = c.ws.port || await freePort(c.host);
  const endpoints = new EndpointManager({
    ...deps,
    host: c.host,
    defaultMessageMaxSize: Math.min(Math.max(config.limits.maxPacketSize, LIMITS.messageMaxSize[0]), LIMITS.messageMaxSize[1]),
  });
  const fromConfig = configEndpoints(config, ports);
  // The configuration file's TLS endpoint: a CRL that does not load, or OCSP settings it cannot
  // have, stop the start naming the mqtt.tls key.
  for (const e of fromConfig) checkRevocation(e, 'mqtt.tls');
  await endpoints.restore(fromConfig);
  // The ports the endpoints really use (stored changes may have moved one).
  for (const name of ['tcp', 'tls', 'ws'] as const) {
    const e = endpoints.get(name);
    if (e?.enabled) ports[name] = e.port;
    else delete ports[name];
  }
  await checkPortsFree(endpoints);
  return endpoints;
}

/**
 * SO_REUSEPORT would let a second broker share a port with one already running and split the
 * clients between them. A socket without it cannot join a port held with it, so a plain bind
 * first tells whether the port is really free.
 */
async function checkPortsFree(endpoints: EndpointManager): Promise<void> {
  for (const { id, host, port } of endpoints.enabledPorts()) {
    await new Promise<void>((resolve, reject) => {
      const probe = net.createServer();
      probe.once('error', (err: NodeJS.ErrnoException) => reject(Object.assign(new Error(`endpoint ${id}: port ${port} on ${host} is in use (${err.code})`), { code: err.code })));
      probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}

/** A free TCP port on `host` (for port 0 in tests), found by binding and letting go. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const fd = reuseportListener(host, 0, 1, false);
    const port = listenerPort(fd);
    closeFd(fd);
    if (port) resolve(port);
    else reject(new Error('no free port'));
  });
}
