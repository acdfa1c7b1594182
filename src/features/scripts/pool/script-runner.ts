// A script in a pool thread: run once in its own node:vm context, then convert(topic, payload)
// called on each message of a batch by a loop that runs inside the context (script-prelude.ts).
// The context's global is a null-prototype object and code generation from strings is off, so
// the script reaches nothing of this thread: no require, no process, no Function of this realm
// (and this thread holds no broker state anyway).
//
// The time limit, two ways. node:vm's own limit costs ~100 µs a call (it starts a watchdog
// thread), more than a whole batch of cheap calls, so by default the loop runs without it, in
// chunks sized from the script's measured cost to take about a quarter of the limit, with a
// heartbeat between chunks: a call that never returns stops the heartbeat, and the worker's stage
// ends this thread (the batch then fails as a whole, 'timeout'). That script then runs in precise
// mode for a while (BatchTask.settings.precise): the batch runs under vm's limit; when it runs
// out, the message that was running is run again alone with the whole limit: if it finishes,
// the batch was merely long and goes on after it; if not, that message alone fails with
// 'timeout'. So every call keeps the limit, and a script that never loops pays nothing for it.
import { types } from 'node:util';
import vm from 'node:vm';

import { NO_CONVERT, SCRIPT_FILENAME } from '../check.ts';
import { output } from './output.ts';
import { KIND, PRELUDE } from './script-prelude.ts';
import type { Failure, Item, Outcome, RunContext, Runner } from './runner.ts';

const PRELUDE_SCRIPT = new vm.Script(PRELUDE, { filename: 'spindle-prelude.js' });
const RUN = new vm.Script('__spindle.run()', { filename: 'spindle-run.js' });
/** Microseconds a call is assumed to take before one has been measured: the first chunks are short. */
const FIRST_GUESS_SHARE = 64;
const TYPEOF_CONVERT = new vm.Script('typeof convert', { filename: 'spindle-check.js' });
const DESCRIBE_HELD = new vm.Script('__spindle.describeHeld()', { filename: 'spindle-describe.js' });
const SET = Uint8Array.prototype.set;

/** The prelude's functions (closures of the context, made before the script ran). */
interface Api {
  alloc(size: number): Uint8Array;
  allocOffsets(count: number): Uint32Array;
  load(topics: string, bytes: Uint8Array, offsets: Uint32Array, n: number): void;
  setRange(from: number, to: number): void;
  hold(error: unknown): void;
  next(): number;
  kind(): Uint8Array;
  topicOut(): unknown[];
  payloadOut(): unknown[];
  errorOut(): unknown[];
  takeLogs(): unknown;
}

export class ScriptRunner implements Runner {
  private readonly context: vm.Context;
  private readonly api: Api;
  /** Why the script could not be loaded (every message then fails with it). */
  private readonly loadError: Failure | null = null;
  /** Measured cost of a call, in µs (moving average). */
  private microsPerCall: number;

  constructor(content: string, private readonly timeoutMs: number, private readonly maxTopicLevels: number) {
    this.microsPerCall = (timeoutMs * 1000) / FIRST_GUESS_SHARE;
    this.context = vm.createContext(Object.create(null), { name: 'spindle-script', codeGeneration: { strings: false, wasm: false } });
    PRELUDE_SCRIPT.runInContext(this.context);
    this.api = vm.runInContext('__spindle', this.context) as Api;
    try {
      new vm.Script(content, { filename: SCRIPT_FILENAME }).runInContext(this.context, { timeout: timeoutMs });
      if (TYPEOF_CONVERT.runInContext(this.context, { timeout: timeoutMs }) !== 'function') {
        this.loadError = { reason: 'error', message: NO_CONVERT };
      }
    } catch (err) {
      this.loadError = { reason: isTimeout(err) ? 'timeout' : 'error', message: `the script failed to load: ${isTimeout(err) ? `it ran longer than ${timeoutMs} ms` : this.describe(err)}` };
    }
  }

  async run(items: readonly Item[], { beat, log, precise }: RunContext): Promise<Outcome[]> {
    if (this.loadError) return items.map(() => this.loadError!);
    const n = items.length;
    const api = this.api;
    let size = 0;
    for (const m of items) size += m.payload.length;
    const bytes = api.alloc(size);
    const offsets = api.allocOffsets(n + 1);
    let at = 0;
    for (let i = 0; i < n; i++) {
      offsets[i] = at;
      Reflect.apply(SET, bytes, [items[i].payload, at]);
      at += items[i].payload.length;
    }
    offsets[n] = at;
    api.load(items.map((m) => m.topic).join('\u0000'), bytes, offsets, n);
    const kind = api.kind();
    const timedOut: boolean[] = [];
    if (precise) this.runPrecise(n, beat, timedOut);
    else this.runChunked(n, beat);
    const logs = api.takeLogs();
    if (typeof logs === 'string' && logs !== '') for (const line of logs.split('\n')) log(line);
    const topics = api.topicOut();
    const payloads = api.payloadOut();
    const errors = api.errorOut();
    const out: Outcome[] = new Array(n);
    for (let i = 0; i < n; i++) {
      switch (kind[i]) {
        case KIND.UNCHANGED:
          out[i] = undefined;
          break;
        case KIND.DROPPED:
          out[i] = [];
          break;
        case KIND.CONVERTED: {
          const made = output(items[i], topics[i], payloads[i], this.maxTopicLevels);
          out[i] = 'reason' in made ? made : [made];
          break;
        }
        case KIND.ERROR:
        case KIND.INVALID:
          out[i] = { reason: kind[i] === KIND.ERROR ? 'error' : 'invalid', message: typeof errors[i] === 'string' ? (errors[i] as string) : 'failed' };
          break;
        default:
          out[i] = timedOut[i]
            ? { reason: 'timeout', message: `convert ran longer than ${this.timeoutMs} ms` }
            : { reason: 'error', message: 'convert did not run' };
      }
    }
    return out;
  }

  /** What the script threw, made text inside its context under the limit (it may be any
   * object of the script's, with getters). */
  private describe(err: unknown): string {
    this.api.hold(err);
    try {
      const text = DESCRIBE_HELD.runInContext(this.context, { timeout: this.timeoutMs }) as unknown;
      return typeof text === 'string' ? text : 'it threw';
    } catch {
      return 'it threw';
    }
  }

  /** Chunks of about a quarter of the limit each, a heartbeat before each. */
  private runChunked(n: number, beat: () => void): void {
    for (let from = 0; from < n;) {
      const chunk = Math.max(1, Math.min(n - from, Math.floor((this.timeoutMs * 250) / this.microsPerCall)));
      this.api.setRange(from, from + chunk);
      beat();
      const started = performance.now();
      RUN.runInContext(this.context);
      const micros = ((performance.now() - started) * 1000) / chunk;
      this.microsPerCall = Math.max(0.01, this.microsPerCall * 0.5 + micros * 0.5);
      from += chunk;
    }
  }

  /** The whole batch under vm's limit; the call that runs out of it again alone. */
  private runPrecise(n: number, beat: () => void, timedOut: boolean[]): void {
    const api = this.api;
    while (api.next() < n) {
      beat();
      if (this.call()) break;
      // Out of time at `i`: alone, with the whole limit.
      const i = api.next();
      api.setRange(i, i + 1);
      beat();
      if (!this.call()) timedOut[i] = true;
      api.setRange(i + 1, n);
    }
  }

  /** Runs the loop from next to end under the limit: true when it got to the end. */
  private call(): boolean {
    try {
      RUN.runInContext(this.context, { timeout: this.timeoutMs });
      return true;
    } catch (err) {
      if (isTimeout(err)) return false;
      throw err;
    }
  }

  async ready(): Promise<void> {}

  async close(): Promise<void> {}
}

/** vm's timeout error (made in the script's realm). Read without running any code of the
 * script's: no proxy traps, no getters. */
function isTimeout(err: unknown): boolean {
  if (err === null || typeof err !== 'object' || types.isProxy(err)) return false;
  const code = Object.getOwnPropertyDescriptor(err, 'code');
  return code !== undefined && 'value' in code && code.value === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
}
