//! Round-trip fixtures: every packet type for MQTT 3.1, 3.1.1 and 5.0 as a packet value plus its
//! wire bytes commented field by field, checked both ways (decode(bytes) == packet and
//! encode(packet) == bytes), plus encoded_len agreement.

use spindle_core::codec::*;
use ProtocolVersion::{V31, V311, V5};

struct Fixture {
    name: &'static str,
    versions: &'static [ProtocolVersion],
    packet: Packet,
    bytes: &'static [u8],
}

const V3: &[ProtocolVersion] = &[V31, V311];
const ALL: &[ProtocolVersion] = &[V31, V311, V5];

fn none() -> Properties {
    Properties::default()
}

fn user(k: &str, v: &str) -> (String, String) {
    (k.to_owned(), v.to_owned())
}

fn ack(packet_id: u16, reason_code: u8, properties: Properties) -> Ack {
    Ack { packet_id, reason_code, properties }
}

fn fixtures() -> Vec<Fixture> {
    vec![
        // ---------------------------------------------------------------- CONNECT
        Fixture {
            name: "connect v3.1 minimal",
            versions: &[V31],
            packet: Packet::Connect(Connect {
                version: V31,
                clean_start: true,
                keep_alive: 60,
                client_id: "abc".into(),
                will: None,
                username: None,
                password: None,
                properties: none(),
            }),
            bytes: &[
                0x10, // CONNECT
                0x11, // remaining length 17
                0x00, 0x06, // protocol name length 6
                b'M', b'Q', b'I', b's', b'd', b'p', // "MQIsdp"
                0x03, // protocol level 3 (MQTT 3.1)
                0x02, // connect flags: clean session
                0x00, 0x3C, // keep alive 60
                0x00, 0x03, // client id length 3
                b'a', b'b', b'c', // "abc"
            ],
        },
        Fixture {
            name: "connect v3.1 with will, username, password",
            versions: &[V31],
            packet: Packet::Connect(Connect {
                version: V31,
                clean_start: false,
                keep_alive: 10,
                client_id: "c".into(),
                will: Some(Will { topic: "w".into(), payload: b"x".to_vec(), qos: 2, retain: false, properties: none() }),
                username: Some("u".into()),
                password: Some(b"p".to_vec()),
                properties: none(),
            }),
            bytes: &[
                0x10, // CONNECT
                0x1B, // remaining length 27
                0x00, 0x06, // protocol name length 6
                b'M', b'Q', b'I', b's', b'd', b'p', // "MQIsdp"
                0x03, // protocol level 3
                0xD4, // flags: username, password, will QoS 2, will
                0x00, 0x0A, // keep alive 10
                0x00, 0x01, b'c', // client id "c"
                0x00, 0x01, b'w', // will topic "w"
                0x00, 0x01, b'x', // will payload "x"
                0x00, 0x01, b'u', // username "u"
                0x00, 0x01, b'p', // password "p"
            ],
        },
        Fixture {
            name: "connect v3.1.1 minimal",
            versions: &[V311],
            packet: Packet::Connect(Connect {
                version: V311,
                clean_start: true,
                keep_alive: 60,
                client_id: "x".into(),
                will: None,
                username: None,
                password: None,
                properties: none(),
            }),
            bytes: &[
                0x10, // CONNECT
                0x0D, // remaining length 13
                0x00, 0x04, // protocol name length 4
                b'M', b'Q', b'T', b'T', // "MQTT"
                0x04, // protocol level 4 (3.1.1)
                0x02, // flags: clean session
                0x00, 0x3C, // keep alive 60
                0x00, 0x01, b'x', // client id "x"
            ],
        },
        Fixture {
            name: "connect v3.1.1 with will, username, password",
            versions: &[V311],
            packet: Packet::Connect(Connect {
                version: V311,
                clean_start: true,
                keep_alive: 10,
                client_id: "c1".into(),
                will: Some(Will { topic: "w/t".into(), payload: b"by".to_vec(), qos: 1, retain: true, properties: none() }),
                username: Some("u".into()),
                password: Some(vec![1, 2]),
                properties: none(),
            }),
            bytes: &[
                0x10, // CONNECT
                0x1E, // remaining length 30
                0x00, 0x04, // protocol name length 4
                b'M', b'Q', b'T', b'T', // "MQTT"
                0x04, // protocol level 4
                0xEE, // flags: username, password, will retain, will QoS 1, will, clean session
                0x00, 0x0A, // keep alive 10
                0x00, 0x02, b'c', b'1', // client id "c1"
                0x00, 0x03, b'w', b'/', b't', // will topic "w/t"
                0x00, 0x02, b'b', b'y', // will payload "by"
                0x00, 0x01, b'u', // username "u"
                0x00, 0x02, 0x01, 0x02, // password [1, 2]
            ],
        },
        Fixture {
            name: "connect v5 with properties, will properties, username, password",
            versions: &[V5],
            packet: Packet::Connect(Connect {
                version: V5,
                clean_start: true,
                keep_alive: 30,
                client_id: "c5".into(),
                will: Some(Will {
                    topic: "w".into(),
                    payload: b"x".to_vec(),
                    qos: 0,
                    retain: false,
                    properties: Properties {
                        payload_format_indicator: Some(1),
                        content_type: Some("text".into()),
                        will_delay_interval: Some(5),
                        ..none()
                    },
                }),
                username: Some("u".into()),
                password: Some(b"p".to_vec()),
                properties: Properties {
                    session_expiry_interval: Some(120),
                    receive_maximum: Some(20),
                    user_properties: vec![user("k", "v")],
                    ..none()
                },
            }),
            bytes: &[
                0x10, // CONNECT
                0x39, // remaining length 57
                0x00, 0x04, // protocol name length 4
                b'M', b'Q', b'T', b'T', // "MQTT"
                0x05, // protocol level 5
                0xC6, // flags: username, password, will, clean start
                0x00, 0x1E, // keep alive 30
                0x0F, // property length 15
                0x11, 0x00, 0x00, 0x00, 0x78, // session expiry interval 120
                0x21, 0x00, 0x14, // receive maximum 20
                0x26, 0x00, 0x01, b'k', 0x00, 0x01, b'v', // user property k=v
                0x00, 0x02, b'c', b'5', // client id "c5"
                0x0E, // will property length 14
                0x01, 0x01, // payload format indicator 1 (UTF-8)
                0x03, 0x00, 0x04, b't', b'e', b'x', b't', // content type "text"
                0x18, 0x00, 0x00, 0x00, 0x05, // will delay interval 5
                0x00, 0x01, b'w', // will topic "w"
                0x00, 0x01, b'x', // will payload "x"
                0x00, 0x01, b'u', // username "u"
                0x00, 0x01, b'p', // password "p"
            ],
        },
        Fixture {
            name: "connect v5 password without username, empty client id",
            versions: &[V5],
            packet: Packet::Connect(Connect {
                version: V5,
                clean_start: true,
                keep_alive: 0,
                client_id: String::new(),
                will: None,
                username: None,
                password: Some(b"p".to_vec()),
                properties: none(),
            }),
            bytes: &[
                0x10, // CONNECT
                0x10, // remaining length 16
                0x00, 0x04, // protocol name length 4
                b'M', b'Q', b'T', b'T', // "MQTT"
                0x05, // protocol level 5
                0x42, // flags: password, clean start
                0x00, 0x00, // keep alive 0
                0x00, // property length 0
                0x00, 0x00, // client id "" (server assigns one)
                0x00, 0x01, b'p', // password "p"
            ],
        },
        // ---------------------------------------------------------------- CONNACK
        Fixture {
            name: "connack v3.1",
            versions: &[V31],
            packet: Packet::Connack(Connack { session_present: false, reason_code: 0x05, properties: none() }),
            bytes: &[
                0x20, // CONNACK
                0x02, // remaining length 2
                0x00, // reserved
                0x05, // return code 5: not authorized
            ],
        },
        Fixture {
            name: "connack v3.1.1 session present",
            versions: &[V311],
            packet: Packet::Connack(Connack { session_present: true, reason_code: 0, properties: none() }),
            bytes: &[
                0x20, // CONNACK
                0x02, // remaining length 2
                0x01, // session present
                0x00, // return code 0: accepted
            ],
        },
        Fixture {
            name: "connack v5 with many properties",
            versions: &[V5],
            packet: Packet::Connack(Connack {
                session_present: false,
                reason_code: 0,
                properties: Properties {
                    assigned_client_identifier: Some("id".into()),
                    server_keep_alive: Some(60),
                    topic_alias_maximum: Some(10),
                    maximum_qos: Some(1),
                    retain_available: Some(0),
                    user_properties: vec![user("a", "1"), user("a", "2")],
                    maximum_packet_size: Some(4096),
                    wildcard_subscription_available: Some(1),
                    subscription_identifiers_available: Some(1),
                    shared_subscription_available: Some(0),
                    ..none()
                },
            }),
            bytes: &[
                0x20, // CONNACK
                0x2B, // remaining length 43
                0x00, // acknowledge flags
                0x00, // reason code success
                0x28, // property length 40
                0x12, 0x00, 0x02, b'i', b'd', // assigned client identifier "id"
                0x13, 0x00, 0x3C, // server keep alive 60
                0x22, 0x00, 0x0A, // topic alias maximum 10
                0x24, 0x01, // maximum QoS 1
                0x25, 0x00, // retain available 0
                0x26, 0x00, 0x01, b'a', 0x00, 0x01, b'1', // user property a=1
                0x26, 0x00, 0x01, b'a', 0x00, 0x01, b'2', // user property a=2 (repeats)
                0x27, 0x00, 0x00, 0x10, 0x00, // maximum packet size 4096
                0x28, 0x01, // wildcard subscription available
                0x29, 0x01, // subscription identifiers available
                0x2A, 0x00, // shared subscription not available
            ],
        },
        // ---------------------------------------------------------------- PUBLISH
        Fixture {
            name: "publish v3 QoS 0",
            versions: V3,
            packet: Packet::Publish(Publish {
                dup: false,
                qos: 0,
                retain: false,
                topic: "t".into(),
                packet_id: 0,
                payload: b"x".to_vec(),
                properties: none(),
            }),
            bytes: &[
                0x30, // PUBLISH, QoS 0
                0x04, // remaining length 4
                0x00, 0x01, b't', // topic "t"
                b'x', // payload "x"
            ],
        },
        Fixture {
            name: "publish v3 QoS 1 retain",
            versions: V3,
            packet: Packet::Publish(Publish {
                dup: false,
                qos: 1,
                retain: true,
                topic: "a/b".into(),
                packet_id: 10,
                payload: b"hi".to_vec(),
                properties: none(),
            }),
            bytes: &[
                0x33, // PUBLISH, QoS 1, retain
                0x09, // remaining length 9
                0x00, 0x03, b'a', b'/', b'b', // topic "a/b"
                0x00, 0x0A, // packet id 10
                b'h', b'i', // payload "hi"
            ],
        },
        Fixture {
            name: "publish v5 QoS 2 dup with every publish property",
            versions: &[V5],
            packet: Packet::Publish(Publish {
                dup: true,
                qos: 2,
                retain: false,
                topic: "a/b".into(),
                packet_id: 7,
                payload: b"hi".to_vec(),
                properties: Properties {
                    payload_format_indicator: Some(1),
                    message_expiry_interval: Some(60),
                    content_type: Some("ct".into()),
                    response_topic: Some("r".into()),
                    correlation_data: Some(vec![0xAB, 0xCD]),
                    subscription_identifiers: vec![1, 256],
                    topic_alias: Some(5),
                    user_properties: vec![user("k", "v"), user("k", "v")],
                    ..none()
                },
            }),
            bytes: &[
                0x3C, // PUBLISH, DUP, QoS 2
                0x35, // remaining length 53
                0x00, 0x03, b'a', b'/', b'b', // topic "a/b"
                0x00, 0x07, // packet id 7
                0x2B, // property length 43
                0x01, 0x01, // payload format indicator 1
                0x02, 0x00, 0x00, 0x00, 0x3C, // message expiry interval 60
                0x03, 0x00, 0x02, b'c', b't', // content type "ct"
                0x08, 0x00, 0x01, b'r', // response topic "r"
                0x09, 0x00, 0x02, 0xAB, 0xCD, // correlation data
                0x0B, 0x01, // subscription identifier 1
                0x0B, 0x80, 0x02, // subscription identifier 256 (varint)
                0x23, 0x00, 0x05, // topic alias 5
                0x26, 0x00, 0x01, b'k', 0x00, 0x01, b'v', // user property k=v
                0x26, 0x00, 0x01, b'k', 0x00, 0x01, b'v', // user property k=v again
                b'h', b'i', // payload "hi"
            ],
        },
        Fixture {
            name: "publish v5 QoS 0 empty topic with alias",
            versions: &[V5],
            packet: Packet::Publish(Publish {
                dup: false,
                qos: 0,
                retain: true,
                topic: String::new(),
                packet_id: 0,
                payload: b"x".to_vec(),
                properties: Properties { topic_alias: Some(1), ..none() },
            }),
            bytes: &[
                0x31, // PUBLISH, QoS 0, retain
                0x07, // remaining length 7
                0x00, 0x00, // topic "" (resolved through the alias)
                0x03, // property length 3
                0x23, 0x00, 0x01, // topic alias 1
                b'x', // payload "x"
            ],
        },
        // ---------------------------------------------------------------- PUBACK .. PUBCOMP
        Fixture {
            name: "puback",
            versions: ALL,
            packet: Packet::Puback(ack(1, 0, none())),
            bytes: &[
                0x40, // PUBACK
                0x02, // remaining length 2
                0x00, 0x01, // packet id 1
            ],
        },
        Fixture {
            name: "pubrec v3",
            versions: V3,
            packet: Packet::Pubrec(ack(2, 0, none())),
            bytes: &[
                0x50, // PUBREC
                0x02, // remaining length 2
                0x00, 0x02, // packet id 2
            ],
        },
        Fixture {
            name: "pubrec v5 reason only",
            versions: &[V5],
            packet: Packet::Pubrec(ack(2, 0x10, none())),
            bytes: &[
                0x50, // PUBREC
                0x03, // remaining length 3
                0x00, 0x02, // packet id 2
                0x10, // reason: no matching subscribers
            ],
        },
        Fixture {
            name: "pubrel v3",
            versions: V3,
            packet: Packet::Pubrel(ack(3, 0, none())),
            bytes: &[
                0x62, // PUBREL, flags 0b0010
                0x02, // remaining length 2
                0x00, 0x03, // packet id 3
            ],
        },
        Fixture {
            name: "pubrel v5 reason and properties",
            versions: &[V5],
            packet: Packet::Pubrel(ack(
                3,
                0x92,
                Properties { reason_string: Some("gone".into()), user_properties: vec![user("a", "b")], ..none() },
            )),
            bytes: &[
                0x62, // PUBREL, flags 0b0010
                0x12, // remaining length 18
                0x00, 0x03, // packet id 3
                0x92, // reason: packet identifier not found
                0x0E, // property length 14
                0x1F, 0x00, 0x04, b'g', b'o', b'n', b'e', // reason string "gone"
                0x26, 0x00, 0x01, b'a', 0x00, 0x01, b'b', // user property a=b
            ],
        },
        Fixture {
            name: "pubcomp",
            versions: ALL,
            packet: Packet::Pubcomp(ack(4, 0, none())),
            bytes: &[
                0x70, // PUBCOMP
                0x02, // remaining length 2
                0x00, 0x04, // packet id 4
            ],
        },
        // ---------------------------------------------------------------- SUBSCRIBE / SUBACK
        Fixture {
            name: "subscribe v3",
            versions: V3,
            packet: Packet::Subscribe(Subscribe {
                packet_id: 10,
                subscriptions: vec![
                    Subscription { filter: "a/+".into(), qos: 1, no_local: false, retain_as_published: false, retain_handling: 0 },
                    Subscription { filter: "#".into(), qos: 2, no_local: false, retain_as_published: false, retain_handling: 0 },
                ],
                properties: none(),
            }),
            bytes: &[
                0x82, // SUBSCRIBE, flags 0b0010
                0x0C, // remaining length 12
                0x00, 0x0A, // packet id 10
                0x00, 0x03, b'a', b'/', b'+', // filter "a/+"
                0x01, // options: QoS 1
                0x00, 0x01, b'#', // filter "#"
                0x02, // options: QoS 2
            ],
        },
        Fixture {
            name: "subscribe v5 with options, subscription id, shared filter",
            versions: &[V5],
            packet: Packet::Subscribe(Subscribe {
                packet_id: 11,
                subscriptions: vec![
                    Subscription { filter: "a/b".into(), qos: 1, no_local: true, retain_as_published: true, retain_handling: 2 },
                    Subscription { filter: "$share/g/x".into(), qos: 0, no_local: false, retain_as_published: false, retain_handling: 0 },
                ],
                properties: Properties { subscription_identifiers: vec![42], user_properties: vec![user("k", "v")], ..none() },
            }),
            bytes: &[
                0x82, // SUBSCRIBE, flags 0b0010
                0x1F, // remaining length 31
                0x00, 0x0B, // packet id 11
                0x09, // property length 9
                0x0B, 0x2A, // subscription identifier 42
                0x26, 0x00, 0x01, b'k', 0x00, 0x01, b'v', // user property k=v
                0x00, 0x03, b'a', b'/', b'b', // filter "a/b"
                0x2D, // options: retain handling 2, retain as published, no local, QoS 1
                0x00, 0x0A, b'$', b's', b'h', b'a', b'r', b'e', b'/', b'g', b'/', b'x', // "$share/g/x"
                0x00, // options: QoS 0
            ],
        },
        Fixture {
            name: "suback v3.1",
            versions: &[V31],
            packet: Packet::Suback(Suback { packet_id: 10, reason_codes: vec![1, 0], properties: none() }),
            bytes: &[
                0x90, // SUBACK
                0x04, // remaining length 4
                0x00, 0x0A, // packet id 10
                0x01, // granted QoS 1
                0x00, // granted QoS 0
            ],
        },
        Fixture {
            name: "suback v3.1.1 with failure",
            versions: &[V311],
            packet: Packet::Suback(Suback { packet_id: 10, reason_codes: vec![2, 0x80], properties: none() }),
            bytes: &[
                0x90, // SUBACK
                0x04, // remaining length 4
                0x00, 0x0A, // packet id 10
                0x02, // granted QoS 2
                0x80, // failure
            ],
        },
        Fixture {
            name: "suback v5",
            versions: &[V5],
            packet: Packet::Suback(Suback {
                packet_id: 11,
                reason_codes: vec![1, 0, 0xA2],
                properties: Properties { reason_string: Some("ok".into()), ..none() },
            }),
            bytes: &[
                0x90, // SUBACK
                0x0B, // remaining length 11
                0x00, 0x0B, // packet id 11
                0x05, // property length 5
                0x1F, 0x00, 0x02, b'o', b'k', // reason string "ok"
                0x01, // granted QoS 1
                0x00, // granted QoS 0
                0xA2, // wildcard subscriptions not supported
            ],
        },
        // ---------------------------------------------------------------- UNSUBSCRIBE / UNSUBACK
        Fixture {
            name: "unsubscribe v3",
            versions: V3,
            packet: Packet::Unsubscribe(Unsubscribe { packet_id: 12, filters: vec!["a/b".into(), "#".into()], properties: none() }),
            bytes: &[
                0xA2, // UNSUBSCRIBE, flags 0b0010
                0x0A, // remaining length 10
                0x00, 0x0C, // packet id 12
                0x00, 0x03, b'a', b'/', b'b', // filter "a/b"
                0x00, 0x01, b'#', // filter "#"
            ],
        },
        Fixture {
            name: "unsubscribe v5",
            versions: &[V5],
            packet: Packet::Unsubscribe(Unsubscribe {
                packet_id: 13,
                filters: vec!["x".into()],
                properties: Properties { user_properties: vec![user("k", "v")], ..none() },
            }),
            bytes: &[
                0xA2, // UNSUBSCRIBE, flags 0b0010
                0x0D, // remaining length 13
                0x00, 0x0D, // packet id 13
                0x07, // property length 7
                0x26, 0x00, 0x01, b'k', 0x00, 0x01, b'v', // user property k=v
                0x00, 0x01, b'x', // filter "x"
            ],
        },
        Fixture {
            name: "unsuback v3",
            versions: V3,
            packet: Packet::Unsuback(Unsuback { packet_id: 12, reason_codes: vec![], properties: none() }),
            bytes: &[
                0xB0, // UNSUBACK
                0x02, // remaining length 2
                0x00, 0x0C, // packet id 12
            ],
        },
        Fixture {
            name: "unsuback v5",
            versions: &[V5],
            packet: Packet::Unsuback(Unsuback { packet_id: 13, reason_codes: vec![0x00, 0x11], properties: none() }),
            bytes: &[
                0xB0, // UNSUBACK
                0x05, // remaining length 5
                0x00, 0x0D, // packet id 13
                0x00, // property length 0
                0x00, // success
                0x11, // no subscription existed
            ],
        },
        // ---------------------------------------------------------------- PING, DISCONNECT, AUTH
        Fixture {
            name: "pingreq",
            versions: ALL,
            packet: Packet::Pingreq,
            bytes: &[
                0xC0, // PINGREQ
                0x00, // remaining length 0
            ],
        },
        Fixture {
            name: "pingresp",
            versions: ALL,
            packet: Packet::Pingresp,
            bytes: &[
                0xD0, // PINGRESP
                0x00, // remaining length 0
            ],
        },
        Fixture {
            name: "disconnect short form",
            versions: ALL,
            packet: Packet::Disconnect(Disconnect { reason_code: 0, properties: none() }),
            bytes: &[
                0xE0, // DISCONNECT
                0x00, // remaining length 0 (v5: normal disconnection)
            ],
        },
        Fixture {
            name: "disconnect v5 reason only",
            versions: &[V5],
            packet: Packet::Disconnect(Disconnect { reason_code: 0x8E, properties: none() }),
            bytes: &[
                0xE0, // DISCONNECT
                0x01, // remaining length 1
                0x8E, // session taken over
            ],
        },
        Fixture {
            name: "disconnect v5 with properties",
            versions: &[V5],
            packet: Packet::Disconnect(Disconnect {
                reason_code: 0x04,
                properties: Properties {
                    session_expiry_interval: Some(0),
                    server_reference: Some("s".into()),
                    reason_string: Some("bye".into()),
                    ..none()
                },
            }),
            bytes: &[
                0xE0, // DISCONNECT
                0x11, // remaining length 17
                0x04, // disconnect with will message
                0x0F, // property length 15
                0x11, 0x00, 0x00, 0x00, 0x00, // session expiry interval 0
                0x1C, 0x00, 0x01, b's', // server reference "s"
                0x1F, 0x00, 0x03, b'b', b'y', b'e', // reason string "bye"
            ],
        },
        Fixture {
            name: "auth v5 short form",
            versions: &[V5],
            packet: Packet::Auth(Auth { reason_code: 0, properties: none() }),
            bytes: &[
                0xF0, // AUTH
                0x00, // remaining length 0 (success)
            ],
        },
        Fixture {
            name: "auth v5 continue with method and data",
            versions: &[V5],
            packet: Packet::Auth(Auth {
                reason_code: 0x18,
                properties: Properties {
                    authentication_method: Some("SCRM".into()),
                    authentication_data: Some(vec![1, 2]),
                    reason_string: Some("r".into()),
                    ..none()
                },
            }),
            bytes: &[
                0xF0, // AUTH
                0x12, // remaining length 18
                0x18, // continue authentication
                0x10, // property length 16
                0x15, 0x00, 0x04, b'S', b'C', b'R', b'M', // authentication method "SCRM"
                0x16, 0x00, 0x02, 0x01, 0x02, // authentication data [1, 2]
                0x1F, 0x00, 0x01, b'r', // reason string "r"
            ],
        },
    ]
}

#[test]
fn fixtures_decode_to_their_packet() {
    for f in fixtures() {
        for &v in f.versions {
            let decoded = decode(v, f.bytes).unwrap_or_else(|e| panic!("{} {v:?}: {e}", f.name));
            assert_eq!(decoded, f.packet, "{} {v:?}", f.name);
        }
    }
}

#[test]
fn fixtures_encode_to_their_bytes() {
    for f in fixtures() {
        for &v in f.versions {
            let mut out = vec![0xEE]; // encode appends
            let n = encode(v, &f.packet, &mut out).unwrap_or_else(|e| panic!("{} {v:?}: {e}", f.name));
            assert_eq!(&out[1..], f.bytes, "{} {v:?}", f.name);
            assert_eq!(n, f.bytes.len(), "{}", f.name);
            assert_eq!(encoded_len(v, &f.packet), f.bytes.len(), "{}", f.name);
        }
    }
}

#[test]
fn every_packet_type_has_a_fixture_in_every_version() {
    let all = fixtures();
    for v in [V31, V311, V5] {
        for t in 1u8..=15 {
            if t == 15 && v != V5 {
                continue;
            }
            assert!(
                all.iter().any(|f| f.versions.contains(&v) && f.packet.packet_type() as u8 == t),
                "no fixture for type {t} in {v:?}"
            );
        }
    }
}

#[test]
fn v3_cannot_express_v5_only_things() {
    let auth = Packet::Auth(Auth { reason_code: 0, properties: none() });
    assert_eq!(encode(V311, &auth, &mut Vec::new()), Err(CodecError::NOT_IN_VERSION));
    assert_eq!(encoded_len(V311, &auth), 0);
    let nack = Packet::Puback(ack(1, 0x80, none()));
    assert_eq!(encode(V311, &nack, &mut Vec::new()), Err(CodecError::NOT_IN_VERSION));
    let sub = Packet::Subscribe(Subscribe {
        packet_id: 1,
        subscriptions: vec![Subscription { filter: "a".into(), qos: 0, no_local: true, retain_as_published: false, retain_handling: 0 }],
        properties: none(),
    });
    assert_eq!(encode(V311, &sub, &mut Vec::new()), Err(CodecError::NOT_IN_VERSION));
    // Properties are dropped in v3.
    let with_props = Packet::Puback(ack(1, 0, Properties { reason_string: Some("x".into()), ..none() }));
    let mut out = Vec::new();
    encode(V311, &with_props, &mut out).unwrap();
    assert_eq!(out, [0x40, 0x02, 0x00, 0x01]);
    // A v5 AUTH is reserved in v3 when decoding.
    assert_eq!(decode(V311, &[0xF0, 0x00]), Err(CodecError::RESERVED_PACKET_TYPE));
}

#[test]
fn v5_long_forms_decode_like_short_forms() {
    // PUBACK with reason 0 and an empty property block.
    let p = decode(V5, &[0x40, 0x04, 0x00, 0x01, 0x00, 0x00]).unwrap();
    assert_eq!(p, Packet::Puback(ack(1, 0, none())));
    // DISCONNECT with reason 0 and an empty property block.
    let d = decode(V5, &[0xE0, 0x02, 0x00, 0x00]).unwrap();
    assert_eq!(d, Packet::Disconnect(Disconnect { reason_code: 0, properties: none() }));
}

/// MQTT 3.1 sends PUBREL, SUBSCRIBE and UNSUBSCRIBE at QoS 1 and sets DUP when it re-delivers
/// them (MQTT 3.1 section 2.1, DUP: "set when the client or server attempts to re-deliver a
/// PUBLISH, PUBREL, SUBSCRIBE or UNSUBSCRIBE message"), e.g. a PUBREL re-sent after reconnecting.
/// A 3.1 server accepts them like first sends; 3.1.1 and 5.0 reserve those flags as 0010
/// [MQTT-3.6.1-1] [MQTT-3.8.1-1] [MQTT-3.10.1-1] (codec_malformed.rs). Decode only: we never send DUP.
#[test]
fn v31_redelivered_pubrel_subscribe_unsubscribe_decode_like_first_sends() {
    let pubrel: &[u8] = &[
        0x6A, // PUBREL, flags 0b1010: DUP, QoS 1
        0x02, // remaining length 2
        0x00, 0x03, // packet id 3
    ];
    let subscribe: &[u8] = &[
        0x8A, // SUBSCRIBE, flags 0b1010: DUP, QoS 1
        0x06, // remaining length 6
        0x00, 0x0A, // packet id 10
        0x00, 0x01, b'#', // filter "#"
        0x01, // options: QoS 1
    ];
    let unsubscribe: &[u8] = &[
        0xAA, // UNSUBSCRIBE, flags 0b1010: DUP, QoS 1
        0x05, // remaining length 5
        0x00, 0x0B, // packet id 11
        0x00, 0x01, b'#', // filter "#"
    ];
    for dup_frame in [pubrel, subscribe, unsubscribe] {
        let mut first_send = dup_frame.to_vec();
        first_send[0] &= !0x08; // the same packet without DUP
        let expected = decode(V31, &first_send).unwrap();
        assert_eq!(decode(V31, dup_frame), Ok(expected.clone()), "{dup_frame:02x?}");
        assert_eq!(decode_from_client(V31, dup_frame), Ok(expected), "{dup_frame:02x?}");
        for v in [V311, V5] {
            assert_eq!(decode(v, dup_frame), Err(CodecError::RESERVED_FLAGS), "{dup_frame:02x?} {v:?}");
        }
    }
    assert_eq!(decode(V31, pubrel), Ok(Packet::Pubrel(ack(3, 0, none()))));
}

#[test]
fn large_remaining_length_uses_multi_byte_varint() {
    let publish = Packet::Publish(Publish {
        dup: false,
        qos: 0,
        retain: false,
        topic: "t".into(),
        packet_id: 0,
        payload: vec![7; 20_000],
        properties: none(),
    });
    let mut out = Vec::new();
    encode(V311, &publish, &mut out).unwrap();
    assert_eq!(&out[..4], &[0x30, 0xA3, 0x9C, 0x01]); // 20003 = 0x4E23
    assert_eq!(decode(V311, &out).unwrap(), publish);
    let connack = Packet::Connack(Connack {
        session_present: false,
        reason_code: 0,
        properties: Properties { reason_string: Some("r".repeat(300)), ..none() },
    });
    let mut out = Vec::new();
    encode(V5, &connack, &mut out).unwrap();
    assert_eq!(decode(V5, &out).unwrap(), connack);
}
