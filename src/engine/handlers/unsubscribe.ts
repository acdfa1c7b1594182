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
  if (rewrite.active) p.unsubscriptions = p.unsubscriptions!.map((f) => rewrite.filter(f));
  const codes = p.unsubscriptions!.map((filter) => (removeSubscription(host.proxies, session, filter) ? RC.SUCCESS : RC.NO_SUBSCRIPTION_EXISTED));
  c.write(unsuback(c.version, p.messageId!, codes));
  if (host.events.wants[EV.UNSUBSCRIBE]) {
    const now = Date.now();
    p.unsubscriptions!.forEach((topic, i) => {
      if (codes[i] === RC.SUCCESS) host.events.emit('UNSUBSCRIBE', { clientid: c.clientId, username: c.username ?? null, peerhost: c.remoteAddress, topic, timestamp: now });
    });
  }
}
