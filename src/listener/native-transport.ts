// Transport over a connection of the worker's NativeNet (native-net.ts): a handle of a few
// numbers. The socket, its reads and its output queue live in native memory; writes of a tick go
// into the NativeNet's arena and leave, for every connection at once, when the tick ends.
import type { ProxyOrigin, Transport, TransportFraming, TransportHandlers, TransportKind } from '../engine/connection/transport.ts';

/** The listener a connection came from (native-net.ts's NativeListener): shared by its
 * connections, so each holds one reference instead of three fields. */
export interface TransportOrigin {
  readonly kind: TransportKind;
  /** The port it listens on. */
  readonly localPort: number;
  /** TLS endpoints with cnAsUsername: the certificate's CN is asked for at CONNECT. */
  readonly cnAsUsername: boolean;
  /** PROXY protocol on: a connection may carry what its header said (asked when needed). */
  readonly proxy: boolean;
  /** The CN of a client certificate that a PROXY v2 header says the balancer verified is the
   * username (proxyProtocolCnAsUsername). */
  readonly proxyCnAsUsername: boolean;
}

/** What a transport asks of the NativeNet that made it (native-net.ts implements it). */
export interface NativeIo {
  write(t: NativeTransport, frame: Buffer): void;
  end(t: NativeTransport): void;
  destroy(t: NativeTransport): void;
  pause(t: NativeTransport): void;
  resume(t: NativeTransport): void;
  framerError(t: NativeTransport): { reason: number; code: string; message: string } | null;
  setVersion(t: NativeTransport, level: number): void;
  verifiedCN(t: NativeTransport): string | undefined;
  peerCertificates(t: NativeTransport): Buffer[] | undefined;
  peerAddress(t: NativeTransport): string;
  proxyOrigin(t: NativeTransport): ProxyOrigin | undefined;
}

export class NativeTransport implements Transport, TransportFraming {
  handlers: TransportHandlers | null = null;
  /** A packet is half received (as of the last read). */
  partial = false;
  /** Bytes written this tick, still in the arena. */
  pending = 0;
  /** Bytes the kernel has not taken yet (native queue), as of the last flush or drain. */
  queued = 0;
  /** In the NativeNet's list of connections written this tick. */
  touched = false;
  closed = false;
  /** The client's address (a PROXY header's source, or the peer), made when first asked (given
   * at once for an IPv6 one). */
  address: string | undefined;
  /** What the PROXY header said: null when there was none (asked once). */
  private proxied: ProxyOrigin | null | undefined;

  constructor(
    private readonly net: NativeIo,
    readonly id: number,
    readonly origin: TransportOrigin,
    /** The peer's IPv4 address as a number (0: IPv6, read from the driver). */
    private readonly ip4: number,
    readonly remotePort: number,
  ) {}

  get kind(): TransportKind {
    return this.origin.kind;
  }

  get localPort(): number {
    return this.origin.localPort;
  }

  /** The driver splits this connection's bytes into packets: it is its own framing. */
  get framing(): TransportFraming {
    return this;
  }

  get error(): { reason: number; code: string; message: string } | null {
    return this.net.framerError(this);
  }

  get buffered(): number {
    return this.partial ? 1 : 0;
  }

  setVersion(level: number): void {
    if (!this.closed) this.net.setVersion(this, level);
  }

  get remoteAddress(): string {
    if (this.address === undefined) {
      const a = this.ip4;
      this.address = a !== 0 ? `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}` : this.net.peerAddress(this);
    }
    return this.address;
  }

  get proxy(): ProxyOrigin | undefined {
    if (!this.origin.proxy) return undefined;
    if (this.proxied === undefined) this.proxied = (this.closed ? undefined : this.net.proxyOrigin(this)) ?? null;
    return this.proxied ?? undefined;
  }

  get certificateCN(): string | undefined {
    if (this.origin.proxyCnAsUsername) {
      const p = this.proxy;
      if (p?.certificateVerified && p.certificateCN !== undefined) return p.certificateCN;
    }
    return this.origin.cnAsUsername && !this.closed ? this.net.verifiedCN(this) : undefined;
  }

  peerCertificates(): Buffer[] | undefined {
    return this.origin.kind === 'tls' && !this.closed ? this.net.peerCertificates(this) : undefined;
  }

  get bufferedBytes(): number {
    return this.closed ? 0 : this.pending + this.queued;
  }

  start(handlers: TransportHandlers): void {
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    if (!this.closed) this.net.write(this, frame);
  }

  end(): void {
    if (!this.closed) this.net.end(this);
  }

  destroy(): void {
    if (!this.closed) this.net.destroy(this);
  }

  pause(): void {
    if (!this.closed) this.net.pause(this);
  }

  resume(): void {
    if (!this.closed) this.net.resume(this);
  }
}
