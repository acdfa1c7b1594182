//! The PUBLISH hot path: the allocation-free view agrees with the full decode on random packets,
//! write_publish output decodes back, packet identifiers and DUP patch in place, and forwarded
//! property blocks are rebuilt correctly.

use spindle_core::codec::*;
use ProtocolVersion::{V31, V311, V5};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_publish(rng: &mut Rng, version: ProtocolVersion) -> Publish {
    let qos = rng.below(3) as u8;
    let mut properties = Properties::default();
    if version == V5 {
        if rng.below(2) == 1 {
            properties.topic_alias = Some(1 + rng.below(10) as u16);
        }
        if rng.below(2) == 1 {
            properties.message_expiry_interval = Some(rng.next() as u32);
        }
        if rng.below(2) == 1 {
            properties.payload_format_indicator = Some(rng.below(2) as u8);
        }
        for i in 0..rng.below(3) {
            properties.user_properties.push((format!("k{i}"), "v".repeat(rng.below(5))));
        }
        if rng.below(3) == 0 {
            properties.correlation_data = Some(vec![1; rng.below(20)]);
        }
    }
    let topic = if properties.topic_alias.is_some() && rng.below(2) == 1 {
        String::new()
    } else {
        format!("a/{}/é", rng.below(100))
    };
    Publish {
        dup: qos > 0 && rng.below(2) == 1,
        qos,
        retain: rng.below(2) == 1,
        topic,
        packet_id: if qos > 0 { 1 + rng.below(65_000) as u16 } else { 0 },
        payload: vec![rng.next() as u8; rng.below(400)],
        properties,
    }
}

#[test]
fn view_agrees_with_full_decode() {
    let mut rng = Rng(12345);
    for version in [V31, V311, V5] {
        for _ in 0..500 {
            let p = random_publish(&mut rng, version);
            let mut frame = Vec::new();
            encode(version, &Packet::Publish(p.clone()), &mut frame).unwrap();
            let view = decode_publish_view(version, &frame).unwrap();
            assert_eq!(decode(version, &frame).unwrap(), Packet::Publish(p.clone()));
            assert_eq!((view.qos, view.dup, view.retain, view.packet_id), (p.qos, p.dup, p.retain, p.packet_id));
            assert_eq!(view.topic(&frame), p.topic.as_bytes());
            assert_eq!(view.payload(&frame), &p.payload[..]);
            assert_eq!(view.topic_alias, p.properties.topic_alias.unwrap_or(0));
            assert_eq!(view.message_expiry, p.properties.message_expiry_interval);
            assert_eq!(view.payload_format, p.properties.payload_format_indicator.unwrap_or(0));
            assert_eq!(view.payload_start + view.payload_len, frame.len() as u32);
            if version == V5 {
                let mut block = Vec::new();
                write_properties_block(&p.properties, &mut block).unwrap();
                assert_eq!(view.properties(&frame), &block[..]);
            } else {
                assert_eq!(view.props_len, 0);
            }
        }
    }
}

#[test]
fn write_publish_decodes_back_and_sizes_exactly() {
    let mut rng = Rng(777);
    for version in [V31, V311, V5] {
        for _ in 0..300 {
            let p = random_publish(&mut rng, version);
            let mut props = Vec::new();
            if version == V5 {
                write_properties_block(&p.properties, &mut props).unwrap();
            }
            let len = publish_frame_len(version, p.topic.len(), props.len(), p.payload.len(), p.qos);
            let mut out = vec![0u8; len + 7];
            let w = write_publish(version, &mut out, p.qos, p.dup, p.retain, p.topic.as_bytes(), p.packet_id, &props, &p.payload)
                .unwrap();
            assert_eq!(w.len, len);
            assert_eq!(decode(version, &out[..len]).unwrap(), Packet::Publish(p.clone()));
            let mut expected = Vec::new();
            encode(version, &Packet::Publish(p.clone()), &mut expected).unwrap();
            assert_eq!(&out[..len], &expected[..]);
            assert_eq!(w.packet_id_offset == 0, p.qos == 0);
            assert!(write_publish(version, &mut out[..len - 1], p.qos, p.dup, p.retain, p.topic.as_bytes(), p.packet_id, &props, &p.payload)
                .is_err_and(|e| e.code == "BUFFER_TOO_SMALL"));
        }
    }
}

#[test]
fn patch_packet_id_and_set_dup_in_place() {
    let mut out = [0u8; 64];
    let w = write_publish(V311, &mut out, 1, false, false, b"a/b", 0, &[], b"payload").unwrap();
    let frame = &mut out[..w.len];
    for id in [1u16, 2, 0xFFFF] {
        patch_packet_id(frame, w.packet_id_offset, id);
        match decode(V311, frame).unwrap() {
            Packet::Publish(p) => {
                assert_eq!(p.packet_id, id);
                assert_eq!(p.payload, b"payload");
                assert!(!p.dup);
            }
            other => panic!("{other:?}"),
        }
    }
    set_dup(frame);
    assert!(decode_publish_view(V311, frame).unwrap().dup);
}

#[test]
fn write_publish_refuses_what_cannot_be_sent() {
    let mut out = [0u8; 64];
    let err = |r: Result<PublishWritten, CodecError>| r.unwrap_err().code;
    assert_eq!(err(write_publish(V311, &mut out, 3, false, false, b"t", 1, &[], b"")), "INVALID_QOS");
    assert_eq!(err(write_publish(V311, &mut out, 0, true, false, b"t", 0, &[], b"")), "DUP_ON_QOS0");
    assert_eq!(err(write_publish(V311, &mut out, 0, false, false, b"t", 0, &[0x01, 0x01], b"")), "NOT_IN_VERSION");
}

#[test]
fn rewrite_publish_properties_for_forwarding() {
    let inbound = Properties {
        payload_format_indicator: Some(1),
        message_expiry_interval: Some(100),
        content_type: Some("json".into()),
        topic_alias: Some(3),
        user_properties: vec![("a".into(), "1".into()), ("b".into(), "2".into())],
        ..Properties::default()
    };
    let mut block = Vec::new();
    write_properties_block(&inbound, &mut block).unwrap();
    let mut out = Vec::new();
    rewrite_publish_properties(&block, Some(40), Some(9), &[7, 300], &mut out).unwrap();
    let mut framed = Vec::new();
    spindle_core::codec::varint::push_varint(&mut framed, out.len() as u32);
    framed.extend_from_slice(&out);
    let (forwarded, _) = decode_properties(&framed, PropertyContext::Publish).unwrap();
    assert_eq!(
        forwarded,
        Properties {
            message_expiry_interval: Some(40),
            topic_alias: Some(9),
            subscription_identifiers: vec![7, 300],
            ..inbound.clone()
        }
    );
    // Forwarding without alias / expiry / ids drops them.
    let mut out = Vec::new();
    rewrite_publish_properties(&block, None, None, &[], &mut out).unwrap();
    let mut w = [0u8; 128];
    let written = write_publish(V5, &mut w, 0, false, false, b"t", 0, &out, b"x").unwrap();
    let view = decode_publish_view(V5, &w[..written.len]).unwrap();
    assert_eq!((view.topic_alias, view.message_expiry, view.payload_format), (0, None, 1));
    assert_eq!(rewrite_publish_properties(&block, None, Some(0), &[], &mut Vec::new()).unwrap_err().code, "TOPIC_ALIAS_ZERO");
}

#[test]
fn empty_topic_with_alias_gives_zero_topic_len() {
    let frame = [0x30, 0x07, 0x00, 0x00, 0x03, 0x23, 0x00, 0x02, b'x'];
    let view = decode_publish_view(V5, &frame).unwrap();
    assert_eq!((view.topic_len, view.topic_alias, view.payload_start, view.payload_len), (0, 2, 8, 1));
    assert_eq!((view.props_start, view.props_len), (5, 3));
}

#[test]
fn view_rejects_other_packet_types() {
    assert_eq!(decode_publish_view(V5, &[0xC0, 0x00]).unwrap_err().code, "UNEXPECTED_PACKET_TYPE");
}
