//! MQTT 5 properties (MQTT 5.0 section 2.2.2): the property table (identifier, type, packets that
//! may carry it, whether it may repeat), an allocation-free validating property reader, and
//! conversion between property blocks and `Properties`.

use super::error::CodecError;
use super::packet::Properties;
use super::reader::Reader;
use super::utf8::check_topic_name;
use super::varint::{push_varint, varint_len};
use super::writer::{push_binary, push_str, push_u16, push_u32};

/// Property identifiers (MQTT 5.0 table 2-4).
pub mod id {
    pub const PAYLOAD_FORMAT_INDICATOR: u8 = 0x01;
    pub const MESSAGE_EXPIRY_INTERVAL: u8 = 0x02;
    pub const CONTENT_TYPE: u8 = 0x03;
    pub const RESPONSE_TOPIC: u8 = 0x08;
    pub const CORRELATION_DATA: u8 = 0x09;
    pub const SUBSCRIPTION_IDENTIFIER: u8 = 0x0B;
    pub const SESSION_EXPIRY_INTERVAL: u8 = 0x11;
    pub const ASSIGNED_CLIENT_IDENTIFIER: u8 = 0x12;
    pub const SERVER_KEEP_ALIVE: u8 = 0x13;
    pub const AUTHENTICATION_METHOD: u8 = 0x15;
    pub const AUTHENTICATION_DATA: u8 = 0x16;
    pub const REQUEST_PROBLEM_INFORMATION: u8 = 0x17;
    pub const WILL_DELAY_INTERVAL: u8 = 0x18;
    pub const REQUEST_RESPONSE_INFORMATION: u8 = 0x19;
    pub const RESPONSE_INFORMATION: u8 = 0x1A;
    pub const SERVER_REFERENCE: u8 = 0x1C;
    pub const REASON_STRING: u8 = 0x1F;
    pub const RECEIVE_MAXIMUM: u8 = 0x21;
    pub const TOPIC_ALIAS_MAXIMUM: u8 = 0x22;
    pub const TOPIC_ALIAS: u8 = 0x23;
    pub const MAXIMUM_QOS: u8 = 0x24;
    pub const RETAIN_AVAILABLE: u8 = 0x25;
    pub const USER_PROPERTY: u8 = 0x26;
    pub const MAXIMUM_PACKET_SIZE: u8 = 0x27;
    pub const WILDCARD_SUBSCRIPTION_AVAILABLE: u8 = 0x28;
    pub const SUBSCRIPTION_IDENTIFIER_AVAILABLE: u8 = 0x29;
    pub const SHARED_SUBSCRIPTION_AVAILABLE: u8 = 0x2A;
}

/// Wire type of a property value (MQTT 5.0 section 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyKind {
    Byte,
    TwoByteInt,
    FourByteInt,
    Varint,
    Utf8String,
    BinaryData,
    Utf8StringPair,
}

/// Which packet (or the will of a CONNECT) a property block belongs to.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyContext {
    Connect = 0,
    Connack,
    Publish,
    Will,
    Puback,
    Pubrec,
    Pubrel,
    Pubcomp,
    Subscribe,
    Suback,
    Unsubscribe,
    Unsuback,
    Disconnect,
    Auth,
}

impl PropertyContext {
    #[inline]
    const fn bit(self) -> u16 {
        1 << self as u8
    }
}

const CONNECT: u16 = PropertyContext::Connect.bit();
const CONNACK: u16 = PropertyContext::Connack.bit();
const PUBLISH: u16 = PropertyContext::Publish.bit();
const WILL: u16 = PropertyContext::Will.bit();
const PUBACKS: u16 = PropertyContext::Puback.bit()
    | PropertyContext::Pubrec.bit()
    | PropertyContext::Pubrel.bit()
    | PropertyContext::Pubcomp.bit();
const SUBSCRIBE: u16 = PropertyContext::Subscribe.bit();
const SUBACK: u16 = PropertyContext::Suback.bit();
const UNSUBSCRIBE: u16 = PropertyContext::Unsubscribe.bit();
const UNSUBACK: u16 = PropertyContext::Unsuback.bit();
const DISCONNECT: u16 = PropertyContext::Disconnect.bit();
const AUTH: u16 = PropertyContext::Auth.bit();
const EVERYWHERE: u16 =
    CONNECT | CONNACK | PUBLISH | WILL | PUBACKS | SUBSCRIBE | SUBACK | UNSUBSCRIBE | UNSUBACK | DISCONNECT | AUTH;

/// One row of the property table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PropertySpec {
    pub id: u8,
    pub name: &'static str,
    pub kind: PropertyKind,
    allowed_in: u16,
    repeats_in: u16,
}

impl PropertySpec {
    /// True when the property may appear in `ctx`.
    #[inline]
    pub fn allowed_in(&self, ctx: PropertyContext) -> bool {
        self.allowed_in & ctx.bit() != 0
    }

    /// True when the property may appear more than once in `ctx`.
    #[inline]
    pub fn may_repeat_in(&self, ctx: PropertyContext) -> bool {
        self.repeats_in & ctx.bit() != 0
    }
}

const fn spec(id: u8, name: &'static str, kind: PropertyKind, allowed_in: u16, repeats_in: u16) -> PropertySpec {
    PropertySpec { id, name, kind, allowed_in, repeats_in }
}

use PropertyKind as K;

/// Every MQTT 5 property (MQTT 5.0 section 2.2.2.2, table 2-4). Only User Property may repeat
/// everywhere; Subscription Identifier repeats only in PUBLISH (server to client) [MQTT-3.3.4-4].
pub const PROPERTY_TABLE: [PropertySpec; 27] = [
    spec(id::PAYLOAD_FORMAT_INDICATOR, "Payload Format Indicator", K::Byte, PUBLISH | WILL, 0),
    spec(id::MESSAGE_EXPIRY_INTERVAL, "Message Expiry Interval", K::FourByteInt, PUBLISH | WILL, 0),
    spec(id::CONTENT_TYPE, "Content Type", K::Utf8String, PUBLISH | WILL, 0),
    spec(id::RESPONSE_TOPIC, "Response Topic", K::Utf8String, PUBLISH | WILL, 0),
    spec(id::CORRELATION_DATA, "Correlation Data", K::BinaryData, PUBLISH | WILL, 0),
    spec(id::SUBSCRIPTION_IDENTIFIER, "Subscription Identifier", K::Varint, PUBLISH | SUBSCRIBE, PUBLISH),
    spec(id::SESSION_EXPIRY_INTERVAL, "Session Expiry Interval", K::FourByteInt, CONNECT | CONNACK | DISCONNECT, 0),
    spec(id::ASSIGNED_CLIENT_IDENTIFIER, "Assigned Client Identifier", K::Utf8String, CONNACK, 0),
    spec(id::SERVER_KEEP_ALIVE, "Server Keep Alive", K::TwoByteInt, CONNACK, 0),
    spec(id::AUTHENTICATION_METHOD, "Authentication Method", K::Utf8String, CONNECT | CONNACK | AUTH, 0),
    spec(id::AUTHENTICATION_DATA, "Authentication Data", K::BinaryData, CONNECT | CONNACK | AUTH, 0),
    spec(id::REQUEST_PROBLEM_INFORMATION, "Request Problem Information", K::Byte, CONNECT, 0),
    spec(id::WILL_DELAY_INTERVAL, "Will Delay Interval", K::FourByteInt, WILL, 0),
    spec(id::REQUEST_RESPONSE_INFORMATION, "Request Response Information", K::Byte, CONNECT, 0),
    spec(id::RESPONSE_INFORMATION, "Response Information", K::Utf8String, CONNACK, 0),
    spec(id::SERVER_REFERENCE, "Server Reference", K::Utf8String, CONNACK | DISCONNECT, 0),
    spec(
        id::REASON_STRING,
        "Reason String",
        K::Utf8String,
        CONNACK | PUBACKS | SUBACK | UNSUBACK | DISCONNECT | AUTH,
        0,
    ),
    spec(id::RECEIVE_MAXIMUM, "Receive Maximum", K::TwoByteInt, CONNECT | CONNACK, 0),
    spec(id::TOPIC_ALIAS_MAXIMUM, "Topic Alias Maximum", K::TwoByteInt, CONNECT | CONNACK, 0),
    spec(id::TOPIC_ALIAS, "Topic Alias", K::TwoByteInt, PUBLISH, 0),
    spec(id::MAXIMUM_QOS, "Maximum QoS", K::Byte, CONNACK, 0),
    spec(id::RETAIN_AVAILABLE, "Retain Available", K::Byte, CONNACK, 0),
    spec(id::USER_PROPERTY, "User Property", K::Utf8StringPair, EVERYWHERE, EVERYWHERE),
    spec(id::MAXIMUM_PACKET_SIZE, "Maximum Packet Size", K::FourByteInt, CONNECT | CONNACK, 0),
    spec(id::WILDCARD_SUBSCRIPTION_AVAILABLE, "Wildcard Subscription Available", K::Byte, CONNACK, 0),
    spec(id::SUBSCRIPTION_IDENTIFIER_AVAILABLE, "Subscription Identifier Available", K::Byte, CONNACK, 0),
    spec(id::SHARED_SUBSCRIPTION_AVAILABLE, "Shared Subscription Available", K::Byte, CONNACK, 0),
];

/// Index into PROPERTY_TABLE by identifier; 0xFF for unknown identifiers.
const SPEC_INDEX: [u8; 64] = {
    let mut index = [0xFFu8; 64];
    let mut i = 0;
    while i < PROPERTY_TABLE.len() {
        index[PROPERTY_TABLE[i].id as usize] = i as u8;
        i += 1;
    }
    index
};

/// The table row of property `id`, None for identifiers MQTT 5 does not define.
#[inline]
pub fn property_spec(id: u32) -> Option<&'static PropertySpec> {
    match SPEC_INDEX.get(id as usize) {
        Some(&i) if i != 0xFF => Some(&PROPERTY_TABLE[i as usize]),
        _ => None,
    }
}

/// A decoded, validated property value borrowing from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyValue<'a> {
    Byte(u8),
    TwoByteInt(u16),
    FourByteInt(u32),
    Varint(u32),
    Utf8String(&'a str),
    BinaryData(&'a [u8]),
    Utf8StringPair(&'a str, &'a str),
}

/// One property as read from a block: its identifier, value, and its exact bytes (identifier
/// included) so it can be copied verbatim into another block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawProperty<'a> {
    pub id: u8,
    pub value: PropertyValue<'a>,
    pub bytes: &'a [u8],
}

/// Reads and validates the properties of one block (the bytes after the property length), one at
/// a time, without allocating: unknown identifiers, properties not allowed in the context,
/// duplicates and out-of-range values are rejected as they are met.
pub struct PropertyReader<'a> {
    reader: Reader<'a>,
    context: PropertyContext,
    seen: u64,
}

impl<'a> PropertyReader<'a> {
    /// `block` holds exactly the property bytes (without the property length).
    pub fn new(block: &'a [u8], context: PropertyContext) -> Self {
        PropertyReader { reader: Reader::new(block), context, seen: 0 }
    }

    /// The next property, or None at the end of the block.
    pub fn next_property(&mut self) -> Result<Option<RawProperty<'a>>, CodecError> {
        if self.reader.is_empty() {
            return Ok(None);
        }
        let start = self.reader.pos();
        let raw_id = self.reader.read_varint()?;
        let spec = property_spec(raw_id).ok_or(CodecError::UNKNOWN_PROPERTY)?;
        if !spec.allowed_in(self.context) {
            return Err(CodecError::PROPERTY_NOT_ALLOWED); // 0x81, MQTT 5.0 section 2.2.2.2
        }
        let bit = 1u64 << spec.id;
        if self.seen & bit != 0 && !spec.may_repeat_in(self.context) {
            return Err(CodecError::DUPLICATE_PROPERTY);
        }
        self.seen |= bit;
        let value = self.read_value(spec.kind)?;
        check_property_value(spec.id, value)?;
        let bytes = self.reader.bytes_since(start);
        Ok(Some(RawProperty { id: spec.id, value, bytes }))
    }

    fn read_value(&mut self, kind: PropertyKind) -> Result<PropertyValue<'a>, CodecError> {
        let r = &mut self.reader;
        Ok(match kind {
            K::Byte => PropertyValue::Byte(r.read_u8()?),
            K::TwoByteInt => PropertyValue::TwoByteInt(r.read_u16()?),
            K::FourByteInt => PropertyValue::FourByteInt(r.read_u32()?),
            K::Varint => PropertyValue::Varint(r.read_varint()?),
            K::Utf8String => PropertyValue::Utf8String(r.read_str()?),
            K::BinaryData => PropertyValue::BinaryData(r.read_binary()?),
            K::Utf8StringPair => PropertyValue::Utf8StringPair(r.read_str()?, r.read_str()?),
        })
    }
}

/// Range checks on property values (MQTT 5.0 section 3.x.2.x for each property).
fn check_property_value(id: u8, value: PropertyValue<'_>) -> Result<(), CodecError> {
    match (id, value) {
        // [MQTT-3.3.2-4]: 0 unspecified bytes, 1 UTF-8; any other value is a protocol error.
        (
            id::PAYLOAD_FORMAT_INDICATOR
            | id::REQUEST_PROBLEM_INFORMATION
            | id::REQUEST_RESPONSE_INFORMATION
            | id::MAXIMUM_QOS
            | id::RETAIN_AVAILABLE
            | id::WILDCARD_SUBSCRIPTION_AVAILABLE
            | id::SUBSCRIPTION_IDENTIFIER_AVAILABLE
            | id::SHARED_SUBSCRIPTION_AVAILABLE,
            PropertyValue::Byte(b),
        ) if b > 1 => Err(CodecError::INVALID_PROPERTY_VALUE),
        // Subscription Identifier 1..268435455; 0 is a protocol error (section 3.8.2.1.2).
        (id::SUBSCRIPTION_IDENTIFIER, PropertyValue::Varint(0)) => Err(CodecError::SUBSCRIPTION_ID_ZERO),
        // [MQTT-3.3.2-8]: a Topic Alias of 0 is not permitted.
        (id::TOPIC_ALIAS, PropertyValue::TwoByteInt(0)) => Err(CodecError::TOPIC_ALIAS_ZERO),
        // Receive Maximum 0 is a protocol error (section 3.1.2.11.3, 3.2.2.3.3).
        (id::RECEIVE_MAXIMUM, PropertyValue::TwoByteInt(0)) => Err(CodecError::RECEIVE_MAXIMUM_ZERO),
        // Maximum Packet Size 0 is a protocol error (section 3.1.2.11.4, 3.2.2.3.6).
        (id::MAXIMUM_PACKET_SIZE, PropertyValue::FourByteInt(0)) => Err(CodecError::MAXIMUM_PACKET_SIZE_ZERO),
        // [MQTT-3.3.2-14]: the Response Topic is a topic name, without wildcards.
        (id::RESPONSE_TOPIC, PropertyValue::Utf8String(s)) => check_topic_name(s.as_bytes()).map(|_| ()),
        _ => Ok(()),
    }
}

/// Authentication Data only makes sense with the Authentication Method that defines it: "It is a
/// Protocol Error to include Authentication Data if there is no Authentication Method" (CONNECT,
/// MQTT 5.0 3.1.2.11.10); AUTH must carry the method at all (3.15.2.2.2: "It is a Protocol Error
/// to omit the Authentication Method"). For CONNECT and AUTH property blocks.
pub(crate) fn check_authentication_pair(props: &Properties) -> Result<(), CodecError> {
    if props.authentication_data.is_some() && props.authentication_method.is_none() {
        return Err(CodecError::AUTH_DATA_WITHOUT_METHOD);
    }
    Ok(())
}

/// Reads a property length and returns the property block it announces and the bytes used by
/// length and block together. `buf` starts at the property length.
pub fn split_property_block(buf: &[u8]) -> Result<(&[u8], usize), CodecError> {
    let mut r = Reader::new(buf);
    let len = r.read_varint()? as usize;
    let block = r.read_bytes(len)?;
    Ok((block, r.pos()))
}

/// Decodes the property length and property block at the front of `buf` for `context`.
/// Returns the properties and the bytes used (property length included).
pub fn decode_properties(buf: &[u8], context: PropertyContext) -> Result<(Properties, usize), CodecError> {
    let (block, used) = split_property_block(buf)?;
    Ok((properties_from_block(block, context)?, used))
}

/// Decodes a property block (without its length) for `context`.
pub fn properties_from_block(block: &[u8], context: PropertyContext) -> Result<Properties, CodecError> {
    let mut props = Properties::default();
    let mut reader = PropertyReader::new(block, context);
    while let Some(p) = reader.next_property()? {
        store_property(&mut props, p);
    }
    Ok(props)
}

/// Copies one validated property into its field of `props`.
fn store_property(props: &mut Properties, p: RawProperty<'_>) {
    use PropertyValue as V;
    match (p.id, p.value) {
        (id::PAYLOAD_FORMAT_INDICATOR, V::Byte(v)) => props.payload_format_indicator = Some(v),
        (id::MESSAGE_EXPIRY_INTERVAL, V::FourByteInt(v)) => props.message_expiry_interval = Some(v),
        (id::CONTENT_TYPE, V::Utf8String(s)) => props.content_type = Some(s.to_owned()),
        (id::RESPONSE_TOPIC, V::Utf8String(s)) => props.response_topic = Some(s.to_owned()),
        (id::CORRELATION_DATA, V::BinaryData(b)) => props.correlation_data = Some(b.to_vec()),
        (id::SUBSCRIPTION_IDENTIFIER, V::Varint(v)) => props.subscription_identifiers.push(v),
        (id::SESSION_EXPIRY_INTERVAL, V::FourByteInt(v)) => props.session_expiry_interval = Some(v),
        (id::ASSIGNED_CLIENT_IDENTIFIER, V::Utf8String(s)) => props.assigned_client_identifier = Some(s.to_owned()),
        (id::SERVER_KEEP_ALIVE, V::TwoByteInt(v)) => props.server_keep_alive = Some(v),
        (id::AUTHENTICATION_METHOD, V::Utf8String(s)) => props.authentication_method = Some(s.to_owned()),
        (id::AUTHENTICATION_DATA, V::BinaryData(b)) => props.authentication_data = Some(b.to_vec()),
        (id::REQUEST_PROBLEM_INFORMATION, V::Byte(v)) => props.request_problem_information = Some(v),
        (id::WILL_DELAY_INTERVAL, V::FourByteInt(v)) => props.will_delay_interval = Some(v),
        (id::REQUEST_RESPONSE_INFORMATION, V::Byte(v)) => props.request_response_information = Some(v),
        (id::RESPONSE_INFORMATION, V::Utf8String(s)) => props.response_information = Some(s.to_owned()),
        (id::SERVER_REFERENCE, V::Utf8String(s)) => props.server_reference = Some(s.to_owned()),
        (id::REASON_STRING, V::Utf8String(s)) => props.reason_string = Some(s.to_owned()),
        (id::RECEIVE_MAXIMUM, V::TwoByteInt(v)) => props.receive_maximum = Some(v),
        (id::TOPIC_ALIAS_MAXIMUM, V::TwoByteInt(v)) => props.topic_alias_maximum = Some(v),
        (id::TOPIC_ALIAS, V::TwoByteInt(v)) => props.topic_alias = Some(v),
        (id::MAXIMUM_QOS, V::Byte(v)) => props.maximum_qos = Some(v),
        (id::RETAIN_AVAILABLE, V::Byte(v)) => props.retain_available = Some(v),
        (id::USER_PROPERTY, V::Utf8StringPair(k, v)) => props.user_properties.push((k.to_owned(), v.to_owned())),
        (id::MAXIMUM_PACKET_SIZE, V::FourByteInt(v)) => props.maximum_packet_size = Some(v),
        (id::WILDCARD_SUBSCRIPTION_AVAILABLE, V::Byte(v)) => props.wildcard_subscription_available = Some(v),
        (id::SUBSCRIPTION_IDENTIFIER_AVAILABLE, V::Byte(v)) => props.subscription_identifiers_available = Some(v),
        (id::SHARED_SUBSCRIPTION_AVAILABLE, V::Byte(v)) => props.shared_subscription_available = Some(v),
        // The reader pairs every identifier with its table kind, so no other combination occurs.
        _ => {}
    }
}

/// Bytes of the property block of `props` (without the property length).
pub fn properties_len(props: &Properties) -> usize {
    fn opt<T>(o: &Option<T>, size: impl Fn(&T) -> usize) -> usize {
        o.as_ref().map_or(0, |v| 1 + size(v))
    }
    let byte = |_: &u8| 1;
    let two = |_: &u16| 2;
    let four = |_: &u32| 4;
    let string = |s: &String| 2 + s.len();
    let binary = |b: &Vec<u8>| 2 + b.len();
    opt(&props.payload_format_indicator, byte)
        + opt(&props.message_expiry_interval, four)
        + opt(&props.content_type, string)
        + opt(&props.response_topic, string)
        + opt(&props.correlation_data, binary)
        + props.subscription_identifiers.iter().map(|&v| 1 + varint_len(v)).sum::<usize>()
        + opt(&props.session_expiry_interval, four)
        + opt(&props.assigned_client_identifier, string)
        + opt(&props.server_keep_alive, two)
        + opt(&props.authentication_method, string)
        + opt(&props.authentication_data, binary)
        + opt(&props.request_problem_information, byte)
        + opt(&props.will_delay_interval, four)
        + opt(&props.request_response_information, byte)
        + opt(&props.response_information, string)
        + opt(&props.server_reference, string)
        + opt(&props.reason_string, string)
        + opt(&props.receive_maximum, two)
        + opt(&props.topic_alias_maximum, two)
        + opt(&props.topic_alias, two)
        + opt(&props.maximum_qos, byte)
        + opt(&props.retain_available, byte)
        + props.user_properties.iter().map(|(k, v)| 5 + k.len() + v.len()).sum::<usize>()
        + opt(&props.maximum_packet_size, four)
        + opt(&props.wildcard_subscription_available, byte)
        + opt(&props.subscription_identifiers_available, byte)
        + opt(&props.shared_subscription_available, byte)
}

/// Bytes of the property length plus the property block of `props`.
pub fn properties_wire_len(props: &Properties) -> usize {
    let len = properties_len(props);
    varint_len(len as u32) + len
}

/// Appends the property length and the property block of `props`, properties in identifier order.
pub fn encode_properties(props: &Properties, out: &mut Vec<u8>) -> Result<(), CodecError> {
    push_varint(out, properties_len(props) as u32);
    write_properties_block(props, out)
}

/// Appends the property block of `props` without its length, properties in identifier order
/// (User Properties and Subscription Identifiers keep their order).
pub fn write_properties_block(props: &Properties, out: &mut Vec<u8>) -> Result<(), CodecError> {
    fn byte(out: &mut Vec<u8>, id: u8, v: Option<u8>) {
        if let Some(v) = v {
            out.extend_from_slice(&[id, v]);
        }
    }
    fn two(out: &mut Vec<u8>, id: u8, v: Option<u16>) {
        if let Some(v) = v {
            out.push(id);
            push_u16(out, v);
        }
    }
    fn four(out: &mut Vec<u8>, id: u8, v: Option<u32>) {
        if let Some(v) = v {
            out.push(id);
            push_u32(out, v);
        }
    }
    fn string(out: &mut Vec<u8>, id: u8, v: &Option<String>) -> Result<(), CodecError> {
        if let Some(v) = v {
            out.push(id);
            push_str(out, v)?;
        }
        Ok(())
    }
    fn binary(out: &mut Vec<u8>, id: u8, v: &Option<Vec<u8>>) -> Result<(), CodecError> {
        if let Some(v) = v {
            out.push(id);
            push_binary(out, v)?;
        }
        Ok(())
    }
    let p = props;
    byte(out, id::PAYLOAD_FORMAT_INDICATOR, p.payload_format_indicator);
    four(out, id::MESSAGE_EXPIRY_INTERVAL, p.message_expiry_interval);
    string(out, id::CONTENT_TYPE, &p.content_type)?;
    string(out, id::RESPONSE_TOPIC, &p.response_topic)?;
    binary(out, id::CORRELATION_DATA, &p.correlation_data)?;
    for &v in &p.subscription_identifiers {
        if v > super::varint::VARINT_MAX {
            return Err(CodecError::VARINT_TOO_LARGE);
        }
        out.push(id::SUBSCRIPTION_IDENTIFIER);
        push_varint(out, v);
    }
    four(out, id::SESSION_EXPIRY_INTERVAL, p.session_expiry_interval);
    string(out, id::ASSIGNED_CLIENT_IDENTIFIER, &p.assigned_client_identifier)?;
    two(out, id::SERVER_KEEP_ALIVE, p.server_keep_alive);
    string(out, id::AUTHENTICATION_METHOD, &p.authentication_method)?;
    binary(out, id::AUTHENTICATION_DATA, &p.authentication_data)?;
    byte(out, id::REQUEST_PROBLEM_INFORMATION, p.request_problem_information);
    four(out, id::WILL_DELAY_INTERVAL, p.will_delay_interval);
    byte(out, id::REQUEST_RESPONSE_INFORMATION, p.request_response_information);
    string(out, id::RESPONSE_INFORMATION, &p.response_information)?;
    string(out, id::SERVER_REFERENCE, &p.server_reference)?;
    string(out, id::REASON_STRING, &p.reason_string)?;
    two(out, id::RECEIVE_MAXIMUM, p.receive_maximum);
    two(out, id::TOPIC_ALIAS_MAXIMUM, p.topic_alias_maximum);
    two(out, id::TOPIC_ALIAS, p.topic_alias);
    byte(out, id::MAXIMUM_QOS, p.maximum_qos);
    byte(out, id::RETAIN_AVAILABLE, p.retain_available);
    for (k, v) in &p.user_properties {
        out.push(id::USER_PROPERTY);
        push_str(out, k)?;
        push_str(out, v)?;
    }
    four(out, id::MAXIMUM_PACKET_SIZE, p.maximum_packet_size);
    byte(out, id::WILDCARD_SUBSCRIPTION_AVAILABLE, p.wildcard_subscription_available);
    byte(out, id::SUBSCRIPTION_IDENTIFIER_AVAILABLE, p.subscription_identifiers_available);
    byte(out, id::SHARED_SUBSCRIPTION_AVAILABLE, p.shared_subscription_available);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_id() {
        for spec in &PROPERTY_TABLE {
            assert_eq!(property_spec(spec.id as u32), Some(spec));
        }
        assert_eq!(property_spec(0x00), None);
        assert_eq!(property_spec(0x04), None);
        assert_eq!(property_spec(0x2B), None);
        assert_eq!(property_spec(1000), None);
    }

    #[test]
    fn repeat_rules() {
        let sub_id = property_spec(id::SUBSCRIPTION_IDENTIFIER as u32).unwrap();
        assert!(sub_id.may_repeat_in(PropertyContext::Publish));
        assert!(!sub_id.may_repeat_in(PropertyContext::Subscribe));
        let user = property_spec(id::USER_PROPERTY as u32).unwrap();
        assert!(user.may_repeat_in(PropertyContext::Auth) && user.allowed_in(PropertyContext::Will));
    }

    #[test]
    fn encode_then_decode_every_publish_property() {
        let props = Properties {
            payload_format_indicator: Some(1),
            message_expiry_interval: Some(60),
            content_type: Some("text/plain".into()),
            response_topic: Some("r/t".into()),
            correlation_data: Some(vec![1, 2, 3]),
            subscription_identifiers: vec![1, 300, 268_435_455],
            topic_alias: Some(9),
            user_properties: vec![("a".into(), "1".into()), ("a".into(), "2".into())],
            ..Properties::default()
        };
        let mut out = Vec::new();
        encode_properties(&props, &mut out).unwrap();
        assert_eq!(out.len(), properties_wire_len(&props));
        let (back, used) = decode_properties(&out, PropertyContext::Publish).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(back, props);
    }

    #[test]
    fn rejections() {
        let ctx = PropertyContext::Publish;
        let cases: &[(&[u8], CodecError)] = &[
            (&[0x03, 0x23, 0x00, 0x00], CodecError::TOPIC_ALIAS_ZERO),
            (&[0x02, 0x0B, 0x00], CodecError::SUBSCRIPTION_ID_ZERO),
            (&[0x02, 0x01, 0x02], CodecError::INVALID_PROPERTY_VALUE),
            (&[0x04, 0x01, 0x00, 0x01, 0x01], CodecError::DUPLICATE_PROPERTY),
            (&[0x05, 0x11, 0, 0, 0, 1], CodecError::PROPERTY_NOT_ALLOWED),
            (&[0x01, 0x04], CodecError::UNKNOWN_PROPERTY),
            (&[0x03, 0x02, 0x00, 0x00], CodecError::TRUNCATED),
            (&[0x05], CodecError::TRUNCATED),
        ];
        for (bytes, err) in cases {
            assert_eq!(decode_properties(bytes, ctx), Err(*err), "{bytes:02x?}");
        }
        assert_eq!(CodecError::PROPERTY_NOT_ALLOWED.reason, crate::codec::reason::MALFORMED_PACKET);
        assert_eq!(CodecError::DUPLICATE_PROPERTY.reason, crate::codec::reason::PROTOCOL_ERROR);
        assert_eq!(
            decode_properties(&[0x04, 0x0B, 0x01, 0x0B, 0x02], PropertyContext::Subscribe),
            Err(CodecError::DUPLICATE_PROPERTY)
        );
        assert_eq!(
            decode_properties(&[0x03, 0x21, 0x00, 0x00], PropertyContext::Connect),
            Err(CodecError::RECEIVE_MAXIMUM_ZERO)
        );
    }
}
