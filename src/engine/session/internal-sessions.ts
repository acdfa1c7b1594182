// InternalSessions: the broker's own sessions on one worker thread (local subscriptions, which
// keep the latest messages they receive: src/worker/ops/subscriptions.ts), by handle. Their handles are allocated by the supervisor, so they
// survive a worker restart; they are not in the client registry, so no MQTT client can reach or
// take them over, and their deliveries go to a sink instead of a connection. Owned by the worker
// thread.
import type { Delivery } from '../../router/delivery.ts';
import { Session } from './session.ts';

export class InternalSessions {
  private readonly byHandle = new Map<number, Session>();

  /** `removeRoutes`: takes a handle's subscriptions out of the routing core. */
  constructor(private readonly removeRoutes: (handle: number) => void) {}

  get(handle: number): Session | undefined {
    return this.byHandle.get(handle);
  }

  /** Whether `session` is (still) an internal session of this thread. */
  has(session: Session): boolean {
    return this.byHandle.get(session.handle) === session;
  }

  /** Opens an internal session with the given handle: its deliveries go to `sink`. It queues
   * nothing (maxQueued 0): what the sink is given is all it gets. */
  open(handle: number, name: string, sink: (d: Delivery) => void): Session {
    const s = new Session(handle, name, { maxQueued: 0, dropPolicy: 'drop-newest' });
    s.sink = sink;
    this.byHandle.set(handle, s);
    return s;
  }

  /** Closes an internal session: its subscriptions leave the routing core. */
  close(session: Session): void {
    if (this.byHandle.get(session.handle) !== session) return;
    this.byHandle.delete(session.handle);
    this.removeRoutes(session.handle);
  }
}
