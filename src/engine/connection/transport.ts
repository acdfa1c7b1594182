// Transport: what a connection needs from the listener that accepted it, whatever the wire (TCP,
// TLS, WebSocket): bytes in, bytes out, close. Declared here, by its user; the listeners
// implement it. Writes made during one tick leave in one corked write.

export type TransportKind = 'tcp' | 'tls' | 'ws';

/** What a transport tells its connection (the Connection implements it: no closures per
 * connection). */
export interface TransportHandlers {
  onTransportData(chunk: Buffer): void;
  /** Packets a transport that frames natively read (`framing`): `count` descriptors of
   * DESC_SLOTS words from `table[at]`, their offsets into `src`. */
  onTransportFrames(src: Buffer, table: Uint32Array, at: number, count: number): void;
  /** A socket error (reset by peer, broken pipe): counted; a close follows. */
  onTransportError(err: Error): void;
  /** The wire broke a rule below MQTT (a WebSocket text frame): the connection closes. */
  onTransportViolation(what: string): void;
  /** What was buffered for the client has been taken (after bufferedBytes grew). */
  onTransportDrain(): void;
  onTransportClose(hadError: boolean): void;
}

/** The framing of a transport that splits packets itself (the native driver): what the
 * connection's own Framer would tell. */
export interface TransportFraming {
  /** The error that stopped framing (after the packets before it were delivered). */
  readonly error: { reason: number; code: string; message: string } | null | undefined;
  /** Bytes of a packet half received. */
  readonly buffered: number;
  /** The protocol level CONNECT negotiated: PUBLISH packets are decoded by it. */
  setVersion(level: number): void;
}

/** What a PROXY protocol header told of a connection (a listener with proxyProtocol on, and a
 * header that named the client or carried its TLS details). */
export interface ProxyOrigin {
  /** The balancer: the TCP peer that sent the header. */
  readonly address: string;
  readonly port: number;
  readonly version: 1 | 2;
  /** PP2_TYPE_AUTHORITY (v2): the server name the client asked the balancer for (its TLS SNI). */
  readonly serverName: string | undefined;
  /** PP2_TYPE_SSL (v2): the client spoke TLS to the balancer. */
  readonly ssl: boolean;
  /** PP2_SUBTYPE_SSL_CN: the client certificate's CN, as the balancer sent it. */
  readonly certificateCN: string | undefined;
  /** The client presented a certificate (this connection or its TLS session) that the balancer
   * verified (PP2_CLIENT_CERT_CONN/SESS and verify 0). */
  readonly certificateVerified: boolean;
}

export interface Transport {
  readonly kind: TransportKind;
  /** Present when the transport delivers packets (onTransportFrames), not bytes. */
  readonly framing?: TransportFraming;
  /** The client's address: a PROXY header's source, or the peer. */
  readonly remoteAddress: string;
  readonly remotePort: number;
  /** What the PROXY header said, when one named the client (undefined otherwise). */
  readonly proxy: ProxyOrigin | undefined;
  /** The CN of a verified client certificate (TLS with client certificates). */
  readonly certificateCN: string | undefined;
  /** The TLS-PSK identity whose key the client proved it holds, on an endpoint whose psk has
   * identityAsUsername (absent otherwise). */
  readonly pskIdentity?: string;
  /** The certificates a TLS client presented (DER, its own first), once its handshake is done;
   * undefined without TLS or without one. Asked only by an endpoint's OCSP check of clients. */
  peerCertificates(): Buffer[] | undefined;
  /** Port of the listener that accepted the connection. */
  readonly localPort: number;
  /** Bytes accepted by write() and not yet taken by the client's side: not yet handed to the
   * kernel (TCP, TLS), or not yet sent (WebSocket). */
  readonly bufferedBytes: number;
  start(handlers: TransportHandlers): void;
  write(frame: Buffer): void;
  /** Flushes what was written, then closes. */
  end(): void;
  /** Closes now, dropping what is unsent. */
  destroy(): void;
  pause(): void;
  resume(): void;
}
