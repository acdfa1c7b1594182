// handle_unsubscribe: removes subscriptions from the session and the routing core.
import type { Packet } from '../native/index.ts';
import type { Connection } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import { unsuback } from '../protocol/send.ts';

export function handleUnsubscribe(conn: Connection, p: Packet): void {
  const session = conn.session!;
  const codes = p.unsubscriptions!.map((filter) => {
    if (session.subscriptions.delete(filter)) conn.ctx.persistence?.unsubscribed(session, filter);
    return conn.ctx.router.unsubscribe(filter, session.handle) ? RC.SUCCESS : RC.NO_SUBSCRIPTION_EXISTED;
  });
  conn.write(unsuback(conn.version, p.messageId!, codes));
}
