// Operations the supervisor (the admin API) asks a worker thread to run on the state it owns:
// its connections, sessions, listeners and counters. Each module of ops is a plain table of
// named functions; results and errors cross back as structured-clone values.
import type { WorkerContext } from '../context.ts';
import type { Connection } from '../../session/connection.ts';
import type { Listeners } from '../../listener/listeners.ts';

export interface OpsEnv {
  readonly ctx: WorkerContext;
  readonly connections: ReadonlySet<Connection>;
  readonly listeners: Listeners;
}

// Arguments arrive by structured clone from the supervisor, typed per op at the call site.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Op = (args: any, env: OpsEnv) => unknown | Promise<unknown>;

/** An op's refusal; `status` is what the admin API answers with (404 unknown client, ...). */
export class OpError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly field?: string) {
    super(message);
    this.name = 'OpError';
  }
}
