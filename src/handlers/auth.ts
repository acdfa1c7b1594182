// handle_auth: enhanced authentication (MQTT 5.0 section 4.12). No method is built in: a method
// is added by registering an AuthMethod in the worker context. AUTH for a method the broker does
// not have is refused at CONNECT (CONNACK 0x8C); an AUTH packet outside such an exchange is a
// protocol error.
import type { Packet } from '../native/index.ts';
import type { Connection } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';

export function handleAuth(conn: Connection, p: Packet): void {
  const method = p.properties?.authenticationMethod;
  if (!method || !conn.ctx.authMethods.has(method)) {
    conn.protocolError(RC.PROTOCOL_ERROR, 'no authentication exchange in progress');
    return;
  }
  // Methods take part during CONNECT (see connect.ts); re-authentication is not offered.
  conn.protocolError(RC.PROTOCOL_ERROR, 're-authentication is not supported');
}
