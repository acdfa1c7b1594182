// Starts a worker thread running a TypeScript module through the tsx bootstrap.
import { Worker, type WorkerOptions } from 'node:worker_threads';

const bootstrap = new URL('./bootstrap.mjs', import.meta.url);

export function spawnTsWorker(entry: URL, data: Record<string, unknown> = {}, options: WorkerOptions = {}): Worker {
  return new Worker(bootstrap, { ...options, workerData: { ...data, entry: entry.href } });
}
