// The admin HTTP server on uWebSockets.js, in the main thread (which carries no MQTT traffic, so
// message load never blocks it). Reads and limits the body, authenticates (before routing),
// dispatches to a route by method and path, requires JSON bodies, and answers in the envelope of
// http.ts. Owns its listen sockets.
//
// HTTPS (admin.tls, https.ts): an SSLApp on admin.port, and with admin.tls.plain a plain-HTTP app
// beside it that redirects or serves. uWS cannot swap an SSLApp's certificate, so reloadTls()
// makes a new SSLApp with the same routes and sockets, listens with it on the same port (uWS binds
// with SO_REUSEPORT, so both listen for an instant) and closes the old listen socket: new
// connections get the new certificate; open ones (keep-alive requests, the console's live sockets)
// stay on the old app, with the old certificate, until they close. (With admin.port 0 the kernel's
// port takes no second socket: the old one is closed first.)
import uWS from 'uWebSockets.js';

import { DomainError } from '../errors/domain-error.ts';
import type { Logger } from '../log/index.ts';
import type { AdminAuth } from './auth.ts';
import { HttpError, errorReply, statusLine, type AdminRequest, type Reply, type Route } from './http.ts';
import { checkRequest, compileRoute, type RouteChecks } from './schema.ts';
import { ConsoleAssets } from './console/assets.ts';
import { bearerFromCookie } from './console/session-cookie.ts';
import { checkedHttpsFiles, httpsLocation, type HttpsFiles } from './https.ts';

export interface AdminServerOptions {
  host: string;
  port: number;
  maxBodySize: number;
  auth: AdminAuth;
  log: Logger;
  /** Told of every answered write (a request other than GET to a route not marked readOnly, by
   * a signed-in user or to a route that signs one in), and of reads with auditReads, for the
   * audit log. */
  audit?: (req: AdminRequest, route: Route, status: number, read: boolean) => void;
  /** Tell the audit log of reads too (GETs and routes marked readOnly; audit.reads). */
  auditReads?: boolean;
  /** The web console's files (null: not built; `/` then says so). */
  console?: ConsoleAssets | null;
  /** HTTPS: the certificate and key files, asked at listen() and at every reloadTls(); absent:
   * plain HTTP. */
  tls?: (() => HttpsFiles) | null;
  /** With tls: what plain HTTP gets (admin.tls.plain) and where it listens. */
  plain?: { mode: 'off' | 'redirect' | 'on'; host: string; port: number };
}

/** A WebSocket path of the admin server (the console's live feed): opened by a signed-in user
 * of the same origin only; what `publish` sends to `topic` reaches every socket open on it. */
export interface LiveSocketOptions {
  path: string;
  topic: string;
  opened(): void;
  closed(): void;
}

/** What a state socket's owner may do with it. */
export interface AdminSocket {
  /** Sends a text message; false when the socket is closed or the message was dropped. */
  send(text: string): boolean;
  /** Bytes queued and not yet sent. */
  buffered(): number;
  end(code: number, reason: string): void;
}

export interface StateSocketOptions<S> {
  path: string;
  maxPayloadLength: number;
  /** Bytes uWS keeps unsent for a socket (its owner checks buffered() before sending). */
  maxBackpressure: number;
  open(socket: AdminSocket, who: { username: string; remoteAddress: string }): S;
  message(state: S, text: string): void;
  close(state: S): void;
}

interface SocketData {
  user: string;
  remoteAddress: string;
}

/** Bytes a live socket may have unsent before uWS closes it (a console that does not keep up). */
const MAX_BACKPRESSURE = 1024 * 1024;

/** A route whose path has `:name` segments. */
interface PatternRoute {
  route: Route;
  segments: string[];
}

/** An app serving the routes and sockets: the current one, or one retired by a reload that still
 * has live sockets (publish() reaches them until they close). */
interface Served {
  app: uWS.TemplatedApp;
  secure: boolean;
  socket: uWS.us_listen_socket | null;
  /** WebSockets open on it. */
  open: number;
}

const TENANT_ROLES = new Set(['OrganizationAdmin', 'ProjectAdmin', 'User']);
const PLATFORM_PREFIX = '/api/v1/';

export class AdminServer {
  /** What every app gets: the routes, then each WebSocket path (given before listen()). */
  private readonly installs: ((s: Served) => void)[] = [];
  /** The apps serving now: the HTTPS (or plain) one of admin.port first, the plain one of
   * admin.tls.plain 'on', and retired ones with live sockets. */
  private served: Served[] = [];
  /** The plain-HTTP listen socket of admin.tls.plain 'redirect'. */
  private redirectSocket: uWS.us_listen_socket | null = null;
  private readonly routes = new Map<string, Route>();
  private readonly methodsByPath = new Map<string, string[]>();
  private readonly patterns: PatternRoute[] = [];
  /** Each route's compiled schemas (compiled once, when the route is added). */
  private readonly checks = new Map<Route, RouteChecks>();
  port = 0;
  /** The plain-HTTP port beside HTTPS (admin.tls.plain redirect or on); null: none. */
  plainPort: number | null = null;

  constructor(private readonly options: AdminServerOptions) {
    this.installs.push((s) => s.app.any('/*', (res, req) => this.onRequest(res, req, s.secure)));
  }

  /** Opens a WebSocket path (see LiveSocketOptions); before listen(). */
  liveSocket(o: LiveSocketOptions): void {
    this.installs.push((s) => s.app.ws<SocketData>(o.path, {
      maxPayloadLength: 1024,
      maxBackpressure: MAX_BACKPRESSURE,
      closeOnBackpressureLimit: 1,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => this.upgradeSignedIn(res, req, context),
      open: (ws) => {
        s.open++;
        ws.subscribe(o.topic);
        o.opened();
      },
      close: () => {
        this.socketClosed(s);
        o.closed();
      },
    }));
  }

  /** Opens a WebSocket path whose sockets each have a state of their own (the console's message
   * view): the same sign-in and origin check as liveSocket; what a socket sends is given to
   * `message` as text; a socket is never closed for its backpressure (its owner drops instead). */
  stateSocket<S>(o: StateSocketOptions<S>): void {
    this.installs.push((s) => s.app.ws<SocketData & { state?: S; closed?: boolean }>(o.path, {
      maxPayloadLength: o.maxPayloadLength,
      maxBackpressure: o.maxBackpressure,
      closeOnBackpressureLimit: 0,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => this.upgradeSignedIn(res, req, context),
      open: (ws) => {
        s.open++;
        const data = ws.getUserData();
        const peer: AdminSocket = {
          send: (text) => {
            if (data.closed) return false;
            return ws.send(text, false) !== 2;
          },
          buffered: () => (data.closed ? 0 : ws.getBufferedAmount()),
          end: (code, reason) => {
            if (!data.closed) ws.end(code, reason);
          },
        };
        data.state = o.open(peer, { username: data.user, remoteAddress: data.remoteAddress });
      },
      message: (ws, message, isBinary) => {
        const data = ws.getUserData();
        if (data.state === undefined) return;
        if (isBinary) {
          ws.end(1003, 'text messages only');
          return;
        }
        o.message(data.state, Buffer.from(message).toString('utf8'));
      },
      close: (ws) => {
        this.socketClosed(s);
        const data = ws.getUserData();
        data.closed = true;
        if (data.state !== undefined) o.close(data.state);
      },
    }));
  }

  /** A WebSocket of `s` closed: a retired app without sockets left is let go. */
  private socketClosed(s: Served): void {
    s.open--;
    if (s.open === 0 && s.socket === null) this.served = this.served.filter((x) => x !== s);
  }

  /** A WebSocket upgrade: only from this origin (or no browser at all), only for a signed-in user. */
  private upgradeSignedIn(res: uWS.HttpResponse, req: uWS.HttpRequest, context: uWS.us_socket_context_t): void {
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    const origin = req.getHeader('origin');
    const host = req.getHeader('host');
    const authorization = req.getHeader('authorization') || bearerFromCookie(req.getHeader('cookie'));
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const state = { aborted: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    const refuse = (status: number, message: string) => {
      if (state.aborted) return;
      res.cork(() => res.writeStatus(statusLine(status)).writeHeader('content-type', 'text/plain; charset=utf-8').end(message));
    };
    // A page of another site may open a WebSocket here with the user's cookie-less request,
    // but a browser always says where the page came from: only this origin is let in.
    if (origin !== '' && !sameOrigin(origin, host)) {
      refuse(403, `origin ${origin} is not this server`);
      return;
    }
    this.options.auth.authenticate(authorization || undefined, remoteAddress).then((user) => {
      if (state.aborted) return;
      if (!user) {
        refuse(401, 'credentials required: sign in first');
        return;
      }
      const data: SocketData = { user: user.username, remoteAddress };
      res.cork(() => res.upgrade(data, key, protocol, extensions, context));
    }, (err: unknown) => {
      this.options.log.error('live socket authentication failed', { err });
      refuse(500, 'internal error');
    });
  }

  /** Sends `message` to every live socket open on `topic` (of every app serving). */
  publish(topic: string, message: string): void {
    for (const s of this.served) if (s.open > 0) s.app.publish(topic, message, false);
  }

  add(routes: readonly Route[]): void {
    for (const r of routes) {
      const key = `${r.method} ${r.path}`;
      if (this.routes.has(key)) throw new Error(`admin route registered twice: ${key}`);
      this.routes.set(key, r);
      this.checks.set(r, compileRoute(r));
      if (r.path.includes('/:')) this.patterns.push({ route: r, segments: r.path.split('/') });
      const methods = this.methodsByPath.get(r.path) ?? [];
      methods.push(r.method);
      this.methodsByPath.set(r.path, methods);
    }
  }

  all(): Route[] {
    return [...this.routes.values()];
  }

  /** Listens on admin.port (HTTPS with tls), then on the plain-HTTP port of admin.tls.plain. */
  async listen(): Promise<number> {
    const { host, port, tls, plain } = this.options;
    const main = this.newServed(tls ? checkedHttpsFiles(tls) : null);
    main.socket = await bind(main.app, host, port, 'admin API');
    this.served.push(main);
    this.port = uWS.us_socket_local_port(main.socket as unknown as uWS.us_socket);
    if (tls && plain && plain.mode !== 'off') {
      try {
        if (plain.mode === 'on') {
          const open = this.newServed(null);
          open.socket = await bind(open.app, plain.host, plain.port, 'admin API (plain HTTP)');
          this.served.push(open);
          this.plainPort = uWS.us_socket_local_port(open.socket as unknown as uWS.us_socket);
        } else {
          const app = uWS.App();
          app.any('/*', (res, req) => this.redirect(res, req));
          this.redirectSocket = await bind(app, plain.host, plain.port, 'admin API (plain HTTP redirect)');
          this.plainPort = uWS.us_socket_local_port(this.redirectSocket as unknown as uWS.us_socket);
        }
      } catch (err) {
        this.close();
        throw err;
      }
    }
    return this.port;
  }

  /**
   * HTTPS: reads the certificate again (a bad one throws, and the old one stays) and serves it to
   * new connections (see the top of this file). Answers the files now served; null without HTTPS.
   */
  async reloadTls(): Promise<HttpsFiles | null> {
    const tls = this.options.tls;
    const old = this.served[0];
    if (!tls || old === undefined || old.socket === null) return null;
    const files = checkedHttpsFiles(tls);
    const next = this.newServed(files);
    const { host } = this.options;
    const socket = await bind(next.app, host, this.port, 'admin API').catch(() => null);
    uWS.us_listen_socket_close(old.socket);
    old.socket = null;
    if (socket !== null) next.socket = socket;
    else {
      // A port the kernel picked (admin.port 0) takes no second socket: closed, then opened
      // again (a connection in between is refused). Should that fail, the old app takes it back.
      try {
        next.socket = await bind(next.app, host, this.port, 'admin API');
      } catch (err) {
        old.socket = await bind(old.app, host, this.port, 'admin API');
        throw err;
      }
    }
    this.served = [next, ...this.served.slice(1).filter((s) => s.socket !== null || s.open > 0), ...(old.open > 0 ? [old] : [])];
    return files;
  }

  /** Closes every listen socket (must happen before the thread ends, or Node aborts). */
  close(): void {
    for (const s of this.served) {
      if (s.socket) uWS.us_listen_socket_close(s.socket);
      s.socket = null;
    }
    if (this.redirectSocket) uWS.us_listen_socket_close(this.redirectSocket);
    this.redirectSocket = null;
  }

  /** An app with every route and socket path: an SSLApp with `files`, else a plain one. */
  private newServed(files: HttpsFiles | null): Served {
    const app = files ? uWS.SSLApp({ cert_file_name: files.cert, key_file_name: files.key }) : uWS.App();
    const s: Served = { app, secure: files !== null, socket: null, open: 0 };
    for (const install of this.installs) install(s);
    return s;
  }

  /** admin.tls.plain redirect: 308 (the method and body kept) to the same path over HTTPS. */
  private redirect(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    const location = httpsLocation(req.getHeader('host'), this.options.host === '0.0.0.0' || this.options.host === '::' ? 'localhost' : this.options.host, this.port, req.getUrl(), req.getQuery() ?? '');
    res.cork(() => {
      res.writeStatus('308 Permanent Redirect');
      res.writeHeader('location', location);
      res.writeHeader('content-type', 'text/plain; charset=utf-8');
      res.end(`this admin API is served over HTTPS: ${location}\n`);
    });
  }

  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, secure: boolean): void {
    // Everything needed from `req` is copied now: it is only valid during this call.
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = new URLSearchParams(req.getQuery() ?? '');
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = v;
    });
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const state = { aborted: false };
    res.onAborted(() => {
      state.aborted = true;
    });

    // The web console's page and assets: public files (what they show comes from the API).
    if ((method === 'GET' || method === 'HEAD') && ConsoleAssets.owns(path)) {
      this.sendConsole(res, state, method, path);
      return;
    }

    // The same for every path, known or not, so it tells a stranger nothing about the routes.
    const declared = Number(headers['content-length'] ?? 0);
    if (declared > this.options.maxBodySize) {
      this.send(res, state, errorReply(new DomainError('PAYLOAD_TOO_LARGE', `request body of ${declared} bytes is larger than admin.maxBodySize (${this.options.maxBodySize})`)), { connection: 'close' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    res.onData((chunk, isLast) => {
      if (refused) return;
      size += chunk.byteLength;
      if (size > this.options.maxBodySize) {
        refused = true;
        this.send(res, state, errorReply(new DomainError('PAYLOAD_TOO_LARGE', `request body is larger than admin.maxBodySize (${this.options.maxBodySize})`)), { connection: 'close' });
        return;
      }
      // uWS reuses the chunk's memory after this callback.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast) return;
      const request: AdminRequest = { method, path, query, headers, body: undefined, user: null, remoteAddress, params: {}, queryValues: {}, secure };
      this.handle(request, Buffer.concat(chunks)).then(
        (reply) => this.answered(res, state, request, reply),
        (err: unknown) => this.answered(res, state, request, this.failure(request, err)),
      );
    });
  }

  /**
   * Authenticates before routing: a caller without valid credentials gets 401 on any path that
   * is not a public route, so 404 and 405 are answered only to signed-in callers. Then 403 for a
   * viewer on a write route, 415 for a body that is not JSON, 400 for bad JSON, then 400 naming
   * the first field the route's schemas refuse (schema.ts).
   */
  private async handle(req: AdminRequest, raw: Buffer): Promise<Reply> {
    const { route, methods } = this.find(req);
    routed.set(req, route);
    const isPublic = route ? route.access === 'public' : methods !== undefined && methods.every((m) => this.routes.get(`${m} ${req.path}`)?.access === 'public');
    if (!isPublic) {
      // The console's session cookie stands in for an Authorization header (see session-cookie.ts).
      const authorization = req.headers.authorization ?? bearerFromCookie(req.headers.cookie);
      const user = await this.options.auth.authenticate(authorization, req.remoteAddress);
      if (!user) {
        // Not to a page's script (X-Requested-With, as the web console sends): a Basic challenge
        // would make the browser ask for a password itself, over the console's own sign-in.
        throw new HttpError('UNAUTHORIZED', authorization ? 'bad credentials' : 'credentials required: HTTP Basic or Bearer token from /public/login', {
          headers: req.headers['x-requested-with'] ? {} : { 'www-authenticate': 'Basic realm="spindle", charset="UTF-8"' },
        });
      }
      req.user = user;
    }
    if (!route) {
      if (methods) throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${req.path}; use ${methods.join(' or ')}`, { headers: { allow: methods.join(', ') } });
      throw new DomainError('NOT_FOUND', `no such route: ${req.method} ${req.path}`);
    }
    // A tenant user (control platform) has the platform's API only; its routes check scope.
    if (req.user && TENANT_ROLES.has(req.user.role) && !route.path.startsWith(PLATFORM_PREFIX)) throw new DomainError('FORBIDDEN', `user ${req.user.username} (${req.user.role}) may only use the control platform's API (/api/v1)`);
    if (route.access === 'write' && req.user!.role !== 'admin' && !route.path.startsWith(PLATFORM_PREFIX)) throw new DomainError('FORBIDDEN', `user ${req.user!.username} (${req.user!.role}) may not call ${route.method} ${route.path}`);
    // Every request that can change something, and every body, must be declared JSON: a browser
    // page can send text/plain or a form without a CORS preflight, but not application/json.
    if (req.method !== 'GET' || raw.length > 0) {
      const type = req.headers['content-type'];
      if (type === undefined || !/^application\/json\s*(;|$)/i.test(type)) {
        throw new DomainError('UNSUPPORTED_MEDIA_TYPE', `content-type ${type === undefined ? '(none)' : JSON.stringify(type)} is not supported; send application/json`, { field: 'content-type' });
      }
    }
    if (raw.length > 0) {
      try {
        req.body = JSON.parse(raw.toString('utf8'));
      } catch (err) {
        throw new DomainError('INVALID_JSON', `body is not valid JSON: ${(err as Error).message}`, { field: 'body' });
      }
    }
    checkRequest(this.checks.get(route)!, req);
    return route.handler(req);
  }

  /** The route for a method and path: an exact path first, then the paths with `:name`
   * segments (their values in req.params); and the methods the path has (405). */
  private find(req: AdminRequest): { route: Route | undefined; methods: string[] | undefined } {
    const exact = this.routes.get(`${req.method} ${req.path}`);
    const methods = this.methodsByPath.get(req.path);
    if (exact || methods) return { route: exact, methods };
    const parts = req.path.split('/');
    let found: Route | undefined;
    const allowed: string[] = [];
    for (const p of this.patterns) {
      const params = matchSegments(p.segments, parts);
      if (params === null) continue;
      allowed.push(p.route.method);
      if (p.route.method === req.method && found === undefined) {
        found = p.route;
        req.params = params;
      }
    }
    return { route: found, methods: allowed.length > 0 ? allowed : undefined };
  }

  /** Sends the answer, and tells the audit log of a write. */
  private answered(res: uWS.HttpResponse, state: { aborted: boolean }, req: AdminRequest, reply: Reply): void {
    this.send(res, state, reply);
    const route = routed.get(req);
    if (route === undefined || !this.options.audit) return;
    const read = req.method === 'GET' || route.readOnly === true;
    if (read && !this.options.auditReads) return;
    if (req.user === null && req.audit?.username === undefined) return;
    try {
      this.options.audit(req, route, reply.status, read);
    } catch (err) {
      this.options.log.error('audit record failed', { route: `${req.method} ${req.path}`, err });
    }
  }

  private sendConsole(res: uWS.HttpResponse, state: { aborted: boolean }, method: string, path: string): void {
    const assets = this.options.console;
    const file = assets?.get(path);
    if (!file) {
      const reply = errorReply(new DomainError('NOT_FOUND', assets ? `no such file: ${path}` : 'the web console is not built here: run make build (it needs the console/ sources)'));
      this.send(res, state, reply);
      return;
    }
    state.aborted = true;
    res.cork(() => {
      res.writeStatus('200 OK');
      for (const [k, v] of Object.entries(file.headers)) res.writeHeader(k, v);
      if (method === 'HEAD') res.endWithoutBody(file.body.length);
      else res.end(file.body);
    });
  }

  private failure(req: AdminRequest, err: unknown): Reply {
    // Every refusal of every module (a bad field, no such client, a name taken, a worker down) is a
    // DomainError and answers as it is; a failure (a worker's included) is logged and a 500.
    if (err instanceof DomainError && err.code !== 'INTERNAL_ERROR') return errorReply(err);
    this.options.log.error('admin route failed', { route: `${req.method} ${req.path}`, err });
    return errorReply(new DomainError('INTERNAL_ERROR', `internal error: ${(err as Error)?.message ?? String(err)}`));
  }

  private send(res: uWS.HttpResponse, state: { aborted: boolean }, reply: Reply, extra?: Record<string, string>): void {
    if (state.aborted) return;
    if (reply.stream) {
      void this.sendStream(res, state, reply, reply.stream);
      return;
    }
    state.aborted = true; // one answer per request
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      res.writeHeader('content-type', reply.contentType);
      for (const [k, v] of Object.entries({ ...reply.headers, ...extra })) res.writeHeader(k, v);
      res.end(reply.body);
    });
  }

  /**
   * Sends a streamed body chunked: a chunk at a time, waiting for the socket to drain when uWS
   * reports backpressure; stops reading the stream (which ends it) when the client goes away. A
   * failure after the head was sent can only cut the answer short (it is logged).
   */
  private async sendStream(res: uWS.HttpResponse, state: { aborted: boolean }, reply: Reply, stream: AsyncIterable<Uint8Array | string>): Promise<void> {
    const connection = { gone: false, drained: null as (() => void) | null };
    // onAborted was set in onRequest; after the head, only `state.aborted` tells us.
    const closed = () => state.aborted;
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      res.writeHeader('content-type', reply.contentType);
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v);
    });
    res.onWritable(() => {
      const resume = connection.drained;
      connection.drained = null;
      resume?.();
      return true;
    });
    const iterator = stream[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await iterator.next();
        if (closed()) {
          connection.gone = true;
          break;
        }
        if (next.done) break;
        let writable = true;
        res.cork(() => {
          writable = res.write(next.value);
        });
        if (!writable) {
          await new Promise<void>((resolve) => {
            connection.drained = resolve;
            // A client gone while we wait: nothing drains; look again now and then.
            const poll = setInterval(() => {
              if (!closed()) return;
              clearInterval(poll);
              resolve();
            }, 250);
            const done = connection.drained;
            connection.drained = () => {
              clearInterval(poll);
              done();
            };
          });
          if (closed()) {
            connection.gone = true;
            break;
          }
        }
      }
    } catch (err) {
      this.options.log.error('admin stream failed', { err });
      connection.gone = true;
      if (!closed()) {
        state.aborted = true;
        res.cork(() => res.close());
      }
    } finally {
      if (connection.gone) await iterator.return?.();
    }
    if (closed()) return;
    state.aborted = true;
    res.cork(() => res.end());
  }
}

/** Listens with `app` (uWS binds with SO_REUSEPORT): the listen socket, or EADDRINUSE. */
function bind(app: uWS.TemplatedApp, host: string, port: number, what: string): Promise<uWS.us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (socket) resolve(socket);
      else reject(Object.assign(new Error(`${what} could not bind ${host}:${port}`), { code: 'EADDRINUSE' }));
    });
  });
}

/** Whether an Origin header names the host the request was sent to. */
function sameOrigin(origin: string, host: string): boolean {
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

/** The route each request was dispatched to (for the audit log). */
const routed = new WeakMap<AdminRequest, Route | undefined>();

function matchSegments(pattern: readonly string[], parts: readonly string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i];
    if (p.startsWith(':')) {
      if (parts[i].length === 0) return null;
      try {
        params[p.slice(1)] = decodeURIComponent(parts[i]);
      } catch {
        return null;
      }
    } else if (p !== parts[i]) return null;
  }
  return params;
}
