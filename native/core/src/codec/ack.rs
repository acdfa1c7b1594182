//! Reason-code packets: PUBACK, PUBREC, PUBREL, PUBCOMP (MQTT 5.0 sections 3.4-3.7), DISCONNECT
//! (3.14) and AUTH (3.15), including the v5 short forms that omit reason code and properties.

use super::connect::{read_properties, write_properties};
use super::error::CodecError;
use super::packet::{Ack, PacketType, Properties, ProtocolVersion};
use super::properties::{check_authentication_pair, PropertyContext};
use super::reader::Reader;
use super::reason_codes::is_allowed_reason_code;
use super::subscribe::read_packet_id;
use super::writer::push_u16;

fn property_context(packet: PacketType) -> PropertyContext {
    match packet {
        PacketType::Puback => PropertyContext::Puback,
        PacketType::Pubrec => PropertyContext::Pubrec,
        PacketType::Pubrel => PropertyContext::Pubrel,
        PacketType::Pubcomp => PropertyContext::Pubcomp,
        PacketType::Auth => PropertyContext::Auth,
        _ => PropertyContext::Disconnect,
    }
}

/// Reads the optional reason code and optional properties that end a v5 packet: absent reason
/// code means 0x00 (Success), absent property length means no properties [MQTT-3.4.2-1 ff.].
fn read_reason_and_properties(
    version: ProtocolVersion,
    packet: PacketType,
    r: &mut Reader<'_>,
) -> Result<(u8, Properties), CodecError> {
    if !version.is_v5() || r.is_empty() {
        r.expect_end()?;
        return Ok((0, Properties::default()));
    }
    let reason_code = r.read_u8()?;
    if !is_allowed_reason_code(packet, version, reason_code) {
        return Err(CodecError::INVALID_REASON_CODE);
    }
    let properties = if r.is_empty() {
        Properties::default()
    } else {
        read_properties(r, version, property_context(packet))?
    };
    if packet == PacketType::Auth {
        check_authentication_pair(&properties)?; // MQTT 5.0 3.15.2.2.2
    }
    r.expect_end()?;
    Ok((reason_code, properties))
}

/// Writes reason code and properties in the shortest form v5 allows; v3 has neither, so a
/// non-zero reason code cannot be expressed there (properties are dropped).
fn write_reason_and_properties(
    version: ProtocolVersion,
    reason_code: u8,
    properties: &Properties,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    if !version.is_v5() {
        return if reason_code == 0 { Ok(()) } else { Err(CodecError::NOT_IN_VERSION) };
    }
    let has_properties = !properties.is_empty();
    if reason_code != 0 || has_properties {
        out.push(reason_code);
    }
    if has_properties {
        write_properties(version, properties, out)?;
    }
    Ok(())
}

/// Decodes PUBACK / PUBREC / PUBREL / PUBCOMP. v3: exactly the packet identifier.
pub(crate) fn decode_ack_body(version: ProtocolVersion, packet: PacketType, r: &mut Reader<'_>) -> Result<Ack, CodecError> {
    let packet_id = read_packet_id(r)?;
    let (reason_code, properties) = read_reason_and_properties(version, packet, r)?;
    Ok(Ack { packet_id, reason_code, properties })
}

pub(crate) fn write_ack_body(version: ProtocolVersion, ack: &Ack, out: &mut Vec<u8>) -> Result<(), CodecError> {
    push_u16(out, ack.packet_id);
    write_reason_and_properties(version, ack.reason_code, &ack.properties, out)
}

/// Decodes DISCONNECT or AUTH: empty in v3, reason code and properties both optional in v5.
pub(crate) fn decode_reason_body(
    version: ProtocolVersion,
    packet: PacketType,
    r: &mut Reader<'_>,
) -> Result<(u8, Properties), CodecError> {
    read_reason_and_properties(version, packet, r)
}

pub(crate) fn write_reason_body(
    version: ProtocolVersion,
    reason_code: u8,
    properties: &Properties,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    write_reason_and_properties(version, reason_code, properties, out)
}
