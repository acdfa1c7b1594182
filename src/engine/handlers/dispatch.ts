// Dispatch of inbound packets to their handlers (handle_<packet>): the Dispatcher a worker
// gives each of its connections. PUBLISH arrives as a descriptor from the framer, plain PUBACKs as
// a packet id, everything else as a decoded object.
import type { Packet } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { PINGRESP } from '../../protocol/send.ts';
import { handleConnect } from './connect.ts';
import { handlePublish } from './publish.ts';
import { handlePuback, handlePubrec, handlePubrel, handlePubcomp } from './acks.ts';
import { handleSubscribe } from './subscribe.ts';
import { handleUnsubscribe } from './unsubscribe.ts';
import { handleDisconnect } from './disconnect.ts';
import { handleAuth } from './auth.ts';
import type { Client, Dispatcher, HandlerHost, HandlerResult } from './client.ts';

export function createDispatcher(host: HandlerHost): Dispatcher {
  return {
    publish: (c, src, desc, o) => handlePublish(host, c, src, desc, o),
    puback: (c, id) => handlePuback(host, c, id),
    packet: (c, p) => handlePacket(host, c, p),
  };
}

export function handlePacket(host: HandlerHost, c: Client, p: Packet): HandlerResult {
  if (p.cmd === 'connect') return handleConnect(host, c, p);
  if (c.state !== 'connected') {
    // Nothing but CONNECT (and AUTH during enhanced authentication) before CONNACK.
    if (p.cmd === 'auth') return handleAuth(host, c, p);
    c.protocolError(RC.PROTOCOL_ERROR, 'CONNECT not completed');
    return;
  }
  switch (p.cmd) {
    case 'puback': return handlePuback(host, c, p.messageId!);
    case 'pubrec': return handlePubrec(host, c, p);
    case 'pubrel': return handlePubrel(host, c, p);
    case 'pubcomp': return handlePubcomp(host, c, p);
    case 'subscribe': return handleSubscribe(host, c, p);
    case 'unsubscribe': return handleUnsubscribe(host, c, p);
    case 'pingreq': c.write(PINGRESP); return;
    case 'disconnect': return handleDisconnect(host, c, p);
    case 'auth': return handleAuth(host, c, p);
    default:
      // CONNACK, SUBACK, UNSUBACK, PINGRESP: only a server sends these (MQTT 5.0 section 2.1.2,
      // the direction of flow of each packet type).
      c.protocolError(RC.PROTOCOL_ERROR, `a client does not send ${p.cmd.toUpperCase()}`);
  }
}
