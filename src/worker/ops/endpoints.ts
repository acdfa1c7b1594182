// Endpoint operations on one worker: open (or re-open) a listener, change limits, remove an
// endpoint (its connections here are closed: v5 clients get DISCONNECT 0x8B), and report.
import type { EndpointConfig } from '../../broker/endpoint-config.ts';
import type { OpenEndpoint } from '../../listener/listeners.ts';
import { RC } from '../../protocol/reason-codes.ts';
import type { EndpointConnection } from '../../listener/listeners.ts';
import type { Op, OpsEnv } from './types.ts';
import { rateLimitChanged } from '../../engine/handlers/throttle.ts';
import { OpError } from './types.ts';

export interface EndpointRuntime {
  id: string;
  running: boolean;
  /** Connections accepted here and still open (CONNECTed or not). */
  connections: number;
}

function closeAll(id: string, connections: Iterable<EndpointConnection>): number {
  let n = 0;
  for (const conn of [...connections]) {
    conn.disconnectWith(RC.SERVER_SHUTTING_DOWN, 'endpoint_removed', `endpoint ${id} removed`);
    n++;
  }
  return n;
}

export const endpointOps = {
  async 'endpoints.open'(args: OpenEndpoint, env: OpsEnv): Promise<EndpointRuntime> {
    try {
      await env.listeners.open(args);
    } catch (err) {
      throw new OpError('CONFLICT', (err as Error).message, 'port');
    }
    const ep = env.listeners.endpoints.get(args.config.id)!;
    // Disabled: the endpoint stays known but its connections go.
    if (!args.config.enabled) closeAll(ep.config.id, ep.connections);
    else for (const conn of env.connections) if (conn.endpoint === ep) rateLimitChanged(conn, env.listeners.counters.totals);
    return { id: ep.config.id, running: ep.running, connections: ep.connections.size };
  },

  'endpoints.update'(args: { config: EndpointConfig }, env: OpsEnv): EndpointRuntime {
    env.listeners.update(args.config);
    const ep = env.listeners.endpoints.get(args.config.id);
    if (!ep) throw new OpError('NOT_FOUND', `endpoint ${args.config.id} not open here`);
    // Its clients follow a new rate limit at once (their own override stays theirs).
    for (const conn of env.connections) if (conn.endpoint === ep) rateLimitChanged(conn, env.listeners.counters.totals);
    return { id: ep.config.id, running: ep.running, connections: ep.connections.size };
  },

  'endpoints.remove'(args: { id: string }, env: OpsEnv): { closed: number } {
    const ep = env.listeners.remove(args.id);
    if (!ep) return { closed: 0 };
    return { closed: closeAll(args.id, ep.connections) };
  },

  'endpoints.runtime'(_args: unknown, env: OpsEnv): EndpointRuntime[] {
    return [...env.listeners.endpoints.values()].map((ep) => ({ id: ep.config.id, running: ep.running, connections: ep.connections.size }));
  },
} satisfies Record<string, Op>;
