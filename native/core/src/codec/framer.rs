//! `Framer`: splits one connection's byte stream into whole MQTT frames without copying frames
//! that arrive whole, keeping only the bytes of an incomplete trailing frame.

use super::error::CodecError;
use super::header::parse_fixed_header;

/// Where the bytes of a frame are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameSource {
    /// Inside the `input` slice passed to `feed`.
    Input,
    /// Inside `Framer::held_frame()` (the frame began in an earlier feed).
    Held,
}

/// One whole frame found by `Framer::feed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef {
    /// First fixed header byte (packet type and flags).
    pub header: u8,
    /// Offset into the input slice (Input) or into `held_frame()` (Held, always 0).
    pub start: usize,
    /// Frame bytes, fixed header included.
    pub len: usize,
    pub source: FrameSource,
}

/// Longest fixed header: one type byte and a four-byte remaining length.
const MAX_HEADER_LEN: usize = 5;

/// The streaming framer, one per connection.
#[derive(Debug)]
pub struct Framer {
    max_packet_size: u32,
    /// Bytes of the frame being assembled across feeds. Reused: cleared, never shrunk.
    partial: Vec<u8>,
    /// Total length of the frame in `partial` once its fixed header is complete.
    partial_len: Option<usize>,
    /// The frame completed by the last feed (FrameSource::Held); swapped with `partial` so both
    /// buffers keep their capacity.
    held: Vec<u8>,
    failed: Option<CodecError>,
}

impl Framer {
    /// `max_packet_size` bounds whole frames, fixed header included; 0 means no limit beyond
    /// the protocol's own.
    pub fn new(max_packet_size: u32) -> Self {
        Framer { max_packet_size, partial: Vec::new(), partial_len: None, held: Vec::new(), failed: None }
    }

    pub fn set_max_packet_size(&mut self, n: u32) {
        self.max_packet_size = n;
    }

    /// Splits `input` into whole frames appended to `frames`. Bytes of an incomplete trailing frame
    /// are kept inside the framer. A frame that began in an earlier feed and completes in this one
    /// is `FrameSource::Held`, its bytes are in `held_frame()` until the next feed, and it is
    /// always the first frame of the feed. Fails on a fixed header that can never be valid:
    /// packet type 0, a remaining length longer than 4 bytes (0x81) or a frame larger than the
    /// maximum packet size (0x95, known from the fixed header, before the body is buffered).
    /// After an error the framer stays failed.
    pub fn feed(&mut self, input: &[u8], frames: &mut Vec<FrameRef>) -> Result<(), CodecError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let result = self.split_frames(input, frames);
        if let Err(e) = result {
            self.failed = Some(e);
        }
        result
    }

    /// The frame reported as `FrameSource::Held` by the last feed (empty if none).
    pub fn held_frame(&self) -> &[u8] {
        &self.held
    }

    /// Bytes of an incomplete frame being kept.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    fn split_frames(&mut self, input: &[u8], frames: &mut Vec<FrameRef>) -> Result<(), CodecError> {
        self.held.clear();
        let mut pos = 0;
        if !self.partial.is_empty() {
            pos = self.continue_partial(input, frames)?;
        }
        while pos < input.len() {
            let rest = &input[pos..];
            match parse_fixed_header(rest)? {
                Some(h) => {
                    let len = self.checked_frame_len(h.frame_len())?;
                    if rest.len() >= len {
                        frames.push(FrameRef { header: h.header, start: pos, len, source: FrameSource::Input });
                        pos += len;
                    } else {
                        self.partial_len = Some(len);
                        self.partial.extend_from_slice(rest);
                        return Ok(());
                    }
                }
                None => {
                    self.partial_len = None;
                    self.partial.extend_from_slice(rest);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Adds input to the frame begun in an earlier feed; returns the input bytes consumed.
    fn continue_partial(&mut self, input: &[u8], frames: &mut Vec<FrameRef>) -> Result<usize, CodecError> {
        let mut pos = 0;
        // Complete the fixed header one byte at a time (at most 5 bytes).
        while self.partial_len.is_none() {
            if pos == input.len() {
                return Ok(pos);
            }
            self.partial.push(input[pos]);
            pos += 1;
            if let Some(h) = parse_fixed_header(&self.partial)? {
                self.partial_len = Some(self.checked_frame_len(h.frame_len())?);
            } else {
                debug_assert!(self.partial.len() < MAX_HEADER_LEN);
            }
        }
        let total = self.partial_len.unwrap_or(0);
        let take = (total - self.partial.len()).min(input.len() - pos);
        self.partial.extend_from_slice(&input[pos..pos + take]);
        pos += take;
        if self.partial.len() == total {
            frames.push(FrameRef { header: self.partial[0], start: 0, len: total, source: FrameSource::Held });
            self.partial_len = None;
            std::mem::swap(&mut self.partial, &mut self.held);
        }
        Ok(pos)
    }

    /// Rejects frames above the maximum packet size [MQTT-3.1.2-24] from their fixed header alone.
    #[inline]
    fn checked_frame_len(&self, len: usize) -> Result<usize, CodecError> {
        if self.max_packet_size != 0 && len > self.max_packet_size as usize {
            return Err(CodecError::PACKET_TOO_LARGE);
        }
        Ok(len)
    }
}
