// Worker threads started before the node is built. Loading a worker's modules takes a few hundred
// milliseconds of CPU, as does the main thread's own: `spindle` starts its workers first (main.ts,
// right after reading the configuration), so both load side by side, on different cores, while the
// main thread also opens the store. A warm worker waits for its data (the 'init' message:
// worker.ts), which the pool sends when it starts that slot (worker-pool.ts). The tests' brokers
// start theirs cold.
import type { Worker } from 'node:worker_threads';

import { threadEntry } from '../threads/entry.ts';
import { spawnWorker } from '../threads/spawn.ts';

export const WORKER_ENTRY = threadEntry('worker');

/** What a thread is started with: a warm worker is only taken by a slot that would start it the same way. */
export interface WorkerSpawnOptions {
  youngGenerationMb: number;
  /** The worker's stdout comes to the main thread (the log store is on). */
  stdout: boolean;
}

const warm: { worker: Worker; options: WorkerSpawnOptions }[] = [];

/** The thread options of a worker (the same for a warm one and a cold one). */
export function threadOptions(o: WorkerSpawnOptions) {
  return { resourceLimits: { maxYoungGenerationSizeMb: o.youngGenerationMb }, stdout: o.stdout };
}

/** Starts `count` workers that load their modules and wait for their data. */
export function prewarmWorkers(count: number, options: WorkerSpawnOptions): void {
  for (let i = 0; i < count; i++) warm.push({ worker: spawnWorker(WORKER_ENTRY, { deferred: true }, threadOptions(options)), options });
}

/** A warm worker started with `options`, or undefined (the caller starts one with its data). */
export function takeWarmWorker(options: WorkerSpawnOptions): Worker | undefined {
  const i = warm.findIndex((w) => w.options.youngGenerationMb === options.youngGenerationMb && w.options.stdout === options.stdout);
  return i < 0 ? undefined : warm.splice(i, 1)[0].worker;
}

/** Ends the warm workers no slot took (fewer workers than warmed, or a start that failed). */
export async function dropWarmWorkers(): Promise<void> {
  await Promise.all(warm.splice(0).map(({ worker }) => worker.terminate()));
}
