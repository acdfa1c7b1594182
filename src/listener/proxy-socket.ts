// Reads the PROXY protocol header off an accepted net.Socket (mqtt.io: node) before anything
// else has the socket: bounded in size (proxy-header.ts: 107 bytes for v1, 4096 for v2) and in
// time. What was read past the header goes back into the socket (unshift), which stays paused for
// whoever takes it next: the connection, or a TLS server (the header precedes the handshake).
import type { Socket } from 'node:net';

import type { ProxyOrigin } from '../engine/connection/transport.ts';
import { certificateVerified, clientSsl, decide, type ProxyErrorReason, type ProxyHeader, type ProxyMode, type TrustedSources } from './proxy-header.ts';

/** A listener's PROXY protocol settings, as its endpoint gives them. */
export interface ProxyPolicy {
  readonly mode: ProxyMode;
  readonly trusted: TrustedSources;
  /** Milliseconds a connection has to send its header (under 'optional': its first bytes). */
  readonly timeoutMs: number;
}

/**
 * Reads the header of `socket`, then calls `opened` with what it said (null: no header, or one
 * that names no client) and the socket paused, or destroys the socket and calls `refused`. A
 * socket that closes before sending a byte (a balancer's health check) is neither.
 */
export function readProxyHeader(socket: Socket, policy: ProxyPolicy, opened: (header: ProxyHeader | null) => void, refused: (reason: ProxyErrorReason) => void): void {
  const trusted = policy.trusted.has(socket.remoteAddress ?? '');
  if (policy.mode === 'required' && !trusted) {
    socket.destroy();
    refused('untrusted');
    return;
  }
  let buf: Buffer = Buffer.alloc(0);
  let done = false;
  const finish = (): void => {
    done = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', onClose);
    socket.off('error', onError);
  };
  const refuse = (reason: ProxyErrorReason): void => {
    finish();
    socket.destroy();
    refused(reason);
  };
  const onData = (chunk: Buffer): void => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    const d = decide(policy.mode, trusted, buf);
    if (d.kind === 'wait') return;
    if (d.kind === 'refuse') {
      refuse(d.reason);
      return;
    }
    finish();
    socket.pause();
    if (d.length < buf.length) socket.unshift(buf.subarray(d.length));
    opened(d.header);
  };
  const onClose = (): void => {
    if (done) return;
    if (buf.length === 0) finish();
    else refuse('closed');
  };
  // A reset: 'close' follows, which decides.
  const onError = (): void => {};
  const timer = setTimeout(() => refuse('timeout'), policy.timeoutMs);
  socket.on('data', onData);
  socket.on('close', onClose);
  socket.on('error', onError);
}

/** What a header said, as the connection keeps it; undefined when it names no client and
 * carries no TLS details (LOCAL, UNKNOWN, UNSPEC). */
export function proxyOrigin(h: ProxyHeader | null, peerAddress: string, peerPort: number): ProxyOrigin | undefined {
  if (h === null || (h.source === undefined && h.authority === undefined && h.ssl === undefined)) return undefined;
  return {
    address: peerAddress,
    port: peerPort,
    version: h.version,
    serverName: h.authority,
    ssl: clientSsl(h),
    certificateCN: h.ssl?.cn,
    certificateVerified: certificateVerified(h),
  };
}
