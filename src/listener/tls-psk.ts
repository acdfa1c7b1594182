// TLS-PSK of one endpoint in one worker thread: where its keys come from (a Mosquitto psk_file,
// read here and again on SIGHUP, then the built-in client database), the options of Node's TLS
// server that make OpenSSL ask for them, and the count of PSK handshakes by result. Owned by the
// worker thread.
//
// Why Node's TLS and not the native driver: rustls has no external PSK (rustls/rustls#174 is open;
// its manual lists no PSK among its features, and TLS 1.2 PSK suites without (EC)DHE are
// non-features). So an endpoint with sslConfig.psk runs its TLS on Node's OpenSSL even with
// mqtt.io native (listeners.ts).
//
// OpenSSL calls the server's PSK callback in TLS 1.2 (a PSK cipher suite) and in TLS 1.3 (the
// client's pre_shared_key, with a SHA-256 suite). An unknown identity: TLS 1.2 fails with
// unknown_psk_identity; TLS 1.3 goes on to a certificate handshake, which fails without a
// certificate, and on an endpoint with one is cut here once it completes. A wrong key fails the
// handshake either way (TLS 1.2: bad record MAC, TLS 1.3: the binder does not verify).
import tls from 'node:tls';
import { readFileSync } from 'node:fs';

import { parsePskFile, type PskFile } from '../auth/index.ts';
import type { PskConfig } from '../broker/endpoint-config.ts';

/** The built-in client database's key of an identity (an enabled client with a pskKey). */
export type ClientDbPskKeys = (identity: string) => Buffer | undefined;

/** PSK handshakes of an endpoint by result (spindle_tls_psk_handshakes_total). */
export interface PskHandshakeCounts {
  /** Completed with a known identity. */
  ok: number;
  /** Refused: the identity is in no source of the endpoint (or its client is disabled). */
  unknown_identity: number;
  /** A known identity whose handshake failed: a wrong key, mostly. */
  failed: number;
}

export const newPskCounts = (): PskHandshakeCounts => ({ ok: 0, unknown_identity: 0, failed: 0 });

/**
 * TLS 1.2 PSK suites, forward-secret first; AEAD or SHA-2 only (no SHA-1, no RSA-PSK, which
 * needs a certificate, and no DHE-PSK, which needs DH parameters). mosquitto_pub --psk (OpenSSL 3)
 * offers every PSK suite in TLS 1.2 and picks a TLS 1.3 one when both sides can.
 */
export const PSK_TLS12_CIPHERS = [
  'ECDHE-PSK-CHACHA20-POLY1305',
  'ECDHE-PSK-AES256-CBC-SHA384',
  'ECDHE-PSK-AES128-CBC-SHA256',
  'PSK-AES256-GCM-SHA384',
  'PSK-AES128-GCM-SHA256',
  'PSK-CHACHA20-POLY1305',
  'PSK-AES256-CCM',
  'PSK-AES128-CCM',
  'PSK-AES128-CCM8',
  'PSK-AES256-CBC-SHA384',
  'PSK-AES128-CBC-SHA256',
] as const;

/** TLS 1.3 suites: a PSK from the server callback is used with SHA-256 ones. */
const TLS13_SUITES = 'TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384';

/**
 * The cipher list of a PSK endpoint: with a certificate, Node's default list (whose `!PSK` would
 * delete the PSK suites for good, so it becomes `-PSK`, which removes them for now) and then the
 * PSK suites; without one, TLS 1.3 and the PSK suites only.
 */
export function pskCiphers(withCertificate: boolean): string {
  const psk = PSK_TLS12_CIPHERS.join(':');
  if (!withCertificate) return `${TLS13_SUITES}:${psk}`;
  return `${tls.DEFAULT_CIPHERS.split(':').map((c) => (c === '!PSK' ? '-PSK' : c)).join(':')}:${psk}`;
}

const kIdentity = Symbol('spindle.pskIdentity');
const kUnknown = Symbol('spindle.pskUnknown');
type PskSocket = tls.TLSSocket & { [kIdentity]?: string; [kUnknown]?: true };

export class EndpointPsk {
  private file: PskFile | null;

  constructor(
    readonly config: PskConfig,
    private readonly clientDb: ClientDbPskKeys | undefined,
    readonly counts: PskHandshakeCounts,
  ) {
    this.file = config.file !== undefined ? readPskFile(config.file) : null;
  }

  /** Reads the file again; a bad one throws and the old keys stay. */
  reload(): void {
    if (this.config.file !== undefined) this.file = readPskFile(this.config.file);
  }

  /** The key of `identity`: the file's first, then the client database's. */
  keyOf(identity: string): Buffer | undefined {
    const fromFile = this.file?.get(identity);
    if (fromFile !== undefined) return fromFile;
    return this.config.fromClientDb === true ? this.clientDb?.(identity) : undefined;
  }

  /** The options of Node's TLS server for this endpoint (with or without a certificate). */
  serverOptions(withCertificate: boolean): tls.TlsOptions {
    return {
      pskCallback: (socket: tls.TLSSocket, identity: string) => this.onIdentity(socket as PskSocket, identity),
      ...(this.config.identityHint !== undefined ? { pskIdentityHint: this.config.identityHint } : {}),
      ciphers: pskCiphers(withCertificate),
    };
  }

  /** Counts failed handshakes of known identities (tlsClientError). */
  watch(server: tls.Server): void {
    server.on('tlsClientError', (_err, socket) => {
      if ((socket as PskSocket)[kIdentity] !== undefined) this.counts.failed++;
    });
  }

  /**
   * A handshake completed: the identity it proved (undefined for a certificate handshake), or
   * null when the client offered an unknown identity and got a certificate handshake instead
   * (TLS 1.3 on an endpoint with a certificate): the caller closes that socket.
   */
  completed(socket: tls.TLSSocket): string | undefined | null {
    const s = socket as PskSocket;
    const identity = s[kIdentity];
    if (identity !== undefined) {
      this.counts.ok++;
      return identity;
    }
    return s[kUnknown] === true ? null : undefined;
  }

  private onIdentity(socket: PskSocket, identity: string): Buffer | null {
    const key = this.keyOf(identity);
    if (key === undefined) {
      // Asked again after a HelloRetryRequest: counted once.
      if (socket[kUnknown] !== true) this.counts.unknown_identity++;
      socket[kUnknown] = true;
      return null;
    }
    socket[kIdentity] = identity;
    return key;
  }
}

function readPskFile(path: string): PskFile {
  return parsePskFile(readFileSync(path, 'utf8'), path);
}
