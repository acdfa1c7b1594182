// ProcessorManager: the scripts and extensions, main-thread half. Keeps them in the store (admin
// kinds 'script' and 'extension'), sends the enabled ones to every worker (Supervisor
// .setProcessorState: applied at once, also on a worker started later) and answers their
// counters, summed over the workers. Processors apply to a message in the order they were added.
import { randomUUID } from 'node:crypto';

import type { Logger } from '../../log/index.ts';
import type { Store } from '../../store/types.ts';
import { topicFilterProblem } from '../../auth/topic-filter.ts';
import { checkScript } from './check.ts';
import { ProcessorError } from './errors.ts';
import { checkExtension, resolveExtension } from './extension-module.ts';
import { addCounters, emptyCounters, type ProcessorCounters, type ProcessorKind, type ProcessorSpec, type ProcessorState } from './types.ts';
import type { WorkerCallAll } from '../../worker/ops/index.ts';

interface BaseDoc {
  id: string;
  name: string;
  enabled: boolean;
  createTime: string;
  updateTime: string;
  /** Bumped by every change of what runs (content, config, topic). */
  version: number;
  /** Where it applies among the processors: they run in increasing order (the order added). */
  order: number;
}

export interface ScriptDoc extends BaseDoc {
  type: 'javascript';
  content: string;
  /** Topic filter of the messages it converts. */
  topic: string;
}

export interface ExtensionDoc extends BaseDoc {
  type: 'processor';
  config: { className: string; topic: string; options: Record<string, unknown> };
}

export type ProcessorDoc = ScriptDoc | ExtensionDoc;

/** What the manager needs of the broker (the supervisor gives it). */
export interface ProcessorHost {
  setProcessorState(state: ProcessorState): void;
  callAll: WorkerCallAll;
}

export interface ProcessorRuntime extends ProcessorCounters {
  id: string;
  name: string;
  kind: ProcessorKind;
  enabled: boolean;
}

const STORE_KIND: Record<ProcessorKind, string> = { script: 'script', extension: 'extension' };
export const CONTENT_MAX = 256 * 1024;

export class ProcessorManager {
  private readonly docs = new Map<string, { kind: ProcessorKind; doc: ProcessorDoc }>();

  constructor(
    private readonly host: ProcessorHost,
    private readonly store: Store,
    private readonly extensionsDir: string,
    private readonly log: Logger,
  ) {}

  async load(): Promise<void> {
    for (const kind of ['script', 'extension'] as const) {
      for (const { doc } of await this.store.listAdmin<ProcessorDoc>(STORE_KIND[kind])) {
        let kept = doc;
        try {
          if (kind === 'extension') resolveExtension(this.extensionsDir, (doc as ExtensionDoc).config.className);
        } catch (err) {
          this.log.error('stored extension cannot run; kept disabled', { id: doc.id, name: doc.name, err });
          kept = { ...doc, enabled: false };
        }
        this.docs.set(doc.id, { kind, doc: kept });
      }
    }
    this.publish();
  }

  /** A script or extension changed on another node of the cluster, stored here once applied
   * (null: deleted); every worker gets the new set. */
  applyStored(kind: ProcessorKind, id: string, doc: ProcessorDoc | null): void {
    if (doc === null) {
      if (this.docs.get(id)?.kind === kind) this.docs.delete(id);
    } else {
      if (typeof doc !== 'object' || doc.id !== id || typeof doc.name !== 'string') throw new ProcessorError(400, 'id', `${kind} ${id} from another node is not a ${kind}`);
      let kept = doc;
      if (kind === 'extension') {
        try {
          resolveExtension(this.extensionsDir, (doc as ExtensionDoc).config.className);
        } catch (err) {
          this.log.error('extension from another node cannot run here; kept disabled', { id, name: doc.name, err });
          kept = { ...doc, enabled: false };
        }
      } else validateScript(doc as ScriptDoc);
      this.docs.set(id, { kind, doc: kept });
    }
    this.publish();
  }

  list(kind: ProcessorKind, filter: { name?: string; enabled?: boolean } = {}): ProcessorDoc[] {
    return this.ordered()
      .filter((e) => e.kind === kind && (filter.name === undefined || e.doc.name.includes(filter.name)) && (filter.enabled === undefined || e.doc.enabled === filter.enabled))
      .map((e) => e.doc);
  }

  async addScript(input: { id?: string; name: string; content: string; topic?: string; enabled?: boolean }): Promise<ScriptDoc> {
    const id = this.newId('script', input.id, input.name);
    const doc: ScriptDoc = { id, name: input.name, type: 'javascript', content: input.content, topic: input.topic ?? '#', enabled: input.enabled ?? true, ...stamps(), version: 1, order: this.nextOrder() };
    validateScript(doc);
    return this.save('script', doc);
  }

  async updateScript(id: string, change: { name?: string; content?: string; topic?: string }): Promise<ScriptDoc> {
    const doc = this.get('script', id) as ScriptDoc;
    if (change.name !== undefined) this.nameFree('script', change.name, id);
    const next: ScriptDoc = { ...doc, ...definedOf(change), updateTime: new Date().toISOString() };
    if (next.content !== doc.content || next.topic !== doc.topic) next.version = doc.version + 1;
    validateScript(next);
    return this.save('script', next);
  }

  async addExtension(input: { id?: string; name: string; className: string; topic?: string; options?: Record<string, unknown>; enabled?: boolean }): Promise<ExtensionDoc> {
    const id = this.newId('extension', input.id, input.name);
    const doc: ExtensionDoc = { id, name: input.name, type: 'processor', config: { className: input.className, topic: input.topic ?? '#', options: input.options ?? {} }, enabled: input.enabled ?? true, ...stamps(), version: 1, order: this.nextOrder() };
    await this.validateExtension(doc);
    return this.save('extension', doc);
  }

  async updateExtension(id: string, change: { name?: string; className?: string; topic?: string; options?: Record<string, unknown> }): Promise<ExtensionDoc> {
    const doc = this.get('extension', id) as ExtensionDoc;
    if (change.name !== undefined) this.nameFree('extension', change.name, id);
    const config = { ...doc.config, ...definedOf({ className: change.className, topic: change.topic, options: change.options }) };
    const next: ExtensionDoc = { ...doc, name: change.name ?? doc.name, config, updateTime: new Date().toISOString(), version: doc.version + 1 };
    await this.validateExtension(next);
    return this.save('extension', next);
  }

  async setEnabled(kind: ProcessorKind, id: string, enabled: boolean): Promise<ProcessorDoc> {
    const doc = this.get(kind, id);
    if (doc.enabled === enabled) return doc;
    if (enabled && kind === 'extension') await this.validateExtension(doc as ExtensionDoc);
    return this.save(kind, { ...doc, enabled, updateTime: new Date().toISOString() });
  }

  async delete(kind: ProcessorKind, id: string): Promise<void> {
    this.get(kind, id);
    await this.store.deleteAdmin(STORE_KIND[kind], id);
    this.docs.delete(id);
    this.publish();
  }

  /** Counters of one processor, summed over the running workers. */
  async runtime(kind: ProcessorKind, id: string): Promise<ProcessorRuntime> {
    const doc = this.get(kind, id);
    return runtimeOf(kind, doc, await this.host.callAll('scripts.runtime'));
  }

  /** Every processor's counters (one read of every worker), for the metrics. */
  async allRuntimes(): Promise<ProcessorRuntime[]> {
    const all = await this.host.callAll('scripts.runtime');
    return this.ordered().map(({ kind, doc }) => runtimeOf(kind, doc, all));
  }

  private get(kind: ProcessorKind, id: string): ProcessorDoc {
    const e = this.docs.get(id);
    if (!e || e.kind !== kind) throw new ProcessorError(404, 'id', `no ${kind} ${id}`);
    return e.doc;
  }

  private newId(kind: ProcessorKind, id: string | undefined, name: string): string {
    const chosen = id ?? `${kind}-${randomUUID().slice(0, 8)}`;
    if (this.docs.has(chosen)) throw new ProcessorError(409, 'id', `id: ${chosen} exists`);
    this.nameFree(kind, name);
    return chosen;
  }

  private nameFree(kind: ProcessorKind, name: string, except?: string): void {
    for (const e of this.docs.values()) if (e.kind === kind && e.doc.name === name && e.doc.id !== except) throw new ProcessorError(409, 'name', `name: a ${kind} named ${name} exists`);
  }

  private async validateExtension(doc: ExtensionDoc): Promise<void> {
    const problem = topicFilterProblem(doc.config.topic);
    if (problem) throw new ProcessorError(400, 'config.topic', `config.topic: ${problem}`);
    await checkExtension(resolveExtension(this.extensionsDir, doc.config.className));
  }

  private async save<D extends ProcessorDoc>(kind: ProcessorKind, doc: D): Promise<D> {
    await this.store.putAdmin(STORE_KIND[kind], doc.id, doc);
    this.docs.set(doc.id, { kind, doc });
    this.publish();
    return doc;
  }

  private ordered(): { kind: ProcessorKind; doc: ProcessorDoc }[] {
    return [...this.docs.values()].sort((a, b) => a.doc.order - b.doc.order);
  }

  private nextOrder(): number {
    let max = 0;
    for (const e of this.docs.values()) max = Math.max(max, e.doc.order);
    return max + 1;
  }

  /** Tells every worker the enabled processors, in order. */
  private publish(): void {
    const processors: ProcessorSpec[] = [];
    for (const { kind, doc } of this.ordered()) {
      if (!doc.enabled) continue;
      const key = `${doc.id}:${doc.version}`;
      if (kind === 'script') {
        const s = doc as ScriptDoc;
        processors.push({ id: s.id, kind, name: s.name, topic: s.topic, key, content: s.content });
        continue;
      }
      const x = doc as ExtensionDoc;
      try {
        const { file, exportName } = resolveExtension(this.extensionsDir, x.config.className);
        processors.push({ id: x.id, kind, name: x.name, topic: x.config.topic, key, module: file, exportName, options: x.config.options });
      } catch (err) {
        this.log.error('extension module is gone; not run', { id: x.id, name: x.name, err });
      }
    }
    this.host.setProcessorState({ processors });
  }
}

/** A processor's counters summed over the workers' answers. */
function runtimeOf(kind: ProcessorKind, doc: ProcessorDoc, perWorker: readonly Record<string, ProcessorCounters>[]): ProcessorRuntime {
  const total = emptyCounters();
  for (const counters of perWorker) if (counters[doc.id]) addCounters(total, counters[doc.id]);
  return { id: doc.id, name: doc.name, kind, enabled: doc.enabled, ...total };
}

function validateScript(doc: ScriptDoc): void {
  const problem = topicFilterProblem(doc.topic);
  if (problem) throw new ProcessorError(400, 'topic', `topic: ${problem}`);
  const check = checkScript(doc.content);
  if (check.valid) return;
  if ('line' in check) throw new ProcessorError(400, 'content', `content: line ${check.line}, column ${check.column}: ${check.message}`, { line: check.line, column: check.column });
  throw new ProcessorError(400, 'content', `content: ${check.message}`);
}

function stamps(): { createTime: string; updateTime: string } {
  const now = new Date().toISOString();
  return { createTime: now, updateTime: now };
}

function definedOf<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
