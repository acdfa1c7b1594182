// Transport over a uWebSockets.js WebSocket. MQTT packets may span or share WebSocket messages
// (MQTT 5.0 section 6), so frames written in one tick leave as one binary message.
import type { WebSocket } from 'uWebSockets.js';

import type { ProxyOrigin, Transport, TransportHandlers } from '../engine/connection/transport.ts';

export interface WsUserData {
  transport?: WsTransport;
  /** The client's address: a PROXY v2 header's source (uWebSockets.js reads it), or the peer. */
  remoteAddress: string;
  remotePort: number;
  /** The peer that sent a PROXY header (the balancer). */
  proxy?: ProxyOrigin;
}

export class WsTransport implements Transport {
  readonly kind = 'ws' as const;
  readonly certificateCN = undefined;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly proxy: ProxyOrigin | undefined;
  handlers: TransportHandlers | null = null;
  closed = false;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  /** uWS refused a send (over its maxBackpressure: set above the broker's outbound limit, so this
   * is a bug if it ever counts). */
  static dropped = 0;

  constructor(private readonly ws: WebSocket<WsUserData>, readonly localPort: number, private readonly maxHeldBytes: number) {
    const data = ws.getUserData();
    this.remoteAddress = data.remoteAddress;
    this.remotePort = data.remotePort;
    this.proxy = data.proxy;
  }

  /** uWebSockets.js does not tell the client's certificates. */
  peerCertificates(): undefined {
    return undefined;
  }

  get bufferedBytes(): number {
    return this.closed ? 0 : this.pendingBytes + this.ws.getBufferedAmount();
  }

  start(handlers: TransportHandlers): void {
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    if (this.closed) return;
    this.pending.push(frame);
    this.pendingBytes += frame.length;
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.closed || this.pending.length === 0) return;
    const data = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    this.ws.cork(() => {
      // 2: dropped by uWS's own backpressure limit (see WsTransport.dropped).
      if (this.ws.send(data, true) === 2) WsTransport.dropped++;
    });
  };

  end(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.ws.end(1000);
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.close();
  }

  // Outbound: the connection bounds what waits (limits.maxOutboundBytes). Inbound: uWebSockets.js
  // cannot stop reading a WebSocket, so a paused connection (throttled by a rate limit, or its
  // publish pipeline full) holds what arrives, in order, and takes it when it resumes; past
  // maxHeldBytes the client is not slowing down and the connection closes (protocol error).
  private paused = false;
  private held: Buffer[] | null = null;
  private heldBytes = 0;

  /** Bytes arrived from the client (the listener's message handler). */
  receive(chunk: Buffer): void {
    if (!this.paused) {
      this.handlers?.onTransportData(chunk);
      return;
    }
    (this.held ??= []).push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes > this.maxHeldBytes) {
      this.held = null;
      this.heldBytes = 0;
      this.handlers?.onTransportViolation(`more than ${this.maxHeldBytes} bytes sent while reading was paused`);
    }
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    const held = this.held;
    if (held === null) return;
    this.held = null;
    this.heldBytes = 0;
    for (let i = 0; i < held.length; i++) {
      if (this.closed) return;
      if (this.paused) {
        // Paused again by what was taken: the rest waits, still first in line.
        const rest = held.slice(i);
        const later = this.held as Buffer[] | null;
        if (later !== null) rest.push(...later);
        this.held = rest;
        for (const b of rest) this.heldBytes += b.length;
        return;
      }
      this.handlers?.onTransportData(held[i]);
    }
  }
}
