// handle_disconnect: the client ends the connection.
import type { Packet } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { EV } from '../session/events.ts';
import type { Client, HandlerHost } from './client.ts';

export function handleDisconnect(host: HandlerHost, c: Client, p: Packet): void {
  const session = c.session!;
  const expiry = p.properties?.sessionExpiryInterval;
  if (expiry !== undefined && expiry !== null) {
    // [MQTT-3.14.2-2] a session that was to end with the connection cannot be given an expiry now.
    if (session.expiryInterval === 0 && expiry !== 0) {
      c.protocolError(RC.PROTOCOL_ERROR, 'Session Expiry Interval cannot be set at DISCONNECT');
      return;
    }
    session.expiryInterval = Math.min(expiry, host.config.limits.maxSessionExpiry);
  }
  // [MQTT-3.1.2-10] a normal DISCONNECT discards the will; 0x04 asks for it to be sent.
  c.normalDisconnect = (p.reasonCode ?? 0) !== RC.DISCONNECT_WITH_WILL;
  if (host.events.wants[EV.DISCONNECT]) {
    host.events.emit('DISCONNECT', { clientid: c.clientId, username: c.username ?? null, peerhost: c.remoteAddress, reason_code: p.reasonCode ?? 0, timestamp: Date.now() });
  }
  c.close('normal');
}
