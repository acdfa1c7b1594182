// Typed messages between the supervisor, the workers, and worker peers. Errors cross as
// {code, message} and are rebuilt on arrival (classes do not survive postMessage).
import type { MessagePort } from 'node:worker_threads';

import type { SessionState } from '../session/session-table.ts';
import type { WorkerStatsSnapshot } from './stats.ts';

export interface PlainMessage {
  topic: string;
  payload: Uint8Array;
  qos: 0 | 1 | 2;
  retain: boolean;
  expiresAt: number;
}

export type ToWorker =
  | { t: 'peer'; worker: number; port: MessagePort }
  | { t: 'peer-gone'; worker: number }
  | { t: 'publish'; message: PlainMessage }
  | { t: 'stats' }
  | { t: 'reload-tls' }
  | { t: 'shutdown' };

export type FromWorker =
  | { t: 'ready' }
  | { t: 'failed'; error: { code: string; message: string } }
  | { t: 'stats'; stats: WorkerStatsSnapshot }
  | { t: 'stopped' };

export type PeerMessage =
  | { t: 'batch'; buffer: ArrayBuffer; length: number }
  | { t: 'takeover'; clientId: string; handle: number; resume: boolean; from: number }
  | { t: 'session-state'; clientId: string; handle: number; state: SessionState | null };
