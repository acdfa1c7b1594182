//! MQTT string rules: UTF-8 encoded strings (MQTT 5.0 section 1.5.4), topic names, topic filters
//! and shared subscription filters (section 4.7, 4.8.2).

use super::error::CodecError;

/// Longest string or binary field: its length is a two-byte integer [MQTT-1.5.4-1].
pub const MAX_STRING_LEN: usize = 65_535;

/// Prefix of a shared subscription filter [MQTT-4.8.2-1].
pub const SHARED_PREFIX: &str = "$share/";

/// Checks an MQTT UTF-8 encoded string: well-formed UTF-8 without surrogates [MQTT-1.5.4-1],
/// no U+0000 [MQTT-1.5.4-2], at most 65535 bytes.
#[inline]
pub fn check_utf8(bytes: &[u8]) -> Result<&str, CodecError> {
    if bytes.len() > MAX_STRING_LEN {
        return Err(CodecError::STRING_TOO_LONG);
    }
    // std's validator rejects overlong forms and surrogate code points, as MQTT requires.
    let s = std::str::from_utf8(bytes).map_err(|_| CodecError::INVALID_UTF8)?;
    // In UTF-8 a zero byte only ever encodes U+0000.
    if bytes.contains(&0) {
        return Err(CodecError::NULL_CHARACTER);
    }
    Ok(s)
}

/// Checks a topic name: a valid string, at least one character [MQTT-4.7.3-1],
/// no wildcard characters [MQTT-4.7.0-1] [MQTT-3.3.2-2].
#[inline]
pub fn check_topic_name(bytes: &[u8]) -> Result<&str, CodecError> {
    let s = check_utf8(bytes)?;
    if s.is_empty() {
        return Err(CodecError::EMPTY_TOPIC_NAME);
    }
    if bytes.iter().any(|&b| b == b'+' || b == b'#') {
        return Err(CodecError::WILDCARD_IN_TOPIC_NAME);
    }
    Ok(s)
}

/// Checks a topic filter: a valid string, at least one character [MQTT-4.7.3-1], '#' only as a
/// whole last level [MQTT-4.7.1-2], '+' only as a whole level [MQTT-4.7.1-3], and for a
/// `$share/{group}/{filter}` filter a non-empty group without wildcards followed by a filter
/// [MQTT-4.8.2-1] [MQTT-4.8.2-2].
pub fn check_topic_filter(bytes: &[u8]) -> Result<&str, CodecError> {
    let s = check_utf8(bytes)?;
    if s.is_empty() {
        return Err(CodecError::EMPTY_TOPIC_FILTER);
    }
    check_filter_levels(s)?;
    if s.starts_with(SHARED_PREFIX) || s == "$share" {
        split_shared(s).ok_or(CodecError::INVALID_SHARED_SUBSCRIPTION)?;
    }
    Ok(s)
}

/// Checks the wildcard placement of every level of a non-empty filter.
fn check_filter_levels(s: &str) -> Result<(), CodecError> {
    let mut levels = s.split('/').peekable();
    while let Some(level) = levels.next() {
        let is_last = levels.peek().is_none();
        match level {
            "#" if !is_last => return Err(CodecError::INVALID_WILDCARD),
            "#" | "+" => {}
            _ if level.contains(['+', '#']) => return Err(CodecError::INVALID_WILDCARD),
            _ => {}
        }
    }
    Ok(())
}

/// Splits `$share/{group}/{filter}` into `(group, filter)`. Returns None when `filter` is not a
/// shared subscription or its group is empty or holds a wildcard, or its filter is empty.
/// The group cannot contain '/' by construction: the first '/' after the prefix ends it.
pub fn split_shared(filter: &str) -> Option<(&str, &str)> {
    let rest = filter.strip_prefix(SHARED_PREFIX)?;
    let (group, inner) = rest.split_once('/')?;
    if group.is_empty() || group.contains(['+', '#']) || inner.is_empty() {
        return None;
    }
    Some((group, inner))
}

/// True when `filter` starts with the shared subscription prefix.
#[inline]
pub fn is_shared_filter(filter: &str) -> bool {
    filter.starts_with(SHARED_PREFIX)
}

/// Checks a payload announced as UTF-8 by Payload Format Indicator 1 [MQTT-3.3.2-4] (receivers MAY
/// check it; answer 0x99 when they do).
pub fn check_utf8_payload(payload: &[u8]) -> Result<(), CodecError> {
    std::str::from_utf8(payload).map(|_| ()).map_err(|_| CodecError::PAYLOAD_NOT_UTF8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings() {
        assert_eq!(check_utf8(b"abc"), Ok("abc"));
        assert_eq!(check_utf8(b"a\0b"), Err(CodecError::NULL_CHARACTER));
        assert_eq!(check_utf8(&[0xC0, 0x80]), Err(CodecError::INVALID_UTF8)); // overlong NUL
        assert_eq!(check_utf8(&[0xED, 0xA0, 0x80]), Err(CodecError::INVALID_UTF8)); // surrogate
        assert_eq!(check_utf8(&vec![b'a'; 65_536]), Err(CodecError::STRING_TOO_LONG));
    }

    #[test]
    fn topic_names() {
        assert!(check_topic_name(b"a/b").is_ok());
        assert!(check_topic_name(b"/").is_ok());
        assert_eq!(check_topic_name(b""), Err(CodecError::EMPTY_TOPIC_NAME));
        assert_eq!(check_topic_name(b"a/+"), Err(CodecError::WILDCARD_IN_TOPIC_NAME));
        assert_eq!(check_topic_name(b"a#"), Err(CodecError::WILDCARD_IN_TOPIC_NAME));
    }

    #[test]
    fn topic_filters() {
        for ok in ["#", "+", "a/#", "+/+", "/+/", "a/+/b", "$share/g/a/#", "$share/g/#", "$shared/x"] {
            assert!(check_topic_filter(ok.as_bytes()).is_ok(), "{ok}");
        }
        for bad in ["a#", "#/a", "a+/b", "a/b+", "a/#/b"] {
            assert_eq!(check_topic_filter(bad.as_bytes()), Err(CodecError::INVALID_WILDCARD), "{bad}");
        }
        for bad in ["$share", "$share/", "$share//a", "$share/g", "$share/g/", "$share/+/a", "$share/#"] {
            assert!(check_topic_filter(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(check_topic_filter(b""), Err(CodecError::EMPTY_TOPIC_FILTER));
        assert_eq!(split_shared("$share/g/a/b"), Some(("g", "a/b")));
    }
}
