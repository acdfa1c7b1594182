// MessageViewers: the web console's live message view and live log tail, over the WebSocket
// /api/watch. A viewer (one socket) subscribes topic filters; each is checked against the broker's
// ACL as an MQTT subscribe of the signed-in admin user would be (see consoleViewerAcl), then put in
// the routing core under the viewer's own handle, like a bridge's local filter: the workers copy
// the matching messages and post them to the main thread once per tick with the bridges' (never one
// postMessage per message). A message nobody watches costs nothing: with no viewer there is no
// handle in the routing core. Bounded so a busy topic cannot flood a page: each viewer has a budget
// (messages and bytes a second), payloads are cut to PAYLOAD_SHOWN bytes, what is sent goes at most
// every FLUSH_MS in one frame, and a socket with more than BACKPRESSURE bytes unsent gets nothing
// more until it drains; what does not fit is dropped and counted (the page shows the count, and so
// do the metrics). The socket closing ends its subscriptions. The log tail is the same with the
// log store's lines (src/log/log-store.ts tail()).
import { Counter, Gauge, type Registry } from 'prom-client';

import type { Logger } from '../../log/index.ts';
import type { LogStore } from '../../log/log-store.ts';
import { parseEntry } from '../../log/log-entry.ts';
import type { BridgeOutput, ViewerSkips } from '../../bridges/worker-bridges.ts';
import { topicFilterProblem } from '../../auth/topic-filter.ts';
import type { AdminSocket } from '../server.ts';
import { ViewerBudget, shownPayload, type ViewerRate } from './viewer-budget.ts';
import type { WorkerCall, WorkerCallAll } from '../../worker/ops/index.ts';

/** Per viewer: what it may be sent a second (one second's worth may come at once). */
export const MESSAGE_RATE: ViewerRate = { messages: 100, bytes: 256 * 1024 };
export const LOG_RATE: ViewerRate = { messages: 50, bytes: 128 * 1024 };
/** Bytes of a payload shown (text, or base64 when it is not UTF-8). */
export const PAYLOAD_SHOWN = 1024;
/** Characters of a log line's message shown, and of its fields as JSON. */
export const LOG_MESSAGE_SHOWN = 2048;
/** At most one frame per viewer this often. */
export const FLUSH_MS = 100;
/** Bytes a viewer's socket may have unsent before what would be sent is dropped instead. */
export const BACKPRESSURE = 256 * 1024;
/** Filters one viewer may watch at once. */
export const MAX_FILTERS = 10;
/** What a viewer sends is small: a filter and a few words. */
export const MAX_REQUEST = 4096;

/** What the viewers need of the broker (the supervisor). */
export interface ViewerHost {
  newHandle(): number;
  setTapFilter(handle: number, filter: string, on: boolean): void;
  removeTap(handle: number): void;
  callAll: WorkerCallAll;
  call: WorkerCall;
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void;
  setViewers(handles: ReadonlySet<number>, outputs: (items: BridgeOutput[], skipped: ViewerSkips | null) => void): void;
  readonly logs: LogStore | null;
}

export interface ViewerIdentity {
  username: string;
  remoteAddress: string;
}

/** Whether `who` may watch `filter`: answers null when it may, or why not. */
export type ViewerAcl = (who: ViewerIdentity, filter: string) => Promise<string | null>;

export interface ShownMessage {
  topic: string;
  qos: number;
  retain: boolean;
  /** The payload's size in bytes. */
  size: number;
  payload: string;
  encoding: 'text' | 'base64';
  truncated: boolean;
  /** When the main thread had it, ms since the epoch. */
  time: number;
}

export interface ViewerCounters {
  /** Messages sent to viewers, and dropped by their bounds. */
  sent: number;
  dropped: number;
  logSent: number;
  logDropped: number;
  /** Filters refused: by the ACL, or not valid. */
  refusedAcl: number;
  refusedInvalid: number;
}

export class Viewer {
  handle = 0;
  readonly filters = new Set<string>();
  readonly budget = new ViewerBudget(MESSAGE_RATE);
  readonly logBudget = new ViewerBudget(LOG_RATE);
  pending: ShownMessage[] = [];
  pendingLogs: string[] = [];
  /** Matched messages, and those dropped (budget or backpressure); the same for log lines. */
  matched = 0;
  dropped = 0;
  logLines = 0;
  logDropped = 0;
  /** The counters last sent (a frame goes when they change, even with nothing in it). */
  reported = '';
  timer: NodeJS.Timeout | null = null;
  untail: (() => void) | null = null;
  closed = false;
  /** Requests run one after the other. */
  queue: Promise<void> = Promise.resolve();

  constructor(readonly socket: AdminSocket, readonly who: ViewerIdentity) {}
}

export class MessageViewers {
  private readonly viewers = new Set<Viewer>();
  private readonly byHandle = new Map<number, Viewer>();
  private readonly handles = new Set<number>();
  readonly counters: ViewerCounters = { sent: 0, dropped: 0, logSent: 0, logDropped: 0, refusedAcl: 0, refusedInvalid: 0 };

  constructor(private readonly host: ViewerHost, private readonly acl: ViewerAcl, private readonly log: Logger) {
    host.setViewers(this.handles, (items, skipped) => this.outputs(items, skipped));
    host.onWorkerStart((worker) => {
      if (this.handles.size === 0) return;
      return host.call(worker, 'bridges.viewers', { handles: [...this.handles] }).catch((err: unknown) => this.log.error('console viewers not installed on a restarted worker', { worker, err }));
    });
  }

  /** Open viewer sockets. */
  get open(): number {
    return this.viewers.size;
  }

  /** Filters watched now, over every viewer. */
  get filters(): number {
    let n = 0;
    for (const v of this.viewers) n += v.filters.size;
    return n;
  }

  opened(socket: AdminSocket, who: ViewerIdentity): Viewer {
    const v = new Viewer(socket, who);
    this.viewers.add(v);
    return v;
  }

  message(v: Viewer, text: string): void {
    if (v.closed) return;
    let req: { t?: unknown; filter?: unknown; on?: unknown };
    try {
      req = text.length > MAX_REQUEST ? {} : (JSON.parse(text) as typeof req);
    } catch {
      req = {};
    }
    if (typeof req !== 'object' || req === null) req = {};
    const filter = req.filter;
    switch (req.t) {
      case 'subscribe':
        if (typeof filter !== 'string') {
          this.counters.refusedInvalid++;
          return void this.send(v, { t: 'refused', filter: '', message: 'filter: a topic filter (a string) is required' });
        }
        v.queue = v.queue.then(() => this.subscribe(v, filter)).catch((err: unknown) => this.failed(v, filter, err));
        return;
      case 'unsubscribe':
        if (typeof filter !== 'string') return void this.send(v, { t: 'error', message: 'filter: a topic filter (a string) is required' });
        v.queue = v.queue.then(() => this.unsubscribe(v, filter)).catch((err: unknown) => this.failed(v, filter, err));
        return;
      case 'tail':
        this.tail(v, req.on === true);
        return;
      default:
        this.send(v, { t: 'error', message: 'a request is JSON: {"t":"subscribe"|"unsubscribe","filter":"..."} or {"t":"tail","on":true|false}' });
    }
  }

  /** The socket closed: its subscriptions and its tail end. */
  closed(v: Viewer): void {
    if (v.closed) return;
    v.closed = true;
    this.viewers.delete(v);
    if (v.timer) clearTimeout(v.timer);
    v.timer = null;
    v.untail?.();
    v.untail = null;
    v.pending = [];
    v.pendingLogs = [];
    v.queue = v.queue.then(() => this.release(v)).catch((err: unknown) => this.log.error('console viewer not released', { err }));
  }

  close(): void {
    for (const v of [...this.viewers]) {
      v.socket.end(1001, 'the broker is shutting down');
      this.closed(v);
    }
  }

  private async subscribe(v: Viewer, filter: string): Promise<void> {
    if (v.closed) return;
    const problem = viewerFilterProblem(filter);
    if (problem !== undefined) {
      this.counters.refusedInvalid++;
      return void this.send(v, { t: 'refused', filter, message: problem });
    }
    if (v.filters.has(filter)) return void this.send(v, { t: 'subscribed', filter });
    if (v.filters.size >= MAX_FILTERS) {
      this.counters.refusedInvalid++;
      return void this.send(v, { t: 'refused', filter, message: `at most ${MAX_FILTERS} filters are watched at once: unsubscribe one first` });
    }
    const denied = await this.acl(v.who, filter);
    if (v.closed) return;
    if (denied !== null) {
      this.counters.refusedAcl++;
      return void this.send(v, { t: 'refused', filter, message: denied });
    }
    if (v.handle === 0) {
      // The workers learn the handle before the routing core has any filter of it.
      v.handle = this.host.newHandle();
      this.handles.add(v.handle);
      this.byHandle.set(v.handle, v);
      await this.host.callAll('bridges.viewers', { handles: [...this.handles] });
      if (v.closed) return;
    }
    this.host.setTapFilter(v.handle, filter, true);
    v.filters.add(filter);
    this.send(v, { t: 'subscribed', filter });
  }

  private async unsubscribe(v: Viewer, filter: string): Promise<void> {
    if (v.closed) return;
    if (v.filters.delete(filter)) this.host.setTapFilter(v.handle, filter, false);
    this.send(v, { t: 'unsubscribed', filter });
    await Promise.resolve();
  }

  private async release(v: Viewer): Promise<void> {
    if (v.handle === 0) return;
    this.host.removeTap(v.handle);
    v.filters.clear();
    this.handles.delete(v.handle);
    this.byHandle.delete(v.handle);
    await this.host.callAll('bridges.viewers', { handles: [...this.handles] });
  }

  private failed(v: Viewer, filter: string, err: unknown): void {
    this.log.error('console viewer request failed', { filter, err });
    this.send(v, { t: 'refused', filter, message: 'internal error' });
  }

  private tail(v: Viewer, on: boolean): void {
    if (on && !v.untail) {
      const store = this.host.logs;
      if (!store) return void this.send(v, { t: 'tail', on: false, message: 'the log store is off (log.file.enabled is false)' });
      v.untail = store.tail((line) => this.offerLog(v, line));
    } else if (!on && v.untail) {
      v.untail();
      v.untail = null;
    }
    this.send(v, { t: 'tail', on });
  }

  /** A tick's matches from one worker (for any viewers), and those it only counted (over the
   * worker's own bound, VIEWER_COPIES_PER_SECOND): dropped. */
  private outputs(items: readonly BridgeOutput[], skipped: ViewerSkips | null): void {
    for (const [handle, count] of skipped ?? []) {
      const v = this.byHandle.get(handle);
      if (!v || v.closed) continue;
      v.matched += count;
      v.dropped += count;
      this.counters.dropped += count;
      this.schedule(v);
    }
    const now = Date.now();
    for (const item of items) {
      const v = this.byHandle.get(item.handle);
      if (!v || v.closed) continue;
      v.matched++;
      const cost = item.topic.length + Math.min(item.payload.length, PAYLOAD_SHOWN);
      if (!v.budget.take(cost, now)) {
        v.dropped++;
        this.counters.dropped++;
      } else {
        v.pending.push({ topic: item.topic, qos: item.qos, retain: item.retain, size: item.payload.length, ...shownPayload(item.payload, PAYLOAD_SHOWN), time: now });
      }
      this.schedule(v);
    }
  }

  /** A line the log store took (called inside the store's append: only queues). */
  private offerLog(v: Viewer, line: string): void {
    if (v.closed) return;
    v.logLines++;
    if (!v.logBudget.take(Math.min(line.length, LOG_MESSAGE_SHOWN * 2))) {
      v.logDropped++;
      this.counters.logDropped++;
    } else {
      v.pendingLogs.push(line);
    }
    this.schedule(v);
  }

  private schedule(v: Viewer): void {
    if (v.timer) return;
    v.timer = setTimeout(() => this.flush(v), FLUSH_MS);
    v.timer.unref();
  }

  private flush(v: Viewer): void {
    v.timer = null;
    if (v.closed) return;
    // A page that does not keep up gets nothing more until its socket drains: dropped, counted.
    if (v.socket.buffered() > BACKPRESSURE) {
      v.dropped += v.pending.length;
      this.counters.dropped += v.pending.length;
      v.logDropped += v.pendingLogs.length;
      this.counters.logDropped += v.pendingLogs.length;
      v.pending = [];
      v.pendingLogs = [];
      this.schedule(v);
      return;
    }
    const counts = `${v.matched}/${v.dropped}/${v.logLines}/${v.logDropped}`;
    if (v.pending.length > 0 || counts !== v.reported) {
      const items = v.pending;
      v.pending = [];
      if (this.send(v, { t: 'messages', items, matched: v.matched, dropped: v.dropped })) this.counters.sent += items.length;
    }
    if (v.pendingLogs.length > 0 || counts !== v.reported) {
      const lines = v.pendingLogs;
      v.pendingLogs = [];
      const items = lines.map(shownLogLine).filter((e) => e !== null);
      if (this.send(v, { t: 'logs', items, lines: v.logLines, dropped: v.logDropped })) this.counters.logSent += items.length;
    }
    v.reported = counts;
  }

  private send(v: Viewer, frame: unknown): boolean {
    if (v.closed) return false;
    return v.socket.send(JSON.stringify(frame));
  }
}

/** Why `filter` cannot be watched, or undefined. */
export function viewerFilterProblem(filter: string): string | undefined {
  const problem = topicFilterProblem(filter);
  if (problem !== undefined) return problem;
  // A viewer is not a member of a shared group: it would take the group's messages from its members.
  if (filter.startsWith('$share/') || filter.startsWith('$queue/')) return 'shared subscriptions ($share/, $queue/) cannot be watched: watch the filter itself';
  return undefined;
}

/** A stored log line as the tail shows it: message and fields cut to LOG_MESSAGE_SHOWN. */
function shownLogLine(line: string): { id: number; time: string; level: string; module: string; message: string; fields: string } | null {
  const e = parseEntry(line);
  if (!e) return null;
  const fields = Object.keys(e.fields).length === 0 ? '' : JSON.stringify(e.fields);
  return {
    id: e.id,
    time: e.time,
    level: e.level,
    module: e.module,
    message: e.message.length > LOG_MESSAGE_SHOWN ? `${e.message.slice(0, LOG_MESSAGE_SHOWN)}…` : e.message,
    fields: fields.length > LOG_MESSAGE_SHOWN ? `${fields.slice(0, LOG_MESSAGE_SHOWN)}…` : fields,
  };
}

/** The viewers' Prometheus metrics (main thread), read from the counters when scraped. */
export function registerViewerMetrics(registry: Registry, viewers: MessageViewers): void {
  new Gauge({
    name: 'spindle_console_viewers',
    help: 'Open sockets of the web console\'s live message view and log tail (/api/watch).',
    registers: [registry],
    collect() {
      this.set(viewers.open);
    },
  });
  new Gauge({
    name: 'spindle_console_viewer_filters',
    help: 'Topic filters watched by the web console\'s live message view, over every open socket.',
    registers: [registry],
    collect() {
      this.set(viewers.filters);
    },
  });
  new Counter({
    name: 'spindle_console_viewer_messages_total',
    help: 'Messages matched for the web console\'s live message view, by outcome: sent (to a page) or dropped (over the viewer\'s rate or bytes budget, or its socket not draining); kind "message" (MQTT messages) or "log" (log tail lines).',
    labelNames: ['outcome', 'kind'],
    registers: [registry],
    collect() {
      this.reset();
      const c = viewers.counters;
      this.inc({ outcome: 'sent', kind: 'message' }, c.sent);
      this.inc({ outcome: 'dropped', kind: 'message' }, c.dropped);
      this.inc({ outcome: 'sent', kind: 'log' }, c.logSent);
      this.inc({ outcome: 'dropped', kind: 'log' }, c.logDropped);
    },
  });
  new Counter({
    name: 'spindle_console_viewer_refused_total',
    help: 'Topic filters the web console\'s live message view refused, by reason: acl (the ACL does not let the signed-in user subscribe) or invalid (not a valid filter, a shared subscription, or over the filters per socket).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ reason: 'acl' }, viewers.counters.refusedAcl);
      this.inc({ reason: 'invalid' }, viewers.counters.refusedInvalid);
    },
  });
}
