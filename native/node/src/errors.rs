//! The one place where core errors become JavaScript errors. Hot-path calls (Framer.feed,
//! encodePublish) do not throw: they report an `ErrorInfo` the caller reads. Everything else throws
//! a JS Error whose `code` is the core's stable string code and whose message carries the MQTT 5
//! reason code as `[0xNN]`; src/native rebuilds a typed `CodecError`/`TopicError` from that.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use spindle_core::codec::CodecError;
use spindle_core::topic::TopicError;

/// A core error as plain data: what crosses into JavaScript without throwing.
#[napi(object)]
#[derive(Clone)]
pub struct ErrorInfo {
    /// MQTT 5 reason code (0x81 malformed packet, 0x82 protocol error, ...).
    pub reason: u32,
    /// Stable string code, e.g. "MALFORMED_VARINT".
    pub code: String,
    pub message: String,
}

impl From<CodecError> for ErrorInfo {
    fn from(e: CodecError) -> Self {
        ErrorInfo { reason: e.reason as u32, code: e.code.to_string(), message: e.message.to_string() }
    }
}

impl From<TopicError> for ErrorInfo {
    fn from(e: TopicError) -> Self {
        ErrorInfo { reason: e.reason as u32, code: e.code.to_string(), message: e.message.to_string() }
    }
}

/// A thrown JS error carrying `code` and the reason code in the message prefix.
pub fn to_js_error(info: ErrorInfo) -> Error<String> {
    Error::new(info.code, format!("[0x{:02x}] {}", info.reason, info.message))
}

pub fn codec_error(e: CodecError) -> Error<String> {
    to_js_error(e.into())
}

pub fn topic_error(e: TopicError) -> Error<String> {
    to_js_error(e.into())
}

pub fn io_error(e: std::io::Error) -> Error<String> {
    let code = match e.kind() {
        std::io::ErrorKind::AddrInUse => "EADDRINUSE",
        std::io::ErrorKind::AddrNotAvailable => "EADDRNOTAVAIL",
        std::io::ErrorKind::PermissionDenied => "EACCES",
        std::io::ErrorKind::InvalidInput => "EINVAL",
        _ => "EIO",
    };
    Error::new(code.to_string(), e.to_string())
}

pub fn invalid_arg(code: &str, message: String) -> Error<String> {
    Error::new(code.to_string(), message)
}

/// Proves the panic mapping in tests: a Rust panic must reach JS as an exception.
#[napi(catch_unwind)]
pub fn debug_panic(message: String) {
    panic!("{message}");
}
