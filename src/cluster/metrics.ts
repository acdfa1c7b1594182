// The cluster's Prometheus metrics (main thread): read from the link and its parts when scraped,
// the same numbers /api/cluster/status answers under `counters` and `parts`.
import { Counter, Gauge, type Registry } from 'prom-client';

import type { ClusterLink } from './cluster.ts';
import type { RetainedCounters } from './retained.ts';
import type { AdminOpsCounters } from './admin-ops.ts';

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

/** Each event of the admin API's questions across nodes and the counter it is read from. */
const ADMIN_EVENTS: [string, keyof AdminOpsCounters][] = [
  ['sent', 'sent'],
  ['served', 'served'],
  ['timeout', 'timeouts'],
  ['failed', 'failures'],
  ['too_large', 'tooLarge'],
  ['bad_request', 'badRequests'],
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
    name: 'spindle_cluster_incompatible_nodes',
    help: 'Nodes heard from whose wire format is not this build\'s (src/cluster/wire-format.ts): not joined, nothing sent to them; all nodes of a cluster must run builds of the same format.',
    registers: [registry],
    collect() {
      this.set(link.nodes().filter((n) => n.status === 'incompatible').length);
    },
  });
  new Counter({
    name: 'spindle_cluster_incompatible_frames_total',
    help: 'Frames (direct, or from the QoS stream) from nodes of another wire format: dropped, since this build would read them wrongly.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(link.counters.incompatibleFrames);
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
  new Counter({
    name: 'spindle_cluster_admin_queries_total',
    help: 'The admin API\'s questions across nodes (connections, sessions, subscriptions, close/down), by event: sent (requests to another node, one per node asked), served (requests of other nodes answered here), timeout (a node that did not answer within 5 s: reported in nodesMissing), failed (a node that answered with a failure, had no responder, or NATS was away), too_large (answers larger than NATS max_payload: refused), bad_request (requests refused here: not in the allow-list, or bad arguments).',
    labelNames: ['event'],
    registers: [registry],
    collect() {
      this.reset();
      const c = link.adminOps?.counters;
      if (c) for (const [event, key] of ADMIN_EVENTS) this.inc({ event }, c[key]);
    },
  });
}
