// Connection: one MQTT network connection, owned by the worker thread that accepted it. Bytes
// from the transport go through the connection's native Framer (one call per read); PUBLISH is
// handled from its descriptor, other packets are decoded to objects. It owns what lives and dies
// with the network connection: protocol version, keepalive, topic aliases in both directions,
// the client's limits (Receive Maximum, Maximum Packet Size), and the output path.
import { Framer, DESC_SLOTS, DESC_HELD, decodePacket, encodePublish, type Packet } from '../native/index.ts';
import type { Transport } from '../listener/transport.ts';
import { RC, type CloseReason } from '../protocol/reason-codes.ts';
import { PT } from '../protocol/packet-types.ts';
import * as send from '../protocol/send.ts';
import { isExpired, remainingExpiry } from '../broker/message.ts';
import type { WorkerContext } from '../worker/context.ts';
import type { Authorizer, ClientIdentity } from '../auth/index.ts';
import type { Delivery, Inflight, Session } from './session.ts';
import type { WorkerEndpoint } from '../listener/listeners.ts';
import { handlePacket, handlePublish } from '../handlers/index.ts';
import { handlePubackId } from '../handlers/acks.ts';
import { writePublishFrame } from '../protocol/publish-frame.ts';

export type ConnectionState = 'new' | 'connecting' | 'connected' | 'closed';

/** A packet handler may finish later (authentication, authorization): the connection then holds
 * the packets that follow until it has. */
export type HandlerResult = void | Promise<void>;

interface Backlog {
  frames: { src: Buffer; desc: Uint32Array }[];
}

export class Connection {
  state: ConnectionState = 'new';
  version: send.Version = 4;
  clientId = '';
  username: string | undefined;
  session: Session | null = null;
  /** Hash of the client id, for the hash_clientid shared-subscription strategy. */
  clientHash = 0;
  keepalive = 0;
  /** The client's Receive Maximum: QoS 1/2 PUBLISH we may have unacknowledged [MQTT-3.3.4-9]. */
  sendQuota = 65535;
  /** The client's Maximum Packet Size [MQTT-3.1.2-24]. */
  maxOutgoingPacket = 268435460;
  /** Topic aliases the client set [MQTT-3.3.2-9]: alias -> topic bytes. Die with the connection. */
  get aliasesIn(): Map<number, Buffer> {
    return (this.aliasesInMap ??= new Map());
  }
  /** Made when first used (MQTT 5 clients with topic aliases): idle connections stay small. */
  private aliasesInMap: Map<number, Buffer> | null = null;
  private aliasesOutMap: Map<string, number> | null = null;
  /** The client's Topic Alias Maximum and the aliases we assigned: topic -> alias. */
  aliasMaxOut = 0;
  get aliasesOut(): Map<string, number> {
    return (this.aliasesOutMap ??= new Map());
  }
  /** The connection ended with a DISCONNECT that keeps the will from being published. */
  normalDisconnect = false;
  closeReason: CloseReason | undefined;
  readonly connectedAt = Date.now();
  lastActivity = Date.now();
  /** Clean Start (v5) / Clean Session (v3) of the CONNECT, for the admin API. */
  cleanStart = true;
  /** This connection's traffic, for the admin API's runtime view (plain counters). */
  bytesIn = 0;
  bytesOut = 0;
  messagesIn = 0;
  messagesOut = 0;
  /** The tail of this connection's publishes waiting for the store (null: none waiting), and how
   * many are waiting. See handlers/publish.ts. */
  publishChain: Promise<void> | null = null;
  publishPending = 0;
  /** Set at CONNECT, once the client is authenticated. */
  authorizer!: Authorizer;
  identity!: ClientIdentity;
  private readonly framer: InstanceType<typeof Framer>;
  private keepaliveTimer: NodeJS.Timeout | null = null;
  private backlog: Backlog | null = null;

  /** The endpoint's Maximum Packet Size when this connection was accepted (advertised in CONNACK). */
  readonly endpointMaxPacket: number;
  /** The connection is counted in its endpoint's connections (maxConnectionSize). */
  countedOnEndpoint = false;

  constructor(readonly transport: Transport, readonly ctx: WorkerContext, readonly endpoint: WorkerEndpoint) {
    this.endpointMaxPacket = endpoint.config.messageMaxSize;
    this.framer = new Framer(this.endpointMaxPacket);
  }

  start(): void {
    this.transport.start({
      data: (chunk) => this.onData(chunk),
      close: () => this.onClose(),
    });
    // A client must send CONNECT soon after connecting [MQTT-3.1.0-1 context: servers close idle sockets].
    this.keepaliveTimer = setTimeout(() => this.close('timeout'), CONNECT_TIMEOUT_MS);
  }

  // ---- input ------------------------------------------------------------------------------

  private onData(chunk: Buffer): void {
    this.ctx.stats.bytesReceived += chunk.length;
    this.bytesIn += chunk.length;
    this.lastActivity = Date.now();
    if (this.keepaliveTimer && this.state === 'connected') this.keepaliveTimer.refresh();
    if (this.backlog) {
      this.queueChunk(chunk);
      return;
    }
    const table = this.ctx.descTable;
    let n = this.framer.feed(chunk, table);
    while (n > 0) {
      const held = table[0] & DESC_HELD ? this.framer.takeHeld() : undefined;
      for (let i = 0; i < n; i++) {
        const o = i * DESC_SLOTS;
        const src = held && i === 0 ? held : chunk;
        if (this.state === 'closed') return;
        const r = this.dispatch(src, table, o);
        if (r) {
          // The rest of this read waits for the handler; copy it out of the shared table.
          this.backlog = { frames: [] };
          for (let k = i + 1; k < n; k++) {
            const ko = k * DESC_SLOTS;
            this.backlog.frames.push({ src: chunk, desc: table.slice(ko, ko + DESC_SLOTS) });
          }
          this.queueRest(chunk);
          this.transport.pause();
          void r.then(() => this.drainBacklog(), (err) => this.fail(err));
          return;
        }
      }
      n = this.framer.more(chunk, table);
    }
    this.checkFramerError();
  }

  /** Frames of the current read that the table had no room for, while a backlog is open. */
  private queueRest(chunk: Buffer): void {
    const table = new Uint32Array(DESC_SLOTS * 256);
    let n = this.framer.more(chunk, table);
    while (n > 0) {
      for (let k = 0; k < n; k++) this.backlog!.frames.push({ src: chunk, desc: table.slice(k * DESC_SLOTS, (k + 1) * DESC_SLOTS) });
      n = this.framer.more(chunk, table);
    }
  }

  private queueChunk(chunk: Buffer): void {
    const table = new Uint32Array(DESC_SLOTS * 256);
    let n = this.framer.feed(chunk, table);
    while (n > 0) {
      const held = table[0] & DESC_HELD ? this.framer.takeHeld() : undefined;
      for (let k = 0; k < n; k++) {
        this.backlog!.frames.push({ src: held && k === 0 ? held : chunk, desc: table.slice(k * DESC_SLOTS, (k + 1) * DESC_SLOTS) });
      }
      n = this.framer.more(chunk, table);
    }
  }

  private drainBacklog(): void {
    const backlog = this.backlog!;
    while (backlog.frames.length > 0) {
      if (this.state === 'closed') return;
      const { src, desc } = backlog.frames.shift()!;
      const r = this.dispatch(src, desc, 0);
      if (r) {
        void r.then(() => this.drainBacklog(), (err) => this.fail(err));
        return;
      }
    }
    this.backlog = null;
    this.checkFramerError();
    if (this.state !== 'closed') this.transport.resume();
  }

  private checkFramerError(): void {
    const err = this.framer.error;
    if (err && this.state !== 'closed') {
      this.ctx.stats.protocolErrors++;
      this.endpoint.stats.protocolErrors++;
      this.ctx.log.debug('malformed packet', { clientId: this.clientId, code: err.code, reason: err.reason });
      this.protocolError(err.reason, err.message);
    }
  }

  private dispatch(src: Buffer, desc: Uint32Array, o: number): HandlerResult {
    const type = (desc[o] & 0xff) >> 4;
    if (this.state === 'new' && type !== PT.CONNECT) {
      // [MQTT-3.1.0-1] the first packet must be CONNECT.
      this.close('protocol_error');
      return;
    }
    if (type === PT.PUBLISH) return handlePublish(this, src, desc, o);
    // A plain PUBACK (fixed header 0x40, length 2, packet id): the most frequent packet after
    // PUBLISH under QoS 1 load, handled from its bytes. Anything longer (v5 reason code,
    // properties) or malformed goes through the decoder.
    if (type === PT.PUBACK && desc[o + 2] === 4 && this.state === 'connected') {
      const at = desc[o + 1];
      if (src[at] === 0x40 && src[at + 1] === 2) {
        const id = (src[at + 2] << 8) | src[at + 3];
        // [MQTT-2.2.1-3] a packet identifier is non-zero.
        if (id !== 0) return handlePubackId(this, id);
      }
    }
    let packet: Packet;
    try {
      packet = decodePacket(this.version, src, desc[o + 1], desc[o + 2]);
    } catch (err) {
      const reason = /^\[0x([0-9a-f]{2})\]/.exec((err as Error).message);
      this.ctx.stats.protocolErrors++;
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
      this.protocolError(reason ? parseInt(reason[1], 16) : RC.MALFORMED_PACKET, (err as Error).message);
      return;
    }
    return handlePacket(this, packet);
  }

  /** A CONNECT was accepted: switch the framer to the negotiated version and start keepalive. */
  onConnected(keepalive: number): void {
    this.state = 'connected';
    this.framer.setVersion(this.version);
    this.keepalive = keepalive;
    if (this.keepaliveTimer) clearTimeout(this.keepaliveTimer);
    this.keepaliveTimer = null;
    if (keepalive > 0) {
      // [MQTT-3.1.2-22] one and a half times the keepalive without a packet closes the connection.
      this.keepaliveTimer = setTimeout(() => this.onKeepaliveExpired(), keepalive * 1500);
    }
  }

  private onKeepaliveExpired(): void {
    this.ctx.log.debug('keepalive expired', { clientId: this.clientId });
    this.disconnectWith(RC.KEEP_ALIVE_TIMEOUT, 'timeout');
  }

  private fail(err: unknown): void {
    this.ctx.log.error('connection handler failed', { clientId: this.clientId, err });
    this.disconnectWith(RC.UNSPECIFIED_ERROR, 'protocol_error');
  }

  // ---- output -----------------------------------------------------------------------------

  write(frame: Buffer): void {
    if (this.state === 'closed') return;
    this.ctx.stats.bytesSent += frame.length;
    this.bytesOut += frame.length;
    this.transport.write(frame);
  }

  /**
   * Sends a message to this connection's client now, or queues it when the inflight window is
   * full. `frame` is a PUBLISH already encoded for this variant by the router (shared by many
   * subscribers; copied before its packet identifier is patched).
   */
  deliver(d: Delivery, frame?: Buffer): void {
    const session = this.session!;
    if (d.qos > 0 && session.inflight.size >= Math.min(this.sendQuota, this.ctx.config.limits.maxInflight)) {
      this.ctx.sessions.enqueue(session, d);
      return;
    }
    this.sendPublish(d, frame, false);
  }

  /** Encodes (or reuses `frame`) and writes one PUBLISH; records it in flight for QoS > 0. */
  sendPublish(d: Delivery, frame: Buffer | undefined, dup: boolean, packetId = 0): void {
    const session = this.session!;
    const m = d.message;
    const now = Date.now();
    if (isExpired(m, now)) {
      // [MQTT-3.3.2-5] an expired message is not delivered.
      this.ctx.stats.dropped.expired++;
      this.endpoint.stats.dropped.others++;
      this.ctx.persistence?.delivered(session, m);
      return;
    }
    const resend = packetId !== 0;
    if (d.qos > 0 && packetId === 0) {
      packetId = session.allocatePacketId();
      if (packetId === 0) {
        this.ctx.sessions.enqueue(session, d);
        return;
      }
    }
    if (!frame || dup) frame = this.encode(d, now, dup);
    else if (d.qos > 0) frame = Buffer.from(frame);
    if (frame.length > this.maxOutgoingPacket) {
      // [MQTT-3.1.2-25] too big for this client: dropped for it, as if sent.
      this.ctx.stats.dropped.tooLarge++;
      this.endpoint.stats.dropped.others++;
      this.ctx.persistence?.delivered(session, m);
      return;
    }
    if (d.qos > 0) {
      frame.writeUInt16BE(packetId, send.packetIdOffset(frame));
      const entry: Inflight = { message: d.message, qos: d.qos, retain: d.retain, subscriptionIds: d.subscriptionIds, packetId, state: 'publish' };
      session.inflight.set(packetId, entry);
      if (!resend) this.ctx.persistence?.deliveryState(session, m, 'inflight', packetId);
    }
    this.ctx.stats.messagesSent++;
    this.messagesOut++;
    this.ctx.stats.publishSent[d.qos]++;
    this.ctx.stats.publishBytesSent[d.qos] += frame.length;
    this.endpoint.stats.publishOut(frame.length);
    if (!resend) this.ctx.stats.recordDelivery(now - m.receivedAt);
    this.write(frame);
  }

  /** Encodes a PUBLISH for this connection: its version, its topic alias, the message's
   * remaining expiry and the subscription identifiers. */
  encode(d: Delivery, now: number, dup: boolean): Buffer {
    const m = d.message;
    let topic = m.topicBytes;
    let props: Buffer | null = null;
    let newAlias = 0;
    if (this.version === 5) {
      let alias = 0;
      if (this.aliasMaxOut > 0) {
        alias = this.aliasesOut.get(m.topic) ?? 0;
        if (alias) {
          topic = EMPTY; // known alias: topic omitted [MQTT-3.3.2-12 context]
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
    if (newAlias && len <= this.maxOutgoingPacket) this.aliasesOut.set(m.topic, newAlias);
    return out;
  }

  // ---- closing ----------------------------------------------------------------------------

  /** A protocol violation: v5 gets DISCONNECT with the reason code; then the connection closes. */
  protocolError(reason: number, message?: string): void {
    this.disconnectWith(reason, 'protocol_error', message);
  }

  /** Server-initiated DISCONNECT (v5) with `reason`, then close [MQTT-4.13.2-1]. */
  disconnectWith(reason: number, why: CloseReason, message?: string): void {
    if (this.state === 'closed') return;
    if (this.version === 5 && (this.state === 'connected' || this.state === 'connecting')) {
      this.write(send.disconnect(reason, message));
    }
    this.close(why);
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
    if (this.keepaliveTimer) clearTimeout(this.keepaliveTimer);
    this.keepaliveTimer = null;
    if (this.countedOnEndpoint) {
      this.countedOnEndpoint = false;
      this.ctx.endpointCounters.releaseConnection(this.endpoint.slot);
    }
    this.ctx.connectionClosed(this, wasConnected);
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
/** A connection that has not sent CONNECT by then is closed. */
const CONNECT_TIMEOUT_MS = 10_000;
