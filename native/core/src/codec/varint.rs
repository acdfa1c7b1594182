//! Variable Byte Integers (MQTT 5.0 section 1.5.5, 3.1.1 section 2.2.3): reading, sizing, writing.

use super::error::CodecError;

/// Largest value a four-byte variable byte integer can hold.
pub const VARINT_MAX: u32 = 268_435_455;

/// Reads a variable byte integer from the front of `buf`.
/// Returns `Ok(None)` when `buf` ends before the integer does (need more bytes),
/// `Ok(Some((value, bytes_used)))` otherwise. A fifth continuation byte is malformed
/// [MQTT-1.5.5-1]; non-minimal encodings are accepted (the minimum-length rule binds senders).
#[inline]
pub fn read_varint(buf: &[u8]) -> Result<Option<(u32, usize)>, CodecError> {
    let mut value: u32 = 0;
    for (i, &byte) in buf.iter().enumerate() {
        if i == 4 {
            return Err(CodecError::MALFORMED_VARINT);
        }
        value |= u32::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Some((value, i + 1)));
        }
    }
    if buf.len() >= 4 {
        // Four continuation bytes: a fifth would be needed, which is never valid.
        return Err(CodecError::MALFORMED_VARINT);
    }
    Ok(None)
}

/// Number of bytes the minimal encoding of `v` takes (1..=4; values above VARINT_MAX count as 4).
#[inline]
pub fn varint_len(v: u32) -> usize {
    match v {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

/// Writes the minimal encoding of `v` at the front of `out` and returns the bytes written.
/// `out` must hold at least `varint_len(v)` bytes and `v` must be at most VARINT_MAX (debug-asserted;
/// higher bits are dropped in release).
#[inline]
pub fn write_varint(out: &mut [u8], v: u32) -> usize {
    debug_assert!(v <= VARINT_MAX);
    let mut value = v;
    let mut i = 0;
    loop {
        let mut byte = (value & 0x7F) as u8;
        value >>= 7;
        if value != 0 && i < 3 {
            byte |= 0x80;
        }
        out[i] = byte;
        i += 1;
        if byte & 0x80 == 0 {
            return i;
        }
    }
}

/// Appends the minimal encoding of `v` to `out`.
#[inline]
pub fn push_varint(out: &mut Vec<u8>, v: u32) {
    let mut tmp = [0u8; 4];
    let n = write_varint(&mut tmp, v);
    out.extend_from_slice(&tmp[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_boundaries_round_trip() {
        let cases: &[(u32, &[u8])] = &[
            (0, &[0x00]),
            (127, &[0x7F]),
            (128, &[0x80, 0x01]),
            (16_383, &[0xFF, 0x7F]),
            (16_384, &[0x80, 0x80, 0x01]),
            (2_097_151, &[0xFF, 0xFF, 0x7F]),
            (2_097_152, &[0x80, 0x80, 0x80, 0x01]),
            (VARINT_MAX, &[0xFF, 0xFF, 0xFF, 0x7F]),
        ];
        for &(v, bytes) in cases {
            let mut out = [0u8; 4];
            assert_eq!(write_varint(&mut out, v), bytes.len());
            assert_eq!(&out[..bytes.len()], bytes);
            assert_eq!(varint_len(v), bytes.len());
            assert_eq!(read_varint(bytes).unwrap(), Some((v, bytes.len())));
        }
    }

    #[test]
    fn need_more_and_malformed() {
        assert_eq!(read_varint(&[]).unwrap(), None);
        assert_eq!(read_varint(&[0x80]).unwrap(), None);
        assert_eq!(read_varint(&[0x80, 0x80, 0x80]).unwrap(), None);
        assert_eq!(read_varint(&[0x80, 0x80, 0x80, 0x80]), Err(CodecError::MALFORMED_VARINT));
        assert_eq!(read_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x01]), Err(CodecError::MALFORMED_VARINT));
        // Non-minimal but at most 4 bytes: accepted.
        assert_eq!(read_varint(&[0x80, 0x00]).unwrap(), Some((0, 2)));
    }
}
