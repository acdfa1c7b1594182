// handle_puback, handle_pubrec, handle_pubrel, handle_pubcomp: the QoS 1 and 2 flows.
import type { Packet } from '../native/index.ts';
import type { Connection } from '../session/connection.ts';
import { RC } from '../protocol/reason-codes.ts';
import { ack, PUBCOMP, PUBREL } from '../protocol/send.ts';

/** PUBACK: a QoS 1 message we sent is delivered; free its packet id and send what waits. */
export function handlePuback(conn: Connection, p: Packet): void {
  handlePubackId(conn, p.messageId!);
}

/** PUBACK by packet id (connection.ts reads plain PUBACKs from their bytes). */
export function handlePubackId(conn: Connection, id: number): void {
  const session = conn.session!;
  const entry = session.inflight.get(id);
  if (entry && entry.qos === 1) {
    session.inflight.delete(id);
    conn.ctx.persistence?.delivered(session, entry.message);
    conn.ctx.sessions.drain(session);
  }
  // An unknown id is ignored: it may be a duplicate after a resend.
}

/** PUBREC: the first half of QoS 2; answer PUBREL and keep the id until PUBCOMP [MQTT-4.3.3-4]. */
export function handlePubrec(conn: Connection, p: Packet): void {
  const session = conn.session!;
  const id = p.messageId!;
  const entry = session.inflight.get(id);
  if (entry && entry.qos === 2) {
    if ((p.reasonCode ?? 0) >= 0x80) {
      // v5: the receiver refused the message; the flow ends here (MQTT 5.0 section 4.3.3).
      session.inflight.delete(id);
      conn.ctx.persistence?.delivered(session, entry.message);
      conn.ctx.sessions.drain(session);
      return;
    }
    entry.state = 'pubrel';
    conn.ctx.persistence?.deliveryState(session, entry.message, 'pubrel', id);
    conn.write(ack(PUBREL, id, conn.version));
  } else {
    conn.write(ack(PUBREL, id, conn.version, RC.PACKET_IDENTIFIER_NOT_FOUND));
  }
}

/** PUBREL: the client releases a QoS 2 message we received; forget its id and answer PUBCOMP.
 * A repeated PUBREL is answered too [MQTT-4.3.3-11 .. MQTT-4.3.3-12]. */
export function handlePubrel(conn: Connection, p: Packet): void {
  const session = conn.session!;
  const id = p.messageId!;
  const known = session.incomingQos2.delete(id);
  if (known) conn.ctx.persistence?.incomingQos2Released(session, id);
  conn.write(ack(PUBCOMP, id, conn.version, known ? 0 : RC.PACKET_IDENTIFIER_NOT_FOUND));
}

/** PUBCOMP: a QoS 2 message we sent is complete. */
export function handlePubcomp(conn: Connection, p: Packet): void {
  const session = conn.session!;
  const entry = session.inflight.get(p.messageId!);
  if (entry && entry.state === 'pubrel') {
    session.inflight.delete(p.messageId!);
    conn.ctx.persistence?.delivered(session, entry.message);
    conn.ctx.sessions.drain(session);
  }
}
