// Proxy subscriptions: filters the broker adds to every client that connects (and, when one is
// added, to every client connected now). Kept in the store (admin kind 'proxy-subscription'),
// installed on every worker before it opens its listeners, and sent to all of them on each change.
// Deleting one stops it being added; sessions that have it keep it. Owns the list (main thread).
import { createHash } from 'node:crypto';

import { conflict, notFound } from '../../errors/domain-error.ts';
import type { Store } from '../../store/types.ts';
import type { Logger } from '../../log/index.ts';
import type { ProxySubscription } from '../../engine/session/proxy-subscriptions.ts';
import type { FeatureWorkers } from '../feature.ts';

export const KIND = 'proxy-subscription';

export interface ProxyDoc extends ProxySubscription {
  id: string;
  createTime: string;
}

/** A proxy subscription with how often it was added to a session (since start) and how many
 * sessions hold it now, summed over the workers. */
export interface ProxyStatus extends ProxyDoc {
  applied: number;
  sessions: number;
}

/** A store id for a topic filter (filters may be longer than a store key allows). */
export function topicId(topic: string): string {
  return createHash('sha256').update(topic).digest('hex').slice(0, 32);
}

export class ProxySubscriptions {
  private readonly docs = new Map<string, ProxyDoc>();

  constructor(private readonly store: Store, private readonly workers: FeatureWorkers, private readonly log: Logger) {
    workers.onWorkerStart((worker) => {
      if (this.docs.size === 0) return;
      return workers.call(worker, 'proxy.set', { list: this.list() }).catch((err: unknown) => this.log.error('proxy subscriptions not installed on a worker', { worker, err }));
    });
  }

  /** Reads the stored ones (before any worker starts, which then gets them). */
  async load(): Promise<void> {
    for (const { doc } of await this.store.listAdmin<ProxyDoc>(KIND)) this.docs.set(doc.topic, doc);
  }

  private list(): ProxySubscription[] {
    return [...this.docs.values()].map((p) => ({ topic: p.topic, qos: p.qos }));
  }

  /** Adds one (409 when the filter has one); every client connected now gets it too. */
  async add(topic: string, qos: 0 | 1 | 2): Promise<ProxyDoc> {
    if (this.docs.has(topic)) throw conflict('topic', `proxy subscription ${topic} exists`);
    const doc: ProxyDoc = { id: topicId(topic), topic, qos, createTime: new Date().toISOString() };
    await this.store.putAdmin(KIND, doc.id, doc);
    this.docs.set(topic, doc);
    await this.workers.callAll('proxy.set', { list: this.list() });
    return doc;
  }

  /** Deletes one (404 when unknown): new clients no longer get it. */
  async remove(topic: string): Promise<void> {
    const doc = this.docs.get(topic);
    if (!doc) throw notFound(`proxy subscription ${topic} not found`);
    await this.store.deleteAdmin(KIND, doc.id);
    this.docs.delete(topic);
    await this.workers.callAll('proxy.set', { list: this.list() });
  }

  /** Every one, oldest first, with its counts over the workers. */
  async status(): Promise<ProxyStatus[]> {
    const parts = await this.workers.callAll('proxy.status');
    return [...this.docs.values()].sort((a, c) => (a.createTime < c.createTime ? -1 : 1)).map((p) => {
      let applied = 0;
      let sessions = 0;
      for (const part of parts) {
        const s = part.find((x) => x.topic === p.topic);
        applied += s?.applied ?? 0;
        sessions += s?.sessions ?? 0;
      }
      return { ...p, applied, sessions };
    });
  }
}
