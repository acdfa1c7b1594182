// The typed calls from the main thread to a worker thread: each names an operation of the
// worker's table (src/worker/ops/index.ts), with that operation's argument type, and resolves
// with its result type or rejects with its refusal. Owns the calls in flight and their timers
// (main thread).
import { DomainError, codeOfStatus, isErrorCode } from '../errors/domain-error.ts';
import type { RpcError, ToWorker } from '../worker/messages.ts';
import type { OpName, OpResult, OpTail } from '../worker/ops/index.ts';

/** A worker operation's refusal or failure, as the worker reported it, rebuilt as a domain error
 * (an unknown code takes the code of its status; a failure is INTERNAL_ERROR). */
export class WorkerOpError extends DomainError {
  constructor(e: RpcError) {
    super(isErrorCode(e.code) ? e.code : codeOfStatus(e.status ?? 500), e.message, { field: e.field, details: e.details });
    this.name = 'WorkerOpError';
  }
}

const RPC_TIMEOUT_MS = 5000;

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

export class WorkerChannel {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();

  /** `post` sends to a worker that answers calls, or answers false when it does not. */
  constructor(private readonly post: (worker: number, msg: ToWorker) => boolean) {}

  /** Runs operation `op` on `worker` and answers its result. */
  call<K extends OpName>(worker: number, op: K, ...[args, timeoutMs = RPC_TIMEOUT_MS]: OpTail<K>): Promise<OpResult<K>> {
    const id = ++this.seq;
    return new Promise<OpResult<K>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new WorkerOpError({ code: 'UNAVAILABLE', message: `worker ${worker} did not answer ${op} within ${timeoutMs} ms`, status: 503 }));
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      if (this.post(worker, { t: 'rpc', id, op, args: args ?? {} })) return;
      clearTimeout(timer);
      this.pending.delete(id);
      reject(new WorkerOpError({ code: 'UNAVAILABLE', message: `worker ${worker} is not running`, status: 503 }));
    });
  }

  /** A worker's answer to call `id` (one that timed out meanwhile is dropped). */
  answered(id: number, value: unknown, error: RpcError | undefined): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (error) p.reject(new WorkerOpError(error));
    else p.resolve(value);
  }
}
