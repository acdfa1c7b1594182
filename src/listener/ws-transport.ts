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
  private scheduled = false;

  constructor(private readonly ws: WebSocket<WsUserData>, readonly localPort: number) {
    const data = ws.getUserData();
    this.remoteAddress = data.remoteAddress;
    this.remotePort = data.remotePort;
  }

  get bufferedBytes(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }

  start(handlers: TransportHandlers): void {
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    if (this.closed) return;
    this.pending.push(frame);
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
    this.ws.cork(() => this.ws.send(data, true));
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

  // Backpressure is handled by uWS's maxBackpressure; reads are not paused on a WebSocket.
  pause(): void {}
  resume(): void {}
}
