// The worker threads: starts them (in two steps: 'loaded', when a worker answers calls and every
// feature installs its state on it, then 'open', when it opens its listeners), connects every pair
// with a MessageChannel, restarts one that dies (its persistent sessions come back from the
// store), calls them (worker-channel.ts), and stops them. Owns the slots (main thread); what the
// workers post besides their life cycle goes to `onMessage`.
import { MessageChannel, type Worker } from 'node:worker_threads';

import type { Logger } from '../log/index.ts';
import { relayLines } from '../log/line-relay.ts';
import { spawnWorker } from '../threads/spawn.ts';
import { WORKER_ENTRY, takeWarmWorker, threadOptions } from './worker-prewarm.ts';
import type { FromWorker, ToWorker } from '../worker/messages.ts';
import type { OpName, OpResult, OpTail } from '../worker/ops/index.ts';
import type { WorkerStatsSnapshot } from '../stats/worker-stats.ts';
import type { StoredSession } from '../store/types.ts';
import type { OpenEndpoint } from '../listener/listeners.ts';
import { WorkerChannel } from './worker-channel.ts';

/**
 * Where a worker thread is in its start: 'starting' (restoring its sessions), 'loaded' (it answers
 * operations and routes, and the features install their state on it, but it has no listener yet),
 * 'open' (its listeners accept clients).
 */
type Phase = 'starting' | 'loaded' | 'open';

interface Slot {
  id: number;
  worker: Worker | null;
  phase: Phase;
  restarts: number;
  stats: WorkerStatsSnapshot | null;
  /** Settles when the worker's stdout has ended (its last lines are in the log store). */
  relayed: Promise<void> | null;
}

/** What the pool needs of the node. */
export interface PoolDeps {
  log: Logger;
  /** Where the workers' output lines go besides this process's stdout (the log store, the
   * OpenTelemetry export); null: a worker writes to the process's stdout itself. */
  workerLines: () => ((line: string, worker: number) => void) | null;
  /** The workerData of a worker that starts with these stored sessions. */
  workerData(id: number, restore: StoredSession[]): Record<string, unknown>;
  youngGenerationMb: number;
  /** The endpoints a worker opens once its state is in place (as they are at that moment). */
  endpoints(): OpenEndpoint[];
  /** The stored sessions a dead worker owned, for its replacement. */
  orphanedSessions(worker: number): Promise<StoredSession[]>;
  /** What a worker posts besides its life cycle (outputs, questions, claims). */
  onMessage(worker: number, msg: FromWorker): void;
  shutdownTimeoutMs: number;
}

/** How long a started worker waits for the features' state before it opens its listeners
 * anyway (a feature that failed to install is logged). */
const INSTALL_TIMEOUT_MS = 10_000;
/** How long a shutdown waits for a stopped worker's last lines. */
const RELAY_DRAIN_MS = 1000;

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly startListeners: ((worker: number) => void | Promise<unknown>)[] = [];
  private readonly exitListeners: ((worker: number) => void)[] = [];
  private stopping = false;
  private readonly channel = new WorkerChannel((w, msg) => {
    const slot = this.slots[w];
    if (!slot?.worker || slot.phase === 'starting') return false;
    slot.worker.postMessage(msg);
    return true;
  });

  constructor(private readonly deps: PoolDeps) {}

  /** Starts `count` workers, the stored sessions spread over them; resolves once all accept. */
  async start(count: number, stored: readonly StoredSession[]): Promise<void> {
    for (let id = 0; id < count; id++) this.slots.push({ id, worker: null, phase: 'starting', restarts: 0, stats: null, relayed: null });
    const shares = this.slots.map(() => [] as StoredSession[]);
    stored.forEach((s, i) => shares[i % shares.length].push(s));
    await Promise.all(this.slots.map((s, i) => this.spawn(s, shares[i])));
  }

  private spawn(slot: Slot, restore: StoredSession[]): Promise<void> {
    const lines = this.deps.workerLines();
    // A small nursery: message objects live and die in it, in the CPU caches (see the key).
    // With the log store (or another taker of lines) on, the worker's stdout comes here (one
    // writer for the files).
    const options = { youngGenerationMb: this.deps.youngGenerationMb, stdout: lines !== null };
    // A warm worker (worker-prewarm.ts) gets its data as its first message; a cold one at spawn.
    let worker = takeWarmWorker(options);
    if (worker) worker.postMessage({ t: 'init', data: this.deps.workerData(slot.id, restore) } satisfies ToWorker);
    else worker = spawnWorker(WORKER_ENTRY, this.deps.workerData(slot.id, restore), threadOptions(options));
    slot.relayed = lines ? relayLines(worker.stdout, process.stdout, (line) => lines(line, slot.id)) : null;
    slot.worker = worker;
    slot.phase = 'starting';
    return new Promise((resolve, reject) => {
      worker.on('message', (msg: FromWorker) => {
        switch (msg.t) {
          case 'loaded':
            slot.phase = 'loaded';
            this.connectPeers(slot);
            void this.install(slot, worker);
            break;
          case 'ready':
            slot.phase = 'open';
            resolve();
            break;
          case 'failed':
            reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
            break;
          case 'stats':
            slot.stats = msg.stats;
            break;
          case 'rpc-reply':
            this.channel.answered(msg.id, msg.value, msg.error);
            break;
          case 'stopped':
            break;
          default:
            this.deps.onMessage(slot.id, msg);
        }
      });
      worker.on('error', (err) => this.deps.log.error('worker failed', { worker: slot.id, err }));
      worker.on('exit', (code) => {
        slot.worker = null;
        slot.phase = 'starting';
        for (const fn of this.exitListeners) fn(slot.id);
        slot.stats = null; // a dead worker's last counters are not reported as a live one's
        // The worker's listening sockets closed with its event loop; the fds are not ours to close.
        for (const other of this.slots) if (other !== slot && other.worker) other.worker.postMessage({ t: 'peer-gone', worker: slot.id } satisfies ToWorker);
        reject(new Error(`worker ${slot.id} exited with code ${code} before it was ready`));
        if (!this.stopping) this.restart(slot, code);
      });
    });
  }

  private restart(slot: Slot, code: number): void {
    this.deps.log.error('worker exited; restarting it', { worker: slot.id, code, restarts: slot.restarts });
    slot.restarts++;
    // Back off a little on repeated crashes.
    setTimeout(() => {
      if (this.stopping) return;
      // Its persistent sessions come back from the store; its clients reconnect to them.
      this.deps.orphanedSessions(slot.id)
        .then((restore) => this.spawn(slot, restore))
        .catch((err) => this.deps.log.error('worker restart failed', { worker: slot.id, err }));
    }, Math.min(5000, 100 * 2 ** Math.min(slot.restarts, 6)));
  }

  /**
   * Every feature's state goes to a (re)started worker before it opens its listeners: the worker
   * handles messages in order, so what a feature posts now is in place before the 'open' that
   * follows, and a change made meanwhile reaches it too (it answers calls from now on). So the
   * first client message the worker accepts already meets every rule, bridge, log topic, trace
   * and viewer.
   */
  private async install(slot: Slot, worker: Worker): Promise<void> {
    const installs = this.startListeners.map(async (fn) => fn(slot.id));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), INSTALL_TIMEOUT_MS)));
    const settled = await Promise.race([Promise.allSettled(installs), timedOut]);
    clearTimeout(timer);
    if (settled === 'timeout') this.deps.log.error('a worker opens its listeners before every feature installed its state', { worker: slot.id, timeoutMs: INSTALL_TIMEOUT_MS });
    else for (const r of settled) if (r.status === 'rejected') this.deps.log.error('a feature failed to install its state on a worker', { worker: slot.id, err: r.reason });
    // The endpoints as they are now (one may have changed while the worker started).
    if (slot.worker === worker) worker.postMessage({ t: 'open', endpoints: this.deps.endpoints() } satisfies ToWorker);
  }

  /** A MessageChannel between a (re)started worker and every other running worker. */
  private connectPeers(slot: Slot): void {
    for (const other of this.slots) {
      if (other === slot || !other.worker || other.phase === 'starting') continue;
      const { port1, port2 } = new MessageChannel();
      slot.worker!.postMessage({ t: 'peer', worker: other.id, port: port1 } satisfies ToWorker, [port1]);
      other.worker.postMessage({ t: 'peer', worker: slot.id, port: port2 } satisfies ToWorker, [port2]);
    }
  }

  /** Calls `fn` each time a worker has started (also after a restart), before it opens its
   * listeners: a feature sends its state to the worker there. The worker opens them once every
   * promise `fn` returned settled (INSTALL_TIMEOUT_MS at most). */
  onWorkerStart(fn: (worker: number) => void | Promise<unknown>): void {
    this.startListeners.push(fn);
  }

  /** Calls `fn` each time a worker thread has exited (crashed, or at shutdown). */
  onWorkerExit(fn: (worker: number) => void): void {
    this.exitListeners.push(fn);
  }

  /** Runs operation `op` on one worker and answers its result. */
  call<K extends OpName>(worker: number, op: K, ...tail: OpTail<K>): Promise<OpResult<K>> {
    return this.channel.call(worker, op, ...tail);
  }

  /** Runs operation `op` on every running worker; answers the results in worker order. */
  callAll<K extends OpName>(op: K, ...tail: OpTail<K>): Promise<OpResult<K>[]> {
    return Promise.all(this.running().map((w) => this.channel.call(w, op, ...tail)));
  }

  /** Posts `msg` to a worker that runs (dropped when it is gone: so are its clients). */
  post(worker: number, msg: ToWorker): void {
    this.slots[worker]?.worker?.postMessage(msg);
  }

  /** Posts `msg` to every worker that runs. */
  postAll(msg: ToWorker): void {
    for (const s of this.slots) s.worker?.postMessage(msg);
  }

  /** The ids of the workers that answer calls now (their listeners may not be open yet, and a
   * change sent to them is in place before they are). */
  running(): number[] {
    return this.slots.filter((s) => s.worker && s.phase !== 'starting').map((s) => s.id);
  }

  /** The ids of the workers whose listeners are open. */
  open(): number[] {
    return this.slots.filter((s) => s.worker && s.phase === 'open').map((s) => s.id);
  }

  /** Fresh counters from every running worker (each answers with a snapshot). */
  async collectStats(timeoutMs = 1000): Promise<WorkerStatsSnapshot[]> {
    const running = this.slots.filter((s) => s.worker && s.phase !== 'starting');
    await Promise.all(running.map((s) => new Promise<void>((resolve) => {
      const w = s.worker!;
      const timer = setTimeout(done, timeoutMs);
      function onMessage(m: FromWorker) {
        if (m.t === 'stats') done();
      }
      function done() {
        clearTimeout(timer);
        w.off('message', onMessage);
        resolve();
      }
      w.on('message', onMessage);
      w.postMessage({ t: 'stats' } satisfies ToWorker);
    })));
    return running.map((s) => s.stats).filter((s): s is WorkerStatsSnapshot => s !== null);
  }

  /** Each worker thread: running (listeners open) or not, and how often it was restarted. */
  states(): { id: number; running: boolean; restarts: number }[] {
    return this.slots.map((s) => ({ id: s.id, running: s.worker !== null && s.phase === 'open', restarts: s.restarts }));
  }

  /** The worker threads (for operators' tooling and crash tests). */
  get workers(): readonly (Worker | null)[] {
    return this.slots.map((s) => s.worker);
  }

  /** Graceful stop: workers stop accepting, send v5 clients DISCONNECT 0x8B, flush; then exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    const running = this.slots.filter((s) => s.worker);
    await Promise.all(running.map((s) => new Promise<void>((resolve) => {
      const w = s.worker!;
      const timer = setTimeout(resolve, this.deps.shutdownTimeoutMs);
      w.on('message', (m: FromWorker) => {
        if (m.t === 'stopped') {
          clearTimeout(timer);
          resolve();
        }
      });
      w.postMessage({ t: 'shutdown' } satisfies ToWorker);
    })));
    await Promise.all(running.map((s) => s.worker?.terminate()));
    // A stopped worker's last lines may still be on their way through its stdout.
    await Promise.all(this.slots.map((s) => s.relayed && Promise.race([s.relayed, new Promise((resolve) => setTimeout(resolve, RELAY_DRAIN_MS).unref())])));
  }
}
