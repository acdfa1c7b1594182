// Waiting for what a test waits for, instead of sleeping a fixed time.
//
//   waitFor(condition, {timeout, interval, message})
//     Calls `condition` (sync or async) until it answers a truthy value, and resolves with that
//     value. A condition that throws counts as "not yet" (so assertions can be retried); after
//     `timeout` ms (default WAIT_MS) it rejects with `message` (default: the condition's source),
//     the last value or error, and how many times it was checked. `interval` (default 20 ms) is
//     the pause between checks; a check that is itself slow (an HTTP request) is not overlapped.
//
//       await waitFor(async () => (await b.api('GET', '/endpoints/status?id=x')).json.endpointNumber === 1,
//         { message: 'the closed connection is no longer counted' });
//       const rows = await waitFor(async () => {
//         const r = await store.loadDeliveries('c');
//         return r.length > 0 && r;
//       });
//
//   waitForEvent(emitter, event, {timeout, filter})
//     Resolves with the arguments (an array) of the first `event` the emitter emits for which
//     `filter(...args)` is true (default: any), and rejects after `timeout` ms (default WAIT_MS). An
//     'error' event does not reject (tests wait for 'close' after errors on purpose). Works with
//     Node EventEmitters, mqtt.js clients, sockets, worker threads. Listen before causing the event:
//
//       const closed = waitForEvent(client, 'close');
//       await b.api('POST', '/endpoints/remove', { body: { id } });
//       await closed;
//
// Where a test must show that something does NOT happen, wait for a causal marker rather than a
// time: do the action, then something that must come after anything the action produced (publish
// a marker message on the same path and wait for it), and check nothing else came first.
//
// WAIT_MS (20 s; env SPINDLE_TEST_WAIT_MS) is the default of every wait in the test helpers. It is
// what a wait gives up after, not how long it takes: only a failing test pays it, and a slow or
// loaded CI machine does not turn a slow event into a failure.

/** Default give-up time of every wait in the test helpers. */
export const WAIT_MS = Number(process.env.SPINDLE_TEST_WAIT_MS) || 20_000;

export interface WaitForOptions {
  /** Give up after this many ms (default WAIT_MS). */
  timeout?: number;
  /** Pause between checks in ms (default 20). */
  interval?: number;
  /** What was waited for, for the error message (a function: made when the wait fails, so it
   * can say what the state was then). */
  message?: string | (() => string);
}

export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitForOptions = {}): Promise<Exclude<Awaited<T>, false | 0 | '' | null | undefined>> {
  const timeout = options.timeout ?? WAIT_MS;
  const interval = options.interval ?? 20;
  const deadline = Date.now() + timeout;
  let checks = 0;
  let last: { value?: unknown; error?: unknown } = {};
  for (;;) {
    checks++;
    try {
      const value = await condition();
      if (value) return value as Exclude<Awaited<T>, false | 0 | '' | null | undefined>;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, Math.min(interval, Math.max(0, deadline - Date.now()))));
  }
  const what = (typeof options.message === 'function' ? options.message() : options.message) ?? `condition ${compact(condition.toString())}`;
  const detail = 'error' in last
    ? `last check threw: ${last.error instanceof Error ? last.error.message : String(last.error)}`
    : `last value: ${describe(last.value)}`;
  const err = new Error(`waitFor timed out after ${timeout} ms (${checks} checks): ${what}; ${detail}`);
  if ('error' in last) (err as Error & { cause?: unknown }).cause = last.error;
  throw err;
}

export interface WaitForEventOptions {
  /** Give up after this many ms (default WAIT_MS). */
  timeout?: number;
  /** Only an event whose arguments pass this counts. */
  filter?: (...args: any[]) => boolean;
}

/** Anything with on/off (EventEmitter, mqtt.js client, socket, worker). */
export interface Emitter {
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

export function waitForEvent<A extends unknown[] = any[]>(emitter: Emitter, event: string, options: WaitForEventOptions = {}): Promise<A> {
  const timeout = options.timeout ?? WAIT_MS;
  return new Promise<A>((resolve, reject) => {
    let seen = 0;
    const listener = (...args: unknown[]) => {
      seen++;
      if (options.filter && !options.filter(...args)) return;
      clearTimeout(timer);
      emitter.off(event, listener);
      resolve(args as A);
    };
    const timer = setTimeout(() => {
      emitter.off(event, listener);
      const filtered = options.filter ? ` (${seen} seen, none passed the filter)` : '';
      reject(new Error(`waitForEvent: no '${event}' event within ${timeout} ms${filtered}`));
    }, timeout);
    emitter.on(event, listener);
  });
}

function compact(source: string): string {
  const s = source.replace(/\s+/g, ' ').trim();
  return s.length > 160 ? `${s.slice(0, 157)}...` : s;
}

function describe(value: unknown): string {
  try {
    const s = JSON.stringify(value);
    if (s !== undefined) return s.length > 200 ? `${s.slice(0, 197)}...` : s;
  } catch { /* circular: fall through */ }
  return String(value);
}
