//! `encode`: an owned `Packet` to wire bytes for a protocol version. v3 drops properties and refuses
//! what it cannot express (AUTH, non-zero reason codes outside CONNACK / SUBACK, v5 subscription
//! options); v5 acknowledgements use the shortest form.

use super::ack::{write_ack_body, write_reason_body};
use super::connect::{write_connack_body, write_connect_body};
use super::error::CodecError;
use super::packet::{Packet, ProtocolVersion};
use super::publish::write_publish_packet;
use super::subscribe::{write_suback_body, write_subscribe_body, write_unsuback_body, write_unsubscribe_body};
use super::varint::{write_varint, VARINT_MAX};

/// Appends `packet` to `out` and returns the bytes appended. CONNECT is written for its own
/// `version` field. On error `out` is left as it was.
pub fn encode(version: ProtocolVersion, packet: &Packet, out: &mut Vec<u8>) -> Result<usize, CodecError> {
    let start = out.len();
    let result = append_packet(version, packet, out);
    match result {
        Ok(()) => Ok(out.len() - start),
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Bytes `encode` would append; 0 when the packet cannot be encoded for `version`.
/// Encodes into a scratch buffer: meant for sizing control packets, not for the PUBLISH hot path
/// (use `publish_frame_len` there).
pub fn encoded_len(version: ProtocolVersion, packet: &Packet) -> usize {
    let mut scratch = Vec::new();
    encode(version, packet, &mut scratch).unwrap_or(0)
}

fn append_packet(version: ProtocolVersion, packet: &Packet, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let packet_type = packet.packet_type() as u8;
    let header = (packet_type << 4) | packet.packet_type().required_flags();
    // Reserve the largest fixed header, write the body, then close the gap.
    let start = out.len();
    out.extend_from_slice(&[header, 0, 0, 0, 0]);
    match packet {
        Packet::Connect(c) => write_connect_body(c, out)?,
        Packet::Connack(c) => write_connack_body(version, c, out)?,
        Packet::Puback(a) | Packet::Pubrec(a) | Packet::Pubrel(a) | Packet::Pubcomp(a) => {
            write_ack_body(version, a, out)?
        }
        Packet::Subscribe(s) => write_subscribe_body(version, s, out)?,
        Packet::Suback(s) => write_suback_body(version, s, out)?,
        Packet::Unsubscribe(u) => write_unsubscribe_body(version, u, out)?,
        Packet::Unsuback(u) => write_unsuback_body(version, u, out)?,
        Packet::Pingreq | Packet::Pingresp => {}
        Packet::Disconnect(d) => write_reason_body(version, d.reason_code, &d.properties, out)?,
        Packet::Auth(a) => {
            if !version.is_v5() {
                return Err(CodecError::NOT_IN_VERSION);
            }
            write_reason_body(version, a.reason_code, &a.properties, out)?
        }
        Packet::Publish(p) => {
            // PUBLISH sizes itself up front (shared with the hot-path writer).
            out.truncate(start);
            return write_publish_packet(version, p, out);
        }
    }
    let body_len = out.len() - start - 5;
    if body_len > VARINT_MAX as usize {
        return Err(CodecError::PACKET_TOO_LARGE);
    }
    let n = write_varint(&mut out[start + 1..start + 5], body_len as u32);
    out.drain(start + 1 + n..start + 5);
    Ok(())
}
