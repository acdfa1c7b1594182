//! `Reader`: a bounds-checked cursor over one packet's bytes. Running out of bytes inside a frame
//! whose length is already known is a malformed packet (TRUNCATED), never "need more".

use super::error::CodecError;
use super::utf8::check_utf8;
use super::varint::read_varint;

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Reader over `buf` starting at `pos` (offsets stay relative to `buf`).
    #[inline]
    pub(crate) fn at(buf: &'a [u8], pos: usize) -> Self {
        Reader { buf, pos }
    }

    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Fails with TRAILING_BYTES unless every byte was read.
    #[inline]
    pub(crate) fn expect_end(&self) -> Result<(), CodecError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(CodecError::TRAILING_BYTES)
        }
    }

    #[inline]
    pub(crate) fn read_u8(&mut self) -> Result<u8, CodecError> {
        let b = *self.buf.get(self.pos).ok_or(CodecError::TRUNCATED)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub(crate) fn read_u16(&mut self) -> Result<u16, CodecError> {
        let b = self.read_bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    #[inline]
    pub(crate) fn read_u32(&mut self) -> Result<u32, CodecError> {
        let b = self.read_bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
    pub(crate) fn read_varint(&mut self) -> Result<u32, CodecError> {
        match read_varint(&self.buf[self.pos..])? {
            Some((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            None => Err(CodecError::TRUNCATED),
        }
    }

    #[inline]
    pub(crate) fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.remaining() < n {
            return Err(CodecError::TRUNCATED);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Binary data: two-byte length then that many bytes (MQTT 5.0 section 1.5.6).
    #[inline]
    pub(crate) fn read_binary(&mut self) -> Result<&'a [u8], CodecError> {
        let n = self.read_u16()? as usize;
        self.read_bytes(n)
    }

    /// UTF-8 encoded string, checked [MQTT-1.5.4-1] [MQTT-1.5.4-2].
    #[inline]
    pub(crate) fn read_str(&mut self) -> Result<&'a str, CodecError> {
        check_utf8(self.read_binary()?)
    }

    /// The bytes from `start` to the current position.
    #[inline]
    pub(crate) fn bytes_since(&self, start: usize) -> &'a [u8] {
        &self.buf[start..self.pos]
    }

    /// Everything not read yet, without consuming it.
    #[inline]
    pub(crate) fn peek_rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Everything not read yet.
    #[inline]
    pub(crate) fn read_rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
}
