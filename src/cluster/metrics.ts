// The cluster's Prometheus metrics (main thread): read from the link and its parts when scraped,
// the same numbers /api/cluster/status answers under `counters` and `parts`.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { ClusterLink } from './cluster.ts';
import type { RetainedCounters } from './retained.ts';

/** Each event of retained replication and the counter it is read from. */
const RETAINED_EVENTS: [string, keyof RetainedCounters][] = [
  ['sent', 'sent'],
  ['received', 'received'],
  ['applied', 'applied'],
  ['stale', 'stale'],
  ['expired', 'expired'],
  ['too_large', 'tooLarge'],
  ['bad_frame', 'badFrames'],
  ['sync', 'syncs'],
  ['sync_failed', 'syncFailures'],
  ['sync_served', 'syncsServed'],
  ['tombstone_dropped', 'tombstonesDropped'],
  ['store_failed', 'storeFailures'],
];

export function registerClusterMetrics(registry: Registry, link: ClusterLink): void {
  const retained = () => link.partCounters().retained as RetainedCounters | undefined;
  new Counter({
    name: 'spindle_cluster_retained_total',
    help: 'Retained messages across nodes, by event: sent (local sets and clears sent to the other nodes, one per topic per 50 ms window), received (entries from other nodes, live and catch-up), applied (newer than what this node held), stale (older or equal: dropped), expired (past their Message Expiry Interval: dropped), too_large (larger than NATS max_payload: not sent), bad_frame (entries or frames that do not parse), sync / sync_failed (catch-ups from another node done / timed out), sync_served (catch-ups answered), tombstone_dropped (clears forgotten early: more than 100000 kept), store_failed (writes to this node\'s store that failed).',
    labelNames: ['event'],
    registers: [registry],
    collect() {
      this.reset();
      const c = retained();
      if (c) for (const [event, key] of RETAINED_EVENTS) this.inc({ event }, c[key]);
    },
  });
  new Counter({
    name: 'spindle_cluster_shared_total',
    help: 'Shared subscriptions as one group across nodes, by event: sent (picks of another node as the member of a group: the message crossed to it for that group), received (picks of this node by another), no_member (picks of a node that had no member of the group left when the message came: the message went to no member of that group).',
    labelNames: ['event'],
    registers: [registry],
    collect() {
      this.reset();
      const c = link.counters;
      this.inc({ event: 'sent' }, c.sharedSent);
      this.inc({ event: 'received' }, c.sharedReceived);
      this.inc({ event: 'no_member' }, c.sharedNoMember);
    },
  });
  new Gauge({
    name: 'spindle_cluster_retained_tombstones',
    help: 'Cleared retained topics remembered (24 h, at most 100000) so that a node coming back does not bring them back.',
    registers: [registry],
    collect() {
      this.set(retained()?.tombstones ?? 0);
    },
  });
}
