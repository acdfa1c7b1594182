//! The codec's one error type, `CodecError`: a stable SCREAMING_SNAKE code, the MQTT 5 reason code
//! a server would send for it, and a human message. Every codec failure is one of the constants here.

use std::fmt;

/// MQTT 5 reason codes (MQTT 5.0 section 2.4) that codec errors map to.
pub mod reason {
    pub const SUCCESS: u8 = 0x00;
    pub const UNSPECIFIED_ERROR: u8 = 0x80;
    pub const MALFORMED_PACKET: u8 = 0x81;
    pub const PROTOCOL_ERROR: u8 = 0x82;
    pub const IMPLEMENTATION_SPECIFIC_ERROR: u8 = 0x83;
    pub const UNSUPPORTED_PROTOCOL_VERSION: u8 = 0x84;
    pub const CLIENT_IDENTIFIER_NOT_VALID: u8 = 0x85;
    pub const BAD_USER_NAME_OR_PASSWORD: u8 = 0x86;
    pub const NOT_AUTHORIZED: u8 = 0x87;
    pub const TOPIC_FILTER_INVALID: u8 = 0x8F;
    pub const TOPIC_NAME_INVALID: u8 = 0x90;
    pub const PACKET_IDENTIFIER_IN_USE: u8 = 0x91;
    pub const PACKET_IDENTIFIER_NOT_FOUND: u8 = 0x92;
    pub const RECEIVE_MAXIMUM_EXCEEDED: u8 = 0x93;
    pub const TOPIC_ALIAS_INVALID: u8 = 0x94;
    pub const PACKET_TOO_LARGE: u8 = 0x95;
    pub const PAYLOAD_FORMAT_INVALID: u8 = 0x99;
    pub const QOS_NOT_SUPPORTED: u8 = 0x9B;
    pub const SHARED_SUBSCRIPTIONS_NOT_SUPPORTED: u8 = 0x9E;
    pub const SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED: u8 = 0xA1;
    pub const WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED: u8 = 0xA2;
}

/// A codec failure. Compare on `code`: it is stable across releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecError {
    /// MQTT 5 reason code for a CONNACK / DISCONNECT answering this error.
    pub reason: u8,
    /// Stable machine-readable code, e.g. "MALFORMED_VARINT".
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: &'static str,
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (reason 0x{:02X}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for CodecError {}

macro_rules! codec_errors {
    ($($name:ident = $reason:ident, $message:literal;)*) => {
        impl CodecError {
            $(
                pub const $name: CodecError = CodecError {
                    reason: reason::$reason,
                    code: stringify!($name),
                    message: $message,
                };
            )*
        }
    };
}

codec_errors! {
    // Framing and fixed header.
    MALFORMED_VARINT = MALFORMED_PACKET, "variable byte integer longer than 4 bytes";
    REMAINING_LENGTH_TOO_LONG = MALFORMED_PACKET, "remaining length field longer than 4 bytes";
    RESERVED_PACKET_TYPE = MALFORMED_PACKET, "reserved packet type";
    RESERVED_FLAGS = MALFORMED_PACKET, "reserved fixed header flags have a wrong value";
    PACKET_TOO_LARGE = PACKET_TOO_LARGE, "packet exceeds the maximum packet size";
    TRUNCATED = MALFORMED_PACKET, "packet ends before its fields do";
    TRAILING_BYTES = MALFORMED_PACKET, "bytes left after the last field of the packet";
    UNEXPECTED_PACKET_TYPE = PROTOCOL_ERROR, "packet type not expected here";
    // Field values.
    INVALID_QOS = MALFORMED_PACKET, "QoS 3 is not a valid QoS";
    DUP_ON_QOS0 = MALFORMED_PACKET, "DUP flag set on a QoS 0 PUBLISH";
    // These parse: the value is well-formed, only not allowed here, which MQTT 5.0 section 4.13.1
    // calls a Protocol Error (0x82); Malformed (0x81) is for what cannot be parsed.
    PACKET_ID_ZERO = PROTOCOL_ERROR, "packet identifier 0 is not allowed"; // [MQTT-2.2.1-3]
    INVALID_REASON_CODE = PROTOCOL_ERROR, "reason code not allowed in this packet";
    // Strings and topics.
    INVALID_UTF8 = MALFORMED_PACKET, "string is not well-formed UTF-8";
    NULL_CHARACTER = MALFORMED_PACKET, "string contains U+0000";
    STRING_TOO_LONG = MALFORMED_PACKET, "string or binary field longer than 65535 bytes";
    EMPTY_TOPIC_NAME = TOPIC_NAME_INVALID, "topic name is empty";
    WILDCARD_IN_TOPIC_NAME = TOPIC_NAME_INVALID, "topic name contains a wildcard";
    TOPIC_ALIAS_MISSING = PROTOCOL_ERROR, "empty topic name without a topic alias";
    EMPTY_TOPIC_FILTER = TOPIC_FILTER_INVALID, "topic filter is empty";
    INVALID_WILDCARD = TOPIC_FILTER_INVALID, "wildcard does not occupy a whole level, or '#' is not last";
    INVALID_SHARED_SUBSCRIPTION = TOPIC_FILTER_INVALID, "shared subscription needs a group without '+', '#' and a filter";
    // CONNECT / CONNACK.
    BAD_PROTOCOL_NAME = MALFORMED_PACKET, "protocol name is neither MQTT nor MQIsdp";
    UNSUPPORTED_PROTOCOL_VERSION = UNSUPPORTED_PROTOCOL_VERSION, "protocol level not supported";
    CONNECT_RESERVED_FLAG = MALFORMED_PACKET, "CONNECT reserved flag is set";
    WILL_FLAGS_WITHOUT_WILL = MALFORMED_PACKET, "will QoS or will retain set without the will flag";
    PASSWORD_WITHOUT_USERNAME = MALFORMED_PACKET, "password flag set without the user name flag";
    CLIENT_ID_INVALID = CLIENT_IDENTIFIER_NOT_VALID, "client identifier not accepted";
    CONNACK_RESERVED_FLAGS = MALFORMED_PACKET, "CONNACK acknowledge flags reserved bits set";
    // SUBSCRIBE / UNSUBSCRIBE.
    EMPTY_SUBSCRIBE = PROTOCOL_ERROR, "SUBSCRIBE without any subscription";
    EMPTY_UNSUBSCRIBE = PROTOCOL_ERROR, "UNSUBSCRIBE without any topic filter";
    SUBSCRIPTION_OPTIONS_RESERVED = MALFORMED_PACKET, "subscription options reserved bits set";
    INVALID_RETAIN_HANDLING = PROTOCOL_ERROR, "retain handling 3 is not valid";
    NO_LOCAL_ON_SHARED = PROTOCOL_ERROR, "no local set on a shared subscription";
    EMPTY_ACK_REASON_CODES = PROTOCOL_ERROR, "SUBACK / UNSUBACK without any reason code";
    // Properties.
    UNKNOWN_PROPERTY = MALFORMED_PACKET, "unknown property identifier";
    // MQTT 5.0 2.2.2.2: "A Control Packet which contains an Identifier which is not valid for its
    // packet type ... is a Malformed Packet"; a repeated one is a Protocol Error, stated property by
    // property ("It is a Protocol Error to include the ... more than once").
    PROPERTY_NOT_ALLOWED = MALFORMED_PACKET, "property not allowed in this packet";
    DUPLICATE_PROPERTY = PROTOCOL_ERROR, "property appears more than once";
    AUTH_DATA_WITHOUT_METHOD = PROTOCOL_ERROR, "authentication data without an authentication method";
    INVALID_PROPERTY_VALUE = PROTOCOL_ERROR, "property has a value outside its range";
    SUBSCRIPTION_ID_ZERO = PROTOCOL_ERROR, "subscription identifier 0";
    SUBSCRIPTION_ID_FROM_CLIENT = PROTOCOL_ERROR, "subscription identifier in a PUBLISH from a client";
    TOPIC_ALIAS_ZERO = TOPIC_ALIAS_INVALID, "topic alias 0";
    RECEIVE_MAXIMUM_ZERO = PROTOCOL_ERROR, "receive maximum 0";
    MAXIMUM_PACKET_SIZE_ZERO = PROTOCOL_ERROR, "maximum packet size 0";
    PAYLOAD_NOT_UTF8 = PAYLOAD_FORMAT_INVALID, "payload format indicator says UTF-8 but the payload is not";
    // Encoding.
    BUFFER_TOO_SMALL = IMPLEMENTATION_SPECIFIC_ERROR, "output buffer too small";
    NOT_IN_VERSION = PROTOCOL_ERROR, "packet or field cannot be expressed in this protocol version";
    VARINT_TOO_LARGE = MALFORMED_PACKET, "value above 268435455 cannot be a variable byte integer";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_the_constant_name() {
        assert_eq!(CodecError::MALFORMED_VARINT.code, "MALFORMED_VARINT");
        assert_eq!(CodecError::TOPIC_ALIAS_ZERO.reason, reason::TOPIC_ALIAS_INVALID);
        assert!(CodecError::TRUNCATED.to_string().starts_with("TRUNCATED (reason 0x81)"));
    }
}
