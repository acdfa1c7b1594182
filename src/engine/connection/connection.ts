// Connection: one MQTT network connection, owned by the worker thread that accepted it. Bytes
// from the transport go through the connection's native Framer (one call per read) and on to the
// Dispatcher the worker gave it: PUBLISH as a descriptor, other packets decoded to objects. It
// owns what lives and dies with the network connection: protocol version, keepalive, topic
// aliases in both directions, the client's limits (Receive Maximum, Maximum Packet Size), and the
// output path. It is the handlers' Client and the session's SessionLink; it imports neither.
import { Framer, DESC_SLOTS, DESC_HELD, decodePacket, encodePublish, type Packet } from '../../native/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Authorizer, ClientIdentity } from '../../auth/index.ts';
import { remainingExpiry } from '../../broker/message.ts';
import type { EndpointCounters } from '../../broker/endpoint-counters.ts';
import type { RateLimiter } from '../../broker/rate-limiter.ts';
import type { ProxyOrigin, Transport, TransportFraming, TransportHandlers } from './transport.ts';
import { RC, type CloseReason } from '../../protocol/reason-codes.ts';
import { PT } from '../../protocol/packet-types.ts';
import * as send from '../../protocol/send.ts';
import { writePublishFrame } from '../../protocol/publish-frame.ts';
import type { EndpointStats } from '../../stats/endpoint-stats.ts';
import type { WorkerStats } from '../../stats/worker-stats.ts';
import type { Delivery } from '../../router/delivery.ts';
import type { Session } from '../session/session.ts';
import type { Deadlines, Expiring } from './deadlines.ts';
import type { AuthExchange, Client, ClientEndpoint, ClientState, Dispatcher, HandlerResult, RewriteMemo } from '../handlers/client.ts';

/** The limits a connection enforces (from limits.* of the configuration). */
export interface ConnectionLimits {
  /** Bytes buffered for the client above which deliveries wait or drop (see Outbox). */
  readonly maxOutboundBytes: number;
  /** Seconds over maxOutboundBytes before the connection is closed. */
  readonly slowConsumerTimeout: number;
  /** Seconds a packet may take to arrive, for clients without keep alive. */
  readonly partialPacketTimeout: number;
  /** The publish pipeline's bound (publishPending), past which reading is paused (publish.ts). */
  readonly receiveMaximum: number;
}

/** What a connection needs from its worker thread. */
export interface ConnectionHost {
  readonly limits: ConnectionLimits;
  readonly stats: WorkerStats;
  readonly log: Logger;
  /** The framer descriptor table of this thread (a feed's descriptors are read before the next). */
  readonly descTable: Uint32Array;
  readonly endpointCounters: EndpointCounters;
  /** The CONNECT timeouts and keep alives of this thread's connections. */
  readonly deadlines: Deadlines;
  /** The connection closed (`wasConnected`: it had been answered CONNACK). */
  closed(conn: Connection, wasConnected: boolean): void;
  /** The client took what was buffered for it: deliveries held back may go out. */
  drained(conn: Connection): void;
  /** Client tracing: whether a client id is traced, and where its packets are logged. */
  readonly tracer?: ConnectionTracer;
}

/** What a connection needs of client tracing (the worker gives it one). */
export interface ConnectionTracer {
  isTraced(clientId: string): boolean;
  /** A packet read or written by a traced connection, whole (fixed header included). */
  packet(c: Connection, direction: 'in' | 'out', bytes: Buffer): void;
  connected(c: Connection, details: Record<string, unknown>): void;
}

interface Backlog {
  frames: { src: Buffer; desc: Uint32Array }[];
}

export class Connection implements Client, TransportHandlers, Expiring {
  /** Every packet is logged while true (client tracing; one check per packet otherwise). */
  traced = false;
  state: ClientState = 'new';
  version: send.Version = 4;
  clientId = '';
  username: string | undefined;
  session: Session | null = null;
  clientHash = 0;
  keepalive = 0;
  receiveMaximum = 65535;
  maxPacketSize = 268435460;
  /** Topic aliases the client set [MQTT-3.3.2-9]: alias -> topic bytes. Die with the connection. */
  get aliasesIn(): Map<number, Buffer> {
    return (this.aliasesInMap ??= new Map());
  }
  /** Made when first used (MQTT 5 clients with topic aliases): idle connections stay small. */
  private aliasesInMap: Map<number, Buffer> | null = null;
  rewriteMemo: RewriteMemo | null = null;
  private aliasesOutMap: Map<string, number> | null = null;
  /** The client's Topic Alias Maximum; aliases we assigned: topic -> alias. */
  aliasMaxOut = 0;
  get aliasesOut(): Map<string, number> {
    return (this.aliasesOutMap ??= new Map());
  }
  normalDisconnect = false;
  closeReason: CloseReason | undefined;
  readonly connectedAt = Date.now();
  lastActivity = Date.now();
  cleanStart = true;
  /** This connection's traffic, for the admin API's runtime view (plain counters). */
  bytesIn = 0;
  bytesOut = 0;
  messagesIn = 0;
  messagesOut = 0;
  publishChain: Promise<void> | null = null;
  publishPending = 0;
  /** The inbound rate limit (made at CONNECT when one applies; see handlers/throttle.ts). */
  limiter: RateLimiter | null = null;
  /** Reading paused by a rate limit until this epoch ms (0: not). */
  throttledUntil = 0;
  /** Reading paused by a rule stage's backlog (handlers/reading.ts) until it drains. */
  heldByRules = false;
  transforming = 0;
  /** Set at CONNECT, once the client is authenticated. */
  authorizer!: Authorizer;
  identity!: ClientIdentity;
  countedOnEndpoint = false;
  authMethod: string | undefined;
  authExchange: AuthExchange | null = null;
  readonly endpointMaxPacket: number;
  /** The Framer of a transport that delivers bytes (Node sockets, WebSocket); null when the
   * transport frames itself (the native driver). */
  private readonly byteFramer: InstanceType<typeof Framer> | null;
  /** Whichever frames this connection's input. */
  private readonly framer: TransportFraming;
  /** The CONNECT timeout, then the keep alive (host.deadlines): epoch ms, 0 for none. */
  deadline = 0;
  deadlineSlot = 0;
  /** Runs while the connection is over limits.maxOutboundBytes (slow consumer). */
  private slowTimer: NodeJS.Timeout | null = null;
  /** Runs while a packet is half received, for clients without keep alive. */
  private partialTimer: NodeJS.Timeout | null = null;
  private backlog: Backlog | null = null;

  constructor(
    readonly transport: Transport,
    readonly endpoint: ClientEndpoint,
    private readonly host: ConnectionHost,
    private readonly dispatch: Dispatcher,
  ) {
    this.endpointMaxPacket = endpoint.config.messageMaxSize;
    this.byteFramer = transport.framing ? null : new Framer(this.endpointMaxPacket);
    this.framer = transport.framing ?? this.byteFramer!;
  }

  get remoteAddress(): string {
    return this.transport.remoteAddress;
  }

  get certificateCN(): string | undefined {
    return this.transport.certificateCN;
  }

  get pskIdentity(): string | undefined {
    return this.transport.pskIdentity;
  }

  peerCertificates(): Buffer[] | undefined {
    return this.transport.peerCertificates();
  }

  get proxy(): ProxyOrigin | undefined {
    return this.transport.proxy;
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  get sharesFrames(): boolean {
    return this.aliasMaxOut === 0;
  }

  get endpointStats(): EndpointStats {
    return this.endpoint.stats;
  }

  get endpointSlot(): number {
    return this.endpoint.slot;
  }

  /** Bytes written for the client and not yet taken by it. */
  get outboundBacklog(): number {
    return this.transport.bufferedBytes;
  }

  /** Below limits.maxOutboundBytes: deliveries may be written. */
  get writable(): boolean {
    return this.transport.bufferedBytes < this.host.limits.maxOutboundBytes;
  }

  /** A delivery was held back or dropped because the client does not take what is written: a
   * client that stays over the limit for limits.slowConsumerTimeout is closed. */
  congested(): void {
    if (this.slowTimer !== null || this.state === 'closed') return;
    this.slowTimer = setTimeout(() => {
      this.slowTimer = null;
      if (this.state === 'closed' || this.writable) return;
      this.host.stats.slowConsumerDisconnects++;
      this.host.log.info('slow consumer closed', { clientId: this.clientId, buffered: this.transport.bufferedBytes });
      // A DISCONNECT would wait behind what the client does not read: the socket goes now.
      this.closeReason = 'slow_consumer';
      this.transport.destroy();
      this.onClose();
    }, this.host.limits.slowConsumerTimeout * 1000);
  }

  // ---- what the transport tells ------------------------------------------------------------

  onTransportData(chunk: Buffer): void {
    this.onData(chunk);
  }

  onTransportFrames(src: Buffer, table: Uint32Array, at: number, n: number): void {
    let bytes = 0;
    for (let i = 0; i < n; i++) bytes += table[at + i * DESC_SLOTS + 2];
    this.host.stats.bytesReceived += bytes;
    this.bytesIn += bytes;
    this.lastActivity = Date.now();
    if (this.backlog) {
      this.queueFrames(src, table, at, 0, n);
      return;
    }
    this.received(n);
    for (let i = 0; i < n; i++) {
      if (this.state === 'closed') return;
      const r = this.dispatchOne(src, table, at + i * DESC_SLOTS);
      if (r) {
        this.waitFor(r, src, table, at, i + 1, n);
        return;
      }
    }
    this.checkFramerError();
  }

  onTransportError(): void {
    this.host.stats.socketErrors++;
  }

  onTransportViolation(what: string): void {
    this.host.stats.protocolErrors++;
    this.endpoint.stats.protocolErrors++;
    this.host.log.debug('transport violation', { clientId: this.clientId, what });
    this.close('protocol_error');
  }

  onTransportClose(): void {
    this.onClose();
  }

  onTransportDrain(): void {
    if (this.slowTimer !== null) {
      clearTimeout(this.slowTimer);
      this.slowTimer = null;
    }
    if (this.state === 'connected') this.host.drained(this);
  }

  start(): void {
    this.transport.start(this);
    // A client must send CONNECT soon after connecting (servers close idle sockets).
    this.host.deadlines.set(this, this.lastActivity + CONNECT_TIMEOUT_MS);
  }

  // ---- input ------------------------------------------------------------------------------

  private onData(chunk: Buffer): void {
    this.host.stats.bytesReceived += chunk.length;
    this.bytesIn += chunk.length;
    this.lastActivity = Date.now();
    if (this.backlog) {
      this.queueChunk(chunk);
      return;
    }
    const table = this.host.descTable;
    let n = this.byteFramer!.feed(chunk, table);
    this.received(n);
    while (n > 0) {
      const held = table[0] & DESC_HELD ? this.byteFramer!.takeHeld() : undefined;
      for (let i = 0; i < n; i++) {
        const o = i * DESC_SLOTS;
        const src = held && i === 0 ? held : chunk;
        if (this.state === 'closed') return;
        const r = this.dispatchOne(src, table, o);
        if (r) {
          this.waitFor(r, chunk, table, 0, i + 1, n);
          this.queueRest(chunk);
          return;
        }
      }
      n = this.byteFramer!.more(chunk, table);
    }
    this.checkFramerError();
  }

  /**
   * A read gave `packets` whole packets. Keep alive counts packets, not bytes [MQTT-3.1.2-22]: a
   * client sending a packet a byte at a time is closed all the same. Without keep alive, a packet
   * half received may take limits.partialPacketTimeout at most (before CONNECT the CONNECT
   * timeout bounds it).
   */
  private received(packets: number): void {
    if (this.state !== 'connected') return;
    if (packets > 0 && this.keepalive > 0) this.host.deadlines.set(this, this.lastActivity + this.keepalive * 1500);
    if (this.keepalive !== 0) return;
    if (this.framer.buffered === 0) {
      if (this.partialTimer) {
        clearTimeout(this.partialTimer);
        this.partialTimer = null;
      }
    } else if (this.partialTimer === null) {
      this.partialTimer = setTimeout(() => {
        this.partialTimer = null;
        if (this.framer.buffered > 0) this.disconnectWith(RC.KEEP_ALIVE_TIMEOUT, 'timeout', 'packet not completed in time');
      }, this.host.limits.partialPacketTimeout * 1000);
    }
  }

  /** A handler answered with a promise: frames `from`..`n` of `table` (from `at`) wait for it in a
   * backlog, copied out of the table (it is reused), and reading pauses. */
  private waitFor(r: Promise<void>, src: Buffer, table: Uint32Array, at: number, from: number, n: number): void {
    this.backlog = { frames: [] };
    this.queueFrames(src, table, at, from, n);
    this.transport.pause();
    void r.then(() => this.drainBacklog(), (err) => this.fail(err));
  }

  /** Frames `from`..`n` of `table` (from `at`) into the open backlog. */
  private queueFrames(src: Buffer, table: Uint32Array, at: number, from: number, n: number): void {
    for (let k = from; k < n; k++) {
      const o = at + k * DESC_SLOTS;
      this.backlog!.frames.push({ src, desc: table.slice(o, o + DESC_SLOTS) });
    }
  }

  /** Frames of the current read that the table had no room for, while a backlog is open. */
  private queueRest(chunk: Buffer): void {
    const table = SCRATCH;
    let n = this.byteFramer!.more(chunk, table);
    while (n > 0) {
      this.queueFrames(chunk, table, 0, 0, n);
      n = this.byteFramer!.more(chunk, table);
    }
  }

  private queueChunk(chunk: Buffer): void {
    const table = SCRATCH;
    let n = this.byteFramer!.feed(chunk, table);
    this.received(n);
    while (n > 0) {
      const held = table[0] & DESC_HELD ? this.byteFramer!.takeHeld() : undefined;
      for (let k = 0; k < n; k++) {
        this.backlog!.frames.push({ src: held && k === 0 ? held : chunk, desc: table.slice(k * DESC_SLOTS, (k + 1) * DESC_SLOTS) });
      }
      n = this.byteFramer!.more(chunk, table);
    }
  }

  private drainBacklog(): void {
    const backlog = this.backlog!;
    while (backlog.frames.length > 0) {
      if (this.state === 'closed') return;
      const { src, desc } = backlog.frames.shift()!;
      const r = this.dispatchOne(src, desc, 0);
      if (r) {
        void r.then(() => this.drainBacklog(), (err) => this.fail(err));
        return;
      }
    }
    this.backlog = null;
    this.checkFramerError();
    // Reading resumes unless another reason still holds it (handlers/reading.ts): a rule stage,
    // a rate limit (throttle.ts) or the publish pipeline's bound (publish.ts) each resume it when
    // they let go.
    if (this.state !== 'closed' && !this.heldByRules && this.throttledUntil === 0 && this.publishPending < this.host.limits.receiveMaximum) this.transport.resume();
  }

  private checkFramerError(): void {
    const err = this.framer.error;
    if (err && this.state !== 'closed') {
      this.host.stats.protocolErrors++;
      this.endpoint.stats.protocolErrors++;
      this.host.log.debug('malformed packet', { clientId: this.clientId, code: err.code, reason: err.reason });
      this.protocolError(err.reason, err.message);
    }
  }

  private dispatchOne(src: Buffer, desc: Uint32Array, o: number): HandlerResult {
    const type = (desc[o] & 0xff) >> 4;
    if (this.traced) this.host.tracer?.packet(this, 'in', src.subarray(desc[o + 1], desc[o + 1] + desc[o + 2]));
    if (this.state === 'new' && type !== PT.CONNECT) {
      // [MQTT-3.1.0-1] the first packet must be CONNECT.
      this.close('protocol_error');
      return;
    }
    if (type === PT.PUBLISH) return this.dispatch.publish(this, src, desc, o);
    // A plain PUBACK (fixed header 0x40, length 2, packet id): the most frequent packet after
    // PUBLISH under QoS 1 load, handled from its bytes. Anything longer (v5 reason code,
    // properties) or malformed goes through the decoder.
    if (type === PT.PUBACK && desc[o + 2] === 4 && this.state === 'connected') {
      const at = desc[o + 1];
      if (src[at] === 0x40 && src[at + 1] === 2) {
        const id = (src[at + 2] << 8) | src[at + 3];
        // [MQTT-2.2.1-3] a packet identifier is non-zero.
        if (id !== 0) return this.dispatch.puback(this, id);
      }
    }
    let packet: Packet;
    try {
      packet = decodePacket(this.version, src, desc[o + 1], desc[o + 2]);
    } catch (err) {
      const reason = /^\[0x([0-9a-f]{2})\]/.exec((err as Error).message);
      this.host.stats.protocolErrors++;
      this.endpoint.stats.protocolErrors++;
      // An unsupported protocol level in CONNECT is answered with CONNACK 0x84 / 0x01 [MQTT-3.1.2-2].
      if (type === PT.CONNECT && (err as { code?: string }).code === 'UNSUPPORTED_PROTOCOL_VERSION') {
        this.write(send.connack(this.version === 5 ? 5 : 4, false, RC.UNSUPPORTED_PROTOCOL_VERSION));
        this.endpoint.stats.connectionError('0x84');
        this.close('protocol_error');
        return;
      }
      // A refused client identifier is answered with CONNACK 0x02 (v3) / 0x85 (v5) before the
      // close [MQTT-3.1.3-8] (3.1.1: [MQTT-3.1.3-9]), in the version the CONNECT asked for.
      if (type === PT.CONNECT && (err as { code?: string }).code === 'CLIENT_ID_INVALID') {
        this.write(send.connack(connectLevel(src, desc[o + 1]), false, RC.CLIENT_IDENTIFIER_NOT_VALID));
        this.endpoint.stats.connectionError('0x85');
        this.close('protocol_error');
        return;
      }
      const code = reason ? parseInt(reason[1], 16) : RC.MALFORMED_PACKET;
      // A v5 CONNECT with an error is answered with CONNACK and its reason code before the close
      // [MQTT-4.13.1-1 context: "it MAY send a CONNACK ... before closing"].
      if (type === PT.CONNECT && connectLevel(src, desc[o + 1]) === 5) {
        this.write(send.connack(5, false, code));
        this.endpoint.stats.connectionError(`0x${code.toString(16)}`);
        this.close('protocol_error');
        return;
      }
      this.protocolError(code, (err as Error).message);
      return;
    }
    return this.dispatch.packet(this, packet);
  }

  /** A CONNECT was accepted: switch the framer to the negotiated version and start keepalive. */
  onConnected(keepalive: number): void {
    this.state = 'connected';
    const tracer = this.host.tracer;
    if (tracer?.isTraced(this.clientId)) {
      this.traced = true;
      tracer.connected(this, { version: this.version, keepalive, cleanStart: this.cleanStart, username: this.username ?? null, peer: this.remoteAddress });
    }
    this.framer.setVersion(this.version);
    this.keepalive = keepalive;
    // [MQTT-3.1.2-22] one and a half times the keepalive without a packet closes the connection.
    this.host.deadlines.set(this, keepalive > 0 ? Date.now() + keepalive * 1500 : 0);
  }

  /** The CONNECT timeout or the keep alive passed (host.deadlines). */
  expired(): void {
    if (this.state === 'connected') this.onKeepaliveExpired();
    else this.close('timeout'); // no CONNECT, or no CONNACK yet, in time
  }

  private onKeepaliveExpired(): void {
    this.host.log.debug('keepalive expired', { clientId: this.clientId });
    this.disconnectWith(RC.KEEP_ALIVE_TIMEOUT, 'timeout');
  }

  private fail(err: unknown): void {
    this.host.log.error('connection handler failed', { clientId: this.clientId, err });
    this.disconnectWith(RC.UNSPECIFIED_ERROR, 'protocol_error');
  }

  pauseReading(): void {
    this.transport.pause();
  }

  resumeReading(): void {
    this.transport.resume();
  }

  // ---- output -----------------------------------------------------------------------------

  write(frame: Buffer): void {
    if (this.state === 'closed') return;
    this.host.stats.bytesSent += frame.length;
    this.bytesOut += frame.length;
    if (this.traced) this.host.tracer?.packet(this, 'out', frame);
    this.transport.write(frame);
  }

  published(bytes: number): void {
    this.messagesOut++;
    this.endpoint.stats.publishOut(bytes);
  }

  /** Encodes a PUBLISH for this connection: its version, its topic alias, the message's
   * remaining expiry and the subscription identifiers. */
  encodePublish(d: Delivery, now: number, dup: boolean): Buffer {
    const m = d.message;
    let topic = m.topicBytes;
    let props: Buffer | null = null;
    let newAlias = 0;
    if (this.version === 5) {
      let alias = 0;
      if (this.aliasMaxOut > 0) {
        alias = this.aliasesOut.get(m.topic) ?? 0;
        if (alias) {
          topic = EMPTY; // known alias: the topic is omitted [MQTT-3.3.2-12 context]
        } else if (this.aliasesOut.size < this.aliasMaxOut) {
          alias = newAlias = this.aliasesOut.size + 1;
        }
      }
      props = send.publishProperties(m.props, remainingExpiry(m, now), d.subscriptionIds, alias);
    }
    const len = send.publishLength(this.version, d.qos, topic.length, props?.length ?? 0, m.payload.length);
    const out = Buffer.allocUnsafe(len);
    const flags = (d.qos << 1) | (dup ? 8 : 0) | (d.retain ? 1 : 0);
    if (props === null || props.length === 0) writePublishFrame(out, flags, d.qos ? 1 : 0, topic, m.payload, this.version === 5);
    else encodePublish(this.version, out, 0, d.qos | (dup ? 4 : 0) | (d.retain ? 8 : 0), d.qos ? 1 : 0, topic, m.payload, props);
    // A frame too large for the client is not sent [MQTT-3.1.2-25]: the alias it would set stays
    // free, or later messages would carry an alias the client never learnt [MQTT-3.3.2-12].
    if (newAlias && len <= this.maxPacketSize) this.aliasesOut.set(m.topic, newAlias);
    return out;
  }

  // ---- closing ----------------------------------------------------------------------------

  protocolError(reason: number, message?: string): void {
    this.disconnectWith(reason, 'protocol_error', message);
  }

  disconnectWith(reason: number, why: CloseReason, message?: string, serverReference?: string): void {
    if (this.state === 'closed') return;
    // No DISCONNECT before a successful CONNACK [MQTT-3.14.0-1]; v3 has no server DISCONNECT.
    // The Reason String goes first when the packet is larger than the client accepts
    // [MQTT-3.1.2-24, MQTT-3.1.2-25]; the Server Reference is what 0x9C is about: it stays.
    if (this.version === 5 && this.state === 'connected') {
      const frame = send.disconnect(reason, message, serverReference);
      this.write(frame.length <= this.maxPacketSize ? frame : send.disconnect(reason, undefined, serverReference));
    }
    this.close(why);
  }

  /** Read access to one delivered topic (SessionLink.canRead): the ACL's subscribe answer for
   * the topic name, cached by the authorizer. */
  canRead(topic: string): boolean | Promise<boolean> {
    return this.authorizer.authorize(this.identity, 'subscribe', topic);
  }

  kick(reason: number, why: CloseReason, message?: string): void {
    this.disconnectWith(reason, why, message);
  }

  isClosed(): boolean {
    return this.state === 'closed';
  }

  close(why: CloseReason): void {
    if (this.state === 'closed') return;
    this.closeReason ??= why;
    this.transport.end();
    this.onClose();
  }

  private onClose(): void {
    if (this.state === 'closed') return;
    const wasConnected = this.state === 'connected';
    this.state = 'closed';
    this.closeReason ??= 'normal';
    this.host.deadlines.set(this, 0);
    if (this.slowTimer) clearTimeout(this.slowTimer);
    if (this.partialTimer) clearTimeout(this.partialTimer);
    this.slowTimer = this.partialTimer = null;
    if (this.authExchange !== null) {
      clearTimeout(this.authExchange.timer);
      this.authExchange = null;
    }
    if (this.countedOnEndpoint) {
      this.countedOnEndpoint = false;
      this.host.endpointCounters.releaseConnection(this.endpoint.slot);
    }
    // A tenant's place in its licence's connections (idempotent: the session keeps the identity).
    this.identity?.tenant?.release();
    this.host.closed(this, wasConnected);
  }
}

/** The protocol level of a CONNECT frame starting at `at` (the codec read up to the client id, so
 * it is 3, 4 or 5 and the bytes are there): fixed header, remaining length, protocol name, level. */
function connectLevel(src: Buffer, at: number): send.Version {
  let i = at + 1;
  while (src[i] & 0x80) i++;
  i++;
  return src[i + 2 + src.readUInt16BE(i)] as send.Version;
}

const EMPTY = Buffer.alloc(0);
/** A descriptor table for frames that wait in a backlog (each is copied out before the next
 * feed): one per thread. */
const SCRATCH = new Uint32Array(DESC_SLOTS * 256);
/** A connection that has not sent CONNECT by then is closed. */
const CONNECT_TIMEOUT_MS = 10_000;
