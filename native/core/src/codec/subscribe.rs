//! SUBSCRIBE, SUBACK, UNSUBSCRIBE and UNSUBACK bodies (MQTT 5.0 sections 3.8-3.11).

use super::connect::{read_properties, write_properties};
use super::error::CodecError;
use super::packet::{PacketType, ProtocolVersion, Suback, Subscribe, Subscription, Unsuback, Unsubscribe};
use super::properties::PropertyContext;
use super::reader::Reader;
use super::reason_codes::is_allowed_reason_code;
use super::utf8::{check_topic_filter, is_shared_filter};
use super::writer::{push_str, push_u16};

const OPT_QOS: u8 = 0x03;
const OPT_NO_LOCAL: u8 = 0x04;
const OPT_RETAIN_AS_PUBLISHED: u8 = 0x08;
const OPT_RETAIN_HANDLING_SHIFT: u8 = 4;

/// Reads a packet identifier that must not be 0 [MQTT-2.2.1-3].
pub(crate) fn read_packet_id(r: &mut Reader<'_>) -> Result<u16, CodecError> {
    match r.read_u16()? {
        0 => Err(CodecError::PACKET_ID_ZERO),
        id => Ok(id),
    }
}

pub(crate) fn decode_subscribe_body(version: ProtocolVersion, r: &mut Reader<'_>) -> Result<Subscribe, CodecError> {
    let packet_id = read_packet_id(r)?;
    let properties = read_properties(r, version, PropertyContext::Subscribe)?;
    let mut subscriptions = Vec::new();
    while !r.is_empty() {
        let filter = check_topic_filter(r.read_binary()?)?;
        let options = r.read_u8()?;
        subscriptions.push(decode_subscription_options(version, filter, options)?);
    }
    if subscriptions.is_empty() {
        return Err(CodecError::EMPTY_SUBSCRIBE); // [MQTT-3.8.3-3]
    }
    Ok(Subscribe { packet_id, subscriptions, properties })
}

/// Splits a subscription options byte. v3: only the QoS bits may be set [MQTT-3.8.3-4 (3.1.1)];
/// v5: bits 6 and 7 are reserved [MQTT-3.8.3-5], Retain Handling 3 is a protocol error, No Local
/// on a shared subscription is a protocol error [MQTT-3.8.3-4]. QoS 3 is malformed [MQTT-3-8.3-4].
fn decode_subscription_options(version: ProtocolVersion, filter: &str, options: u8) -> Result<Subscription, CodecError> {
    let reserved = if version.is_v5() { 0xC0 } else { 0xFC };
    if options & reserved != 0 {
        return Err(CodecError::SUBSCRIPTION_OPTIONS_RESERVED);
    }
    let qos = options & OPT_QOS;
    if qos == 3 {
        return Err(CodecError::INVALID_QOS);
    }
    let retain_handling = options >> OPT_RETAIN_HANDLING_SHIFT;
    if retain_handling == 3 {
        return Err(CodecError::INVALID_RETAIN_HANDLING);
    }
    let no_local = options & OPT_NO_LOCAL != 0;
    if no_local && is_shared_filter(filter) {
        return Err(CodecError::NO_LOCAL_ON_SHARED);
    }
    Ok(Subscription {
        filter: filter.to_owned(),
        qos,
        no_local,
        retain_as_published: options & OPT_RETAIN_AS_PUBLISHED != 0,
        retain_handling,
    })
}

/// The options byte of `s`; v3 can only express the QoS.
fn encode_subscription_options(version: ProtocolVersion, s: &Subscription) -> Result<u8, CodecError> {
    if s.qos > 2 {
        return Err(CodecError::INVALID_QOS);
    }
    if s.retain_handling > 2 {
        return Err(CodecError::INVALID_RETAIN_HANDLING);
    }
    let extras = (u8::from(s.no_local) * OPT_NO_LOCAL)
        | (u8::from(s.retain_as_published) * OPT_RETAIN_AS_PUBLISHED)
        | (s.retain_handling << OPT_RETAIN_HANDLING_SHIFT);
    if !version.is_v5() && extras != 0 {
        return Err(CodecError::NOT_IN_VERSION);
    }
    Ok(s.qos | extras)
}

pub(crate) fn write_subscribe_body(version: ProtocolVersion, s: &Subscribe, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if s.subscriptions.is_empty() {
        return Err(CodecError::EMPTY_SUBSCRIBE); // [MQTT-3.8.3-3]
    }
    push_u16(out, s.packet_id);
    write_properties(version, &s.properties, out)?;
    for sub in &s.subscriptions {
        push_str(out, &sub.filter)?;
        out.push(encode_subscription_options(version, sub)?);
    }
    Ok(())
}

/// Reads the reason codes that fill the rest of a SUBACK / UNSUBACK.
fn read_reason_codes(version: ProtocolVersion, packet: PacketType, r: &mut Reader<'_>) -> Result<Vec<u8>, CodecError> {
    let codes = r.read_rest();
    if codes.is_empty() {
        return Err(CodecError::EMPTY_ACK_REASON_CODES);
    }
    if codes.iter().any(|&c| !is_allowed_reason_code(packet, version, c)) {
        return Err(CodecError::INVALID_REASON_CODE);
    }
    Ok(codes.to_vec())
}

pub(crate) fn decode_suback_body(version: ProtocolVersion, r: &mut Reader<'_>) -> Result<Suback, CodecError> {
    let packet_id = read_packet_id(r)?;
    let properties = read_properties(r, version, PropertyContext::Suback)?;
    let reason_codes = read_reason_codes(version, PacketType::Suback, r)?;
    Ok(Suback { packet_id, reason_codes, properties })
}

pub(crate) fn write_suback_body(version: ProtocolVersion, s: &Suback, out: &mut Vec<u8>) -> Result<(), CodecError> {
    push_u16(out, s.packet_id);
    write_properties(version, &s.properties, out)?;
    out.extend_from_slice(&s.reason_codes);
    Ok(())
}

pub(crate) fn decode_unsubscribe_body(version: ProtocolVersion, r: &mut Reader<'_>) -> Result<Unsubscribe, CodecError> {
    let packet_id = read_packet_id(r)?;
    let properties = read_properties(r, version, PropertyContext::Unsubscribe)?;
    let mut filters = Vec::new();
    while !r.is_empty() {
        filters.push(check_topic_filter(r.read_binary()?)?.to_owned());
    }
    if filters.is_empty() {
        return Err(CodecError::EMPTY_UNSUBSCRIBE); // [MQTT-3.10.3-2]
    }
    Ok(Unsubscribe { packet_id, filters, properties })
}

pub(crate) fn write_unsubscribe_body(version: ProtocolVersion, u: &Unsubscribe, out: &mut Vec<u8>) -> Result<(), CodecError> {
    if u.filters.is_empty() {
        return Err(CodecError::EMPTY_UNSUBSCRIBE); // [MQTT-3.10.3-2]
    }
    push_u16(out, u.packet_id);
    write_properties(version, &u.properties, out)?;
    for f in &u.filters {
        push_str(out, f)?;
    }
    Ok(())
}

/// v3 UNSUBACK is only a packet identifier; v5 adds properties and one reason code per filter.
pub(crate) fn decode_unsuback_body(version: ProtocolVersion, r: &mut Reader<'_>) -> Result<Unsuback, CodecError> {
    let packet_id = read_packet_id(r)?;
    if !version.is_v5() {
        r.expect_end()?;
        return Ok(Unsuback { packet_id, reason_codes: Vec::new(), properties: Default::default() });
    }
    let properties = read_properties(r, version, PropertyContext::Unsuback)?;
    let reason_codes = read_reason_codes(version, PacketType::Unsuback, r)?;
    Ok(Unsuback { packet_id, reason_codes, properties })
}

pub(crate) fn write_unsuback_body(version: ProtocolVersion, u: &Unsuback, out: &mut Vec<u8>) -> Result<(), CodecError> {
    push_u16(out, u.packet_id);
    if version.is_v5() {
        write_properties(version, &u.properties, out)?;
        out.extend_from_slice(&u.reason_codes);
    }
    Ok(())
}
