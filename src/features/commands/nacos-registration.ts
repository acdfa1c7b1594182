// The NACOS command type (main thread): a registration, not a bridge. While it runs, every enabled
// MQTT endpoint of this broker (or those config.endpoints names) is an ephemeral instance of
// config.serviceName in Nacos: ip = the advertised address, port = the endpoint's, metadata =
// config.metadata + protocol (mqtt, mqtts, ws, wss), nodeName, endpoint (its id) and path (ws).
// open() registers them (nacos-naming's HTTP v1 open API); close() deregisters them (stop,
// delete, update, broker shutdown). Every 5 s (the beat interval Nacos asks for) this command
// sends each instance's heartbeat, then reads the server's instance list (over HTTP: the client's
// own list is a cache): the instances it confirms are noted (confirmedAt), one it lost (a Nacos
// restart, an operator's delete) is registered again, and the endpoints are compared with what is
// registered: an endpoint added or removed at run time is registered or deregistered then. The
// heartbeats are ours, not the client's: its beat loop runs on its own, and a beat it had in
// flight when an instance was deregistered brought the instance back (Nacos's v1 beat registers
// an unknown instance), for 30 s; ours are never in flight during a deregistration. A server that
// stops answering fails the connection: the runner reconnects with backoff, which registers
// everything again.
import os from 'node:os';
import { format } from 'node:util';

import { NacosNamingClient } from 'nacos-naming';

import { RateLimitedWarn } from '../../policies/rate-limited-warn.ts';
import { safeMessage } from '../../sources/driver-error.ts';
import { FailureSignal } from './failure-signal.ts';
import { nacosSecrets, type NacosCommandConfig } from './nacos-config.ts';
import { ConsumerError, type Consumer, type ConsumerContext, type ListenerInfo } from './types.ts';

/** How often the server's instance list is read and the endpoints compared with it. */
export const NACOS_CHECK_MS = 5_000;
const REQUEST_TIMEOUT_MS = 5_000;

/** nacos-naming's typings miss what its JS takes: an instance's metadata (instanceId is optional),
 * and close() (sdk-base's, which ends the beats and the push receiver). */
type Instance = Parameters<NacosNamingClient['registerInstance']>[1];
const asInstance = (instance: object): Instance => instance as unknown as Instance;
/** The client's beat loop (private in nacos-naming 2.6.3, lib/naming/beat_reactor.js): closed at
 * once, since this command sends the beats itself (see the header). */
type WithBeatReactor = { _beatReactor?: { close(): Promise<void> } };

interface Registered {
  listener: ListenerInfo;
  ip: string;
  metadata: Record<string, string>;
  registeredAt: string;
  /** As the server's list last showed it; null: not seen yet. */
  healthy: boolean | null;
}

interface ServerHost {
  ip: string;
  port: number;
  healthy: boolean;
}

export class NacosRegistration implements Consumer {
  private readonly client: NacosNamingClient;
  private readonly failure = new FailureSignal();
  private readonly secrets: string[];
  private readonly beatWarn: RateLimitedWarn;
  /** By endpoint id. */
  private readonly registered = new Map<string, Registered>();
  private ip: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | null = null;
  private closed = false;
  /** Why the client's last request failed (it logs the server's answer, then throws a summary). */
  private lastRequestError: { message: string; status?: number } | null = null;
  private lastBeatAt: string | null = null;
  private lastBeatError: string | null = null;
  private lastBeatErrorAt: string | null = null;
  private confirmedAt: string | null = null;
  private reRegistrations = 0;

  constructor(
    private readonly config: NacosCommandConfig,
    private readonly ctx: ConsumerContext,
  ) {
    this.secrets = nacosSecrets(config);
    this.beatWarn = new RateLimitedWarn(ctx.log);
    this.client = new NacosNamingClient({
      logger: this.clientLogger(),
      serverList: config.servers.map((s) => `${s.host}:${s.port}`),
      namespace: config.namespace,
      ssl: config.tls,
      ...(config.auth ? { username: config.auth.username, password: config.auth.password } : {}),
    });
    (this.client as unknown as NodeJS.EventEmitter).on('error', (err: unknown) => ctx.log.warn('nacos client error', { error: this.safe(err) }));
  }

  get failed(): Promise<never> {
    return this.failure.promise;
  }

  async open(): Promise<void> {
    await this.client.ready();
    const beats = (this.client as unknown as WithBeatReactor)._beatReactor;
    if (!beats) throw new ConsumerError('nacos: this nacos-naming has no beat reactor to replace (the command is written for 2.6.3)', false);
    await beats.close();
    this.ip = this.config.ip ?? firstIPv4();
    if (this.ip === null) throw new ConsumerError('nacos: this machine has no non-internal IPv4 address to advertise: set config.ip', false);
    await this.reconcile(null);
    // Stopped while registering: close() ran (or runs) and deregisters; no checks then.
    if (this.closed) return;
    this.timer = setInterval(() => {
      this.checking ??= this.check().finally(() => {
        this.checking = null;
      });
    }, NACOS_CHECK_MS);
  }

  /** Deregisters every instance (a server that does not answer forgets them itself once their
   * beats stop: 30 s), then closes the client. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.checking;
    await Promise.allSettled([...this.registered.keys()].map((id) => this.deregister(id)));
    await (this.client as unknown as { close(): Promise<void> }).close();
  }

  async lag(): Promise<number | null> {
    return null;
  }

  details(): Record<string, unknown> {
    const { serviceName, group, namespace, clusterName } = this.config;
    return {
      serviceName,
      group,
      namespace,
      clusterName,
      ip: this.ip,
      instances: [...this.registered.values()].map((r) => ({ endpoint: r.listener.id, protocol: r.listener.protocol, ip: r.ip, port: r.listener.port, ...(r.listener.path ? { path: r.listener.path } : {}), healthy: r.healthy, registeredAt: r.registeredAt })),
      confirmedAt: this.confirmedAt,
      reRegistrations: this.reRegistrations,
      lastBeatAt: this.lastBeatAt,
      lastBeatError: this.lastBeatError,
      lastBeatErrorAt: this.lastBeatErrorAt,
    };
  }

  /** Reads the server's list, notes what it confirms, and registers or deregisters what differs. */
  private async check(): Promise<void> {
    if (this.closed) return;
    await this.beat();
    if (this.closed) return;
    let hosts: Map<string, ServerHost>;
    try {
      hosts = await this.serverList();
    } catch (err) {
      this.failure.fail(new ConsumerError(`nacos: the server's instance list could not be read: ${this.safe(err)}`, true, { cause: err }));
      return;
    }
    if (this.closed) return;
    let all = true;
    for (const r of this.registered.values()) {
      const h = hosts.get(`${r.ip}:${r.listener.port}`);
      r.healthy = h?.healthy ?? null;
      if (!h) all = false;
    }
    if (all) this.confirmedAt = new Date().toISOString();
    try {
      await this.reconcile(hosts);
    } catch (err) {
      this.failure.fail(err instanceof ConsumerError ? err : this.error('register', err));
    }
  }

  /** Makes the registered instances the wanted endpoints: a removed or changed endpoint is
   * deregistered, a new one registered, one the server no longer lists (`hosts`) registered again. */
  private async reconcile(hosts: Map<string, ServerHost> | null): Promise<void> {
    const wanted = new Map(this.wanted().map((l) => [l.id, l]));
    for (const [id, r] of this.registered) {
      const w = wanted.get(id);
      if (!w || w.port !== r.listener.port || w.protocol !== r.listener.protocol || w.path !== r.listener.path || r.ip !== this.ip) await this.deregister(id);
    }
    for (const listener of wanted.values()) {
      if (this.closed) return;
      const r = this.registered.get(listener.id);
      if (r && (hosts === null || hosts.has(`${r.ip}:${listener.port}`))) continue;
      if (r) {
        this.reRegistrations++;
        this.ctx.log.warn('nacos no longer lists an instance; registering it again', { endpoint: listener.id, port: listener.port });
      }
      await this.register(listener);
    }
  }

  private wanted(): ListenerInfo[] {
    const all = this.ctx.broker.endpoints();
    const only = this.config.endpoints;
    return only === null ? all : all.filter((l) => only.includes(l.id));
  }

  private async register(listener: ListenerInfo): Promise<void> {
    const ip = this.ip!;
    const metadata: Record<string, string> = { ...this.config.metadata, protocol: listener.protocol, nodeName: this.ctx.broker.nodeName, endpoint: listener.id };
    if (listener.path) metadata.path = listener.path;
    const instance = { ip, port: listener.port, weight: this.config.weight, clusterName: this.config.clusterName, ephemeral: true, enabled: true, healthy: true, metadata };
    try {
      this.lastRequestError = null;
      await this.client.registerInstance(this.config.serviceName, asInstance(instance), this.config.group);
    } catch (err) {
      const e = this.error(`register ${listener.protocol} ${ip}:${listener.port}`, err);
      // The client keeps beating an instance it failed to register: forget it.
      await this.client.deregisterInstance(this.config.serviceName, asInstance(instance), this.config.group).catch(() => {});
      throw e;
    }
    this.registered.set(listener.id, { listener, ip, metadata, registeredAt: new Date().toISOString(), healthy: null });
    this.ctx.log.info('nacos instance registered', { service: this.config.serviceName, group: this.config.group, endpoint: listener.id, ip, port: listener.port, protocol: listener.protocol });
    // Registered while close() was deregistering (a stop during open()): deregister it too.
    if (this.closed) await this.deregister(listener.id);
  }

  private async deregister(id: string): Promise<void> {
    const r = this.registered.get(id);
    if (!r) return;
    this.registered.delete(id);
    const instance = { ip: r.ip, port: r.listener.port, clusterName: this.config.clusterName, ephemeral: true };
    try {
      await this.client.deregisterInstance(this.config.serviceName, asInstance(instance), this.config.group);
      this.ctx.log.info('nacos instance deregistered', { service: this.config.serviceName, endpoint: id, ip: r.ip, port: r.listener.port });
    } catch (err) {
      this.ctx.log.warn('nacos instance not deregistered (the server forgets it once its beats stop)', { endpoint: id, error: this.error('deregister', err).message });
    }
  }

  /** Sends every registered instance's heartbeat (as nacos-naming would: PUT /instance/beat);
   * a failure is noted and logged (rate-limited); the list read after it tells whether the server
   * is gone. */
  private async beat(): Promise<void> {
    const c = this.config;
    const grouped = `${c.group}@@${c.serviceName}`;
    const results = await Promise.allSettled([...this.registered.values()].map(async (r) => {
      const beat = { serviceName: grouped, ip: r.ip, port: r.listener.port, cluster: c.clusterName, weight: c.weight, metadata: r.metadata, scheduled: false };
      await this.request('PUT', '/nacos/v1/ns/instance/beat', { beat: JSON.stringify(beat), serviceName: grouped, namespaceId: c.namespace });
    }));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (!failed) {
      if (results.length > 0) this.lastBeatAt = new Date().toISOString();
      return;
    }
    this.lastBeatError = `nacos: heartbeat failed: ${this.safe(failed.reason)}`;
    this.lastBeatErrorAt = new Date().toISOString();
    this.beatWarn.warn('nacos heartbeat failed', { error: this.lastBeatError });
  }

  /** The service's instances as the server lists them now, by "ip:port": the first server that answers. */
  private async serverList(): Promise<Map<string, ServerHost>> {
    const c = this.config;
    const text = await this.request('GET', '/nacos/v1/ns/instance/list', { serviceName: c.serviceName, groupName: c.group, namespaceId: c.namespace, clusters: c.clusterName, healthyOnly: 'false' });
    const hosts = (JSON.parse(text) as { hosts?: ServerHost[] }).hosts ?? [];
    return new Map(hosts.map((h) => [`${h.ip}:${h.port}`, h]));
  }

  /** One request of Nacos's HTTP open API (params in the query, auth as the client sends it):
   * the first server that answers 200. */
  private async request(method: string, path: string, params: Record<string, string>): Promise<string> {
    const c = this.config;
    const query = new URLSearchParams(params);
    if (c.auth) {
      query.set('username', c.auth.username);
      query.set('password', c.auth.password);
    }
    let last: unknown;
    for (const s of c.servers) {
      try {
        const res = await fetch(`${c.tls ? 'https' : 'http'}://${s.host}:${s.port}${path}?${query}`, { method, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        const text = await res.text();
        if (!res.ok) throw new Error(`${s.host}:${s.port} answered ${res.status}: ${text.slice(0, 200)}`);
        return text;
      } catch (err) {
        // fetch says only "fetch failed": the reason (ECONNREFUSED, a timeout) is its cause.
        const cause = (err as Error).cause as (Error & { code?: string }) | undefined;
        last = new Error(`${s.host}:${s.port}: ${(err as Error).message}${cause ? ` (${cause.code ?? cause.message})` : ''}`, { cause: err });
      }
    }
    throw last;
  }

  /** A request that failed: retriable unless the server refused it as invalid (400). */
  private error(what: string, err: unknown): ConsumerError {
    const cause = this.lastRequestError;
    const message = `nacos: ${what} failed: ${this.safe(err)}${cause ? ` (${cause.message})` : ''}`;
    return new ConsumerError(message, cause?.status !== 400, { cause: err });
  }

  private safe(err: unknown): string {
    return safeMessage(err, this.secrets).slice(0, 1000);
  }

  /** nacos-naming logs with console's signature: info/debug lines go to our debug level; the
   * warnings it logs when a request fails become the reason of the error it then throws. Secrets
   * are removed. */
  private clientLogger(): Console {
    const log = this.ctx.log;
    const text = (args: unknown[]) => safeMessage(new Error(format(...args)), this.secrets).slice(0, 1000);
    const problem = (args: unknown[]) => {
      const first = args[0];
      const message = first instanceof Error ? this.safe(first) : text(args);
      const status = first instanceof Error ? (first as Error & { status?: unknown }).status : undefined;
      this.lastRequestError = { message, ...(typeof status === 'number' ? { status } : {}) };
      log.debug('nacos client', { error: message });
    };
    const debug = (...args: unknown[]) => log.debug('nacos client', { message: text(args) });
    return { ...console, log: debug, info: debug, debug, warn: (...args: unknown[]) => problem(args), error: (...args: unknown[]) => problem(args) } as Console;
  }
}

/** The first non-internal IPv4 address of this machine, or null. */
function firstIPv4(): string | null {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return null;
}
