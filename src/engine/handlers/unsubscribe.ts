// handle_unsubscribe: removes subscriptions from the session and the routing core.
import type { Packet } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { unsuback } from '../../protocol/send.ts';
import { removeSubscription } from '../session/subscriptions.ts';
import { EV } from '../session/events.ts';
import type { Client, HandlerHost } from './client.ts';

export function handleUnsubscribe(host: HandlerHost, c: Client, p: Packet): void {
  const session = c.session!;
  // Topic rewrite (src/features/rewrite): the filter as SUBSCRIBE rewrote it.
  const rewrite = host.rewrite.current;
  if (rewrite.active) p.unsubscriptions = p.unsubscriptions!.map((f) => rewrite.filter(f, c.identity));
  const exclusive = host.exclusive;
  const codes = p.unsubscriptions!.map((filter) => {
    // $exclusive/{filter} (src/features/exclusive): the subscription is to the filter; unsubscribing
    // either way frees the place this client holds.
    if (exclusive.enabled && filter.startsWith('$exclusive/')) filter = filter.slice(11);
    if (!removeSubscription(host.proxies, session, filter)) return RC.NO_SUBSCRIPTION_EXISTED;
    if (exclusive.enabled) exclusive.release(filter, c.clientId);
    return RC.SUCCESS;
  });
  c.write(unsuback(c.version, p.messageId!, codes));
  if (host.events.wants[EV.UNSUBSCRIBE]) {
    const now = Date.now();
    p.unsubscriptions!.forEach((topic, i) => {
      if (codes[i] === RC.SUCCESS) host.events.emit('UNSUBSCRIBE', { clientid: c.clientId, username: c.username ?? null, peerhost: c.remoteAddress, topic, timestamp: now });
    });
  }
}
