//! Appending MQTT primitive fields (integers, strings, binary data) to an output `Vec<u8>`.

use super::error::CodecError;
use super::utf8::MAX_STRING_LEN;

#[inline]
pub(crate) fn push_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn push_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Two-byte length then the bytes; longer than 65535 bytes cannot be expressed [MQTT-1.5.4-1].
#[inline]
pub(crate) fn push_binary(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), CodecError> {
    if bytes.len() > MAX_STRING_LEN {
        return Err(CodecError::STRING_TOO_LONG);
    }
    push_u16(out, bytes.len() as u16);
    out.extend_from_slice(bytes);
    Ok(())
}

#[inline]
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) -> Result<(), CodecError> {
    push_binary(out, s.as_bytes())
}
