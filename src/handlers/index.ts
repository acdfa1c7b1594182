// Dispatch of inbound packets to their handlers (handle_<packet>). PUBLISH arrives as a
// descriptor from the framer; everything else as a decoded object.
import type { Packet } from '../native/index.ts';
import type { Connection, HandlerResult } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import { handleConnect } from './connect.ts';
import { handlePuback, handlePubrec, handlePubrel, handlePubcomp } from './acks.ts';
import { handleSubscribe } from './subscribe.ts';
import { handleUnsubscribe } from './unsubscribe.ts';
import { handleDisconnect } from './disconnect.ts';
import { handleAuth } from './auth.ts';
import { PINGRESP } from '../protocol/send.ts';

export { handlePublish } from './publish.ts';

export function handlePacket(conn: Connection, p: Packet): HandlerResult {
  if (p.cmd === 'connect') return handleConnect(conn, p);
  if (conn.state !== 'connected') {
    // Nothing but CONNECT (and AUTH during enhanced authentication) before CONNACK.
    if (p.cmd === 'auth') return handleAuth(conn, p);
    conn.protocolError(RC.PROTOCOL_ERROR, 'CONNECT not completed');
    return;
  }
  switch (p.cmd) {
    case 'puback': return handlePuback(conn, p);
    case 'pubrec': return handlePubrec(conn, p);
    case 'pubrel': return handlePubrel(conn, p);
    case 'pubcomp': return handlePubcomp(conn, p);
    case 'subscribe': return handleSubscribe(conn, p);
    case 'unsubscribe': return handleUnsubscribe(conn, p);
    case 'pingreq': conn.write(PINGRESP); return;
    case 'disconnect': return handleDisconnect(conn, p);
    case 'auth': return handleAuth(conn, p);
    default:
      // CONNACK, SUBACK, UNSUBACK, PINGRESP: only a server sends these [MQTT-4.8.0-? / 3.x.0].
      conn.protocolError(RC.PROTOCOL_ERROR, `a client does not send ${p.cmd.toUpperCase()}`);
  }
}
