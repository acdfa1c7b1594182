// What the three places that handle message processors share: the main thread's manager (which
// keeps scripts and extensions in the store), each worker's stage (which sends matching messages
// to its pool in batches) and the pool threads (which run them). A processor is a script (source
// text run in a node:vm context) or an extension (a module from the extensions directory).

export type ProcessorKind = 'script' | 'extension';

/** What happens to a message when a processor throws, times out or runs out of memory. */
export type OnError = 'pass' | 'drop';

/** A processor as the workers and the pool see it. */
export interface ProcessorSpec {
  id: string;
  kind: ProcessorKind;
  name: string;
  /** Topic filter: the messages it is applied to. */
  topic: string;
  /** Changes whenever what runs changes (id and version): the pool compiles once per key. */
  key: string;
  /** Script source (kind script). */
  content?: string;
  /** Absolute path of the module and the name of its exported class (kind extension). */
  module?: string;
  exportName?: string;
  /** Given to the extension's init(). */
  options?: Record<string, unknown>;
}

/** The processors every worker runs, in the order they apply to a message. */
export interface ProcessorState {
  processors: ProcessorSpec[];
}

export const NO_PROCESSORS: ProcessorState = { processors: [] };

/** Limits the pool threads apply (scripts.* configuration). */
export interface PoolSettings {
  /** Longest a processor may run on one message, in ms. */
  timeoutMs: number;
  onError: OnError;
}

/** Why a processor failed on a message. */
export type FailureReason = 'error' | 'timeout' | 'memory' | 'invalid';

export const FAILURE_REASONS: readonly FailureReason[] = ['error', 'timeout', 'memory', 'invalid'];

/** A processor's counters (per worker; the manager sums them). */
export interface ProcessorCounters {
  /** Messages given to it. */
  messages: number;
  /** ... that it changed (topic or payload), or split into several. */
  converted: number;
  /** ... that it returned unchanged. */
  unchanged: number;
  /** ... that it dropped (returned null). */
  dropped: number;
  /** ... on which it failed, by reason. */
  failed: Record<FailureReason, number>;
  /** Time spent in it, in microseconds. */
  micros: number;
  lastError: string | null;
  lastErrorAt: number;
}

export function emptyCounters(): ProcessorCounters {
  return { messages: 0, converted: 0, unchanged: 0, dropped: 0, failed: { error: 0, timeout: 0, memory: 0, invalid: 0 }, micros: 0, lastError: null, lastErrorAt: 0 };
}

export function addCounters(into: ProcessorCounters, c: ProcessorCounters): void {
  into.messages += c.messages;
  into.converted += c.converted;
  into.unchanged += c.unchanged;
  into.dropped += c.dropped;
  for (const r of FAILURE_REASONS) into.failed[r] += c.failed[r];
  into.micros += c.micros;
  if (c.lastErrorAt > into.lastErrorAt) {
    into.lastErrorAt = c.lastErrorAt;
    into.lastError = c.lastError;
  }
}
