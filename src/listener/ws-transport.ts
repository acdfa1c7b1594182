// Transport over a uWebSockets.js WebSocket. MQTT packets may span or share WebSocket messages
// (MQTT 5.0 section 6), so frames written in one tick leave as one binary message.
import type { WebSocket } from 'uWebSockets.js';

import type { Transport, TransportHandlers } from '../engine/connection/transport.ts';

export interface WsUserData {
  transport?: WsTransport;
  remoteAddress: string;
  remotePort: number;
}

export class WsTransport implements Transport {
  readonly kind = 'ws' as const;
  readonly certificateCN = undefined;
  readonly remoteAddress: string;
  readonly remotePort: number;
  handlers: TransportHandlers | null = null;
  closed = false;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private scheduled = false;
  /** uWS refused a send (over its maxBackpressure: set above the broker's outbound limit, so this
   * is a bug if it ever counts). */
  static dropped = 0;

  constructor(private readonly ws: WebSocket<WsUserData>, readonly localPort: number) {
    const data = ws.getUserData();
    this.remoteAddress = data.remoteAddress;
    this.remotePort = data.remotePort;
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

  // Outbound: the connection bounds what waits (limits.maxOutboundBytes). Inbound reads are not
  // paused on a WebSocket.
  pause(): void {}
  resume(): void {}
}
