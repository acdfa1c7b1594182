//! CONNECT and CONNACK bodies (MQTT 5.0 sections 3.1, 3.2; 3.1.1 sections 3.1, 3.2; MQTT 3.1).

use super::error::CodecError;
use super::packet::{Connack, Connect, PacketType, Properties, ProtocolVersion, Will};
use super::properties::{check_authentication_pair, decode_properties, encode_properties, PropertyContext};
use super::reader::Reader;
use super::reason_codes::is_allowed_reason_code;
use super::utf8::check_topic_name;
use super::writer::{push_binary, push_str, push_u16};

const FLAG_RESERVED: u8 = 0x01;
const FLAG_CLEAN_START: u8 = 0x02;
const FLAG_WILL: u8 = 0x04;
const FLAG_WILL_RETAIN: u8 = 0x20;
const FLAG_PASSWORD: u8 = 0x40;
const FLAG_USERNAME: u8 = 0x80;

/// Maps protocol name and level to a version. A known name with an unknown level is an
/// unsupported version (CONNACK 0x01 in v3, 0x84 in v5) [MQTT-3.1.2-2]; any other name is
/// not MQTT at all [MQTT-3.1.2-1].
fn detect_version(name: &[u8], level: u8) -> Result<ProtocolVersion, CodecError> {
    match (name, level) {
        (b"MQTT", 4) => Ok(ProtocolVersion::V311),
        (b"MQTT", 5) => Ok(ProtocolVersion::V5),
        (b"MQIsdp", 3) => Ok(ProtocolVersion::V31),
        (b"MQTT", _) | (b"MQIsdp", _) => Err(CodecError::UNSUPPORTED_PROTOCOL_VERSION),
        _ => Err(CodecError::BAD_PROTOCOL_NAME),
    }
}

/// Decodes a CONNECT body; the version comes from the packet itself.
pub(crate) fn decode_connect_body(r: &mut Reader<'_>) -> Result<Connect, CodecError> {
    let name = r.read_binary()?;
    let level = r.read_u8()?;
    let version = detect_version(name, level)?;
    let v5 = version.is_v5();
    let flags = r.read_u8()?;
    if flags & FLAG_RESERVED != 0 {
        return Err(CodecError::CONNECT_RESERVED_FLAG); // [MQTT-3.1.2-3]
    }
    let has_will = flags & FLAG_WILL != 0;
    let will_qos = (flags >> 3) & 0x03;
    let will_retain = flags & FLAG_WILL_RETAIN != 0;
    if !has_will && (will_qos != 0 || will_retain) {
        return Err(CodecError::WILL_FLAGS_WITHOUT_WILL); // [MQTT-3.1.2-11] [MQTT-3.1.2-13]
    }
    if will_qos == 3 {
        return Err(CodecError::INVALID_QOS); // [MQTT-3.1.2-14]
    }
    let has_username = flags & FLAG_USERNAME != 0;
    let has_password = flags & FLAG_PASSWORD != 0;
    if has_password && !has_username && !v5 {
        return Err(CodecError::PASSWORD_WITHOUT_USERNAME); // [MQTT-3.1.2-22]
    }
    let clean_start = flags & FLAG_CLEAN_START != 0;
    let keep_alive = r.read_u16()?;
    let properties = read_properties(r, version, PropertyContext::Connect)?;
    check_authentication_pair(&properties)?; // MQTT 5.0 3.1.2.11.10
    let client_id = r.read_str()?; // [MQTT-3.1.3-4]
    check_client_id(version, client_id, clean_start)?;
    let will = if has_will {
        let properties = read_properties(r, version, PropertyContext::Will)?;
        let topic = check_topic_name(r.read_binary()?)?; // [MQTT-3.1.3-11]
        let payload = r.read_binary()?.to_vec();
        Some(Will { topic: topic.to_owned(), payload, qos: will_qos, retain: will_retain, properties })
    } else {
        None
    };
    let username = if has_username { Some(r.read_str()?.to_owned()) } else { None }; // [MQTT-3.1.3-12]
    let password = if has_password { Some(r.read_binary()?.to_vec()) } else { None };
    r.expect_end()?;
    Ok(Connect { version, clean_start, keep_alive, client_id: client_id.to_owned(), will, username, password, properties })
}

/// Client identifier rules that depend on the version: MQTT 3.1 requires 1..=23 characters
/// (only the empty case is enforced; longer ones are widely accepted), 3.1.1 allows an empty one
/// only with Clean Session [MQTT-3.1.3-7] [MQTT-3.1.3-8], v5 always (the server assigns one).
fn check_client_id(version: ProtocolVersion, client_id: &str, clean_start: bool) -> Result<(), CodecError> {
    let empty_allowed = match version {
        ProtocolVersion::V31 => false,
        ProtocolVersion::V311 => clean_start,
        ProtocolVersion::V5 => true,
    };
    if client_id.is_empty() && !empty_allowed {
        return Err(CodecError::CLIENT_ID_INVALID);
    }
    Ok(())
}

/// Reads a property block in v5, returns empty properties in v3.
pub(crate) fn read_properties(
    r: &mut Reader<'_>,
    version: ProtocolVersion,
    context: PropertyContext,
) -> Result<Properties, CodecError> {
    if !version.is_v5() {
        return Ok(Properties::default());
    }
    let (props, used) = decode_properties(r.peek_rest(), context)?;
    r.read_bytes(used)?;
    Ok(props)
}

/// Writes a property block in v5, nothing in v3 (properties cannot be expressed there).
pub(crate) fn write_properties(version: ProtocolVersion, props: &Properties, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if version.is_v5() {
        encode_properties(props, out)?;
    }
    Ok(())
}

/// Writes a CONNECT body for `connect.version`.
pub(crate) fn write_connect_body(c: &Connect, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let version = c.version;
    push_str(out, version.protocol_name())?;
    out.push(version.level());
    let mut flags = 0u8;
    if c.clean_start {
        flags |= FLAG_CLEAN_START;
    }
    if let Some(w) = &c.will {
        if w.qos > 2 {
            return Err(CodecError::INVALID_QOS); // [MQTT-3.1.2-14]
        }
        flags |= FLAG_WILL | (w.qos << 3);
        if w.retain {
            flags |= FLAG_WILL_RETAIN;
        }
    }
    if c.username.is_some() {
        flags |= FLAG_USERNAME;
    }
    if c.password.is_some() {
        if c.username.is_none() && !version.is_v5() {
            return Err(CodecError::PASSWORD_WITHOUT_USERNAME); // [MQTT-3.1.2-22]
        }
        flags |= FLAG_PASSWORD;
    }
    out.push(flags);
    push_u16(out, c.keep_alive);
    write_properties(version, &c.properties, out)?;
    push_str(out, &c.client_id)?;
    if let Some(w) = &c.will {
        write_properties(version, &w.properties, out)?;
        push_str(out, &w.topic)?;
        push_binary(out, &w.payload)?;
    }
    if let Some(u) = &c.username {
        push_str(out, u)?;
    }
    if let Some(p) = &c.password {
        push_binary(out, p)?;
    }
    Ok(())
}

/// Decodes a CONNACK body: acknowledge flags with reserved bits 7..1 zero [MQTT-3.2.2-1]
/// (MQTT 3.1 has no session present flag), return / reason code, v5 properties.
pub(crate) fn decode_connack_body(version: ProtocolVersion, r: &mut Reader<'_>) -> Result<Connack, CodecError> {
    let flags = r.read_u8()?;
    let reserved_mask = if version == ProtocolVersion::V31 { 0xFF } else { 0xFE };
    if flags & reserved_mask != 0 {
        return Err(CodecError::CONNACK_RESERVED_FLAGS);
    }
    let reason_code = r.read_u8()?;
    if !is_allowed_reason_code(PacketType::Connack, version, reason_code) {
        return Err(CodecError::INVALID_REASON_CODE);
    }
    // A v5 CONNACK always has a property length, but tolerate its absence as "no properties".
    let properties = if r.is_empty() {
        Properties::default()
    } else {
        read_properties(r, version, PropertyContext::Connack)?
    };
    r.expect_end()?;
    Ok(Connack { session_present: flags & 0x01 != 0, reason_code, properties })
}

pub(crate) fn write_connack_body(version: ProtocolVersion, c: &Connack, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if c.session_present && version == ProtocolVersion::V31 {
        return Err(CodecError::NOT_IN_VERSION);
    }
    out.push(u8::from(c.session_present));
    out.push(c.reason_code);
    write_properties(version, &c.properties, out)
}
