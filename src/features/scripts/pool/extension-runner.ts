// An extension in a pool thread: its module imported, its class instantiated and init() called
// once (under the time limit), then onMessage per message. An extension is the operator's own
// module, trusted like the broker's code: it runs in this thread's realm. A call that does not
// settle within the limit fails with 'timeout' (one that never yields is cut off by the worker's
// stage, which ends this thread).
import { pathToFileURL } from 'node:url';

import type { ExtensionResult, MessageProcessor } from '../extension-api.ts';
import { output } from './output.ts';
import { MAX_OUTPUTS } from './task.ts';
import type { Failure, Item, Outcome, RunContext, Runner } from './runner.ts';

export class ExtensionRunner implements Runner {
  private instance: MessageProcessor | null = null;
  private loadError: Failure | null = null;
  private readonly loading: Promise<void>;

  constructor(
    modulePath: string,
    exportName: string,
    options: Record<string, unknown>,
    private readonly timeoutMs: number,
    private readonly maxTopicLevels: number,
  ) {
    this.loading = this.load(modulePath, exportName, options);
  }

  private async load(modulePath: string, exportName: string, options: Record<string, unknown>): Promise<void> {
    try {
      const mod = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
      const cls = mod[exportName];
      if (typeof cls !== 'function') throw new Error(`${exportName} is not a class exported by the module`);
      const instance = new (cls as new () => MessageProcessor)();
      if (typeof instance.onMessage !== 'function') throw new Error(`${exportName} has no onMessage(message) method`);
      await within(Promise.resolve(instance.init?.(Object.freeze({ ...options }))), this.timeoutMs, 'init');
      this.instance = instance;
    } catch (err) {
      this.loadError = { reason: err instanceof TimeLimit ? 'timeout' : 'error', message: `the extension failed to load: ${(err as Error).message}` };
    }
  }

  async run(items: readonly Item[], { meta, beat }: RunContext): Promise<Outcome[]> {
    await this.loading;
    if (this.loadError) return items.map(() => this.loadError!);
    const instance = this.instance!;
    const out: Outcome[] = [];
    for (const item of items) {
      beat();
      const m = meta(item.src);
      try {
        let r = instance.onMessage({ topic: item.topic, payload: Buffer.from(item.payload), qos: m.qos, retain: m.retain, clientId: m.clientId }) as ExtensionResult | Promise<ExtensionResult>;
        if (r instanceof Promise) r = await within(r, this.timeoutMs, 'onMessage');
        out.push(this.outcome(item, r));
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        out.push({ reason: err instanceof TimeLimit ? 'timeout' : 'error', message: message.slice(0, 500) });
      }
    }
    return out;
  }

  private outcome(item: Item, r: ExtensionResult): Outcome {
    if (r === undefined) return undefined;
    if (r === null) return [];
    const list = Array.isArray(r) ? r : [r];
    if (list.length > MAX_OUTPUTS) return { reason: 'invalid', message: `onMessage returned ${list.length} messages: at most ${MAX_OUTPUTS}` };
    const made: Item[] = [];
    for (const o of list) {
      if (o === null || typeof o !== 'object') return { reason: 'invalid', message: 'onMessage returned something other than {topic, payload} objects' };
      const one = output(item, o.topic, o.payload, this.maxTopicLevels);
      if ('reason' in one) return one;
      made.push(one);
    }
    return made;
  }

  ready(): Promise<void> {
    return this.loading;
  }

  async close(): Promise<void> {
    await this.loading;
    try {
      await within(Promise.resolve(this.instance?.close?.()), this.timeoutMs, 'close');
    } catch {
      // Closing is best effort: the instance is dropped either way.
    }
  }
}

class TimeLimit extends Error {}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeLimit(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
