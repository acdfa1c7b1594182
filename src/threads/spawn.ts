// Starts a worker thread running an entry module (threads/entry.ts' moduleUrl). A compiled entry
// (.js) runs as it is; a TypeScript one (tests, development) starts through the tsx bootstrap,
// since Node 20 does not carry the parent's loader hooks into worker threads reliably.
import { Worker, type WorkerOptions } from 'node:worker_threads';

const bootstrap = new URL('./bootstrap.mjs', import.meta.url);

export function spawnWorker(entry: URL, data: Record<string, unknown> = {}, options: WorkerOptions = {}): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, { ...options, workerData: data });
  return new Worker(bootstrap, { ...options, workerData: { ...data, entry: entry.href } });
}
