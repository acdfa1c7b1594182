// Transport over a net.Socket or tls.TLSSocket. Writes within a tick are corked and leave as
// one writev when the tick ends.
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

import type { ProxyOrigin, Transport, TransportHandlers, TransportKind } from '../engine/connection/transport.ts';

/** The transport of a socket, for the listener functions below: they are shared by every
 * socket (no closures per connection). */
const kTransport = Symbol('spindle.transport');
type TransportSocket = Socket & { [kTransport]: SocketTransport };

function onData(this: TransportSocket, chunk: Buffer): void {
  this[kTransport].handlers!.onTransportData(chunk);
}
function onDrain(this: TransportSocket): void {
  this[kTransport].handlers!.onTransportDrain();
}
function onError(this: TransportSocket, err: Error): void {
  this[kTransport].handlers!.onTransportError(err);
}
function onClose(this: TransportSocket, hadError: boolean): void {
  this[kTransport].handlers!.onTransportClose(hadError);
}
function uncork(t: SocketTransport): void {
  t.corked = false;
  t.socket.uncork();
}

export class SocketTransport implements Transport {
  corked = false;
  handlers: TransportHandlers | null = null;

  /** TCP_NODELAY is set by the server at accept (net.createServer's noDelay). */
  constructor(
    readonly socket: Socket,
    readonly kind: TransportKind,
    readonly certificateCN: string | undefined = undefined,
    /** TLS-PSK with identityAsUsername: the identity whose key the client proved it holds. */
    readonly pskIdentity: string | undefined = undefined,
    /** The client a PROXY header named (its address and port). */
    private readonly client: { address: string; port: number } | undefined = undefined,
    readonly proxy: ProxyOrigin | undefined = undefined,
  ) {}

  // Addresses are read when asked (getpeername/getsockname are syscalls; most connections are
  // never asked), and kept by the socket once read.
  get remoteAddress(): string {
    return this.client?.address ?? this.socket.remoteAddress ?? '';
  }

  get remotePort(): number {
    return this.client?.port ?? this.socket.remotePort ?? 0;
  }

  get localPort(): number {
    return this.socket.localPort ?? 0;
  }

  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  start(handlers: TransportHandlers): void {
    this.handlers = handlers;
    (this.socket as TransportSocket)[kTransport] = this;
    this.socket.on('data', onData);
    this.socket.on('close', onClose);
    // An 'error' is always followed by 'close', where the connection cleans up; the error itself
    // (reset by peer, broken pipe) is only counted.
    this.socket.on('error', onError);
    this.socket.on('drain', onDrain);
  }

  write(frame: Buffer): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(uncork, this);
    }
    this.socket.write(frame);
  }

  end(): void {
    this.socket.end();
    // A peer that never reads must not hold the socket open forever.
    setTimeout(() => this.socket.destroy(), 5000).unref();
  }

  destroy(): void {
    this.socket.destroy();
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  peerCertificates(): Buffer[] | undefined {
    if (this.kind !== 'tls') return undefined;
    const out: Buffer[] = [];
    let cert = (this.socket as TLSSocket).getPeerCertificate(true);
    // The chain as OpenSSL built it, up to its self-issued end (which points at itself).
    while (cert?.raw && out.length < 10) {
      out.push(cert.raw);
      const next = cert.issuerCertificate;
      if (!next || next === cert || next.raw?.equals(cert.raw)) break;
      cert = next;
    }
    return out.length > 0 ? out : undefined;
  }

  /** TLS: the peer certificate's subject CN when the certificate was verified. */
  static verifiedCN(socket: TLSSocket): string | undefined {
    if (!socket.authorized) return undefined;
    const cn = socket.getPeerCertificate()?.subject?.CN;
    return Array.isArray(cn) ? cn[0] : cn;
  }
}
