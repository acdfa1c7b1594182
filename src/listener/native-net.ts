// The native TCP I/O of one worker thread: one NetDriver (native/core/src/net) owns the thread's
// TCP listening sockets and connections on one epoll instance, woken by this thread's own event
// loop. Once per turn it hands over one batch: connections opened, bytes read, queues drained,
// connections closed. Writes made during a tick are copied into one arena and leave together when
// the tick ends, one vectored write per connection (large frames go on their own, in order).
// Owned by the worker thread; the Listeners give it their TCP endpoints.
import { NetDriver, DESC_SLOTS, type NetProxyOptions, type NetTlsOptions, type ErrorInfo } from '../native/index.ts';
import type { ProxyOrigin } from '../engine/connection/transport.ts';
import { PROXY_ERROR_REASONS, type ProxyErrorReason } from './proxy-header.ts';
import { NativeTransport, type NativeIo, type TransportOrigin } from './native-transport.ts';

const EV_OPEN = 1;
const EV_DRAIN = 3;
const EV_CLOSE = 4;
const EV_ACCEPT_ERROR = 5;
/** The close of a TLS connection whose client certificate a CRL revokes (the driver's errno). */
const EKEYREVOKED = 128;
/** A connection of a PROXY protocol listener refused before it opened: [kind, listener, reason, 0]. */
const EV_PROXY_ERROR = 7;
/** Bytes read, split into packets by the driver (it replaces EV_DATA): [kind | flags << 8, id,
 * first descriptor, count]. */
const EV_FRAMES = 6;
const FRAMES_PARTIAL = 1 << 8;
const NO_DESCRIPTORS = new Uint32Array(0);
/** Event table: [count, more, 0, 0] then records of 4 words. */
const HEADER = 4;
const MAX_EVENTS = 4096;
/** The arena a tick's small frames are copied into; a tick that fills it flushes early. */
const ARENA_BYTES = 1 << 20;
const MAX_RECORDS = 16384;
/** Frames larger than this are written on their own, not copied. */
const LARGE_FRAME = 64 * 1024;
/** A connection that was ended is destroyed if its peer has not closed by then. */
const END_TIMEOUT_MS = 5000;

/** What a listener of the NativeNet does with what it accepts. */
export interface NativeListener extends TransportOrigin {
  opened(t: NativeTransport): void;
  /** accept() failed (EMFILE, ENFILE, ...): counted; accepting resumes shortly. */
  acceptFailed(errno: number): void;
  /** A TLS handshake refused a client certificate a CRL revokes (counted). */
  revoked?(): void;
  /** A connection was refused for its PROXY header (or its source), never opened: counted. */
  proxyFailed(reason: ProxyErrorReason): void;
}

export interface ListenOptions {
  noDelay: boolean;
  /** The endpoint's largest packet (its messageMaxSize): the driver's framer enforces it. */
  maxPacketSize: number;
  keepAliveSecs?: number;
  /** A TLS endpoint (rustls in the driver): its certificate files and client-certificate policy. */
  tls?: NetTlsOptions;
  /** PROXY protocol (null: off). */
  proxy: NetProxyOptions | null;
}

export class NativeNet implements NativeIo {
  private readonly driver = new NetDriver();
  private readonly events = new Uint32Array(HEADER + MAX_EVENTS * 4);
  private readonly transports = new Map<number, NativeTransport>();
  private readonly listeners = new Map<number, NativeListener>();
  private readonly arena = Buffer.allocUnsafeSlow(ARENA_BYTES);
  private arenaUsed = 0;
  private readonly records = new Uint32Array(MAX_RECORDS * 3);
  private recordCount = 0;
  private readonly status = new Uint32Array(MAX_RECORDS * 2);
  private touched: NativeTransport[] = [];
  private flushScheduled = false;
  private turnScheduled = false;
  private retryTimer: NodeJS.Timeout | null = null;
  /** Connections ended and waiting for their peer to close: [transport, deadline]. */
  private ending: [NativeTransport, number][] = [];
  private endSweep: NodeJS.Timeout | null = null;
  /** Listeners with PROXY protocol on; while there are any, overdue headers are swept each second. */
  private readonly proxied = new Set<number>();
  private headerSweep: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor() {
    this.driver.start(this.turn);
  }

  /** Accepts on a listening socket's fd (the driver owns it from now on); answers its number. */
  listen(fd: number, options: ListenOptions, listener: NativeListener): number {
    const n = this.driver.listen(fd, options.noDelay, options.keepAliveSecs, options.tls, options.maxPacketSize);
    this.listeners.set(n, listener);
    // Before any turn accepts on it.
    if (options.proxy) this.setProxy(n, options.proxy);
    this.scheduleTurn(); // connections may wait in the backlog already
    return n;
  }

  /** New certificates for a TLS listener's new connections; throws, changing nothing, when they
   * do not load. */
  setTls(n: number, tls: NetTlsOptions): void {
    this.driver.setTls(n, tls);
  }

  /** The PROXY protocol settings of a listener's new connections (null: off). Throws, changing
   * nothing, on a trusted block that is no CIDR block. */
  setProxy(n: number, proxy: NetProxyOptions | null): void {
    this.driver.setProxy(n, proxy);
    if (proxy) this.proxied.add(n);
    else this.proxied.delete(n);
    this.sweepWhileProxied();
  }

  private sweepWhileProxied(): void {
    if (this.proxied.size > 0) this.headerSweep ??= setInterval(this.sweepHeaders, 1000).unref();
    else if (this.headerSweep) {
      clearInterval(this.headerSweep);
      this.headerSweep = null;
    }
  }

  /** Connections whose PROXY header is overdue are closed; their events come with a turn. */
  private readonly sweepHeaders = (): void => {
    if (!this.stopped && this.driver.expireProxyHeaders() > 0) this.scheduleTurn();
  };

  /** A new packet limit for a listener's new connections. */
  setMaxPacketSize(n: number, maxPacketSize: number): void {
    this.driver.setMaxPacketSize(n, maxPacketSize);
  }

  /** Stops accepting there and closes the socket; its connections stay. */
  unlisten(n: number): void {
    this.driver.unlisten(n);
    this.listeners.delete(n);
    // Its connections still reading a header are swept until the last listener with PROXY goes.
    if (this.proxied.delete(n)) this.sweepWhileProxied();
  }

  /** Closes every connection and listener now (the thread is ending). */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.headerSweep) clearInterval(this.headerSweep);
    this.driver.stop();
    for (const t of this.transports.values()) t.closed = true;
    this.transports.clear();
  }

  private readonly turn = (): void => {
    this.turnScheduled = false;
    if (this.stopped) return;
    const ev = this.events;
    const data = this.driver.turn(ev);
    const n = ev[0];
    const desc = ev[2] > 0 ? this.driver.descriptors() : NO_DESCRIPTORS;
    for (let i = 0, o = HEADER; i < n; i++, o += 4) {
      const id = ev[o + 1];
      switch (ev[o] & 0xff) {
        case EV_FRAMES: {
          const t = this.transports.get(id);
          if (!t) break;
          t.partial = (ev[o] & FRAMES_PARTIAL) !== 0;
          t.handlers?.onTransportFrames(data!, desc, ev[o + 2] * DESC_SLOTS, ev[o + 3]);
          break;
        }
        case EV_OPEN: {
          const listener = this.listeners.get(ev[o + 2] & 0xffff);
          if (!listener) {
            this.driver.destroy(id);
            break;
          }
          const t = new NativeTransport(this, id, listener, ev[o + 3], ev[o + 2] >>> 16);
          if (ev[o + 3] === 0) t.address = this.driver.peerAddress(id);
          this.transports.set(id, t);
          listener.opened(t);
          break;
        }
        case EV_DRAIN: {
          const t = this.transports.get(id);
          if (t) {
            t.queued = 0;
            t.handlers?.onTransportDrain();
          }
          break;
        }
        case EV_CLOSE: {
          const t = this.transports.get(id);
          if (!t) break;
          this.transports.delete(id);
          t.closed = true;
          t.queued = t.pending = 0;
          const errno = ev[o + 2];
          if (errno === EKEYREVOKED) (t.origin as NativeListener).revoked?.();
          if (errno !== 0) t.handlers?.onTransportError(Object.assign(new Error(`socket error (errno ${errno})`), { errno }));
          t.handlers?.onTransportClose(errno !== 0);
          break;
        }
        case EV_PROXY_ERROR:
          this.listeners.get(id)?.proxyFailed(PROXY_ERROR_REASONS[ev[o + 2] - 1] ?? 'malformed');
          break;
        case EV_ACCEPT_ERROR:
          this.listeners.get(id)?.acceptFailed(ev[o + 2]);
          // Tried again on a later turn; without new connections nothing would wake us.
          this.retryTimer ??= setTimeout(() => {
            this.retryTimer = null;
            this.turn();
          }, 100);
          break;
      }
    }
    if (ev[1]) this.scheduleTurn();
  };

  private scheduleTurn(): void {
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    setImmediate(this.turn);
  }

  write(t: NativeTransport, frame: Buffer): void {
    const len = frame.length;
    if (len > LARGE_FRAME) {
      this.flush(); // what was written before goes first
      const q = this.driver.write(t.id, frame);
      if (q >= 0) t.queued = q;
      else this.scheduleTurn(); // the write failed: its close event waits
      return;
    }
    if (this.arenaUsed + len > ARENA_BYTES || this.recordCount === MAX_RECORDS) this.flush();
    this.arena.set(frame, this.arenaUsed);
    const last = (this.recordCount - 1) * 3;
    if (last >= 0 && this.records[last] === t.id) {
      // The same connection as the write before (its frames are back to back in the arena): one
      // record, one slice of the writev (a subscriber of many publishers gets one per tick).
      this.records[last + 2] += len;
    } else {
      const r = this.recordCount * 3;
      this.records[r] = t.id;
      this.records[r + 1] = this.arenaUsed;
      this.records[r + 2] = len;
      this.recordCount++;
    }
    this.arenaUsed += len;
    t.pending += len;
    if (!t.touched) {
      t.touched = true;
      this.touched.push(t);
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(this.flushTick);
    }
  }

  private readonly flushTick = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  private flush(): void {
    if (this.recordCount === 0 || this.stopped) return;
    const r = this.driver.flush(this.arena, this.records, this.recordCount, this.status);
    this.recordCount = 0;
    this.arenaUsed = 0;
    for (const t of this.touched) {
      t.touched = false;
      t.pending = 0;
      t.queued = 0;
    }
    this.touched.length = 0;
    const reported = r & 0x7fffffff;
    for (let i = 0; i < reported; i++) {
      const t = this.transports.get(this.status[i * 2]);
      if (t) t.queued = this.status[i * 2 + 1];
    }
    if (r >>> 31) this.scheduleTurn();
  }

  end(t: NativeTransport): void {
    // What this connection was written this tick goes out before its FIN.
    if (t.pending > 0) this.flush();
    t.closed = true;
    t.pending = 0;
    if (!this.driver.end(t.id)) {
      this.transports.delete(t.id);
      return;
    }
    this.scheduleTurn(); // the peer's FIN may be waiting already
    this.ending.push([t, Date.now() + END_TIMEOUT_MS]);
    this.endSweep ??= setInterval(this.sweepEnding, 1000).unref();
  }

  /** A peer that never closes its side must not hold the socket open forever. */
  private readonly sweepEnding = (): void => {
    const now = Date.now();
    let keep = 0;
    for (const e of this.ending) {
      const [t, deadline] = e;
      if (this.transports.get(t.id) !== t) continue; // closed since
      if (deadline <= now) {
        this.transports.delete(t.id);
        this.driver.destroy(t.id);
      } else this.ending[keep++] = e;
    }
    this.ending.length = keep;
    if (keep === 0 && this.endSweep) {
      clearInterval(this.endSweep);
      this.endSweep = null;
    }
  };

  destroy(t: NativeTransport): void {
    t.closed = true;
    t.pending = t.queued = 0;
    this.transports.delete(t.id);
    this.driver.destroy(t.id);
  }

  pause(t: NativeTransport): void {
    this.driver.pause(t.id);
  }

  resume(t: NativeTransport): void {
    if (this.driver.resume(t.id)) this.scheduleTurn();
  }

  verifiedCN(t: NativeTransport): string | undefined {
    return this.driver.verifiedCn(t.id) ?? undefined;
  }

  peerCertificates(t: NativeTransport): Buffer[] | undefined {
    return this.driver.peerCertificates(t.id) ?? undefined;
  }

  /** Staples `ocsp` to a TLS listener's new handshakes while its certificate is `leaf` (false,
   * changing nothing, when it is another one); null: no staple. */
  setOcspStaple(n: number, ocsp: Uint8Array | null, leaf: Uint8Array): boolean {
    return this.driver.setOcspStaple(n, ocsp, leaf);
  }

  framerError(t: NativeTransport): ErrorInfo | null {
    return this.driver.framerError(t.id);
  }

  setVersion(t: NativeTransport, level: number): void {
    this.driver.setVersion(t.id, level);
  }

  peerAddress(t: NativeTransport): string {
    return this.driver.peerAddress(t.id);
  }

  proxyOrigin(t: NativeTransport): ProxyOrigin | undefined {
    const p = this.driver.proxyInfo(t.id);
    if (!p) return undefined;
    return {
      address: p.address,
      port: p.port,
      version: p.version === 1 ? 1 : 2,
      serverName: p.authority ?? undefined,
      ssl: p.ssl,
      certificateCN: p.sslCn ?? undefined,
      certificateVerified: p.certVerified,
    };
  }
}
