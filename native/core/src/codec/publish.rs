//! PUBLISH, the hot path (MQTT 5.0 section 3.3): an allocation-free validating view over an inbound
//! frame, writing a frame into a caller-supplied buffer, in-place packet identifier / DUP patching
//! for fan-out, and rebuilding the v5 property block a broker forwards.

use super::error::CodecError;
use super::header::{parse_fixed_header, FixedHeader};
use super::packet::{Properties, ProtocolVersion, Publish};
use super::properties::{id, properties_from_block, split_property_block, PropertyContext, PropertyReader, PropertyValue};
use super::reader::Reader;
use super::subscribe::read_packet_id;
use super::utf8::{check_topic_name, MAX_STRING_LEN};
use super::varint::{varint_len, write_varint, VARINT_MAX};

const PUBLISH_TYPE: u8 = 3;
const FLAG_DUP: u8 = 0x08;
const FLAG_RETAIN: u8 = 0x01;

/// Offsets into one PUBLISH frame (relative to the frame's first byte) plus the properties the
/// broker needs on every message. Produced by `decode_publish_view`, which validated all of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublishView {
    pub qos: u8,
    pub dup: bool,
    pub retain: bool,
    pub topic_start: u32,
    /// 0 when a v5 publisher sent an empty topic with a Topic Alias: resolve `topic_alias`.
    pub topic_len: u32,
    /// 0 for QoS 0.
    pub packet_id: u16,
    /// Start of the property block, after the property length (v3: where it would be, length 0).
    pub props_start: u32,
    pub props_len: u32,
    pub payload_start: u32,
    pub payload_len: u32,
    /// 0 = absent.
    pub topic_alias: u16,
    pub message_expiry: Option<u32>,
    /// Payload Format Indicator, 0 when absent.
    pub payload_format: u8,
}

impl PublishView {
    /// The topic name bytes inside `frame` (already checked UTF-8).
    #[inline]
    pub fn topic<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        slice(frame, self.topic_start, self.topic_len)
    }

    /// The property block bytes inside `frame` (without the property length).
    #[inline]
    pub fn properties<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        slice(frame, self.props_start, self.props_len)
    }

    /// The application message inside `frame`.
    #[inline]
    pub fn payload<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        slice(frame, self.payload_start, self.payload_len)
    }
}

#[inline]
fn slice(frame: &[u8], start: u32, len: u32) -> &[u8] {
    &frame[start as usize..(start + len) as usize]
}

/// Checks that `frame` is exactly the packet its fixed header announces; the framer's word is
/// not trusted.
pub(crate) fn parse_whole_frame(frame: &[u8]) -> Result<FixedHeader, CodecError> {
    let h = parse_fixed_header(frame)?.ok_or(CodecError::TRUNCATED)?;
    match frame.len().cmp(&h.frame_len()) {
        std::cmp::Ordering::Less => Err(CodecError::TRUNCATED),
        std::cmp::Ordering::Greater => Err(CodecError::TRAILING_BYTES),
        std::cmp::Ordering::Equal => Ok(h),
    }
}

/// Validates a PUBLISH sent by a client and returns its view without allocating.
/// A Subscription Identifier from a client is a protocol error [MQTT-3.3.4-6].
pub fn decode_publish_view(version: ProtocolVersion, frame: &[u8]) -> Result<PublishView, CodecError> {
    decode_view(version, frame, true)
}

/// Like `decode_publish_view` for a PUBLISH sent by a server (a bridge or client side), where
/// Subscription Identifiers may appear and repeat [MQTT-3.3.4-3].
pub fn decode_publish_view_from_server(version: ProtocolVersion, frame: &[u8]) -> Result<PublishView, CodecError> {
    decode_view(version, frame, false)
}

fn decode_view(version: ProtocolVersion, frame: &[u8], from_client: bool) -> Result<PublishView, CodecError> {
    let h = parse_whole_frame(frame)?;
    if h.header >> 4 != PUBLISH_TYPE {
        return Err(CodecError::UNEXPECTED_PACKET_TYPE);
    }
    let (qos, dup, retain) = decode_publish_flags(h.header)?;
    let mut r = Reader::at(frame, h.header_len);
    let topic = r.read_binary()?;
    let topic_start = r.pos() - topic.len();
    let packet_id = if qos > 0 { read_packet_id(&mut r)? } else { 0 };
    let mut view = PublishView { qos, dup, retain, packet_id, ..PublishView::default() };
    view.props_start = r.pos() as u32;
    if version.is_v5() {
        let (block, used) = split_property_block(r.peek_rest())?;
        view.props_start = (r.pos() + used - block.len()) as u32;
        view.props_len = block.len() as u32;
        scan_publish_properties(block, from_client, &mut view)?;
        r.read_bytes(used)?;
    }
    check_publish_topic(version, topic, view.topic_alias)?;
    view.topic_start = topic_start as u32;
    view.topic_len = topic.len() as u32;
    view.payload_start = r.pos() as u32;
    view.payload_len = r.remaining() as u32;
    Ok(view)
}

/// Splits PUBLISH fixed header flags: QoS 3 is malformed [MQTT-3.3.1-4], DUP on QoS 0 is
/// malformed [MQTT-3.3.1-2].
#[inline]
fn decode_publish_flags(header: u8) -> Result<(u8, bool, bool), CodecError> {
    let qos = (header >> 1) & 0x03;
    if qos == 3 {
        return Err(CodecError::INVALID_QOS);
    }
    let dup = header & FLAG_DUP != 0;
    if dup && qos == 0 {
        return Err(CodecError::DUP_ON_QOS0);
    }
    Ok((qos, dup, header & FLAG_RETAIN != 0))
}

/// Validates a PUBLISH property block and picks out the properties the broker acts on.
fn scan_publish_properties(block: &[u8], from_client: bool, view: &mut PublishView) -> Result<(), CodecError> {
    let mut reader = PropertyReader::new(block, PropertyContext::Publish);
    while let Some(p) = reader.next_property()? {
        match (p.id, p.value) {
            (id::TOPIC_ALIAS, PropertyValue::TwoByteInt(v)) => view.topic_alias = v,
            (id::MESSAGE_EXPIRY_INTERVAL, PropertyValue::FourByteInt(v)) => view.message_expiry = Some(v),
            (id::PAYLOAD_FORMAT_INDICATOR, PropertyValue::Byte(v)) => view.payload_format = v,
            (id::SUBSCRIPTION_IDENTIFIER, _) if from_client => {
                return Err(CodecError::SUBSCRIPTION_ID_FROM_CLIENT); // [MQTT-3.3.4-6]
            }
            _ => {}
        }
    }
    Ok(())
}

/// Topic name rules for PUBLISH: a valid topic name without wildcards [MQTT-3.3.2-1]
/// [MQTT-3.3.2-2]; empty only in v5 together with a Topic Alias (section 3.3.2.3.4).
#[inline]
fn check_publish_topic(version: ProtocolVersion, topic: &[u8], topic_alias: u16) -> Result<(), CodecError> {
    if topic.is_empty() && version.is_v5() {
        return if topic_alias != 0 { Ok(()) } else { Err(CodecError::TOPIC_ALIAS_MISSING) };
    }
    check_topic_name(topic).map(|_| ())
}

/// Decodes a whole PUBLISH frame into an owned `Publish` (Subscription Identifiers accepted).
pub(crate) fn decode_publish(version: ProtocolVersion, frame: &[u8]) -> Result<Publish, CodecError> {
    let view = decode_publish_view_from_server(version, frame)?;
    let properties = if version.is_v5() {
        properties_from_block(view.properties(frame), PropertyContext::Publish)?
    } else {
        Properties::default()
    };
    let topic = std::str::from_utf8(view.topic(frame)).map_err(|_| CodecError::INVALID_UTF8)?;
    Ok(Publish {
        dup: view.dup,
        qos: view.qos,
        retain: view.retain,
        topic: topic.to_owned(),
        packet_id: view.packet_id,
        payload: view.payload(frame).to_vec(),
        properties,
    })
}

/// Remaining length of a PUBLISH.
#[inline]
fn publish_body_len(version: ProtocolVersion, topic_len: usize, props_len: usize, payload_len: usize, qos: u8) -> usize {
    let props = if version.is_v5() { varint_len(props_len as u32) + props_len } else { 0 };
    2 + topic_len + if qos > 0 { 2 } else { 0 } + props + payload_len
}

/// Total bytes of a PUBLISH frame, fixed header included. `props_len` counts the property block
/// without its length (ignored in v3).
#[inline]
pub fn publish_frame_len(version: ProtocolVersion, topic_len: usize, props_len: usize, payload_len: usize, qos: u8) -> usize {
    let body = publish_body_len(version, topic_len, props_len, payload_len, qos);
    1 + varint_len(body as u32) + body
}

/// What `write_publish` wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishWritten {
    /// Frame bytes written at the front of `out`.
    pub len: usize,
    /// Offset of the packet identifier for `patch_packet_id`; 0 when QoS 0.
    pub packet_id_offset: usize,
}

/// Writes a PUBLISH frame at the front of `out`. `props` is the property block without its
/// length (see `rewrite_publish_properties`) and must be empty in v3. `packet_id` may be a
/// placeholder patched later with `patch_packet_id`. The topic is not re-validated.
#[allow(clippy::too_many_arguments)]
pub fn write_publish(
    version: ProtocolVersion,
    out: &mut [u8],
    qos: u8,
    dup: bool,
    retain: bool,
    topic: &[u8],
    packet_id: u16,
    props: &[u8],
    payload: &[u8],
) -> Result<PublishWritten, CodecError> {
    if qos > 2 {
        return Err(CodecError::INVALID_QOS); // [MQTT-3.3.1-4]
    }
    if dup && qos == 0 {
        return Err(CodecError::DUP_ON_QOS0); // [MQTT-3.3.1-2]
    }
    if topic.len() > MAX_STRING_LEN {
        return Err(CodecError::STRING_TOO_LONG);
    }
    if !version.is_v5() && !props.is_empty() {
        return Err(CodecError::NOT_IN_VERSION);
    }
    let body = publish_body_len(version, topic.len(), props.len(), payload.len(), qos);
    if body > VARINT_MAX as usize {
        return Err(CodecError::PACKET_TOO_LARGE);
    }
    let total = 1 + varint_len(body as u32) + body;
    if out.len() < total {
        return Err(CodecError::BUFFER_TOO_SMALL);
    }
    out[0] = (PUBLISH_TYPE << 4) | (u8::from(dup) * FLAG_DUP) | (qos << 1) | (u8::from(retain) * FLAG_RETAIN);
    let mut pos = 1 + write_varint(&mut out[1..], body as u32);
    pos = put(out, pos, &(topic.len() as u16).to_be_bytes());
    pos = put(out, pos, topic);
    let mut packet_id_offset = 0;
    if qos > 0 {
        packet_id_offset = pos;
        pos = put(out, pos, &packet_id.to_be_bytes());
    }
    if version.is_v5() {
        pos += write_varint(&mut out[pos..], props.len() as u32);
        pos = put(out, pos, props);
    }
    pos = put(out, pos, payload);
    debug_assert_eq!(pos, total);
    Ok(PublishWritten { len: total, packet_id_offset })
}

#[inline]
fn put(out: &mut [u8], pos: usize, bytes: &[u8]) -> usize {
    out[pos..pos + bytes.len()].copy_from_slice(bytes);
    pos + bytes.len()
}

/// Appends a PUBLISH frame for an owned `Publish` to `out`.
pub(crate) fn write_publish_packet(version: ProtocolVersion, p: &Publish, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let mut props = Vec::new();
    if version.is_v5() {
        super::properties::write_properties_block(&p.properties, &mut props)?;
    }
    let total = publish_frame_len(version, p.topic.len(), props.len(), p.payload.len(), p.qos);
    let start = out.len();
    out.resize(start + total, 0);
    let written = write_publish(
        version,
        &mut out[start..],
        p.qos,
        p.dup,
        p.retain,
        p.topic.as_bytes(),
        p.packet_id,
        &props,
        &p.payload,
    );
    if let Err(e) = written {
        out.truncate(start);
        return Err(e);
    }
    Ok(())
}

/// Overwrites the packet identifier at `offset` (from `PublishWritten::packet_id_offset`).
#[inline]
pub fn patch_packet_id(frame: &mut [u8], offset: usize, id: u16) {
    frame[offset..offset + 2].copy_from_slice(&id.to_be_bytes());
}

/// Sets the DUP flag of a QoS 1/2 PUBLISH frame for redelivery [MQTT-3.3.1-1].
#[inline]
pub fn set_dup(frame: &mut [u8]) {
    frame[0] |= FLAG_DUP;
}

/// Builds the property block (without its length) a broker forwards: every inbound property
/// except Topic Alias, Message Expiry Interval and Subscription Identifier copied verbatim (order
/// of User Properties kept [MQTT-3.3.2-17]), then the given remaining expiry [MQTT-3.3.2-6], the
/// outbound Topic Alias and the subscriber's Subscription Identifiers [MQTT-3.3.4-3].
/// `inbound_props` is a PUBLISH property block without its length, e.g. `view.properties(frame)`.
pub fn rewrite_publish_properties(
    inbound_props: &[u8],
    message_expiry: Option<u32>,
    topic_alias: Option<u16>,
    subscription_ids: &[u32],
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let mut reader = PropertyReader::new(inbound_props, PropertyContext::Publish);
    while let Some(p) = reader.next_property()? {
        if !matches!(p.id, id::TOPIC_ALIAS | id::MESSAGE_EXPIRY_INTERVAL | id::SUBSCRIPTION_IDENTIFIER) {
            out.extend_from_slice(p.bytes);
        }
    }
    if let Some(v) = message_expiry {
        out.push(id::MESSAGE_EXPIRY_INTERVAL);
        out.extend_from_slice(&v.to_be_bytes());
    }
    if let Some(v) = topic_alias {
        if v == 0 {
            return Err(CodecError::TOPIC_ALIAS_ZERO); // [MQTT-3.3.2-8]
        }
        out.push(id::TOPIC_ALIAS);
        out.extend_from_slice(&v.to_be_bytes());
    }
    for &v in subscription_ids {
        match v {
            0 => return Err(CodecError::SUBSCRIPTION_ID_ZERO),
            v if v > VARINT_MAX => return Err(CodecError::VARINT_TOO_LARGE),
            _ => {}
        }
        out.push(id::SUBSCRIPTION_IDENTIFIER);
        super::varint::push_varint(out, v);
    }
    Ok(())
}
