// The MQTT engine of one worker thread, wired: the router over the shared routing core, the
// session table, outbox and wills, the environment subscriptions are made in, and the packet
// handlers' host and dispatcher. The one place these concrete classes meet; worker.ts gives it
// the thread's messaging and store, the in-memory engine of the unit tests gives it in-memory ones.
import { Router, RetainedStore, type ClientRegistry } from '../native/index.ts';
import type { BrokerConfig } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import type { Authenticator, Authorizer, AuthMethod, ClientIdentity } from '../auth/index.ts';
import type { EndpointCounters } from '../broker/endpoint-counters.ts';
import { WorkerRouter } from '../router/worker-router.ts';
import type { PostRetained } from '../router/retained-changes.ts';
import { SessionTable } from '../engine/session/session-table.ts';
import type { NodeClaims } from '../engine/session/node-handover.ts';
import { Outbox, type Shedding } from '../engine/session/outbox.ts';
import { NO_TOPIC_METER, type AckMeter, type TopicMeter } from '../engine/session/meters.ts';
import { Wills } from '../engine/session/wills.ts';
import type { Persistence } from '../engine/session/persistence.ts';
import type { Session, SessionLimits } from '../engine/session/session.ts';
import type { HandoverMessage } from '../engine/session/handover.ts';
import type { ProxyEnv } from '../engine/session/proxy-subscriptions.ts';
import { createDispatcher } from '../engine/handlers/dispatch.ts';
import { NO_ACK_GATES, NO_DELAYED, NO_PAYLOAD_CHECK, NO_TRANSFORMS, NO_EXCLUSIVE, NO_REWRITE, OPEN_GATE, type ExclusivePlaces, type AckGates, type ConnectGate, type DelayedPublishes, type PayloadCheck, type TopicRewrite, type Dispatcher, type HandlerHost, type MessageTransforms } from '../engine/handlers/client.ts';
import type { WorkerStats } from '../stats/worker-stats.ts';
import { NO_EVENTS, type EngineEvents } from '../engine/session/events.ts';
import type { Message } from '../broker/message.ts';
import { NO_TRACER, type MessageTracer } from '../broker/trace-context.ts';
import type { AuthFailureLimiter } from '../auth/failure-limiter.ts';

/** What the engine needs from its thread. */
export interface EngineDeps {
  readonly workerId: number;
  readonly config: BrokerConfig;
  readonly log: Logger;
  readonly stats: WorkerStats;
  /** The name of the process-wide routing core, retained store and client registry. */
  readonly routerName: string;
  readonly registry: InstanceType<typeof ClientRegistry>;
  /** Shared by every worker's router: the subscription set's generation and the routing clock. */
  readonly routeShared: SharedArrayBuffer;
  readonly persistence: Persistence | null;
  readonly endpointCounters: EndpointCounters;
  readonly authenticator: Authenticator;
  readonly authMethods: ReadonlyMap<string, AuthMethod>;
  authorizerFor(who: ClientIdentity, peerhost?: () => string): Authorizer;
  /** Posts a delivery batch (its buffer transferred) to another worker; false when there is no way. */
  sendBatch(worker: number, buffer: ArrayBuffer, length: number): boolean;
  /** Posts a hand-over message to another worker. */
  sendControl(worker: number, msg: HandoverMessage): void;
  /** The other workers running now. */
  peers(): readonly number[];
  /** Loads the stored session of `clientId` under `handle` (its worker died); null when none. */
  loadStored(clientId: string, handle: number): Promise<Session | null>;
  /** The rule engine: client and message events, and the rules a publish matched (none when
   * not given). */
  readonly events?: EngineEvents;
  tapMatched?(rule: number, m: Message, publisher: number, share: number, publisherHash: number): void;
  /** Where the router's retained changes go when the cluster is on (see RetainedChanges). */
  postRetained?: PostRetained;
  /** Failed authentications per source address, shared by every worker (none when not given). */
  readonly authFailures?: AuthFailureLimiter | null;
  /** Who may not connect (none when not given). */
  readonly gate?: ConnectGate;
  /** Topic rewrite (none when not given). */
  readonly rewrite?: { readonly current: TopicRewrite };
  /** Exclusive subscriptions (none when not given). */
  readonly exclusive?: ExclusivePlaces;
  /** Schema checks on topic filters (src/features/schema-registry). */
  readonly payloadCheck?: PayloadCheck;
  /** Scripts and extensions (none when not given). */
  readonly transforms?: MessageTransforms;
  /** Client-id claims across a cluster's nodes (none when not given). */
  readonly nodes?: NodeClaims;
  /** What must accept a routed QoS 1/2 message before it is acknowledged (none when not given). */
  readonly ackGates?: AckGates;
  /** Overload protection's state on this worker (never refusing when not given). */
  readonly overload?: HandlerHost['overload'];
  /** Delayed publish (src/features/delayed). */
  readonly delayed?: DelayedPublishes;
  /** QoS 0 shedding to slow clients while overloaded (none when not given). */
  readonly shedding?: Shedding;
  /** Topic metrics (src/features/topic-metrics; none when not given). */
  readonly topics?: TopicMeter;
  /** Slow subscribers (src/features/slow-subs; none when not given). */
  readonly acks?: AckMeter;
  /** OpenTelemetry traces of sampled messages (off when not given). */
  readonly tracer?: MessageTracer;
}

export interface Engine {
  readonly router: WorkerRouter;
  readonly sessions: SessionTable;
  readonly outbox: Outbox;
  /** Where the broker's own subscriptions are made (admin API, proxy and local subscriptions). */
  readonly proxies: ProxyEnv;
  readonly host: HandlerHost;
  readonly dispatcher: Dispatcher;
  readonly sessionLimits: SessionLimits;
}

export function createEngine(deps: EngineDeps): Engine {
  const { workerId, config, log, stats, persistence } = deps;
  const limits = config.limits;
  const sessionLimits: SessionLimits = { maxQueued: limits.maxQueuedMessages, dropPolicy: limits.queueDropPolicy };
  // The router and the session table refer to each other only through RouterHost, which the
  // session table answers (it is made just below; the host's functions run later).
  const router: WorkerRouter = new WorkerRouter(
    {
      workerId,
      deliverLocal: (handle, d, cache, from) => sessions.deliverLocal(handle, d, cache, from),
      storedLocally: (handle) => sessions.byHandle.get(handle)?.stored,
      mayHaveNoLocal: (handle) => sessions.byHandle.get(handle)?.mayHaveNoLocal() ?? true,
      movedTo: (handle) => sessions.movedTo(handle),
      forwardOf: (handle) => sessions.forwardOf(handle),
      sendBatch(worker, buffer, length) {
        if (!deps.sendBatch(worker, buffer, length)) stats.dropped.noSession++;
      },
      dropped: () => stats.dropped.noSession++,
      tapMatched: deps.tapMatched ?? (() => {}),
      postRetained: deps.postRetained,
    },
    Router.open(deps.routerName),
    RetainedStore.open(deps.routerName),
    deps.routeShared,
  );
  const retainedDefaultExpiryMs = limits.retainedDefaultExpiry * 1000;
  router.setRetainedLimits({ maxCount: limits.maxRetainedMessages, maxPayload: limits.maxRetainedPayloadSize, defaultExpiryMs: retainedDefaultExpiryMs });
  if (persistence) persistence.retainedDefaultExpiryMs = retainedDefaultExpiryMs;
  const events = deps.events ?? NO_EVENTS;
  const tracer = deps.tracer ?? NO_TRACER;
  const outbox = new Outbox({ maxInflight: limits.maxInflight, queueQos0: limits.queueQos0 }, stats, persistence, events, deps.shedding, deps.topics, deps.acks, tracer);
  const wills = new Wills({ log, stats, router, persistence, authorizerFor: deps.authorizerFor, tracer });
  const sessions: SessionTable = new SessionTable({
    workerId,
    exclusive: deps.exclusive ?? NO_EXCLUSIVE,
    limits: sessionLimits,
    log,
    stats,
    router,
    persistence,
    outbox,
    wills,
    endpointCounters: deps.endpointCounters,
    registry: deps.registry,
    sendControl: deps.sendControl,
    peers: deps.peers,
    loadStored: deps.loadStored,
    nodes: deps.nodes ?? null,
  });
  const proxies: ProxyEnv = {
    router,
    persistence,
    maxTopicLevels: limits.maxTopicLevels,
    log,
    sessions: () => sessions.all(),
    owns: (s) => sessions.owns(s),
  };
  const host: HandlerHost = {
    config,
    log,
    stats,
    router,
    sessions,
    outbox,
    persistence,
    authenticator: deps.authenticator,
    authMethods: deps.authMethods,
    endpointCounters: deps.endpointCounters,
    proxies,
    authorizerFor: deps.authorizerFor,
    events,
    authFailures: deps.authFailures ?? null,
    gate: deps.gate ?? OPEN_GATE,
    rewrite: deps.rewrite ?? NO_REWRITE,
    exclusive: deps.exclusive ?? NO_EXCLUSIVE,
    payloadCheck: deps.payloadCheck ?? NO_PAYLOAD_CHECK,
    transforms: deps.transforms ?? NO_TRANSFORMS,
    ackGates: deps.ackGates ?? NO_ACK_GATES,
    overload: deps.overload ?? { refusing: false, refused: 0 },
    delayed: deps.delayed ?? NO_DELAYED,
    topics: deps.topics ?? NO_TOPIC_METER,
    tracer,
  };
  return { router, sessions, outbox, proxies, host, dispatcher: createDispatcher(host), sessionLimits };
}
