// The messages between a worker's stage and its pool threads: one task per batch of messages
// (payloads back to back in one transferred buffer), one result per task.
import type { PoolSettings, ProcessorCounters, ProcessorSpec } from '../types.ts';

export interface BatchTask {
  settings: PoolSettings & {
    maxTopicLevels: number;
    /** Keys of the scripts to run in precise mode (a time limit per call, see script-runner.ts). */
    precise: string[];
  };
  /** Every processor of the worker's state, in the order they apply. */
  processors: ProcessorSpec[];
  count: number;
  /** Per message: topic and publisher's client id, each list joined by U+0000 (which neither
   * contains; clients '' when no extension needs them); qos | retain << 2. */
  topics: string;
  clients: string;
  flags: Uint8Array;
  /** Per message: which list of processor indices (into `processors`) applies to it. */
  listOf: Uint16Array;
  lists: number[][];
  /** Payloads back to back; message i is bytes[offsets[i] .. offsets[i + 1]). */
  bytes: Uint8Array;
  offsets: Uint32Array;
  /** The heartbeat (src/threads/heartbeat.ts), and the time (ms) it counts from. */
  beat: Int32Array;
  base: number;
}

export interface BatchResult {
  /** Per input message: how many messages it became (0: dropped). */
  counts: Uint32Array;
  /** Per output message: its topic when a processor changed it, else null. */
  topics: (string | null)[];
  /** Output payloads back to back (offsets: one more than outputs). */
  bytes: Uint8Array;
  offsets: Uint32Array;
  /** Per processor of the task: what this batch did. */
  counters: ProcessorCounters[];
  /** What scripts wrote with console.* (bounded per batch), as [processor index, line]. */
  logs: [number, string][];
}

/** Flags of a message in a task. */
export const QOS_MASK = 3;
export const RETAIN_FLAG = 4;

/** A message may become at most this many (an extension that splits one). */
export const MAX_OUTPUTS = 1000;
/** Lines of console output kept per batch; the rest are counted in the last one. */
export const MAX_LOG_LINES = 50;
