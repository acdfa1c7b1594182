//! `decode`: one whole frame to an owned `Packet`, validating the fixed header (flags, type,
//! length) and dispatching the body to the file that owns that packet's wire format.

use super::ack::{decode_ack_body, decode_reason_body};
use super::connect::{decode_connack_body, decode_connect_body};
use super::error::CodecError;
use super::packet::{Auth, Disconnect, Packet, PacketType, ProtocolVersion};
use super::publish::{decode_publish, parse_whole_frame};
use super::reader::Reader;
use super::subscribe::{decode_suback_body, decode_subscribe_body, decode_unsuback_body, decode_unsubscribe_body};

/// Decodes one whole packet, fixed header included. `frame` must be exactly one packet: its
/// remaining length is checked against `frame.len()`. CONNECT ignores `version` and detects it.
pub fn decode(version: ProtocolVersion, frame: &[u8]) -> Result<Packet, CodecError> {
    let h = parse_whole_frame(frame)?;
    let packet_type = checked_packet_type(version, h.header)?;
    let mut r = Reader::at(frame, h.header_len);
    let r = &mut r;
    let packet = match packet_type {
        PacketType::Connect => Packet::Connect(decode_connect_body(r)?),
        PacketType::Connack => Packet::Connack(decode_connack_body(version, r)?),
        PacketType::Publish => return Ok(Packet::Publish(decode_publish(version, frame)?)),
        PacketType::Puback => Packet::Puback(decode_ack_body(version, packet_type, r)?),
        PacketType::Pubrec => Packet::Pubrec(decode_ack_body(version, packet_type, r)?),
        PacketType::Pubrel => Packet::Pubrel(decode_ack_body(version, packet_type, r)?),
        PacketType::Pubcomp => Packet::Pubcomp(decode_ack_body(version, packet_type, r)?),
        PacketType::Subscribe => Packet::Subscribe(decode_subscribe_body(version, r)?),
        PacketType::Suback => Packet::Suback(decode_suback_body(version, r)?),
        PacketType::Unsubscribe => Packet::Unsubscribe(decode_unsubscribe_body(version, r)?),
        PacketType::Unsuback => Packet::Unsuback(decode_unsuback_body(version, r)?),
        PacketType::Pingreq => Packet::Pingreq,
        PacketType::Pingresp => Packet::Pingresp,
        PacketType::Disconnect => {
            let (reason_code, properties) = decode_reason_body(version, packet_type, r)?;
            Packet::Disconnect(Disconnect { reason_code, properties })
        }
        PacketType::Auth => {
            let (reason_code, properties) = decode_reason_body(version, packet_type, r)?;
            Packet::Auth(Auth { reason_code, properties })
        }
    };
    r.expect_end()?;
    Ok(packet)
}

/// Decodes a packet received by a server: like `decode`, and additionally rejects packet types
/// only a server sends (CONNACK, SUBACK, UNSUBACK, PINGRESP) and Subscription Identifiers in
/// PUBLISH [MQTT-3.3.4-6].
pub fn decode_from_client(version: ProtocolVersion, frame: &[u8]) -> Result<Packet, CodecError> {
    let header = *frame.first().ok_or(CodecError::TRUNCATED)?;
    match PacketType::from_header(header) {
        Some(PacketType::Connack | PacketType::Suback | PacketType::Unsuback | PacketType::Pingresp) => {
            Err(CodecError::UNEXPECTED_PACKET_TYPE)
        }
        Some(PacketType::Publish) => {
            super::publish::decode_publish_view(version, frame)?;
            decode(version, frame)
        }
        _ => decode(version, frame),
    }
}

/// The packet type of `header`, after checking that the type exists in `version` (AUTH is
/// reserved before v5) and that its fixed header flags are the required ones [MQTT-2.1.3-1],
/// or, in MQTT 3.1 only, those of a re-delivery (`is_v31_redelivery`).
/// PUBLISH flags are checked by the PUBLISH decoder.
pub fn checked_packet_type(version: ProtocolVersion, header: u8) -> Result<PacketType, CodecError> {
    let packet_type = PacketType::from_header(header).ok_or(CodecError::RESERVED_PACKET_TYPE)?;
    if packet_type == PacketType::Auth && !version.is_v5() {
        return Err(CodecError::RESERVED_PACKET_TYPE);
    }
    let flags = header & 0x0F;
    if packet_type != PacketType::Publish
        && flags != packet_type.required_flags()
        && !is_v31_redelivery(version, packet_type, flags)
    {
        return Err(CodecError::RESERVED_FLAGS); // [MQTT-2.1.3-1] [MQTT-3.6.1-1] [MQTT-3.8.1-1] [MQTT-3.10.1-1]
    }
    Ok(packet_type)
}

/// MQTT 3.1 sends PUBREL, SUBSCRIBE and UNSUBSCRIBE at QoS 1 (flags 0010) and sets DUP (1010)
/// when it re-delivers one, e.g. a PUBREL re-sent after reconnecting: MQTT 3.1 section 2.1, DUP
/// "is set when the client or server attempts to re-deliver a PUBLISH, PUBREL, SUBSCRIBE or
/// UNSUBSCRIBE message". 3.1.1 and 5.0 made these bits reserved, 0010 exactly [MQTT-3.6.1-1].
#[inline]
fn is_v31_redelivery(version: ProtocolVersion, packet_type: PacketType, flags: u8) -> bool {
    const DUP: u8 = 0b1000;
    version == ProtocolVersion::V31 && packet_type.required_flags() == 0b0010 && flags == 0b0010 | DUP
}
