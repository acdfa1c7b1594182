// The drain feature's shapes: what a node reports of a drain or a rebalance, and what nodes tell
// each other of their load. Types only.

/** idle: accepting, nothing moving; draining: not accepting, moving clients away; drained: not
 * accepting, every client gone and every moved session claimed (or past drain.handoverTimeout);
 * rebalancing: accepting, moving its excess clients to the nodes below the average. */
export type DrainState = 'idle' | 'draining' | 'drained' | 'rebalancing';

/** Why clients are being moved: a drain asked through the API, a drain on stop (SIGTERM with
 * drain.onStop), or a rebalance. */
export type MoveReason = 'drain' | 'stop' | 'rebalance';

/** A node clients are sent to: its name (null: the configured drain.serverReference) and the
 * address named in the Server Reference. */
export interface Target {
  node: string | null;
  address: string;
}

export interface DrainStatus {
  state: DrainState;
  /** The reason of the current or last run (null: none yet). */
  reason: MoveReason | null;
  started: string | null;
  finished: string | null;
  /** Clients to move when the run started (a drain: every connected client; a rebalance: this
   * node's excess). */
  total: number;
  /** Clients moved away so far (disconnected with 0x9C, 0x8B, or closed). */
  moved: number;
  /** Clients still to move (a drain: still connected here). */
  remaining: number;
  /** Moved clients whose persistent session is still here, waiting for the node they reconnect
   * to to claim it; those claimed, and those not claimed within drain.handoverTimeout. */
  awaitingHandover: number;
  handedOver: number;
  handoverTimeouts: number;
  /** Clients moved per second. */
  rate: number;
  /** Where clients were sent, and how many to each. */
  targets: { node: string | null; address: string | null; moved: number }[];
}

/** What each node of a cluster tells the others every second (`spindle.drain.load`). */
export interface NodeLoad {
  node: string;
  /** Where its MQTT clients reach it (cluster.mqttAddress); null when it has no plain MQTT
   * endpoint to name. */
  mqtt: string | null;
  connections: number;
  state: DrainState;
  moved: number;
  remaining: number;
  /** When it was measured (ms). */
  at: number;
}

/** A node's part of a rebalance: how many clients it moves, and to which nodes how many. */
export interface RebalanceMove {
  from: string;
  count: number;
  targets: { node: string; address: string; quota: number }[];
}
