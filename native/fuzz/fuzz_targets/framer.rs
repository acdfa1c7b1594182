//! Fuzzes the framer and the decoders with arbitrary bytes split at arbitrary points: nothing may
//! panic, and whatever decodes must re-encode to bytes that decode to the same packet.
#![no_main]
use libfuzzer_sys::fuzz_target;
use spindle_core::codec::{self, FrameSource, Framer, ProtocolVersion};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let version = match data[0] % 3 {
        0 => ProtocolVersion::V31,
        1 => ProtocolVersion::V311,
        _ => ProtocolVersion::V5,
    };
    let split = data[1] as usize;
    let input = &data[2..];
    let mut framer = Framer::new(1 << 16);
    let mut frames = Vec::new();
    for chunk in input.chunks(split.max(1)) {
        frames.clear();
        let result = framer.feed(chunk, &mut frames);
        for f in &frames {
            let bytes = match f.source {
                FrameSource::Input => &chunk[f.start..f.start + f.len],
                FrameSource::Held => framer.held_frame(),
            };
            if f.header >> 4 == 3 {
                let _ = codec::decode_publish_view(version, bytes);
            }
            if let Ok(packet) = codec::decode(version, bytes) {
                let mut out = Vec::new();
                if codec::encode(version, &packet, &mut out).is_ok() {
                    let again = codec::decode(version, &out).expect("re-encoded packet decodes");
                    assert_eq!(again, packet);
                }
            }
        }
        if result.is_err() {
            break;
        }
    }
});
