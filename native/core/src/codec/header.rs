//! The fixed header (MQTT 5.0 section 2.1): packet type and flags byte plus remaining length.

use super::error::CodecError;
use super::varint::read_varint;

/// A parsed fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedHeader {
    /// First byte: packet type (high nibble) and flags (low nibble).
    pub header: u8,
    /// Remaining length: bytes after the fixed header.
    pub remaining_len: u32,
    /// Bytes of the fixed header itself (2..=5).
    pub header_len: usize,
}

impl FixedHeader {
    /// Total frame bytes, fixed header included.
    #[inline]
    pub fn frame_len(&self) -> usize {
        self.header_len + self.remaining_len as usize
    }
}

/// Parses the fixed header at the front of `buf`. `Ok(None)` means more bytes are needed.
/// Packet type 0 is reserved [MQTT-2.1.2] and a remaining length longer than four bytes is
/// malformed [MQTT-1.5.5-1]: both can be rejected from the first bytes alone.
#[inline]
pub fn parse_fixed_header(buf: &[u8]) -> Result<Option<FixedHeader>, CodecError> {
    let Some(&header) = buf.first() else {
        return Ok(None);
    };
    if header >> 4 == 0 {
        return Err(CodecError::RESERVED_PACKET_TYPE);
    }
    match read_varint(&buf[1..]) {
        Ok(Some((remaining_len, n))) => Ok(Some(FixedHeader { header, remaining_len, header_len: 1 + n })),
        Ok(None) => Ok(None),
        Err(_) => Err(CodecError::REMAINING_LENGTH_TOO_LONG),
    }
}
