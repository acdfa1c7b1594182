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
    row("PUBLISH QoS 1 packet id 0 [MQTT-2.2.1-3]", V311, &[0x32, 0x05, 0x00, 0x01, b't', 0x00, 0x00], "PACKET_ID_ZERO", MALFORMED),
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
        "PUBLISH with session expiry",
        V5,
        &[0x30, 0x09, 0x00, 0x01, b't', 0x05, 0x11, 0, 0, 0, 1],
        "PROPERTY_NOT_ALLOWED",
        PROTOCOL,
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
        PROTOCOL,
    ),
    // CONNACK.
    row("CONNACK reserved flags [MQTT-3.2.2-1]", V311, &[0x20, 0x02, 0x02, 0x00], "CONNACK_RESERVED_FLAGS", MALFORMED),
    row("CONNACK v3 return code 6", V311, &[0x20, 0x02, 0x00, 0x06], "INVALID_REASON_CODE", MALFORMED),
    row("CONNACK v5 maximum QoS 2", V5, &[0x20, 0x05, 0x00, 0x00, 0x02, 0x24, 0x02], "INVALID_PROPERTY_VALUE", PROTOCOL),
    // SUBSCRIBE / UNSUBSCRIBE.
    row("SUBSCRIBE without subscriptions [MQTT-3.8.3-3]", V311, &[0x82, 0x02, 0x00, 0x01], "EMPTY_SUBSCRIBE", PROTOCOL),
    row("SUBSCRIBE packet id 0", V311, &[0x82, 0x06, 0x00, 0x00, 0x00, 0x01, b'a', 0x00], "PACKET_ID_ZERO", MALFORMED),
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
    row("SUBSCRIBE missing options byte", V311, &[0x82, 0x05, 0x00, 0x01, 0x00, 0x01, b'a'], "TRUNCATED", MALFORMED),
    row("UNSUBSCRIBE without filters [MQTT-3.10.3-2]", V311, &[0xA2, 0x02, 0x00, 0x01], "EMPTY_UNSUBSCRIBE", PROTOCOL),
    row("UNSUBSCRIBE packet id 0", V311, &[0xA2, 0x05, 0x00, 0x00, 0x00, 0x01, b'a'], "PACKET_ID_ZERO", MALFORMED),
    row("SUBACK without reason codes", V5, &[0x90, 0x03, 0x00, 0x01, 0x00], "EMPTY_ACK_REASON_CODES", PROTOCOL),
    // Acks, DISCONNECT, AUTH.
    row("PUBACK packet id 0", V311, &[0x40, 0x02, 0x00, 0x00], "PACKET_ID_ZERO", MALFORMED),
    row("PUBACK v3 with 3 bytes", V311, &[0x40, 0x03, 0x00, 0x01, 0x00], "TRAILING_BYTES", MALFORMED),
    row("PUBACK with 1 byte", V5, &[0x40, 0x01, 0x00], "TRUNCATED", MALFORMED),
    row("PUBACK v5 reason 0x92", V5, &[0x40, 0x03, 0x00, 0x01, 0x92], "INVALID_REASON_CODE", MALFORMED),
    row("DISCONNECT v3 with a byte", V31, &[0xE0, 0x01, 0x00], "TRAILING_BYTES", MALFORMED),
    row(
        "DISCONNECT v5 with topic alias",
        V5,
        &[0xE0, 0x05, 0x00, 0x03, 0x23, 0x00, 0x01],
        "PROPERTY_NOT_ALLOWED",
        PROTOCOL,
    ),
    row("AUTH v5 reason 0x01", V5, &[0xF0, 0x01, 0x01], "INVALID_REASON_CODE", MALFORMED),
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
