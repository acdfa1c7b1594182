//! Framer tests: need-more-bytes states, fixed headers that can never be valid, and a seeded
//! randomized check that any split of a stream of valid packets yields the same frames as feeding
//! it whole (including one byte at a time).

use spindle_core::codec::*;
use ProtocolVersion::{V31, V311, V5};

/// Seeded xorshift64 so failures reproduce.
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

fn random_packet(rng: &mut Rng) -> Packet {
    let qos = rng.below(3) as u8;
    match rng.below(6) {
        0 => Packet::Publish(Publish {
            dup: false,
            qos,
            retain: rng.below(2) == 1,
            topic: format!("t/{}", rng.below(1000)),
            packet_id: if qos > 0 { 1 + rng.below(65_000) as u16 } else { 0 },
            // Sizes crossing the 1-, 2- and 3-byte remaining length boundaries.
            payload: vec![0x5A; [0, 10, 120, 200, 20_000][rng.below(5)]],
            properties: Properties { message_expiry_interval: Some(rng.below(100) as u32), ..Properties::default() },
        }),
        1 => Packet::Puback(Ack { packet_id: 1 + rng.below(100) as u16, reason_code: 0, properties: Properties::default() }),
        2 => Packet::Pingreq,
        3 => Packet::Subscribe(Subscribe {
            packet_id: 1 + rng.below(100) as u16,
            subscriptions: vec![Subscription {
                filter: "a/+/#".into(),
                qos,
                no_local: false,
                retain_as_published: false,
                retain_handling: 0,
            }],
            properties: Properties::default(),
        }),
        4 => Packet::Disconnect(Disconnect { reason_code: 0, properties: Properties::default() }),
        _ => Packet::Auth(Auth {
            reason_code: 0x18,
            properties: Properties { authentication_method: Some("m".repeat(rng.below(300))), ..Properties::default() },
        }),
    }
}

/// Feeds `chunks` in order and returns every frame's bytes.
fn collect_frames(framer: &mut Framer, chunks: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut frames = Vec::new();
    for chunk in chunks {
        frames.clear();
        framer.feed(chunk, &mut frames).unwrap();
        for (i, f) in frames.iter().enumerate() {
            let bytes = match f.source {
                FrameSource::Input => &chunk[f.start..f.start + f.len],
                FrameSource::Held => {
                    assert_eq!(i, 0, "a held frame is always first");
                    assert_eq!(f.start, 0);
                    &framer.held_frame()[..f.len]
                }
            };
            assert_eq!(bytes[0], f.header);
            out.push(bytes.to_vec());
        }
    }
    out
}

fn random_stream(rng: &mut Rng, packets: usize) -> (Vec<u8>, Vec<Packet>) {
    let mut stream = Vec::new();
    let mut all = Vec::new();
    for _ in 0..packets {
        let p = random_packet(rng);
        encode(V5, &p, &mut stream).unwrap();
        all.push(p);
    }
    (stream, all)
}

#[test]
fn random_splits_yield_the_same_frames_as_whole_feed() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _round in 0..40 {
        let (stream, packets) = random_stream(&mut rng, 60);
        let whole = collect_frames(&mut Framer::new(0), &[&stream]);
        assert_eq!(whole.len(), packets.len());
        for (frame, packet) in whole.iter().zip(&packets) {
            assert_eq!(&decode(V5, frame).unwrap(), packet);
        }
        // Random cut points.
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut pos = 0;
        while pos < stream.len() {
            let n = (1 + rng.below(300)).min(stream.len() - pos);
            chunks.push(&stream[pos..pos + n]);
            pos += n;
        }
        let mut framer = Framer::new(0);
        assert_eq!(collect_frames(&mut framer, &chunks), whole);
        assert_eq!(framer.buffered(), 0);
        // Byte at a time.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(collect_frames(&mut Framer::new(0), &bytes), whole);
    }
}

#[test]
fn need_more_bytes_is_a_state() {
    let mut framer = Framer::new(0);
    let mut frames = Vec::new();
    framer.feed(&[0x30], &mut frames).unwrap(); // header byte only
    assert!(frames.is_empty());
    assert_eq!(framer.buffered(), 1);
    framer.feed(&[0x80], &mut frames).unwrap(); // remaining length continues
    assert!(frames.is_empty());
    framer.feed(&[0x01], &mut frames).unwrap(); // remaining length 128
    assert!(frames.is_empty());
    assert_eq!(framer.buffered(), 3);
    framer.feed(&[0u8; 100], &mut frames).unwrap();
    assert!(frames.is_empty());
    assert_eq!(framer.buffered(), 103);
    // The last 28 bytes complete it, followed by a whole PINGREQ and half of another.
    let mut tail = vec![0u8; 28];
    tail.extend_from_slice(&[0xC0, 0x00, 0xC0]);
    framer.feed(&tail, &mut frames).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0], FrameRef { header: 0x30, start: 0, len: 131, source: FrameSource::Held });
    assert_eq!(framer.held_frame().len(), 131);
    assert_eq!(frames[1], FrameRef { header: 0xC0, start: 28, len: 2, source: FrameSource::Input });
    assert_eq!(framer.buffered(), 1);
    frames.clear();
    framer.feed(&[0x00], &mut frames).unwrap();
    assert_eq!(frames, vec![FrameRef { header: 0xC0, start: 0, len: 2, source: FrameSource::Held }]);
    frames.clear();
    framer.feed(&[], &mut frames).unwrap();
    assert!(frames.is_empty());
    assert!(framer.held_frame().is_empty());
    assert_eq!(framer.buffered(), 0);
}

#[test]
fn five_byte_remaining_length_is_rejected_and_sticks() {
    let mut framer = Framer::new(0);
    let mut frames = Vec::new();
    let err = framer.feed(&[0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], &mut frames).unwrap_err();
    assert_eq!((err.code, err.reason), ("REMAINING_LENGTH_TOO_LONG", 0x81));
    assert_eq!(framer.feed(&[0xC0, 0x00], &mut frames), Err(err));
    // Also when the header arrives byte by byte.
    let mut framer = Framer::new(0);
    for b in [0x30, 0x80, 0x80, 0x80] {
        framer.feed(&[b], &mut frames).unwrap();
    }
    assert_eq!(framer.feed(&[0x80], &mut frames).unwrap_err().code, "REMAINING_LENGTH_TOO_LONG");
}

#[test]
fn too_large_packet_is_rejected_before_its_body() {
    let mut framer = Framer::new(1024);
    let mut frames = Vec::new();
    // Remaining length 2000: only the fixed header has arrived.
    let err = framer.feed(&[0x30, 0xD0, 0x0F], &mut frames).unwrap_err();
    assert_eq!((err.code, err.reason), ("PACKET_TOO_LARGE", 0x95));
    assert_eq!(framer.buffered(), 0);
    // Split header: detected as soon as the remaining length is complete.
    let mut framer = Framer::new(1024);
    framer.feed(&[0xC0, 0x00, 0x30, 0xD0], &mut frames).unwrap();
    assert_eq!(framer.feed(&[0x0F], &mut frames).unwrap_err().code, "PACKET_TOO_LARGE");
    // Exactly at the limit is fine; raising the limit takes effect.
    let mut framer = Framer::new(4);
    frames.clear();
    framer.feed(&[0x40, 0x02, 0x00, 0x01], &mut frames).unwrap();
    assert_eq!(frames.len(), 1);
    framer.set_max_packet_size(3);
    assert!(framer.feed(&[0x40, 0x02, 0x00, 0x01], &mut frames).is_err());
}

#[test]
fn packet_type_zero_is_rejected() {
    let mut frames = Vec::new();
    let err = Framer::new(0).feed(&[0x00, 0x00], &mut frames).unwrap_err();
    assert_eq!((err.code, err.reason), ("RESERVED_PACKET_TYPE", 0x81));
}

/// Issue 11: an MQTT 3.1 client reconnects and re-sends its PUBREL with DUP set (0x6A). The framer
/// is version-neutral (it checks no flags, so the frame reaches the decoder whatever the version);
/// the decoder accepts DUP on PUBREL in 3.1 only (MQTT 3.1 section 2.1) and keeps the 3.1.1 / 5.0
/// rule that PUBREL flags are 0010 [MQTT-3.6.1-1].
#[test]
fn v31_pubrel_with_dup_passes_the_framer_and_decodes_in_v31_only() {
    let stream: &[u8] = &[
        0x10, 0x0F, // CONNECT, remaining length 15
        0x00, 0x06, b'M', b'Q', b'I', b's', b'd', b'p', 0x03, // "MQIsdp" level 3
        0x00, 0x00, 0x3C, // no clean session, keep alive 60
        0x00, 0x01, b'c', // client id "c"
        0x6A, 0x02, 0x00, 0x07, // PUBREL with DUP (re-sent), packet id 7
        0x62, 0x02, 0x00, 0x08, // PUBREL, packet id 8
    ];
    let whole = collect_frames(&mut Framer::new(0), &[stream]);
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(collect_frames(&mut Framer::new(0), &bytes), whole);
    assert_eq!(whole.len(), 3);
    match decode(V31, &whole[0]) {
        Ok(Packet::Connect(c)) => assert_eq!(c.version, V31),
        other => panic!("{other:?}"),
    }
    let resent = &whole[1];
    assert_eq!(resent[0], 0x6A);
    let release = |id| Ok(Packet::Pubrel(Ack { packet_id: id, reason_code: 0, properties: Properties::default() }));
    assert_eq!(decode_from_client(V31, resent), release(7));
    assert_eq!(decode_from_client(V31, &whole[2]), release(8));
    for v in [V311, V5] {
        let err = decode_from_client(v, resent).unwrap_err();
        assert_eq!((err.code, err.reason), ("RESERVED_FLAGS", 0x81), "{v:?}");
    }
}
