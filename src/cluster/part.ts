// What a piece of the cluster built on the link (retained messages, client ids, configuration)
// is given and told by it.
import type { NatsConnection } from '@nats-io/transport-node';

import type { Logger } from '../log/index.ts';

/**
 * A piece of the cluster built on the link (retained messages, configuration, ...): given the
 * NATS connection once joined, and told when another node comes up (joined, or back after being
 * down or restarting) or goes down. Added before or after the link starts.
 */
export interface ClusterPart {
  /** Its counters appear under this name in /api/cluster/status (`parts`). */
  readonly name?: string;
  readonly counters?: object;
  start(ctx: ClusterPartContext): Promise<void> | void;
  peerUp?(node: string): void;
  peerDown?(node: string): void;
  close?(): Promise<void> | void;
}

export interface ClusterPartContext {
  nc: NatsConnection;
  nodeName: string;
  /** The names of the other nodes now running. */
  runningPeers(): string[];
  /** Whether the connection to NATS is up now (while it is not, nothing reaches the others). */
  natsUp(): boolean;
  log: Logger;
}

