//! Framer: one per connection, owned by the worker thread that owns the socket. One native call
//! per socket read: `feed` splits the chunk into whole packets and writes a flat descriptor per
//! packet into a caller-supplied Uint32Array (no objects, no Buffers created). PUBLISH packets are
//! fully validated and decoded into offsets here; other packets are decoded on demand with
//! `decodePacket` (they are rare).

use napi::bindgen_prelude::*;
use napi_derive::napi;
use spindle_core::codec::{self, CodecError, FrameRef, FrameSource, ProtocolVersion};

use crate::errors::ErrorInfo;

/// u32 slots per packet in the descriptor table.
pub const DESC_SLOTS: u32 = 12;
/// Descriptor word 0: bits 0-7 the fixed header byte; bit 8 the packet's bytes are in
/// `takeHeld()`, not in the chunk; bit 9 a Message Expiry Interval is present (word 11);
/// bits 10-11 payload format indicator.
pub const FLAG_HELD: u32 = 1 << 8;
pub const FLAG_EXPIRY: u32 = 1 << 9;

#[napi]
pub struct Framer {
    inner: codec::Framer,
    frames: Vec<FrameRef>,
    /// Frames split by the last feed but not yet described (the table was full).
    next: usize,
    version: ProtocolVersion,
    error: Option<CodecError>,
}

#[napi]
impl Framer {
    /// `maxPacketSize`: the largest packet accepted, fixed header included (checked from the
    /// fixed header alone, before the body is buffered).
    #[napi(constructor, catch_unwind)]
    pub fn new(max_packet_size: u32) -> Self {
        Framer {
            inner: codec::Framer::new(max_packet_size),
            // Grows with the largest read (amortised); an idle connection holds a few entries, not 64.
            frames: Vec::new(),
            next: 0,
            version: ProtocolVersion::V311,
            error: None,
        }
    }

    /// The protocol level negotiated by CONNECT (3, 4 or 5); PUBLISH decoding depends on it.
    #[napi(catch_unwind)]
    pub fn set_version(&mut self, level: u32) -> Result<(), String> {
        self.version = u8::try_from(level)
            .ok()
            .and_then(ProtocolVersion::from_level)
            .ok_or_else(|| Error::new("UNSUPPORTED_PROTOCOL_VERSION".to_string(), format!("protocol level {level}")))?;
        Ok(())
    }

    #[napi(catch_unwind)]
    pub fn set_max_packet_size(&mut self, max_packet_size: u32) {
        self.inner.set_max_packet_size(max_packet_size);
    }

    /// Splits `chunk` into packets and describes up to `desc.length / 12` of them. Returns how
    /// many were described. When the table fills up, call `more(chunk, desc)` until it returns 0.
    /// When a packet is invalid, the packets before it are still described and `error` is set:
    /// handle those, then close the connection with `error.reason`.
    #[napi(catch_unwind)]
    pub fn feed(&mut self, chunk: &[u8], mut desc: Uint32ArraySlice) -> u32 {
        // SAFETY: the table is only read by JS after this call returns (same thread).
        let desc = unsafe { desc.as_mut() };
        self.frames.clear();
        self.next = 0;
        if self.error.is_some() {
            return 0;
        }
        if let Err(e) = self.inner.feed(chunk, &mut self.frames) {
            self.error = Some(e);
        }
        self.describe(chunk, desc)
    }

    /// Describes the packets of the last `feed` that did not fit in the table.
    #[napi(catch_unwind)]
    pub fn more(&mut self, chunk: &[u8], mut desc: Uint32ArraySlice) -> u32 {
        // SAFETY: as in feed.
        let desc = unsafe { desc.as_mut() };
        self.describe(chunk, desc)
    }

    /// A copy of the packet that began in an earlier read and completed in the last feed (the
    /// descriptor with FLAG_HELD). At most one per feed: the first.
    #[napi(catch_unwind)]
    pub fn take_held(&self) -> Buffer {
        Buffer::from(self.inner.held_frame().to_vec())
    }

    /// The error that stopped the framer, if any. The framer stays failed.
    #[napi(getter, catch_unwind)]
    pub fn error(&self) -> Option<ErrorInfo> {
        self.error.map(ErrorInfo::from)
    }

    /// Bytes of an incomplete packet being kept for the next read.
    #[napi(getter, catch_unwind)]
    pub fn buffered(&self) -> u32 {
        self.inner.buffered() as u32
    }
}

impl Framer {
    fn describe(&mut self, chunk: &[u8], desc: &mut [u32]) -> u32 {
        let capacity = desc.len() / DESC_SLOTS as usize;
        let mut count = 0usize;
        while self.next < self.frames.len() && count < capacity {
            let frame = self.frames[self.next];
            let bytes = match frame.source {
                FrameSource::Input => &chunk[frame.start..frame.start + frame.len],
                FrameSource::Held => self.inner.held_frame(),
            };
            let slot = &mut desc[count * DESC_SLOTS as usize..(count + 1) * DESC_SLOTS as usize];
            let held = matches!(frame.source, FrameSource::Held);
            let base = if held { 0 } else { frame.start as u32 };
            if let Err(e) = describe_frame(self.version, frame.header, bytes, base, held, slot) {
                // Stop at the first invalid packet: what came before it stands.
                self.error = Some(e);
                self.frames.truncate(self.next);
                break;
            }
            self.next += 1;
            count += 1;
        }
        count as u32
    }
}

pub(crate) fn describe_frame(
    version: ProtocolVersion,
    header: u8,
    bytes: &[u8],
    base: u32,
    held: bool,
    slot: &mut [u32],
) -> std::result::Result<(), CodecError> {
    let mut word0 = header as u32;
    if held {
        word0 |= FLAG_HELD;
    }
    slot[1] = base;
    slot[2] = bytes.len() as u32;
    if header >> 4 == 3 {
        let view = codec::decode_publish_view(version, bytes)?;
        if view.message_expiry.is_some() {
            word0 |= FLAG_EXPIRY;
        }
        word0 |= (view.payload_format as u32 & 3) << 10;
        slot[3] = base + view.topic_start;
        slot[4] = view.topic_len;
        slot[5] = view.packet_id as u32;
        slot[6] = base + view.props_start;
        slot[7] = view.props_len;
        slot[8] = base + view.payload_start;
        slot[9] = view.payload_len;
        slot[10] = view.topic_alias as u32;
        slot[11] = view.message_expiry.unwrap_or(0);
    } else {
        slot[3..12].fill(0);
    }
    slot[0] = word0;
    Ok(())
}
