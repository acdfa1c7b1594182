//! Malformed-input table: each row is bytes that must be rejected with a given code and MQTT 5
//! reason code, covering fixed header, PUBLISH, CONNECT, SUBSCRIBE, properties and acks.

use spindle_core::codec::*;
use ProtocolVersion::{V31, V311, V5};

#[derive(Clone, Copy)]
enum Via {
    /// `decode`
    Decode,
    /// `decode_from_client`
    FromClient,
    /// `decode_publish_view`
    View,
}

struct Row {
    name: &'static str,
    version: ProtocolVersion,
    via: Via,
    bytes: &'static [u8],
    code: &'static str,
    reason: u8,
}

const fn row(name: &'static str, version: ProtocolVersion, bytes: &'static [u8], code: &'static str, reason: u8) -> Row {
    Row { name, version, via: Via::Decode, bytes, code, reason }
}

const MALFORMED: u8 = reason::MALFORMED_PACKET;
const PROTOCOL: u8 = reason::PROTOCOL_ERROR;

const ROWS: &[Row] = &[
    // Fixed header.
    row("packet type 0", V311, &[0x00, 0x00], "RESERVED_PACKET_TYPE", MALFORMED),
    row("remaining length 5 bytes", V311, &[0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], "REMAINING_LENGTH_TOO_LONG", MALFORMED),
    row("frame shorter than remaining length", V311, &[0x40, 0x02, 0x00], "TRUNCATED", MALFORMED),
    row("frame longer than remaining length", V311, &[0xC0, 0x00, 0x00], "TRAILING_BYTES", MALFORMED),
    row("PUBACK flags 1 [MQTT-2.1.3-1]", V311, &[0x41, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("PUBREL flags 0 [MQTT-3.6.1-1]", V311, &[0x60, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("SUBSCRIBE flags 0 [MQTT-3.8.1-1]", V311, &[0x80, 0x06, 0x00, 0x01, 0x00, 0x01, b'a', 0x00], "RESERVED_FLAGS", MALFORMED),
    row("UNSUBSCRIBE flags 0 [MQTT-3.10.1-1]", V311, &[0xA0, 0x05, 0x00, 0x01, 0x00, 0x01, b'a'], "RESERVED_FLAGS", MALFORMED),
    row("PINGREQ flags 1", V5, &[0xC1, 0x00], "RESERVED_FLAGS", MALFORMED),
    row("PINGREQ with a body", V311, &[0xC0, 0x01, 0x00], "TRAILING_BYTES", MALFORMED),
    row("AUTH in v3.1.1", V311, &[0xF0, 0x00], "RESERVED_PACKET_TYPE", MALFORMED),
    // PUBLISH.
    row("PUBLISH QoS 3 [MQTT-3.3.1-4]", V311, &[0x36, 0x05, 0x00, 0x01, b't', 0x00, 0x01], "INVALID_QOS", MALFORMED),
    row("PUBLISH DUP on QoS 0 [MQTT-3.3.1-2]", V311, &[0x38, 0x03, 0x00, 0x01, b't'], "DUP_ON_QOS0", MALFORMED),
    row("PUBLISH topic with '+' [MQTT-3.3.2-2]", V311, &[0x30, 0x03, 0x00, 0x01, b'+'], "WILDCARD_IN_TOPIC_NAME", 0x90),
    row("PUBLISH topic with '#'", V5, &[0x30, 0x05, 0x00, 0x02, b'a', b'#', 0x00], "WILDCARD_IN_TOPIC_NAME", 0x90),
    row("PUBLISH empty topic in v3 [MQTT-4.7.3-1]", V31, &[0x30, 0x02, 0x00, 0x00], "EMPTY_TOPIC_NAME", 0x90),
    row("PUBLISH empty topic without alias in v5", V5, &[0x30, 0x03, 0x00, 0x00, 0x00], "TOPIC_ALIAS_MISSING", PROTOCOL),
    row("PUBLISH QoS 1 packet id 0 [MQTT-2.2.1-3]", V311, &[0x32, 0x05, 0x00, 0x01, b't', 0x00, 0x00], "PACKET_ID_ZERO", PROTOCOL),
    row("PUBLISH topic not UTF-8 [MQTT-1.5.4-1]", V311, &[0x30, 0x04, 0x00, 0x02, 0xC3, 0x28], "INVALID_UTF8", MALFORMED),
    row("PUBLISH topic with U+0000 [MQTT-1.5.4-2]", V311, &[0x30, 0x04, 0x00, 0x02, b'a', 0x00], "NULL_CHARACTER", MALFORMED),
    row("PUBLISH topic alias 0 [MQTT-3.3.2-8]", V5, &[0x30, 0x07, 0x00, 0x01, b't', 0x03, 0x23, 0x00, 0x00], "TOPIC_ALIAS_ZERO", 0x94),
    row(
        "PUBLISH message expiry twice",
        V5,
        &[0x30, 0x0E, 0x00, 0x01, b't', 0x0A, 0x02, 0, 0, 0, 1, 0x02, 0, 0, 0, 2],
        "DUPLICATE_PROPERTY",
        PROTOCOL,
    ),
    row(
        "PUBLISH with session expiry (MQTT 5.0 2.2.2.2)",
        V5,
        &[0x30, 0x09, 0x00, 0x01, b't', 0x05, 0x11, 0, 0, 0, 1],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row("PUBLISH unknown property 0x04", V5, &[0x30, 0x06, 0x00, 0x01, b't', 0x02, 0x04, 0x00], "UNKNOWN_PROPERTY", MALFORMED),
    row("PUBLISH property id 128 (2-byte varint)", V5, &[0x30, 0x07, 0x00, 0x01, b't', 0x03, 0x80, 0x01, 0x00], "UNKNOWN_PROPERTY", MALFORMED),
    row("PUBLISH payload format 2", V5, &[0x30, 0x06, 0x00, 0x01, b't', 0x02, 0x01, 0x02], "INVALID_PROPERTY_VALUE", PROTOCOL),
    row("PUBLISH subscription id 0", V5, &[0x30, 0x06, 0x00, 0x01, b't', 0x02, 0x0B, 0x00], "SUBSCRIPTION_ID_ZERO", PROTOCOL),
    row("PUBLISH property length past the frame", V5, &[0x30, 0x05, 0x00, 0x01, b't', 0x09, 0x01], "TRUNCATED", MALFORMED),
    row(
        "PUBLISH response topic with wildcard [MQTT-3.3.2-14]",
        V5,
        &[0x30, 0x08, 0x00, 0x01, b't', 0x04, 0x08, 0x00, 0x01, b'#'],
        "WILDCARD_IN_TOPIC_NAME",
        0x90,
    ),
    row(
        "PUBLISH user property key not UTF-8",
        V5,
        &[0x30, 0x0A, 0x00, 0x01, b't', 0x06, 0x26, 0x00, 0x01, 0xFF, 0x00, 0x00],
        "INVALID_UTF8",
        MALFORMED,
    ),
    Row {
        name: "PUBLISH subscription id from a client, view [MQTT-3.3.4-6]",
        version: V5,
        via: Via::View,
        bytes: &[0x30, 0x06, 0x00, 0x01, b't', 0x02, 0x0B, 0x01],
        code: "SUBSCRIPTION_ID_FROM_CLIENT",
        reason: PROTOCOL,
    },
    Row {
        name: "PUBLISH subscription id from a client, decode_from_client",
        version: V5,
        via: Via::FromClient,
        bytes: &[0x30, 0x06, 0x00, 0x01, b't', 0x02, 0x0B, 0x01],
        code: "SUBSCRIPTION_ID_FROM_CLIENT",
        reason: PROTOCOL,
    },
    Row {
        name: "SUBACK v5 sent by a client",
        version: V5,
        via: Via::FromClient,
        bytes: &[0x90, 0x04, 0x00, 0x01, 0x00, 0x00],
        code: "UNEXPECTED_PACKET_TYPE",
        reason: PROTOCOL,
    },
    Row {
        name: "PINGRESP v5 sent by a client",
        version: V5,
        via: Via::FromClient,
        bytes: &[0xD0, 0x00],
        code: "UNEXPECTED_PACKET_TYPE",
        reason: PROTOCOL,
    },
    Row {
        name: "CONNACK sent by a client",
        version: V311,
        via: Via::FromClient,
        bytes: &[0x20, 0x02, 0x00, 0x00],
        code: "UNEXPECTED_PACKET_TYPE",
        reason: PROTOCOL,
    },
    // CONNECT.
    row(
        "CONNECT protocol name MQTX",
        V311,
        &[0x10, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'X', 0x04, 0x02, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "BAD_PROTOCOL_NAME",
        MALFORMED,
    ),
    row(
        "CONNECT level 6",
        V311,
        &[0x10, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x06, 0x02, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "UNSUPPORTED_PROTOCOL_VERSION",
        0x84,
    ),
    row(
        "CONNECT MQIsdp with level 4",
        V311,
        &[0x10, 0x0F, 0x00, 0x06, b'M', b'Q', b'I', b's', b'd', b'p', 0x04, 0x02, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "UNSUPPORTED_PROTOCOL_VERSION",
        0x84,
    ),
    row(
        "CONNECT fixed header flags",
        V311,
        &[0x11, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x02, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "RESERVED_FLAGS",
        MALFORMED,
    ),
    row(
        "CONNECT reserved flag [MQTT-3.1.2-3]",
        V311,
        &[0x10, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x03, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "CONNECT_RESERVED_FLAG",
        MALFORMED,
    ),
    row(
        "CONNECT will QoS without will [MQTT-3.1.2-11]",
        V311,
        &[0x10, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x0A, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "WILL_FLAGS_WITHOUT_WILL",
        MALFORMED,
    ),
    row(
        "CONNECT will retain without will [MQTT-3.1.2-13]",
        V5,
        &[0x10, 0x0E, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, 0x22, 0x00, 0x3C, 0x00, 0x00, 0x01, b'x'],
        "WILL_FLAGS_WITHOUT_WILL",
        MALFORMED,
    ),
    row(
        "CONNECT will QoS 3 [MQTT-3.1.2-14]",
        V311,
        &[0x10, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x1E, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "INVALID_QOS",
        MALFORMED,
    ),
    row(
        "CONNECT password without username in 3.1.1 [MQTT-3.1.2-22]",
        V311,
        &[0x10, 0x0D, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x42, 0x00, 0x3C, 0x00, 0x01, b'x'],
        "PASSWORD_WITHOUT_USERNAME",
        MALFORMED,
    ),
    row(
        "CONNECT trailing byte",
        V311,
        &[0x10, 0x0E, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x02, 0x00, 0x3C, 0x00, 0x01, b'x', 0x00],
        "TRAILING_BYTES",
        MALFORMED,
    ),
    row(
        "CONNECT empty client id without clean session [MQTT-3.1.3-8]",
        V311,
        &[0x10, 0x0C, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x04, 0x00, 0x00, 0x3C, 0x00, 0x00],
        "CLIENT_ID_INVALID",
        0x85,
    ),
    row(
        "CONNECT v5 receive maximum 0",
        V5,
        &[0x10, 0x11, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, 0x02, 0x00, 0x3C, 0x03, 0x21, 0x00, 0x00, 0x00, 0x01, b'x'],
        "RECEIVE_MAXIMUM_ZERO",
        PROTOCOL,
    ),
    row(
        "CONNECT v5 maximum packet size 0",
        V5,
        &[0x10, 0x13, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, 0x02, 0x00, 0x3C, 0x05, 0x27, 0, 0, 0, 0, 0x00, 0x01, b'x'],
        "MAXIMUM_PACKET_SIZE_ZERO",
        PROTOCOL,
    ),
    row(
        "CONNECT v5 will topic with wildcard",
        V5,
        &[
            0x10, 0x14, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, 0x06, 0x00, 0x3C, 0x00, 0x00, 0x01, b'x', 0x00, 0x00, 0x01, b'#',
            0x00, 0x00,
        ],
        "WILDCARD_IN_TOPIC_NAME",
        0x90,
    ),
    row(
        "CONNECT v5 topic alias in will properties",
        V5,
        &[
            0x10, 0x17, 0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, 0x06, 0x00, 0x3C, 0x00, 0x00, 0x01, b'x', 0x03, 0x23, 0x00,
            0x01, 0x00, 0x01, b'w', 0x00, 0x00,
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row(
        "CONNECT v5 topic alias (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0x10, 0x11, // CONNECT, remaining length 17
            0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, // "MQTT" level 5
            0x02, 0x00, 0x3C, // clean start, keep alive 60
            0x03, 0x23, 0x00, 0x01, // properties: topic alias 1 (PUBLISH only)
            0x00, 0x01, b'x', // client id "x"
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row(
        "CONNECT v5 will delay interval outside the will (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0x10, 0x13, // CONNECT, remaining length 19
            0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, // "MQTT" level 5
            0x02, 0x00, 0x3C, // clean start, keep alive 60
            0x05, 0x18, 0, 0, 0, 1, // properties: will delay interval 1 (will properties only)
            0x00, 0x01, b'x', // client id "x"
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row(
        "CONNECT v5 session expiry in will properties (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0x10, 0x19, // CONNECT, remaining length 25
            0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, // "MQTT" level 5
            0x06, 0x00, 0x3C, // will, clean start, keep alive 60
            0x00, // properties: none
            0x00, 0x01, b'x', // client id "x"
            0x05, 0x11, 0, 0, 0, 1, // will properties: session expiry 1 (not a will property)
            0x00, 0x01, b'w', // will topic "w"
            0x00, 0x00, // will payload empty
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row(
        "CONNECT v5 session expiry twice (MQTT 5.0 3.1.2.11.2)",
        V5,
        &[
            0x10, 0x18, // CONNECT, remaining length 24
            0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, // "MQTT" level 5
            0x02, 0x00, 0x3C, // clean start, keep alive 60
            0x0A, 0x11, 0, 0, 0, 1, 0x11, 0, 0, 0, 2, // properties: session expiry 1, session expiry 2
            0x00, 0x01, b'x', // client id "x"
        ],
        "DUPLICATE_PROPERTY",
        PROTOCOL,
    ),
    row(
        "CONNECT v5 authentication data without method (MQTT 5.0 3.1.2.11.10)",
        V5,
        &[
            0x10, 0x12, // CONNECT, remaining length 18
            0x00, 0x04, b'M', b'Q', b'T', b'T', 0x05, // "MQTT" level 5
            0x02, 0x00, 0x3C, // clean start, keep alive 60
            0x04, 0x16, 0x00, 0x01, 0xAA, // properties: authentication data [0xAA], no method
            0x00, 0x01, b'x', // client id "x"
        ],
        "AUTH_DATA_WITHOUT_METHOD",
        PROTOCOL,
    ),
    // CONNACK.
    row("CONNACK reserved flags [MQTT-3.2.2-1]", V311, &[0x20, 0x02, 0x02, 0x00], "CONNACK_RESERVED_FLAGS", MALFORMED),
    row("CONNACK v3 return code 6", V311, &[0x20, 0x02, 0x00, 0x06], "INVALID_REASON_CODE", PROTOCOL),
    row("CONNACK v5 maximum QoS 2", V5, &[0x20, 0x05, 0x00, 0x00, 0x02, 0x24, 0x02], "INVALID_PROPERTY_VALUE", PROTOCOL),
    // SUBSCRIBE / UNSUBSCRIBE.
    row("SUBSCRIBE without subscriptions [MQTT-3.8.3-3]", V311, &[0x82, 0x02, 0x00, 0x01], "EMPTY_SUBSCRIBE", PROTOCOL),
    row("SUBSCRIBE packet id 0", V311, &[0x82, 0x06, 0x00, 0x00, 0x00, 0x01, b'a', 0x00], "PACKET_ID_ZERO", PROTOCOL),
    row("SUBSCRIBE v3 options bit 2", V311, &[0x82, 0x06, 0x00, 0x01, 0x00, 0x01, b'a', 0x04], "SUBSCRIPTION_OPTIONS_RESERVED", MALFORMED),
    row(
        "SUBSCRIBE v5 options bit 6 [MQTT-3.8.3-5]",
        V5,
        &[0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, b'a', 0x40],
        "SUBSCRIPTION_OPTIONS_RESERVED",
        MALFORMED,
    ),
    row("SUBSCRIBE v5 retain handling 3", V5, &[0x82, 0x07, 0x00, 0x01, 0x00, 0x00, 0x01, b'a', 0x30], "INVALID_RETAIN_HANDLING", PROTOCOL),
    row("SUBSCRIBE QoS 3", V311, &[0x82, 0x06, 0x00, 0x01, 0x00, 0x01, b'a', 0x03], "INVALID_QOS", MALFORMED),
    row(
        "SUBSCRIBE filter a# [MQTT-4.7.1-2]",
        V311,
        &[0x82, 0x07, 0x00, 0x01, 0x00, 0x02, b'a', b'#', 0x00],
        "INVALID_WILDCARD",
        0x8F,
    ),
    row(
        "SUBSCRIBE filter a+/b [MQTT-4.7.1-3]",
        V311,
        &[0x82, 0x09, 0x00, 0x01, 0x00, 0x04, b'a', b'+', b'/', b'b', 0x00],
        "INVALID_WILDCARD",
        0x8F,
    ),
    row("SUBSCRIBE empty filter", V311, &[0x82, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00], "EMPTY_TOPIC_FILTER", 0x8F),
    row(
        "SUBSCRIBE $share/+/a [MQTT-4.8.2-2]",
        V311,
        &[0x82, 0x0F, 0x00, 0x01, 0x00, 0x0A, b'$', b's', b'h', b'a', b'r', b'e', b'/', b'+', b'/', b'a', 0x00],
        "INVALID_SHARED_SUBSCRIPTION",
        0x8F,
    ),
    row(
        "SUBSCRIBE no local on shared [MQTT-3.8.3-4]",
        V5,
        &[0x82, 0x10, 0x00, 0x01, 0x00, 0x00, 0x0A, b'$', b's', b'h', b'a', b'r', b'e', b'/', b'g', b'/', b'a', 0x04],
        "NO_LOCAL_ON_SHARED",
        PROTOCOL,
    ),
    row(
        "SUBSCRIBE subscription id twice",
        V5,
        &[0x82, 0x0B, 0x00, 0x01, 0x04, 0x0B, 0x01, 0x0B, 0x02, 0x00, 0x01, b'a', 0x00],
        "DUPLICATE_PROPERTY",
        PROTOCOL,
    ),
    row(
        "SUBSCRIBE v5 session expiry (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0x82, 0x0C, // SUBSCRIBE, remaining length 12
            0x00, 0x01, // packet id 1
            0x05, 0x11, 0, 0, 0, 1, // properties: session expiry 1 (CONNECT, CONNACK, DISCONNECT only)
            0x00, 0x01, b'a', 0x00, // filter "a", QoS 0
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row("SUBSCRIBE v3.1.1 DUP set [MQTT-3.8.1-1]", V311, &[0x8A, 0x06, 0x00, 0x01, 0x00, 0x01, b'a', 0x00], "RESERVED_FLAGS", MALFORMED),
    row("SUBSCRIBE missing options byte", V311, &[0x82, 0x05, 0x00, 0x01, 0x00, 0x01, b'a'], "TRUNCATED", MALFORMED),
    row("UNSUBSCRIBE without filters [MQTT-3.10.3-2]", V311, &[0xA2, 0x02, 0x00, 0x01], "EMPTY_UNSUBSCRIBE", PROTOCOL),
    row("UNSUBSCRIBE packet id 0", V311, &[0xA2, 0x05, 0x00, 0x00, 0x00, 0x01, b'a'], "PACKET_ID_ZERO", PROTOCOL),
    row(
        "UNSUBSCRIBE v5 subscription id (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0xA2, 0x08, // UNSUBSCRIBE, remaining length 8
            0x00, 0x01, // packet id 1
            0x02, 0x0B, 0x01, // properties: subscription id 1 (PUBLISH, SUBSCRIBE only)
            0x00, 0x01, b'a', // filter "a"
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row("SUBACK without reason codes", V5, &[0x90, 0x03, 0x00, 0x01, 0x00], "EMPTY_ACK_REASON_CODES", PROTOCOL),
    // Acks, DISCONNECT, AUTH.
    row("PUBACK packet id 0", V311, &[0x40, 0x02, 0x00, 0x00], "PACKET_ID_ZERO", PROTOCOL),
    row("PUBACK v3 with 3 bytes", V311, &[0x40, 0x03, 0x00, 0x01, 0x00], "TRAILING_BYTES", MALFORMED),
    row("PUBACK with 1 byte", V5, &[0x40, 0x01, 0x00], "TRUNCATED", MALFORMED),
    row("PUBACK v5 reason 0x92", V5, &[0x40, 0x03, 0x00, 0x01, 0x92], "INVALID_REASON_CODE", PROTOCOL),
    // A reason code the packet type does not have parses: it is a Protocol Error (4.13.1), not Malformed.
    row("PUBREC v5 reason 0x92 (PUBREL's)", V5, &[0x50, 0x03, 0x00, 0x01, 0x92], "INVALID_REASON_CODE", PROTOCOL),
    row("PUBREL v5 reason 0x80", V5, &[0x62, 0x03, 0x00, 0x01, 0x80], "INVALID_REASON_CODE", PROTOCOL),
    row("PUBCOMP v5 reason 0x80", V5, &[0x70, 0x03, 0x00, 0x01, 0x80], "INVALID_REASON_CODE", PROTOCOL),
    row("PUBREL v5 packet id 0", V5, &[0x62, 0x02, 0x00, 0x00], "PACKET_ID_ZERO", PROTOCOL),
    row("PUBLISH v5 QoS 2 packet id 0 [MQTT-2.2.1-3]", V5, &[0x34, 0x06, 0x00, 0x01, b't', 0x00, 0x00, 0x00], "PACKET_ID_ZERO", PROTOCOL),
    row("DISCONNECT v3 with a byte", V31, &[0xE0, 0x01, 0x00], "TRAILING_BYTES", MALFORMED),
    row(
        "PUBACK v5 topic alias (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0x40, 0x07, // PUBACK, remaining length 7
            0x00, 0x01, // packet id 1
            0x00, // reason: success
            0x03, 0x23, 0x00, 0x01, // properties: topic alias 1 (PUBLISH only)
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row(
        "DISCONNECT v5 with topic alias (MQTT 5.0 2.2.2.2)",
        V5,
        &[0xE0, 0x05, 0x00, 0x03, 0x23, 0x00, 0x01],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row("AUTH v5 reason 0x01", V5, &[0xF0, 0x01, 0x01], "INVALID_REASON_CODE", PROTOCOL),
    row(
        "AUTH v5 session expiry (MQTT 5.0 2.2.2.2)",
        V5,
        &[
            0xF0, 0x0B, // AUTH, remaining length 11
            0x18, // continue authentication
            0x09, // property length 9
            0x15, 0x00, 0x01, b'm', // authentication method "m"
            0x11, 0, 0, 0, 1, // session expiry 1 (CONNECT, CONNACK, DISCONNECT only)
        ],
        "PROPERTY_NOT_ALLOWED",
        MALFORMED,
    ),
    row(
        "AUTH v5 authentication data without method (MQTT 5.0 3.15.2.2.2)",
        V5,
        &[
            0xF0, 0x06, // AUTH, remaining length 6
            0x18, // continue authentication
            0x04, 0x16, 0x00, 0x01, 0xAA, // properties: authentication data [0xAA], no method
        ],
        "AUTH_DATA_WITHOUT_METHOD",
        PROTOCOL,
    ),
    // PUBREL with DUP, as MQTT 3.1 clients re-send it: accepted in 3.1 only (codec_fixtures.rs).
    row("PUBREL v3.1.1 DUP set [MQTT-3.6.1-1]", V311, &[0x6A, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("PUBREL v5 DUP set [MQTT-3.6.1-1]", V5, &[0x6A, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("PUBREL v3.1 QoS 0 flags", V31, &[0x60, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("PUBREL v3.1 DUP and RETAIN", V31, &[0x6B, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("PUBREL v3.1 DUP with QoS 2", V31, &[0x6C, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
    row("PUBACK v3.1 DUP set", V31, &[0x48, 0x02, 0x00, 0x01], "RESERVED_FLAGS", MALFORMED),
];

#[test]
fn every_malformed_row_fails_with_its_code_and_reason() {
    assert!(ROWS.len() >= 35);
    for r in ROWS {
        let result = match r.via {
            Via::Decode => decode(r.version, r.bytes).map(|_| ()),
            Via::FromClient => decode_from_client(r.version, r.bytes).map(|_| ()),
            Via::View => decode_publish_view(r.version, r.bytes).map(|_| ()),
        };
        let err = result.err().unwrap_or_else(|| panic!("{}: accepted", r.name));
        assert_eq!((err.code, err.reason), (r.code, r.reason), "{}", r.name);
    }
}

#[test]
fn publish_rows_fail_the_same_way_through_the_view() {
    for r in ROWS.iter().filter(|r| r.bytes[0] >> 4 == 3 && matches!(r.via, Via::Decode)) {
        let err = decode_publish_view(r.version, r.bytes).err().unwrap_or_else(|| panic!("{}: accepted", r.name));
        assert_eq!(err.code, r.code, "{}", r.name);
    }
}

#[test]
fn server_side_publish_may_carry_subscription_ids() {
    let bytes = [0x30, 0x08, 0x00, 0x01, b't', 0x04, 0x0B, 0x01, 0x0B, 0x02];
    let view = decode_publish_view_from_server(V5, &bytes).unwrap();
    assert_eq!(view.props_len, 4);
    match decode(V5, &bytes).unwrap() {
        Packet::Publish(p) => assert_eq!(p.properties.subscription_identifiers, vec![1, 2]),
        other => panic!("{other:?}"),
    }
}

/// Every property block context: the 13 packets with properties and the will of a CONNECT.
const EVERY_CONTEXT: [PropertyContext; 14] = {
    use PropertyContext::*;
    [Connect, Connack, Publish, Will, Puback, Pubrec, Pubrel, Pubcomp, Subscribe, Suback, Unsubscribe, Unsuback, Disconnect, Auth]
};

/// MQTT 5.0 table 2-4 (section 2.2.2.2), transcribed here independently of the codec's own table:
/// each property identifier and the packets (or the will, "W") that may carry it.
const SPEC_TABLE_2_4: &[(u8, &[PropertyContext])] = {
    use PropertyContext::*;
    &[
        (0x01, &[Publish, Will]), // Payload Format Indicator
        (0x02, &[Publish, Will]), // Message Expiry Interval
        (0x03, &[Publish, Will]), // Content Type
        (0x08, &[Publish, Will]), // Response Topic
        (0x09, &[Publish, Will]), // Correlation Data
        (0x0B, &[Publish, Subscribe]), // Subscription Identifier
        (0x11, &[Connect, Connack, Disconnect]), // Session Expiry Interval
        (0x12, &[Connack]), // Assigned Client Identifier
        (0x13, &[Connack]), // Server Keep Alive
        (0x15, &[Connect, Connack, Auth]), // Authentication Method
        (0x16, &[Connect, Connack, Auth]), // Authentication Data
        (0x17, &[Connect]), // Request Problem Information
        (0x18, &[Will]), // Will Delay Interval
        (0x19, &[Connect]), // Request Response Information
        (0x1A, &[Connack]), // Response Information
        (0x1C, &[Connack, Disconnect]), // Server Reference
        (0x1F, &[Connack, Puback, Pubrec, Pubrel, Pubcomp, Suback, Unsuback, Disconnect, Auth]), // Reason String
        (0x21, &[Connect, Connack]), // Receive Maximum
        (0x22, &[Connect, Connack]), // Topic Alias Maximum
        (0x23, &[Publish]), // Topic Alias
        (0x24, &[Connack]), // Maximum QoS
        (0x25, &[Connack]), // Retain Available
        (0x26, &EVERY_CONTEXT), // User Property
        (0x27, &[Connect, Connack]), // Maximum Packet Size
        (0x28, &[Connack]), // Wildcard Subscription Available
        (0x29, &[Connack]), // Subscription Identifier Available
        (0x2A, &[Connack]), // Shared Subscription Available
    ]
};

/// A property block holding property `id` once, with a value valid for it.
fn one_property_block(id: u8) -> Vec<u8> {
    let value: &[u8] = match property_spec(id as u32).expect("known id").kind {
        PropertyKind::Byte => &[0x01],
        PropertyKind::TwoByteInt => &[0x00, 0x01],
        PropertyKind::FourByteInt => &[0x00, 0x00, 0x00, 0x01],
        PropertyKind::Varint => &[0x01],
        PropertyKind::Utf8String => &[0x00, 0x01, b'a'],
        PropertyKind::BinaryData => &[0x00, 0x01, 0xAA],
        PropertyKind::Utf8StringPair => &[0x00, 0x01, b'a', 0x00, 0x01, b'b'],
    };
    let mut block = vec![(1 + value.len()) as u8, id];
    block.extend_from_slice(value);
    block
}

#[test]
fn every_property_outside_its_packets_is_malformed() {
    assert_eq!(SPEC_TABLE_2_4.len(), PROPERTY_TABLE.len());
    for &(id, allowed) in SPEC_TABLE_2_4 {
        let block = one_property_block(id);
        for ctx in EVERY_CONTEXT {
            let result = decode_properties(&block, ctx).map(|_| ());
            if allowed.contains(&ctx) {
                assert_eq!(result, Ok(()), "property 0x{id:02X} in {ctx:?}");
            } else {
                // MQTT 5.0 2.2.2.2: "A Control Packet which contains an Identifier which is not
                // valid for its packet type ... is a Malformed Packet" (0x81).
                let err = result.expect_err(&format!("property 0x{id:02X} accepted in {ctx:?}"));
                assert_eq!((err.code, err.reason), ("PROPERTY_NOT_ALLOWED", MALFORMED), "0x{id:02X} in {ctx:?}");
            }
        }
    }
}
