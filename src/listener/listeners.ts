// The MQTT listeners of one worker thread: TCP and TLS on SO_REUSEPORT sockets the supervisor
// created for this worker, and WebSocket through uWebSockets.js (which binds with SO_REUSEPORT
// itself). Each accepted connection becomes a Transport handed to `accept`.
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';

import uWS from 'uWebSockets.js';

import type { BrokerConfig } from '../config/index.ts';
import { SocketTransport } from './socket-transport.ts';
import { WsTransport, type WsUserData } from './ws-transport.ts';
import type { Transport } from './transport.ts';

export interface ListenerFds {
  tcp?: number;
  tls?: number;
}

export class Listeners {
  private tcp: net.Server | null = null;
  private tls: tls.Server | null = null;
  private wsApp: uWS.TemplatedApp | null = null;
  private wsSocket: uWS.us_listen_socket | null = null;
  readonly wsTransports = new Set<WsTransport>();

  constructor(private readonly config: BrokerConfig, private readonly accept: (t: Transport) => void) {}

  async start(fds: ListenerFds): Promise<void> {
    const c = this.config.mqtt;
    if (fds.tcp !== undefined) {
      this.tcp = net.createServer((socket) => this.accept(new SocketTransport(socket, 'tcp')));
      await listenFd(this.tcp, fds.tcp);
    }
    if (fds.tls !== undefined) {
      this.tls = tls.createServer(this.tlsOptions(), (socket) => {
        const cn = c.tls.cnAsUsername ? SocketTransport.verifiedCN(socket) : undefined;
        this.accept(new SocketTransport(socket, 'tls', cn));
      });
      await listenFd(this.tls, fds.tls);
    }
    if (c.ws.enabled) await this.startWs();
  }

  private tlsOptions(): tls.TlsOptions {
    const t = this.config.mqtt.tls;
    return {
      cert: readFileSync(t.cert),
      key: readFileSync(t.key),
      ca: t.ca ? readFileSync(t.ca) : undefined,
      requestCert: t.requestCert,
      rejectUnauthorized: t.requestCert && t.rejectUnauthorized,
    };
  }

  /** New certificates for new TLS connections; open ones keep theirs. */
  reloadTls(): void {
    if (this.tls) this.tls.setSecureContext(this.tlsOptions());
  }

  private startWs(): Promise<void> {
    const c = this.config.mqtt;
    const app = uWS.App();
    this.wsApp = app;
    const port = c.ws.port;
    app.ws<WsUserData>(c.ws.path, {
      compression: uWS.DISABLED,
      maxPayloadLength: this.config.limits.maxPacketSize + 8,
      idleTimeout: 0, // MQTT keepalive does this job
      maxBackpressure: 16 * 1024 * 1024,
      upgrade: (res, req, context) => {
        // [MQTT-6.0.0-3] the subprotocol is "mqtt" ("mqttv3.1" for MQTT 3.1 clients).
        const offered = req.getHeader('sec-websocket-protocol').split(',').map((s) => s.trim());
        const protocol = offered.find((p) => p === 'mqtt' || p === 'mqttv3.1');
        if (!protocol) {
          res.writeStatus('400 Bad Request').end('WebSocket subprotocol "mqtt" required');
          return;
        }
        const address = Buffer.from(res.getRemoteAddressAsText()).toString();
        res.upgrade<WsUserData>(
          { remoteAddress: address, remotePort: 0 },
          req.getHeader('sec-websocket-key'),
          protocol,
          req.getHeader('sec-websocket-extensions'),
          context,
        );
      },
      open: (ws) => {
        const t = new WsTransport(ws, port);
        ws.getUserData().transport = t;
        this.wsTransports.add(t);
        this.accept(t);
      },
      message: (ws, message) => {
        // uWS reuses the ArrayBuffer after this callback: copy.
        ws.getUserData().transport?.handlers?.data(Buffer.from(new Uint8Array(message)));
      },
      close: (ws) => {
        const t = ws.getUserData().transport;
        if (!t) return;
        t.closed = true;
        this.wsTransports.delete(t);
        t.handlers?.close(false);
      },
    });
    return new Promise((resolve, reject) => {
      app.listen(c.host, port, (socket) => {
        if (!socket) reject(new Error(`WebSocket listener could not bind ${c.host}:${port}`));
        else {
          this.wsSocket = socket;
          resolve();
        }
      });
    });
  }

  /** Stops accepting. uWS listen sockets must close before the worker ends, or Node aborts. */
  stopAccepting(): void {
    this.tcp?.close();
    this.tls?.close();
    if (this.wsSocket) {
      uWS.us_listen_socket_close(this.wsSocket);
      this.wsSocket = null;
    }
  }

  /**
   * The worker thread is ending (also on an uncaught exception): closes the uWS listen socket
   * and every WebSocket connection now, synchronously. uWS keeps a libuv poll handle per socket
   * and Node aborts the whole process when a worker's loop closes with one open, so a crash in
   * one worker would take down every worker. (Worker.terminate() runs no JavaScript: a worker
   * with a WebSocket listener cannot be terminated that way.)
   */
  releaseWs(): void {
    this.stopAccepting();
    for (const t of this.wsTransports) t.destroy();
    this.wsTransports.clear();
  }
}

function listenFd(server: net.Server, fd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ fd }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
