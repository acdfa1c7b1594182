// Owns "can we connect": one TCP connection (and its TLS handshake, for TLS endpoints) to a host and
// port, closed as soon as it is established. The http source's check and probe use it: many web
// hook receivers refuse HEAD or OPTIONS, and a request with the configured method would deliver
// an empty message, so reaching the endpoint (DNS, TCP, TLS with its certificate check) is what a
// check can honestly test without side effects.
import net from 'node:net';
import tls from 'node:tls';

import { SourceError } from './types.ts';

export interface ConnectTarget {
  host: string;
  port: number;
  /** TLS options when the endpoint speaks TLS. */
  tls?: { rejectUnauthorized: boolean; ca?: string };
}

/** Resolves once connected (and handshaken); rejects with the socket's error or a timeout. */
export function connectOnce(target: ConnectTarget, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const socket = target.tls
      ? tls.connect({ host: target.host, port: target.port, servername: net.isIP(target.host) ? undefined : target.host, ...target.tls })
      : net.connect({ host: target.host, port: target.port });
    const timer = setTimeout(function connectTimedOut() {
      socket.destroy();
      reject(new SourceError(`connect to ${target.host}:${target.port} timed out after ${timeoutMs} ms`, 'timeout', true));
    }, timeoutMs);
    socket.once(target.tls ? 'secureConnect' : 'connect', function connected() {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once('error', function failed(err) {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}
