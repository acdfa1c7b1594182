// What the packet handlers see: the client connection a packet came from (Client), and the
// worker thread's services (HandlerHost). Both are interfaces, so the handlers never import the
// connection or the worker; the connection layer implements Client and the worker wires the
// host. Unit tests give the handlers in-memory implementations of both.
import type { Packet } from '../../native/index.ts';
import type { Message } from '../../broker/message.ts';
import type { MessageTracer } from '../../broker/trace-context.ts';
import type { Logger } from '../../log/index.ts';
import type { AuthContinuation, Authenticator, Authorizer, AuthMethod, AuthResult, ClientIdentity } from '../../auth/index.ts';
import type { BrokerConfig } from '../../config/index.ts';
import type { EndpointConfig } from '../../broker/endpoint-config.ts';
import type { EndpointCounters } from '../../broker/endpoint-counters.ts';
import type { RateLimiter } from '../../broker/rate-limiter.ts';
import type { CloseReason } from '../../protocol/reason-codes.ts';
import type { Version } from '../../protocol/send.ts';
import type { EndpointStats } from '../../stats/endpoint-stats.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { WorkerRouter } from '../../router/worker-router.ts';
import type { Persistence } from '../session/persistence.ts';
import type { Session } from '../session/session.ts';
import type { SessionLink } from '../session/link.ts';
import type { SessionTable } from '../session/session-table.ts';
import type { Outbox } from '../session/outbox.ts';
import type { ProxyEnv } from '../session/proxy-subscriptions.ts';
import type { EngineEvents } from '../session/events.ts';
import type { TopicMeter } from '../session/meters.ts';
import type { AuthFailureLimiter } from '../../auth/failure-limiter.ts';

/** A packet handler may finish later (authentication, authorization, the store): the connection
 * then holds the packets that follow until it has. */
export type HandlerResult = void | Promise<void>;

export type ClientState = 'new' | 'connecting' | 'connected' | 'closed';

/** An enhanced-authentication exchange in progress on a connection (handlers/auth.ts). */
export interface AuthExchange {
  /** The Authentication Method. */
  readonly method: string;
  /** The method's step that takes the client's next AUTH 0x18; null while a step is computed. */
  next: AuthContinuation | null;
  /** Closes the connection when the exchange takes longer than auth.exchangeTimeout. */
  readonly timer: NodeJS.Timeout;
  /** CONNECT: goes on with the CONNECT once the exchange is over. null: a re-authentication. */
  readonly resume: ((result: AuthResult, data: Buffer | undefined) => HandlerResult) | null;
}

/** The endpoint (listener) a connection came in on, as handlers see it. */
export interface ClientEndpoint {
  readonly config: EndpointConfig;
  readonly slot: number;
  readonly stats: EndpointStats;
  /** The OCSP check of client certificates (sslConfig.ocspClientCheck), asked at CONNECT before
   * authentication; absent or null: none. */
  readonly certificateCheck?: CertificateCheck | null;
}

/** What a CONNECT's client certificate is checked by (src/features/revocation/client-check.ts). */
export interface CertificateCheck {
  /** SUCCESS (0) to go on, or the reason code to refuse the CONNECT with (0x87 revoked or
   * unknown, 0x88 the responder could not tell and the check fails closed); a promise of it when
   * the responder must be asked. Counts what it decides. */
  check(c: { peerCertificates(): Buffer[] | undefined }): number | Promise<number>;
}

/** A client connection, as the packet handlers see it. */
/** What the handlers read of a PROXY protocol header (the transport's ProxyOrigin). */
export interface ClientProxy {
  /** PP2_TYPE_AUTHORITY: the server name (SNI) the client asked the balancer for. */
  readonly serverName: string | undefined;
  /** PP2_SUBTYPE_SSL_CN: the client certificate's CN, as the balancer sent it. */
  readonly certificateCN: string | undefined;
  /** The balancer verified that certificate. */
  readonly certificateVerified: boolean;
}

export interface Client extends SessionLink {
  state: ClientState;
  version: Version;
  clientId: string;
  /** Under a client trace (src/features/tracing): its messages are always traced by
   * OpenTelemetry traces too. */
  readonly traced: boolean;
  username: string | undefined;
  /** Hash of the client id, for the hash_clientid shared-subscription strategy. */
  clientHash: number;
  cleanStart: boolean;
  session: Session | null;
  authorizer: Authorizer;
  identity: ClientIdentity;
  /** Limits the client asked for in CONNECT (v5). */
  receiveMaximum: number;
  maxPacketSize: number;
  aliasMaxOut: number;
  normalDisconnect: boolean;
  /** The connection is counted in its endpoint's connections (maxConnectionSize). */
  countedOnEndpoint: boolean;
  /** The Authentication Method of the CONNECT (MQTT 5), which a re-authentication must use. */
  authMethod: string | undefined;
  /** The enhanced-authentication exchange in progress, or null. */
  authExchange: AuthExchange | null;
  readonly endpoint: ClientEndpoint;
  /** The endpoint's Maximum Packet Size when the connection was accepted (CONNACK advertises it). */
  readonly endpointMaxPacket: number;
  readonly remoteAddress: string;
  readonly certificateCN: string | undefined;
  /** The transport's TLS-PSK identity (identityAsUsername), the client's username. */
  readonly pskIdentity?: string;
  /** The certificates a TLS client presented (DER, its own first); undefined without. */
  peerCertificates(): Buffer[] | undefined;
  /** What a PROXY protocol header said of the client's TLS with its balancer (undefined: no
   * header, or one that named no client). */
  readonly proxy: ClientProxy | undefined;
  /** Its last PUBLISH topic through the topic rewrite rules (TopicRewrite.publishFrom); absent
   * or null until it publishes with rules in force. */
  rewriteMemo?: RewriteMemo | null;
  /** Topic aliases the client set [MQTT-3.3.2-9]: alias -> topic bytes. */
  readonly aliasesIn: Map<number, Buffer>;
  /** Traffic counters for the admin API. */
  messagesIn: number;
  /** The tail of this connection's publishes waiting for the store (null: none), and how many. */
  publishChain: Promise<void> | null;
  publishPending: number;
  /** Messages of the pipeline still with the scripts and extensions (not routed yet). */
  transforming: number;
  isClosed(): boolean;
  /** CONNACK was sent: the connection is open for traffic, with this keepalive (seconds). */
  onConnected(keepalive: number): void;
  /** A protocol violation: v5 gets DISCONNECT with the reason code, then the connection closes. */
  protocolError(reason: number, message?: string): void;
  /** Server DISCONNECT (v5, once connected) with `reason`, then close [MQTT-4.13.2-1]. */
  disconnectWith(reason: number, why: CloseReason, message?: string): void;
  close(why: CloseReason): void;
  /** The connection's inbound rate limit (null: none applies, one check per PUBLISH). */
  limiter: RateLimiter | null;
  /** Epoch ms until which reading is paused by a rate limit or the tenant's licence (0: not). */
  throttledUntil: number;
  /** Reading paused because a rule stage's backlog is past its bound (reading.ts). */
  heldByRules: boolean;
  /** Stops and restarts reading from the client (back-pressure of the publish pipeline). */
  pauseReading(): void;
  resumeReading(): void;
}

/** The worker thread's services, as the packet handlers see them. */
export interface HandlerHost {
  readonly config: BrokerConfig;
  readonly log: Logger;
  readonly stats: WorkerStats;
  readonly router: WorkerRouter;
  readonly sessions: SessionTable;
  readonly outbox: Outbox;
  /** The store's view for this worker; null with the MEMORY store (nothing is kept). */
  readonly persistence: Persistence | null;
  readonly authenticator: Authenticator;
  readonly authMethods: ReadonlyMap<string, AuthMethod>;
  /** Connections and sessions per endpoint, shared by every worker (endpoint limits). */
  readonly endpointCounters: EndpointCounters;
  /** Overload protection (src/features/overload): while `refusing`, a CONNECT is answered 0x89
   * Server busy (MQTT 3.1.1: 3). */
  readonly overload: { readonly refusing: boolean; refused: number };
  /** Where subscriptions are made: a client's own, and the ones the operator adds to every
   * client (proxy subscriptions). */
  readonly proxies: ProxyEnv;
  /** A per-connection authorizer (decisions cached, bounded). */
  authorizerFor(who: ClientIdentity, peerhost?: () => string): Authorizer;
  /** Client and message events for the rule engine ($EVENT.*). */
  readonly events: EngineEvents;
  /** Failed authentications per source address, shared by every worker (null: no limit). */
  readonly authFailures: AuthFailureLimiter | null;
  /** Who may not connect (the ban list, flapping detection), asked before authentication. */
  readonly gate: ConnectGate;
  /** Schema checks on topic filters (src/features/schema-registry), asked per PUBLISH only while
   * `active`. */
  readonly payloadCheck: PayloadCheck;
  /** Delayed publish (src/features/delayed): PUBLISHes to `$delayed/{seconds}/{topic}`. */
  readonly delayed: DelayedPublishes;
  /** The scripts and extensions that transform accepted PUBLISHes before routing. */
  readonly transforms: MessageTransforms;
  /** What must accept a routed message elsewhere before it is acknowledged (a cluster's other
   * nodes, for QoS 1/2). */
  readonly ackGates: AckGates;
  /** Topic rewrite (src/features/rewrite): `current` replaced whole when the rules change. */
  readonly rewrite: { readonly current: TopicRewrite };
  /** Exclusive subscriptions (src/features/exclusive). */
  readonly exclusive: ExclusivePlaces;
  /** Topic metrics (src/features/topic-metrics): asked per accepted PUBLISH only while `on`. */
  readonly topics: TopicMeter;
  /** OpenTelemetry traces (src/features/otel-traces): asked per PUBLISH only while `enabled`,
   * then only for the messages it sampled (Message.trace). */
  readonly tracer: MessageTracer;
}

/** The topic rewrite rules a worker applies before the ACL; without rules `active` is false and
 * the handlers ask nothing more. Each answers its argument itself when no rule rewrites it. */
export interface TopicRewrite {
  readonly active: boolean;
  /** A PUBLISH topic name or a will topic of `who` (its id and username fill a destination's
   * `${clientid}` and `${username}`). */
  publish(topic: string, who: ClientIdentity): string;
  /** A PUBLISH topic name of a client, remembered in `holder.rewriteMemo`: the same topic again
   * (a publisher repeats its topics) costs one string comparison. */
  publishFrom(holder: { rewriteMemo?: RewriteMemo | null; identity: ClientIdentity }, topic: string): string;
  /** A SUBSCRIBE/UNSUBSCRIBE filter of `who` (also the one inside $share/{group}/ and $exclusive/). */
  filter(filter: string, who: ClientIdentity): string;
}

/** The last topic a client published and what the rewrite rules made of it (`rule`: the index
 * of the rule that rewrote it, -1 none), for the rules `rules` (another set: not used). */
export interface RewriteMemo {
  rules: object;
  topic: string;
  out: string;
  rule: number;
}

/** Exclusive subscriptions (src/features/exclusive): one holder per `$exclusive/{filter}` (across
 * the cluster's nodes). `enabled` false: `$exclusive/...` is an ordinary filter. */
export interface ExclusivePlaces {
  readonly enabled: boolean;
  /** 'taken' or 'held' (by this client already): granted; 'busy' or 'full': refused. */
  acquire(filter: string, clientId: string): 'taken' | 'held' | 'busy' | 'full';
  /** After 'taken': true at once alone; in a cluster, whether the cluster granted it (false: the
   * place was given back). `persist`: the session outlives its connection (kept across a restart). */
  confirm(filter: string, clientId: string, persist: boolean): true | Promise<boolean>;
  /** Frees the place of `filter` if `clientId` holds it. */
  release(filter: string, clientId: string): void;
  /** Whether `clientId` holds the place of `filter` on this node. */
  holds(filter: string, clientId: string): boolean;
  /** After 'held': the cluster's answer to this client's earlier SUBSCRIBE still being decided
   * (undefined: none). */
  waiting(filter: string, clientId: string): Promise<boolean> | undefined;
}

export const NO_EXCLUSIVE: ExclusivePlaces = { enabled: false, acquire: () => 'busy', confirm: () => true, release: () => {}, holds: () => false, waiting: () => undefined };

/** No rules. */
export const NO_REWRITE: { readonly current: TopicRewrite } = { current: { active: false, publish: (t) => t, publishFrom: (_, t) => t, filter: (f) => f } };

/** Schema checks (src/features/schema-registry): whether a PUBLISH's payload is refused on its
 * topic (counted by the check), asked only while `active` (a check is configured). */
export interface PayloadCheck {
  readonly active: boolean;
  /** A PUBLISH to `topic` (asked only while `active`): PAYLOAD_PASS, PAYLOAD_REFUSED (counted:
   * it does not decode with a check's schema), or PAYLOAD_OFFLOAD (a large payload a check
   * matches: the handler then calls offload() at once, and waits for its verdict). */
  verdict(topic: string, payload: Uint8Array, version: number): number;
  /** Decodes, off this thread, the payload verdict() just answered PAYLOAD_OFFLOAD for;
   * `done(owner, refused)` is called later (refusals counted), in the order asked. */
  offload<T>(payload: Uint8Array, version: number, done: (owner: T, refused: boolean) => void, owner: T): void;
}

/** What PayloadCheck.verdict answers. */
export const PAYLOAD_PASS = 0;
export const PAYLOAD_REFUSED = 1;
export const PAYLOAD_OFFLOAD = 2;

/** Delayed publish as the PUBLISH handler sees it (src/features/delayed/worker-delayed.ts):
 * asked only while `enabled`, for topics starting with `$delayed/`. */
export interface DelayedPublishes {
  readonly enabled: boolean;
  /** The target topic and due time of a `$delayed/...` topic, or why it is malformed. */
  parse(topic: string, now: number): { topic: string; dueAt: number } | { error: string };
  /** Hands the message (published to `target` at `dueAt`) to the store: resolves 0 once stored,
   * else the reason code it is refused with. Never rejects. */
  accept(message: Message, target: string, dueAt: number, who: ClientIdentity): Promise<number>;
  /** Counts a refusal made by the PUBLISH handler. */
  refused(reason: 'invalid' | 'denied'): void;
}

export const NO_DELAYED: DelayedPublishes = {
  enabled: false,
  parse: () => ({ error: 'delayed publish is off' }),
  accept: async () => 0x83,
  refused() {},
};

/** Who may not connect (src/features/bans): asked per CONNECT before authentication, only while
 * `active` (a ban is held or flapping detection is on). */
export interface ConnectGate {
  readonly active: boolean;
  /** What bans the client ('clientid', 'username', 'peerhost'), or null; the peer's address is
   * read only when an address or block is banned (no closure per CONNECT). */
  refuses(clientId: string, username: string | undefined, peer: { readonly remoteAddress: string }): string | null;
}

/** Nobody is banned. */
/** No schema check: a PUBLISH asks nothing. */
export const NO_PAYLOAD_CHECK: PayloadCheck = {
  active: false,
  verdict: () => PAYLOAD_PASS,
  offload: (_payload, _version, done, owner) => queueMicrotask(() => done(owner, false)),
};

export const OPEN_GATE: ConnectGate = { active: false, refuses: () => null };

/**
 * Acceptance elsewhere that a message's acknowledgement waits for: asked right after the message
 * was routed (the routing called whatever must accept it); answers a promise that resolves once
 * it has, or rejects when it cannot (the message is then not acknowledged), or undefined when
 * nothing must.
 */
export interface AckGates {
  take(m: Message): Promise<void> | undefined;
}

/** Nothing elsewhere: acknowledged once routed (and stored). */
export const NO_ACK_GATES: AckGates = { take: () => undefined };

/** What a message became (`m` itself, changed in place, when it became one message; null:
 * dropped), told with the owner and tag given to transform (no closure per message). */
export type TransformDone<T> = (owner: T, tag: number, m: Message, out: Message | Message[] | null) => void;

/** What the engine sees of the scripts and extensions (a worker's processor stage). */
export interface MessageTransforms {
  /** Whether any applies to messages on `topic` (false at once when there are none). */
  wants(topic: string): boolean;
  /** Calls `done` with what `m` became, in the order messages were given; `m` and its buffers
   * are kept until then. */
  transform<T>(m: Message, clientId: string, done: TransformDone<T>, owner: T, tag: number): void;
}

/** No scripts or extensions. */
export const NO_TRANSFORMS: MessageTransforms = {
  wants: () => false,
  transform: (m, _clientId, done, owner, tag) => done(owner, tag, m, m),
};

/** How a connection hands its packets to the handlers (the worker gives it one). */
export interface Dispatcher {
  /** A PUBLISH, from the framer's descriptor `desc` at word `o` over the bytes `src`. */
  publish(c: Client, src: Buffer, desc: Uint32Array, o: number): HandlerResult;
  /** A plain PUBACK read from its bytes. */
  puback(c: Client, packetId: number): HandlerResult;
  /** Any other packet, decoded. */
  packet(c: Client, p: Packet): HandlerResult;
}
