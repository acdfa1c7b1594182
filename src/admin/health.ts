// The broker's health as /health and /api/system/health report it: UP when a worker thread runs
// and the store answers a read within STORE_PROBE_MS, DOWN with the reasons otherwise.
import { performance } from 'node:perf_hooks';

import type { AdminContext } from './context.ts';
import { round2 } from './samplers.ts';
import type { Supervisor } from '../node/supervisor.ts';

/** How long the health checks wait for the store before calling it unreachable. */
export const STORE_PROBE_MS = 2000;

type WorkerState = ReturnType<Supervisor['workerStates']>[number];

export interface StoreProbe {
  reachable: boolean;
  latencyMs: number;
  error?: string;
}

export interface Health {
  status: 'UP' | 'DOWN';
  reasons: string[];
  workers: WorkerState[];
  running: number;
  store: StoreProbe;
}

export async function checkHealth(ctx: AdminContext): Promise<Health> {
  const workers = ctx.supervisor.workerStates();
  const running = workers.filter((w) => w.running).length;
  const store = await probeStore(ctx);
  const reasons: string[] = [];
  if (running === 0) reasons.push('no worker thread is running');
  if (!store.reachable) reasons.push(`store unreachable: ${store.error}`);
  return { status: reasons.length === 0 ? 'UP' : 'DOWN', reasons, workers, running, store };
}

async function probeStore(ctx: AdminContext): Promise<StoreProbe> {
  const started = performance.now();
  try {
    // A primary-key read: a real round trip to the database, cheap at any data size.
    await withTimeout(ctx.store.getAdmin('health', 'probe'), STORE_PROBE_MS, `store did not answer within ${STORE_PROBE_MS} ms`);
    return { reachable: true, latencyMs: round2(performance.now() - started) };
  } catch (err) {
    return { reachable: false, latencyMs: round2(performance.now() - started), error: (err as Error).message };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]);
}
