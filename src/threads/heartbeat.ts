// The heartbeat a pool thread writes for the batch it runs (a SharedArrayBuffer the task
// carries): ms since the batch was sent at BEAT_TIME, the processor running at BEAT_PROCESSOR.
// The worker's stage ends a task whose heartbeat stops (a call that never yields; beat-watchdog.ts);
// it does not count while the heartbeat says NOT_STARTED. Shared by the pools of the scripts
// (src/features/scripts) and of the schema registry (src/features/schema-registry).
export const BEAT_TIME = 0;
export const BEAT_PROCESSOR = 1;

/** BEAT_TIME while the task has not started (queued, its thread starting, or a module loading):
 * the stage waits without a limit. */
export const NOT_STARTED = -1;

/** A heartbeat for a task not started yet. */
export function newBeat(): Int32Array {
  const words = new Int32Array(new SharedArrayBuffer(8));
  words[BEAT_TIME] = NOT_STARTED;
  return words;
}

export function pause(words: Int32Array | undefined): void {
  if (words) Atomics.store(words, BEAT_TIME, NOT_STARTED);
}

export function beat(words: Int32Array | undefined, base: number, processor: number): void {
  if (!words) return;
  Atomics.store(words, BEAT_TIME, Date.now() - base);
  Atomics.store(words, BEAT_PROCESSOR, processor);
}
