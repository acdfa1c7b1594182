// handle_auth: enhanced authentication (MQTT 5.0 section 4.12). No method is built in: a method
// is added by registering an AuthMethod with the worker. AUTH for a method the broker does not
// have is refused at CONNECT (CONNACK 0x8C); an AUTH packet outside such an exchange is a
// protocol error.
import type { Packet } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import type { Client, HandlerHost } from './client.ts';

export function handleAuth(host: HandlerHost, c: Client, p: Packet): void {
  const method = p.properties?.authenticationMethod;
  if (!method || !host.authMethods.has(method)) {
    c.protocolError(RC.PROTOCOL_ERROR, 'no authentication exchange in progress');
    return;
  }
  // Methods take part during CONNECT (see connect.ts); re-authentication is not offered.
  c.protocolError(RC.PROTOCOL_ERROR, 're-authentication is not supported');
}
