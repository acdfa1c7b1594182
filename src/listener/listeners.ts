// The MQTT listeners of one worker thread, one per endpoint: TCP and TLS on SO_REUSEPORT sockets
// the supervisor created for this worker, WebSocket (and WSS) through uWebSockets.js, which binds
// with SO_REUSEPORT itself. Endpoints open, change and close at run time (the supervisor tells
// every worker). Each accepted connection becomes a Transport handed to `accept` with its
// endpoint. An endpoint with PROXY protocol on reads each connection's header first (the native
// driver, proxy-socket.ts for mqtt.io node; before the TLS handshake) or takes the one
// uWebSockets.js read (WebSocket, v2); refusals are counted in the endpoint's connectionErrors as
// proxy_<reason>. Owned by the worker thread.
//
// With mqtt.io native, TCP and TLS connections are the native driver's (rustls), except on an
// endpoint with TLS-PSK: rustls has no external PSK, so that endpoint's TLS runs on Node's
// OpenSSL (tls-psk.ts says more).
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';

import uWS from 'uWebSockets.js';

import type { EndpointConfig, SslConfig } from '../broker/endpoint-config.ts';
import { DEFAULT_BACKLOG } from '../broker/endpoint-backlog.ts';
import type { EndpointCounters } from '../broker/endpoint-counters.ts';
import { EndpointStats } from '../stats/endpoint-stats.ts';
import type { CloseReason } from '../protocol/reason-codes.ts';
import { SocketTransport } from './socket-transport.ts';
import { NativeNet } from './native-net.ts';
import { listenerPort, type NetProxyOptions, type NetTlsOptions } from '../native/index.ts';
import { WsTransport, type WsUserData } from './ws-transport.ts';
import { EndpointPsk, type ClientDbPskKeys } from './tls-psk.ts';
import type { ProxyOrigin, Transport } from '../engine/connection/transport.ts';
import type { CertificateCheck } from '../engine/handlers/client.ts';
import { PROXY_HEADER_TIMEOUT_MS } from '../broker/proxy-protocol.ts';
import { TrustedSources, type ProxyErrorReason } from './proxy-header.ts';
import { proxyOrigin, readProxyHeader, type ProxyPolicy } from './proxy-socket.ts';

/** What a PROXY header said of a connection: the client it named, and the balancer's view. */
type Proxied = { client: { address: string; port: number } | undefined; origin: ProxyOrigin | undefined };

/** A connection as its endpoint keeps it: closed when the endpoint goes away. */
export interface EndpointConnection {
  disconnectWith(reason: number, why: CloseReason, message?: string): void;
}

/** An endpoint as one worker runs it: its configuration, its listener, its connections here. */
export class WorkerEndpoint {
  readonly stats = new EndpointStats();
  readonly connections = new Set<EndpointConnection>();
  server: net.Server | tls.Server | null = null;
  /** mqtt.io node, TLS with PROXY protocol: the TLS server (not listening) the sockets are handed
   * to once their header is read. */
  tlsServer: tls.Server | null = null;
  /** The listener number in the worker's NativeNet (mqtt.io native, TCP). */
  nativeListener: number | null = null;
  /** Stapling native listeners: the server certificate (DER) loaded last. */
  leafDer: Buffer | null = null;
  wsApp: uWS.TemplatedApp | null = null;
  wsSocket: uWS.us_listen_socket | null = null;
  readonly wsTransports = new Set<WsTransport>();
  /** Its TLS-PSK keys (sslConfig.psk), on Node's TLS server. */
  psk: EndpointPsk | null = null;
  /** The OCSP check of its clients' certificates (sslConfig.ocspClientCheck), or null. */
  certificateCheck: CertificateCheck | null = null;

  /** The PROXY protocol policy made from `config` (null: off), for mqtt.io node and WebSocket. */
  private proxyMade: { config: EndpointConfig; policy: ProxyPolicy | null } | null = null;

  constructor(public config: EndpointConfig, readonly slot: number) {}

  get proxy(): ProxyPolicy | null {
    const c = this.config;
    if (this.proxyMade?.config !== c) {
      this.proxyMade = { config: c, policy: c.proxyProtocol === undefined ? null : { mode: c.proxyProtocol, trusted: new TrustedSources(c.proxyProtocolTrusted ?? []), timeoutMs: PROXY_HEADER_TIMEOUT_MS } };
    }
    return this.proxyMade.policy;
  }

  /** A connection refused for its PROXY header or its source: counted, never opened. */
  proxyFailed(reason: ProxyErrorReason): void {
    this.stats.connectionError(`proxy_${reason}`);
  }

  get running(): boolean {
    return this.server !== null || this.wsSocket !== null || this.nativeListener !== null;
  }
}

/** An OCSP response to staple (DER), and the server certificate (DER) it is about
 * (src/features/revocation/stapler.ts sends them as the `ocspStaples` worker state). */
export interface OcspStaple {
  ocsp: Uint8Array;
  leaf: Uint8Array;
}

export interface OpenEndpoint {
  config: EndpointConfig;
  slot: number;
  /** The listening socket (TCP/TLS): a SO_REUSEPORT fd the supervisor made for this worker. */
  fd?: number;
}

export class Listeners {
  readonly endpoints = new Map<string, WorkerEndpoint>();
  private accepting = true;
  /** Draining: new sockets are closed at once (counted as connectionErrors.draining). */
  private draining = false;
  /** The native I/O of this thread's TCP connections (made with the first such endpoint). */
  private native: NativeNet | null = null;

  constructor(
    /** mqtt.io: who does the I/O of TCP connections. */
    private readonly io: 'native' | 'node',
    private readonly defaultHost: string,
    private readonly maxOutboundBytes: number,
    readonly counters: EndpointCounters,
    private readonly accept: (t: Transport, endpoint: WorkerEndpoint) => void,
    /** The client database's PSK keys, for endpoints with sslConfig.psk.fromClientDb. */
    private readonly clientDbPsk?: ClientDbPskKeys,
    /** The OCSP check of an endpoint's client certificates (src/features/revocation), or null. */
    private readonly certificateChecks: (config: EndpointConfig, stats: EndpointStats) => CertificateCheck | null = () => null,
  ) {}

  /** The OCSP responses to staple, by endpoint id (src/features/revocation/stapler.ts). */
  private staples: Record<string, OcspStaple> = {};

  /** New staples: every TLS listener staples its endpoint's (or nothing). */
  setStaples(staples: Record<string, OcspStaple>): void {
    this.staples = staples;
    for (const ep of this.endpoints.values()) this.applyStaple(ep);
  }

  /** The native driver is given the endpoint's staple (it keeps it only for the certificate it is
   * about); Node's servers read `staples` at each OCSPRequest. */
  private applyStaple(ep: WorkerEndpoint): void {
    if (ep.nativeListener === null || !ep.config.sslConfig?.ocspStapling?.enabled) return;
    const s = this.staples[ep.config.id];
    const leaf = s?.leaf ?? null;
    if (leaf === null) {
      // Nothing to staple: whatever the listener has goes (its certificate, whichever it is).
      const current = ep.leafDer ?? readLeaf(ep.config.sslConfig.cert!);
      if (current) this.native!.setOcspStaple(ep.nativeListener, null, current);
      return;
    }
    this.native!.setOcspStaple(ep.nativeListener, s.ocsp, leaf);
  }

  /** Opens an endpoint's listener here (or replaces it, keeping its connections and counters). */
  async open(spec: OpenEndpoint): Promise<void> {
    const existing = this.endpoints.get(spec.config.id);
    const ep = existing ?? new WorkerEndpoint(spec.config, spec.slot);
    if (existing) {
      this.stopListening(existing);
      existing.config = spec.config;
    }
    this.endpoints.set(ep.config.id, ep);
    if (!spec.config.enabled) return;
    ep.certificateCheck = spec.config.sslConfig?.ocspClientCheck?.enabled ? this.certificateChecks(spec.config, ep.stats) : null;
    try {
      if (spec.config.useWebsocket) await this.startWs(ep);
      else await this.startSocket(ep, spec.fd);
    } catch (err) {
      if (!existing) this.endpoints.delete(ep.config.id);
      throw err;
    }
  }

  /** New limits for an endpoint (connections already open keep the ones they were told). */
  update(config: EndpointConfig): void {
    const ep = this.endpoints.get(config.id);
    if (!ep) return;
    ep.config = config;
    if (ep.nativeListener !== null) {
      this.native!.setMaxPacketSize(ep.nativeListener, config.messageMaxSize);
      this.native!.setProxy(ep.nativeListener, nativeProxy(config));
    }
  }

  /** Stops an endpoint's listener and forgets it; answers it so the caller can close its connections. */
  remove(id: string): WorkerEndpoint | undefined {
    const ep = this.endpoints.get(id);
    if (!ep) return undefined;
    this.stopListening(ep);
    this.endpoints.delete(id);
    return ep;
  }

  private async startSocket(ep: WorkerEndpoint, fd: number | undefined): Promise<void> {
    if (fd === undefined) throw new Error(`endpoint ${ep.config.id}: no listening socket given`);
    const onSocket = (socket: net.Socket, cn?: string, pskIdentity?: string, proxied?: Proxied) => {
      if (!this.admit(ep)) {
        socket.destroy();
        return;
      }
      const child = ep.config.childOptions;
      if (child.keepAlive) socket.setKeepAlive(true, (child.keepAliveInitialDelay ?? 0) * 1000);
      const origin = proxied?.origin;
      // A certificate the balancer verified names the client (proxyProtocolCnAsUsername).
      if (ep.config.proxyProtocolCnAsUsername && origin?.certificateVerified && origin.certificateCN !== undefined) cn = origin.certificateCN;
      this.accept(new SocketTransport(socket, ep.config.sslConfig ? 'tls' : 'tcp', cn, pskIdentity, proxied?.client, origin), ep);
    };
    const ssl = ep.config.sslConfig;
    // TCP_NODELAY unless the endpoint asks for Nagle (childOptions.tcpNoDelay: false), set at accept.
    const noDelay = ep.config.childOptions.tcpNoDelay !== false;
    // PSK: Node's OpenSSL whatever mqtt.io says (see the top of this file).
    if (this.io === 'native' && ssl?.psk === undefined) {
      this.listenNative(ep, fd, noDelay, ssl);
      return;
    }
    const psk = ssl?.psk !== undefined ? new EndpointPsk(ssl.psk, this.clientDbPsk, ep.stats.pskHandshakes) : null;
    ep.psk = psk;
    // A TLS socket done with its handshake: refused by the CRL, or the PSK identity it proved.
    const onSecure = (socket: tls.TLSSocket, proxied?: Proxied) => {
      if (ssl!.crl !== undefined && !this.authorizedWithCrl(ep, socket)) return;
      const cn = ssl!.cnAsUsername ? SocketTransport.verifiedCN(socket) : undefined;
      if (psk === null) {
        onSocket(socket, cn, undefined, proxied);
        return;
      }
      const identity = psk.completed(socket);
      // An unknown identity that ended in a certificate handshake (TLS 1.3): refused all the same.
      if (identity === null) socket.destroy();
      else onSocket(socket, cn, psk.config.identityAsUsername === true ? identity : undefined, proxied);
    };
    // Node's TLS server of the endpoint: listening, or fed by the PROXY header reader.
    const tlsServer = (onHandshake: (socket: tls.TLSSocket) => void): tls.Server => {
      const s = tls.createServer({ ...tlsOptions(ep.config, psk), noDelay }, onHandshake);
      if (psk !== null) psk.watch(s);
      if (ssl?.ocspStapling?.enabled) {
        // Clients asking for the certificate's status (status_request) get the stapled response
        // when it is about the certificate this server presents.
        s.on('OCSPRequest', (certificate: Buffer, _issuer: Buffer, done: (err: Error | null, response?: Buffer) => void) => {
          const staple = this.staples[ep.config.id];
          done(null, staple && certificate.equals(staple.leaf) ? Buffer.from(staple.ocsp) : undefined);
        });
      }
      return s;
    };
    let server: net.Server | tls.Server;
    if (!ep.proxy) {
      server = ssl
        ? tlsServer((socket) => onSecure(socket))
        : net.createServer({ noDelay }, (socket) => onSocket(socket));
    } else {
      // The header comes before the TLS handshake: a plain server reads it, then hands the
      // socket (what followed the header put back) to a TLS server that does not listen.
      const handshakes = new Map<string, Proxied>();
      const keyOf = (s: net.Socket) => `${s.remoteAddress}|${s.remotePort}`;
      const inner = ssl
        ? tlsServer((socket) => {
          const key = keyOf(socket);
          const proxied = handshakes.get(key);
          handshakes.delete(key);
          onSecure(socket, proxied);
        })
        : null;
      ep.tlsServer = inner;
      server = net.createServer({ noDelay }, (socket) => {
        const policy = ep.proxy;
        if (!policy) {
          // Turned off since: this listener is being replaced.
          socket.destroy();
          return;
        }
        readProxyHeader(socket, policy, (header) => {
          const peer = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
          const proxied = { client: header?.source, origin: proxyOrigin(header, peer.address, peer.port) };
          if (inner) {
            // The TLS socket the server makes of it has the same peer: that finds the header again.
            const key = keyOf(socket);
            handshakes.set(key, proxied);
            socket.once('close', () => handshakes.delete(key));
            inner.emit('connection', socket);
          } else {
            onSocket(socket, undefined, undefined, proxied);
            socket.resume();
          }
        }, (reason) => ep.proxyFailed(reason));
      });
    }
    ep.server = server;
    await listenFd(server, fd, ep.config.serverOptions.backlog ?? DEFAULT_BACKLOG);
  }

  private listenNative(ep: WorkerEndpoint, fd: number, noDelay: boolean, ssl: SslConfig | undefined): void {
    const native = (this.native ??= new NativeNet());
    const child = ep.config.childOptions;
    const keepAliveSecs = child.keepAlive ? (child.keepAliveInitialDelay ?? 0) : undefined;
    const localPort = listenerPort(fd);
    ep.nativeListener = native.listen(fd, { noDelay, keepAliveSecs, maxPacketSize: ep.config.messageMaxSize, tls: ssl ? nativeTls(ssl) : undefined, proxy: nativeProxy(ep.config) }, {
      kind: ssl ? 'tls' : 'tcp',
      cnAsUsername: ssl?.cnAsUsername ?? false,
      // Read from the endpoint as it is now: these change without a new listener.
      get proxy() {
        return ep.config.proxyProtocol !== undefined;
      },
      get proxyCnAsUsername() {
        return ep.config.proxyProtocolCnAsUsername === true;
      },
      proxyFailed: (reason) => ep.proxyFailed(reason),
      localPort,
      revoked: () => ep.stats.revocation.crlRevoked++,
      opened: (t) => {
        if (!this.admit(ep)) t.destroy();
        else this.accept(t, ep);
      },
      acceptFailed: (errno) => {
        // EMFILE (the process's fd limit), ENFILE (the system's), ENOBUFS, ENOMEM.
        const errors = ep.stats.connectionErrors;
        const code = ACCEPT_ERRNO[errno] ?? `accept_errno_${errno}`;
        errors[code] = (errors[code] ?? 0) + 1;
      },
    });
    if (ssl?.ocspStapling?.enabled) {
      ep.leafDer = readLeaf(ssl.cert!);
      this.applyStaple(ep);
    }
  }

  /**
   * An endpoint with a CRL on Node's TLS: Node is told not to reject (tlsOptions), so that a
   * certificate the CRL revokes is counted here before the socket is destroyed, as Node would
   * destroy it (after the handshake, as with rejectUnauthorized).
   */
  private authorizedWithCrl(ep: WorkerEndpoint, socket: tls.TLSSocket): boolean {
    const ssl = ep.config.sslConfig!;
    if (socket.authorized || !(ssl.requestCert && (ssl.rejectUnauthorized ?? true))) return true;
    if (socket.authorizationError as unknown === 'CERT_REVOKED') ep.stats.revocation.crlRevoked++;
    socket.destroy();
    return false;
  }

  /** Accept-rate limit of the endpoint; a refused socket is counted and closed at once. */
  private admit(ep: WorkerEndpoint): boolean {
    if (!this.accepting) return false;
    if (this.draining) {
      // The node is draining (src/features/drain): its listeners stay bound, new sockets close.
      const errors = ep.stats.connectionErrors;
      errors.draining = (errors.draining ?? 0) + 1;
      return false;
    }
    if (this.counters.allowAccept(ep.slot, ep.config.maxConnectionPerSecond, Date.now())) return true;
    const errors = ep.stats.connectionErrors;
    errors.rate_limited = (errors.rate_limited ?? 0) + 1;
    return false;
  }

  /** New certificates (and PSK files) for new TLS connections of every TLS endpoint; open ones
   * keep theirs. Answers the endpoints that failed (they keep what they had). */
  reloadTls(): { id: string; error: Error }[] {
    const failed: { id: string; error: Error }[] = [];
    for (const ep of this.endpoints.values()) {
      try {
        ep.psk?.reload();
        if (ep.server instanceof tls.Server) ep.server.setSecureContext(tlsOptions(ep.config, ep.psk));
        ep.tlsServer?.setSecureContext(tlsOptions(ep.config, ep.psk));
        const ssl = ep.config.sslConfig;
        if (ssl && ep.nativeListener !== null) {
          this.native!.setTls(ep.nativeListener, nativeTls(ssl));
          if (ssl.ocspStapling?.enabled) {
            // The driver kept the staple if the certificate is the same; one for the new
            // certificate may have come before the reload did.
            ep.leafDer = readLeaf(ssl.cert!);
            this.applyStaple(ep);
          }
        }
      } catch (err) {
        failed.push({ id: ep.config.id, error: err as Error });
      }
    }
    return failed;
  }

  private startWs(ep: WorkerEndpoint): Promise<void> {
    const c = ep.config;
    const ssl = c.sslConfig;
    const app = ssl
      ? uWS.SSLApp({ cert_file_name: ssl.cert, key_file_name: ssl.key, ...(ssl.ca ? { ca_file_name: ssl.ca } : {}) })
      : uWS.App();
    ep.wsApp = app;
    app.ws<WsUserData>(c.path, {
      compression: uWS.DISABLED,
      // The framer enforces the endpoint's packet limit and answers 0x95; this only bounds a frame.
      maxPayloadLength: Math.max(c.messageMaxSize, 16 * 1024 * 1024) + 8,
      idleTimeout: 0, // MQTT keepalive does this job
      // The broker's own outbound limit (limits.maxOutboundBytes) acts first: it stops sending
      // below this, plus a packet and control traffic, so uWS never drops a send by itself.
      maxBackpressure: this.maxOutboundBytes + Math.max(c.messageMaxSize, 1024 * 1024) + 1024 * 1024,
      closeOnBackpressureLimit: 0,
      upgrade: (res, req, context) => {
        // [MQTT-6.0.0-3] the subprotocol is "mqtt" ("mqttv3.1" for MQTT 3.1 clients).
        const offered = req.getHeader('sec-websocket-protocol').split(',').map((s) => s.trim());
        const protocol = offered.find((p) => p === 'mqtt' || p === 'mqttv3.1');
        if (!protocol) {
          res.writeStatus('400 Bad Request').end('WebSocket subprotocol "mqtt" required', true);
          return;
        }
        // PROXY protocol (v2 only): uWebSockets.js reads a header that comes first on the
        // connection, from any peer; the endpoint's policy decides whether it is taken.
        const peer = Buffer.from(res.getRemoteAddressAsText()).toString();
        let address = peer;
        let proxy: ProxyOrigin | undefined;
        const policy = ep.proxy;
        if (policy) {
          const proxied = Buffer.from(res.getProxiedRemoteAddressAsText()).toString();
          const trusted = policy.trusted.has(peer);
          const reason: ProxyErrorReason | null = !trusted && (proxied !== '' || policy.mode === 'required') ? 'untrusted' : proxied === '' && policy.mode === 'required' ? 'missing' : null;
          if (reason !== null) {
            ep.proxyFailed(reason);
            // Closed after the answer: this connection is not for an HTTP client to reuse.
            res.writeStatus('400 Bad Request').end(reason === 'untrusted'
              ? 'proxyProtocol: PROXY protocol header from a source outside proxyProtocolTrusted'
              : 'proxyProtocol: a PROXY protocol v2 header is required on this endpoint', true);
            return;
          }
          if (proxied !== '') {
            address = proxied;
            proxy = { address: peer, port: 0, version: 2, serverName: undefined, ssl: false, certificateCN: undefined, certificateVerified: false };
          }
        }
        if (!this.admit(ep)) {
          res.writeStatus('503 Service Unavailable').end(this.draining ? 'draining: connect to another node' : 'connection rate limit', true);
          return;
        }
        res.upgrade<WsUserData>(
          { remoteAddress: address, remotePort: 0, proxy },
          req.getHeader('sec-websocket-key'),
          protocol,
          req.getHeader('sec-websocket-extensions'),
          context,
        );
      },
      open: (ws) => {
        // Held while paused at most: a packet, plus a second's worth of small ones.
        const t = new WsTransport(ws, c.port, Math.max(c.messageMaxSize, 1024 * 1024) + 1024 * 1024);
        ws.getUserData().transport = t;
        ep.wsTransports.add(t);
        this.accept(t, ep);
      },
      message: (ws, message, isBinary) => {
        const t = ws.getUserData().transport;
        if (!isBinary) {
          // MQTT over WebSocket is binary frames only [MQTT-6.0.0-1]: a text frame closes the
          // connection (1003: unsupported data).
          t?.handlers?.onTransportViolation('WebSocket text frame');
          return;
        }
        // uWS reuses the ArrayBuffer after this callback: copy.
        t?.receive(Buffer.from(new Uint8Array(message)));
      },
      drain: (ws) => {
        ws.getUserData().transport?.handlers?.onTransportDrain();
      },
      close: (ws) => {
        const t = ws.getUserData().transport;
        if (!t) return;
        t.closed = true;
        ep.wsTransports.delete(t);
        t.handlers?.onTransportClose(false);
      },
    });
    const host = c.host ?? this.defaultHost;
    return new Promise((resolve, reject) => {
      app.listen(host, c.port, (socket) => {
        if (!socket) reject(Object.assign(new Error(`WebSocket endpoint ${c.id} could not bind ${host}:${c.port}`), { code: 'EADDRINUSE' }));
        else {
          ep.wsSocket = socket;
          resolve();
        }
      });
    });
  }

  private stopListening(ep: WorkerEndpoint): void {
    ep.server?.close();
    ep.server = null;
    ep.psk = null;
    ep.tlsServer = null;
    if (ep.nativeListener !== null) {
      this.native?.unlisten(ep.nativeListener);
      ep.nativeListener = null;
    }
    if (ep.wsSocket) {
      uWS.us_listen_socket_close(ep.wsSocket);
      ep.wsSocket = null;
    }
  }

  /** Draining (src/features/drain) or not: while draining every new socket is closed at once;
   * the listeners stay bound, so the node accepts again as soon as the drain is cancelled. */
  setDraining(on: boolean): void {
    this.draining = on;
  }

  /** Stops accepting on every endpoint (shutdown). */
  stopAccepting(): void {
    this.accepting = false;
    for (const ep of this.endpoints.values()) this.stopListening(ep);
  }

  /**
   * The worker thread is ending (also on an uncaught exception): closes the uWS listen sockets
   * and every WebSocket connection now, synchronously. uWS keeps a libuv poll handle per socket
   * and Node aborts the whole process when a worker's loop closes with one open, so a crash in
   * one worker would take down every worker. (Worker.terminate() runs no JavaScript: a worker
   * with a WebSocket listener cannot be terminated that way.)
   */
  releaseWs(): void {
    this.stopAccepting();
    this.native?.stop();
    for (const ep of this.endpoints.values()) {
      for (const t of ep.wsTransports) t.destroy();
      ep.wsTransports.clear();
    }
  }
}

/** accept() errors as the endpoint's connectionErrors count them. */
const ACCEPT_ERRNO: Record<number, string> = { 24: 'accept_emfile', 23: 'accept_enfile', 105: 'accept_enobufs', 12: 'accept_enomem' };

/** An endpoint's PROXY protocol settings as the native driver takes them (null: off). */
function nativeProxy(c: EndpointConfig): NetProxyOptions | null {
  if (c.proxyProtocol === undefined) return null;
  return { mode: c.proxyProtocol, trusted: c.proxyProtocolTrusted ?? [], timeoutMs: PROXY_HEADER_TIMEOUT_MS };
}

/** An endpoint's TLS settings as the native driver takes them (the same rules as tlsOptions;
 * never a PSK endpoint, so it has a certificate). */
function nativeTls(t: SslConfig): NetTlsOptions {
  const requestCert = t.requestCert ?? false;
  return { cert: t.cert!, key: t.key!, ca: t.ca || undefined, requestCert, rejectUnauthorized: requestCert && (t.rejectUnauthorized ?? true), crl: t.crl };
}

/** An endpoint's options of Node's TLS server: its certificate (a PSK-only endpoint has none),
 * client certificates, and the PSK callback and cipher suites (tls-psk.ts). */
export function tlsOptions(c: EndpointConfig, psk: EndpointPsk | null = null): tls.TlsOptions {
  const t = c.sslConfig!;
  const withCertificate = t.cert !== undefined && t.key !== undefined;
  const rejectUnauthorized = (t.requestCert ?? false) && (t.rejectUnauthorized ?? true);
  return {
    ...(withCertificate ? { cert: readFileSync(t.cert!), key: readFileSync(t.key!) } : {}),
    ca: t.ca ? readFileSync(t.ca) : undefined,
    // Node (OpenSSL) then checks every certificate of the client's chain (CRL_CHECK_ALL); with a
    // CRL the refusal is made by Listeners.authorizedWithCrl, which counts it.
    ...(t.crl !== undefined ? { crl: crlPem(readFileSync(t.crl)) } : {}),
    requestCert: t.requestCert ?? false,
    rejectUnauthorized: t.crl !== undefined ? false : rejectUnauthorized,
    ...(psk !== null ? psk.serverOptions(withCertificate) : {}),
  };
}

/** Node takes PEM CRLs only: a DER file (one CRL) becomes one PEM section. */
function crlPem(file: Buffer): Buffer {
  if (file.includes('-----BEGIN ')) return file;
  const b64 = file.toString('base64').replace(/.{64}/g, '$&\n');
  return Buffer.from(`-----BEGIN X509 CRL-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END X509 CRL-----\n`);
}

/** The first certificate (DER) of a PEM chain file, or null when it cannot be read. */
function readLeaf(file: string): Buffer | null {
  try {
    return new X509Certificate(readFileSync(file)).raw;
  } catch {
    return null;
  }
}

/**
 * Node calls listen() on the fd again, with 511 unless a backlog is passed as the second argument
 * (for an fd, Node 20 ignores `backlog` in the options object): the socket's own backlog is given again.
 */
function listenFd(server: net.Server, fd: number, backlog: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ fd }, backlog, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
