// handle_puback, handle_pubrec, handle_pubrel, handle_pubcomp: the QoS 1 and 2 flows.
import type { Packet } from '../../native/index.ts';
import { RC } from '../../protocol/reason-codes.ts';
import { ack, PUBCOMP, PUBREL } from '../../protocol/send.ts';
import type { Client, HandlerHost } from './client.ts';

/** PUBACK: a QoS 1 message we sent is delivered; free its packet id and send what waits. */
export function handlePuback(host: HandlerHost, c: Client, packetId: number): void {
  const session = c.session!;
  const entry = session.inflight.get(packetId);
  if (entry && entry.qos === 1) host.outbox.completed(session, entry);
  // An unknown id is ignored: it may be a duplicate after a resend.
}

/** PUBREC: the first half of QoS 2; answer PUBREL and keep the id until PUBCOMP [MQTT-4.3.3-4]. */
export function handlePubrec(host: HandlerHost, c: Client, p: Packet): void {
  const session = c.session!;
  const id = p.messageId!;
  const entry = session.inflight.get(id);
  if (entry && entry.qos === 2) {
    if ((p.reasonCode ?? 0) >= 0x80) {
      // v5: the receiver refused the message; the flow ends here (MQTT 5.0 section 4.3.3).
      host.outbox.completed(session, entry);
      return;
    }
    entry.state = 'pubrel';
    host.persistence?.deliveryState(session, entry.message, 'pubrel', id);
    c.write(ack(PUBREL, id, c.version));
  } else {
    c.write(ack(PUBREL, id, c.version, RC.PACKET_IDENTIFIER_NOT_FOUND));
  }
}

/** PUBREL: the client releases a QoS 2 message we received; forget its id and answer PUBCOMP.
 * A repeated PUBREL is answered too [MQTT-4.3.3-11 .. MQTT-4.3.3-12]. */
export function handlePubrel(host: HandlerHost, c: Client, p: Packet): void {
  const session = c.session!;
  const id = p.messageId!;
  const known = session.incomingQos2.delete(id);
  if (known) host.persistence?.incomingQos2Released(session, id);
  c.write(ack(PUBCOMP, id, c.version, known ? 0 : RC.PACKET_IDENTIFIER_NOT_FOUND));
}

/** PUBCOMP: a QoS 2 message we sent is complete. */
export function handlePubcomp(host: HandlerHost, c: Client, p: Packet): void {
  const session = c.session!;
  const entry = session.inflight.get(p.messageId!);
  if (entry && entry.state === 'pubrel') host.outbox.completed(session, entry);
}
