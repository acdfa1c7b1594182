// Running a worker operation on the worker that owns a client id's session (main thread): used by
// the admin routes for a client of this node, and by the cluster's admin operations when another
// node asks this one about a client (src/cluster/admin-ops.ts).
import type { OpArgs, OpName, OpResult, OpTail, WorkerCall } from '../worker/ops/index.ts';


/** What the call needs of the supervisor. */
export interface OwnerHost {
  workerOf(clientId: string): number | undefined;
  call: WorkerCall;
}

/** No worker of this node holds the client id. */
export const NOT_HELD: unique symbol = Symbol('not held here');

/**
 * Runs `op` on the worker that owns `clientId`'s session; NOT_HELD when no worker does. Asked again
 * once when the session moved to another worker meanwhile (a reconnect elsewhere), which the
 * worker shows by a 404 while the registry names another worker. A worker's other refusals
 * (WorkerOpError with its status) are thrown.
 */
export async function callOwner<K extends OpName>(host: OwnerHost, clientId: string, op: K, args: OpArgs<K>): Promise<OpResult<K> | typeof NOT_HELD> {
  for (let attempt = 0; ; attempt++) {
    const worker = host.workerOf(clientId);
    if (worker === undefined) return NOT_HELD;
    try {
      return await host.call(worker, op, ...([args] as OpTail<K>));
    } catch (err) {
      const moved = (err as { status?: unknown }).status === 404 && host.workerOf(clientId) !== worker;
      if (!moved || attempt > 0) throw err;
    }
  }
}
