// Typed messages between the supervisor, the workers, and worker peers. Errors cross as
// {code, message} and are rebuilt on arrival (classes do not survive postMessage).
import type { MessagePort } from 'node:worker_threads';

import type { PlainError } from '../errors/domain-error.ts';
import type { HandoverMessage } from '../engine/session/handover.ts';
import type { PolicyQuestion, PolicyReply, PolicyState } from '../policies/channel.ts';
import type { NodeClaim, NodeClaimReply } from './node-claims.ts';
import type { WorkerStatsSnapshot } from '../stats/worker-stats.ts';
import type { BridgeOutput, ViewerSkips } from '../bridges/worker-bridges.ts';
import type { RetainedChange } from '../router/retained-changes.ts';

import type { ProcessorState } from '../features/scripts/types.ts';
import type { BanWorkerState } from '../features/bans/worker-bans.ts';
import type { SchemaWorkerState } from '../features/schema-registry/types.ts';
import type { OcspStaple, OpenEndpoint } from '../listener/listeners.ts';
import type { OverloadMarks } from '../features/overload/types.ts';
import type { RewriteWorkerState } from '../features/rewrite/rules.ts';
import type { ExclusiveWorkerState } from '../features/exclusive/worker-exclusive.ts';
import type { ExclusiveNote, ExclusiveReply } from '../features/exclusive/types.ts';
import type { DelayedReply, DelayedWorkerState } from '../features/delayed/types.ts';
import type { DelayedPost } from '../features/delayed/worker-delayed.ts';
import type { TopicMetricsWorkerState } from '../features/topic-metrics/types.ts';
import type { SlowSubsWorkerState } from '../features/slow-subs/types.ts';
import type { SpanPost } from '../features/otel-traces/span-record.ts';

export interface PlainMessage {
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  expiresAt: number;
}

/** A message an inbound bridge publishes (Supervisor.publishBatch); props are MQTT 5 properties
 * as encoded in a PUBLISH (null: none). */
export interface BatchMessage extends PlainMessage {
  props: Uint8Array | null;
  /** A message another node of the cluster sent (published with the cluster's inbound handle):
   * whether it is for the plain subscribers here, and the shared groups this node was picked for
   * (`$share/<group>/<filter>`), and the publisher's client-id hash there. Absent elsewhere. */
  plain?: boolean;
  shares?: string[] | null;
  publisherHash?: number;
  /** Its identity across the cluster (src/cluster/batch.ts FrameMessage.origin; '' none). */
  origin?: string;
  /** Only for the sessions of these client ids here (null: whoever matches). */
  only?: readonly string[] | null;
  /** Who it is traced as (OpenTelemetry spans' `messaging.client.id`): a delayed message's
   * publisher, `bridge:<name>`, `command:<id>`; absent: `broker`. Not for messages from another node. */
  tracedAs?: string;
  /** The W3C trace context it came with from outside MQTT (a command's source record's
   * `traceparent` and `tracestate` headers): put into its properties as the user properties of an
   * MQTT 5 PUBLISH, so it is traced, or passed on to subscribers, as a publisher's would be. An
   * invalid traceparent is left out. */
  traceparent?: string;
  tracestate?: string;
}

/** The state every worker holds a copy of, by key (the main thread's ReplicatedState). */
export interface WorkerStates {
  /** The auth and ACL policy chains (src/policies). */
  policies: PolicyState;
  /** The scripts and extensions (src/features/scripts). */
  processors: ProcessorState;
  /** The node is draining (src/features/drain): new connections are closed at once. */
  draining: boolean;
  /** The ban list's shared counters and flapping detection (src/features/bans); the bans
   * themselves come as worker operations (bans.*). */
  bans: BanWorkerState;
  /** Overload protection's marks (src/features/overload). */
  overload: OverloadMarks;
  /** The OCSP responses stapled per endpoint id (src/features/revocation/stapler.ts); an endpoint
   * absent here staples nothing. */
  ocspStaples: Record<string, OcspStaple>;
  /** The topic rewrite rules and their shared counters (src/features/rewrite). */
  rewrite: RewriteWorkerState;
  /** The node's table of exclusive subscriptions (src/features/exclusive). */
  exclusive: ExclusiveWorkerState;
  /** The schema registry's schemas and topic checks (src/features/schema-registry). */
  schemaRegistry: SchemaWorkerState;
  /** Delayed publish on or off, and its longest delay (src/features/delayed). */
  delayed: DelayedWorkerState;
  /** The filters with topic metrics (src/features/topic-metrics). */
  topicMetrics: TopicMetricsWorkerState;
  /** Slow subscriber settings (src/features/slow-subs). */
  slowSubs: SlowSubsWorkerState;
}


export type ToWorker =
  /** A warm worker's data (node/worker-prewarm.ts), its first message; a cold one has it at spawn. */
  | { t: 'init'; data: Record<string, unknown> }
  | { t: 'peer'; worker: number; port: MessagePort }
  | { t: 'peer-gone'; worker: number }
  /** The cluster's answer for a ticket of QoS 1/2 messages sent to other nodes (WorkerBridges). */
  | { t: 'cluster-acked'; ticket: number; ok: boolean }
  | { t: 'publish'; message: PlainMessage }
  | { t: 'stats' }
  | { t: 'reload-tls' }
  /** Read auth.passwordFile and auth.aclFile again (SIGHUP). */
  | { t: 'reload-auth' }
  | { t: 'rpc'; id: number; op: string; args: unknown }
  /** A piece of state every worker holds a copy of: sent when the worker starts (before it opens
   * its listeners) and again on each change. */
  | { [K in keyof WorkerStates]: { t: 'state'; key: K; value: WorkerStates[K] } }[keyof WorkerStates]
  /** Answers to this worker's policy questions, one post per tick. */
  | { t: 'policy-replies'; replies: PolicyReply[] }
  /** Answers to this worker's client-id claims across the cluster's nodes, one post per tick. */
  | { t: 'node-claim-replies'; replies: NodeClaimReply[] }
  /** Answers to this worker's delayed messages (stored or refused), one post per tick. */
  | { t: 'delayed-replies'; replies: DelayedReply[] }
  /** Answers to this worker's exclusive-subscription claims in a cluster (src/features/exclusive). */
  | { t: 'exclusive-replies'; replies: ExclusiveReply[] }
  /** Every feature's state is in place: open these endpoints' listeners, then answer 'ready'. */
  | { t: 'open'; endpoints: OpenEndpoint[] }
  | { t: 'shutdown' };

export type FromWorker =
  /** Sessions restored: the worker answers operations and routes; no listener is open yet. */
  | { t: 'loaded' }
  /** Listeners open: clients are accepted. */
  | { t: 'ready' }
  | { t: 'failed'; error: { code: string; message: string } }
  | { t: 'stats'; stats: WorkerStatsSnapshot }
  | { t: 'rpc-reply'; id: number; value?: unknown; error?: RpcError }
  /** Outputs of rules with actions that run in the main thread, one post per tick: pairs of
   * a rule's handle and one output object. */
  | { t: 'rule-outputs'; items: unknown[] }
  /** Messages for the MQTT bridges (their local filters matched), one post per tick. */
  | { t: 'bridge-outputs'; items: BridgeOutput[]; ticket: number; skipped: ViewerSkips | null }
  /** Retained sets and clears made on the worker, for the cluster, one post per tick. */
  | { t: 'retained-changes'; items: RetainedChange[] }
  /** Questions to the auth and ACL policy chains, one post per tick. */
  | { t: 'policy-questions'; questions: PolicyQuestion[] }
  /** Client ids CONNECTs here want, for the cluster's other nodes to give up; one post per tick. */
  | { t: 'node-claims'; claims: NodeClaim[] }
  /** Delayed messages to store, and the worker's refusals, one post per tick (src/features/delayed). */
  | ({ t: 'delayed-accepts' } & DelayedPost)
  /** Spans of sampled messages (OpenTelemetry traces), one post every 25 ms at most (src/features/otel-traces). */
  | ({ t: 'otel-spans' } & SpanPost)
  /** Exclusive subscription places claimed, kept or freed, one post per tick (src/features/exclusive). */
  | { t: 'exclusive-notes'; notes: ExclusiveNote[] }
  | { t: 'stopped' };

/** An error of a worker operation: a domain error's plain form (src/errors/domain-error.ts). */
export type RpcError = PlainError;

/** Between two workers: delivery batches, and the hand-over of sessions. */
export type PeerMessage =
  | { t: 'batch'; buffer: ArrayBuffer; length: number }
  | HandoverMessage;
