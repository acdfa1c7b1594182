// Log topics, the main thread's half (spec 4.8 /api/log/topics): kept in the store (admin kind
// 'log-topic'), installed on every worker (also a restarted one), and subscribed in the routing
// core under their own handles so the publishing worker finds them with the match it does anyway.
import { randomUUID } from 'node:crypto';

import type { Logger } from '../../log/index.ts';
import { isLogLevel, type LogLevel } from '../../log/levels.ts';
import type { Store } from '../../store/types.ts';
import type { LogTopicSpec } from './worker-log-topics.ts';
import { TraceError } from './errors.ts';
import type { TapOwnerHost } from '../feature.ts';

const KIND = 'log-topic';

export interface LogTopicDoc {
  id: string;
  topic: string;
  level: LogLevel;
  createTime: string;
}

/** What the manager needs of the broker. */
export type LogTopicHost = TapOwnerHost;


export class LogTopicManager {
  private readonly topics = new Map<string, LogTopicSpec & { createTime: string }>();

  constructor(
    private readonly host: LogTopicHost,
    private readonly store: Store,
    private readonly log: Logger,
    /** Checks a topic filter; answers why it is not one, or undefined. */
    private readonly filterProblem: (filter: string) => string | undefined,
  ) {
    host.onWorkerStart((worker) => {
      return host.call(worker, 'logTopics.install', { topics: [...this.topics.values()], only: true }).catch((err: unknown) => this.log.error('log topics not installed on a restarted worker', { worker, err }));
    });
  }

  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<LogTopicDoc>(KIND)) await this.start(doc);
  }

  /** A log topic changed on another node of the cluster, stored here once applied (null:
   * deleted): the old one leaves every worker, the stored one is started like at load. */
  async applyStored(id: string, doc: LogTopicDoc | null): Promise<void> {
    if (doc !== null && (typeof doc !== 'object' || doc.id !== id || typeof doc.topic !== 'string' || this.filterProblem(doc.topic))) throw new TraceError(400, 'topic', `log topic ${id} from another node is not a log topic`);
    const old = this.topics.get(id);
    if (old) {
      this.host.removeTap(old.handle);
      this.topics.delete(id);
      await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'logTopics.remove', { id }).catch(() => false)));
    }
    if (doc !== null) await this.start(doc);
  }

  list(): LogTopicDoc[] {
    return [...this.topics.values()].map(view).sort((a, b) => a.createTime.localeCompare(b.createTime));
  }

  async add(topic: string, level: string): Promise<LogTopicDoc> {
    const problem = /^\$(share|queue)\//.test(topic) ? 'a log topic cannot be a shared subscription' : this.filterProblem(topic);
    if (problem) throw new TraceError(400, 'topic', `topic: ${problem}`);
    const lower = level.toLowerCase();
    if (!isLogLevel(lower)) throw new TraceError(400, 'level', 'level: must be one of DEBUG, INFO, WARN, ERROR');
    for (const t of this.topics.values()) if (t.topic === topic) throw new TraceError(409, 'topic', `topic: a log topic for ${topic} exists (${t.id})`);
    const doc: LogTopicDoc = { id: `logtopic-${randomUUID().slice(0, 8)}`, topic, level: lower, createTime: new Date().toISOString() };
    await this.store.putAdmin(KIND, doc.id, doc);
    await this.start(doc);
    return view(this.topics.get(doc.id)!);
  }

  async delete(id: string): Promise<void> {
    const t = this.topics.get(id);
    if (!t) throw new TraceError(404, 'id', `log topic ${id} not found`);
    this.host.removeTap(t.handle);
    this.topics.delete(id);
    await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'logTopics.remove', { id }).catch(() => false)));
    await this.store.deleteAdmin(KIND, id);
  }

  /** Installs on every worker, then subscribes (a worker never sees a handle it does not know). */
  private async start(doc: LogTopicDoc): Promise<void> {
    const spec = { id: doc.id, handle: this.host.newHandle(), topic: doc.topic, level: doc.level, createTime: doc.createTime };
    this.topics.set(doc.id, spec);
    await Promise.all(this.host.runningWorkers().map((w) => this.host.call(w, 'logTopics.install', { topics: [spec] })));
    this.host.setTap(spec.handle, [doc.topic]);
  }
}

function view(t: LogTopicSpec & { createTime: string }): LogTopicDoc {
  return { id: t.id, topic: t.topic, level: t.level.toUpperCase() as LogLevel, createTime: t.createTime };
}
