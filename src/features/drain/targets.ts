// Where moved clients go: the least loaded running node for a drain, and the plan of a rebalance
// (the nodes above the average give their excess to those below). Pure functions over the nodes'
// loads; no state of their own.
import type { NodeLoad, RebalanceMove, Target } from './types.ts';

/**
 * Picks a target for each of `n` clients among `loads` (running nodes that accept and have an
 * address), each time the least loaded counting the clients already sent to it (`sent`, by node,
 * since its load was measured). None: `fallback` (drain.serverReference) or null.
 */
export function leastLoaded(loads: readonly NodeLoad[], sent: ReadonlyMap<string, number>, n: number, fallback: string | null): (Target | null)[] {
  const open = loads.filter((l) => l.mqtt !== null && l.state !== 'draining' && l.state !== 'drained');
  if (open.length === 0) return Array.from({ length: n }, () => (fallback === null ? null : { node: null, address: fallback }));
  const counts = open.map((l) => l.connections + (sent.get(l.node) ?? 0));
  const out: Target[] = [];
  for (let i = 0; i < n; i++) {
    let best = 0;
    for (let k = 1; k < open.length; k++) if (counts[k] < counts[best] || (counts[k] === counts[best] && open[k].node < open[best].node)) best = k;
    counts[best]++;
    out.push({ node: open[best].node, address: open[best].mqtt! });
  }
  return out;
}

/**
 * A rebalance of `loads` (every running node, this one included): each node's share is the total
 * over the nodes, the remainder going one each to the most loaded; a node above its share moves
 * the excess, to the nodes below theirs, most loaded first to the least loaded first. Nodes
 * without an MQTT address take nothing (clients could not be told where to go). The moves sum to
 * what the nodes below their share lack.
 */
export function planRebalance(loads: readonly NodeLoad[]): RebalanceMove[] {
  const nodes = [...loads].sort((a, b) => b.connections - a.connections || (a.node < b.node ? -1 : 1));
  const total = nodes.reduce((s, l) => s + l.connections, 0);
  if (nodes.length < 2 || total === 0) return [];
  const floor = Math.floor(total / nodes.length);
  const rest = total % nodes.length;
  const share = nodes.map((_, i) => floor + (i < rest ? 1 : 0));
  const under = nodes.map((l, i) => ({ node: l.node, address: l.mqtt, lack: l.mqtt === null ? 0 : Math.max(0, share[i] - l.connections) }))
    .filter((u) => u.lack > 0)
    .sort((a, b) => b.lack - a.lack);
  const moves: RebalanceMove[] = [];
  nodes.forEach((l, i) => {
    let excess = l.connections - share[i];
    if (excess <= 0) return;
    const move: RebalanceMove = { from: l.node, count: 0, targets: [] };
    for (const u of under) {
      if (excess === 0) break;
      const q = Math.min(excess, u.lack);
      if (q === 0) continue;
      move.targets.push({ node: u.node, address: u.address!, quota: q });
      move.count += q;
      u.lack -= q;
      excess -= q;
    }
    if (move.count > 0) moves.push(move);
  });
  return moves;
}
