// The contract of a feature: what src/node/features.ts needs to build one from the FEATURES list,
// and all a feature may use of the node. A feature is a folder under src/features/ with this
// file's shape in its `feature.ts` (its name, its start from the store, its routes), and is added
// to the broker by one line in the FEATURES list. Types only.
import type { MetricObjectWithValues, MetricValue, Registry } from 'prom-client';

import type { BrokerConfig } from '../config/index.ts';
import type { LogLineSink, Logger } from '../log/index.ts';
import type { Store } from '../store/types.ts';
import type { Route } from '../admin/http.ts';
import type { WorkerCall, WorkerCallAll } from '../worker/ops/index.ts';
import type { BatchMessage, WorkerStates } from '../worker/messages.ts';
import type { RunLeases } from '../cluster/run-leases.ts';
import type { ClusterPart } from '../cluster/part.ts';
import type { AllAnswers } from '../cluster/admin-ops.ts';
import type { OpName, OpResult } from '../worker/ops/index.ts';
import type { EndpointConfig } from '../broker/endpoint-config.ts';
import type { DelayedReply } from './delayed/types.ts';
import type { DelayedPost } from './delayed/worker-delayed.ts';
import type { SpanPost } from './otel-traces/span-record.ts';
import type { ExclusiveNote, ExclusiveReply } from './exclusive/types.ts';

/** One message a tap matched, as a worker posted it (a copy: its payload is the feature's). */
export interface TapMatch {
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
}

/** A tap: filters in the routing core whose matches every worker posts to the feature. */
export interface FeatureTap {
  close(): Promise<void>;
}

/** The worker threads, as a feature reaches them: typed calls, and a hook that runs for each
 * worker as it starts, before it opens its listeners (a feature sends its state there). */
export interface FeatureWorkers {
  call: WorkerCall;
  callAll: WorkerCallAll;
  /** The workers that answer calls now. */
  running(): number[];
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void;
  /** Delayed publish (src/features/delayed): takes what the workers post, one post per tick. */
  onDelayedAccepts(fn: (worker: number, post: DelayedPost) => void): void;
  /** Answers a worker's delayed messages. */
  replyDelayed(worker: number, replies: DelayedReply[]): void;
  /** OpenTelemetry traces (src/features/otel-traces): takes the spans the workers post, one post
   * per worker every 25 ms at most while it has spans. */
  onOtelSpans(fn: (post: SpanPost) => void): void;
  /** Exclusive subscriptions (src/features/exclusive): takes the places the workers claim, keep
   * and free, one post per tick. */
  onExclusiveNotes(fn: (worker: number, notes: ExclusiveNote[]) => void): void;
  /** Answers a worker's exclusive-subscription claims. */
  replyExclusive(worker: number, replies: ExclusiveReply[]): void;
}

/** What a main-thread manager whose worker half acts on its own tap handles needs of the node
 * (rules, log topics, bridges): handles and their filters, and the workers to install them on. */
export interface TapOwnerHost {
  newHandle(): number;
  setTap(handle: number, filters: readonly string[]): void;
  removeTap(handle: number): void;
  runningWorkers(): number[];
  call: WorkerCall;
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void;
}

/** Routing-core entries a worker acts on itself when a message matches them (a log topic, a
 * rule): a handle of their own, and its filters. Unlike tap(), nothing crosses to the main thread;
 * the feature's worker half must know the handle (sent to the workers like any state). */
export interface FeatureRouting {
  newHandle(): number;
  setTap(handle: number, filters: readonly string[]): void;
  removeTap(handle: number): void;
}

/** An enabled MQTT listener of this node, as a feature announces it (a service registry). */
export interface NodeEndpoint {
  id: string;
  port: number;
  protocol: 'mqtt' | 'mqtts' | 'ws' | 'wss';
  path?: string;
}

/** What a feature may do with the broker itself. */
export interface FeatureBroker {
  /** This node's name. */
  readonly nodeName: string;
  /**
   * Publishes `messages` in order as client PUBLISHes (through one worker; with `orderKey`, the
   * same worker for every batch of that key): resolves once each is routed and, where it must be
   * kept, stored, answering each message's matched count; rejects when that cannot be known.
   */
  publishBatch(messages: BatchMessage[], publisher?: number, publisherHash?: number, orderKey?: string): Promise<number[]>;
  /** The enabled endpoints now (they change at run time). */
  endpoints(): NodeEndpoint[];
  /** Every endpoint's whole configuration now (TLS settings included). */
  endpointConfigs(): EndpointConfig[];
  /** Calls `fn` after every change of the endpoints (`endpoints`), and on every reload of the
   * TLS certificate files (`tls-reload`: SIGHUP). */
  onEndpointsChange(fn: (why: 'endpoints' | 'tls-reload') => void): void;
}

/** The node's metrics, summed over the threads: the series /prometheus serves, as prom-client's
 * JSON (src/metrics/collector.ts). */
export interface NodeMetrics {
  series(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
}

/** What a feature gets from the node when it starts. */
export interface FeatureContext {
  readonly config: BrokerConfig;
  readonly log: Logger;
  /** The store for the feature's own objects (kinds of admin records); in a cluster, writes
   * reach the other nodes when the feature's kinds are replicated. */
  readonly store: Store;
  /** The main thread's Prometheus registry: /prometheus renders it. */
  readonly registry: Registry;
  /**
   * Opens a tap: `filters` enter the routing core, and the messages any worker routes to them
   * are posted to `sink` once per tick. Each match is a copy sent to the main thread: tap what
   * the feature needs. Installed on every worker before it opens its listeners.
   */
  tap(filters: readonly string[], sink: (matches: TapMatch[]) => void): Promise<FeatureTap>;
  readonly workers: FeatureWorkers;
  readonly routing: FeatureRouting;
  /** Replicates the feature's stored objects of `kind` across the cluster's nodes: `apply` takes
   * each change made on another node (the document, or null when it was deleted). Nothing
   * without a cluster. */
  replicate(kind: string, apply: (id: string, doc: unknown) => Promise<void> | void): void;
  readonly broker: FeatureBroker;
  /** In a cluster, the leases that make a feature's task run on one node at a time. */
  readonly leases: RunLeases | null;
  /** In a cluster, adds a part of the feature's own to the cluster link (its NATS subjects; told
   * when nodes come and go); started with the link. Null without a cluster. */
  readonly cluster: {
    addPart(part: ClusterPart): Promise<void>;
    /** Whether what reached this node for the sessions that left it lately has followed them:
     * none is followed any more (src/cluster/forwards.ts) and this node's QoS stream subject has
     * nothing waiting. A drain says drained only then. */
    departuresSettled(): Promise<boolean>;
    /** Resolves once the sessions of the nodes that went down, being adopted here (a store the
     * nodes share: src/cluster/adoption.ts), are here. */
    adoptionSettled(): Promise<unknown>;
    /** Runs a worker operation of the cross-node allow-list (src/cluster/admin-ops.ts) on every
     * other running node: their workers' answers, and the nodes that did not answer in time. */
    askAll<K extends OpName>(op: K): Promise<AllAnswers<OpResult<K>>>;
  } | null;
  /** Sets a piece of state every worker holds a copy of (worker/messages.ts WorkerStates): on
   * every worker now, and on each that starts, before it opens its listeners. */
  setWorkerState<K extends keyof WorkerStates>(key: K, value: WorkerStates[K]): void;
  /** The node's metrics (what /prometheus serves), collected when asked. */
  readonly metrics: NodeMetrics;
  /** Adds a sink for every log line of the node, the main thread's and the workers' (a worker's
   * output then comes through the main thread; added before the workers start, it covers them
   * all). Answers the function that removes it. */
  logLines(sink: LogLineSink): () => void;
  /** The API of a feature started before this one (FEATURES order); throws for any other. */
  use<API>(feature: Feature<API>): API;
}

/** A started feature: what it offers the others and the admin API, and how it stops. */
export interface Started<API> {
  readonly api: API;
  /** The admin API's routes of this feature (served only when the admin API runs). */
  routes?(): Route[];
  close?(): void | Promise<void>;
}

export interface Feature<API = unknown> {
  /** Unique among the features: the name in logs and errors. */
  readonly name: string;
  /** Builds the feature and loads its state; its taps are on every worker before any client
   * connects. */
  start(ctx: FeatureContext): Promise<Started<API>>;
}
