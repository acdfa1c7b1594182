//! Owns topic-name / topic-filter syntax: validation, the reference matcher and `$share`/`$queue`
//! parsing. Pure functions, no state: called from any thread (subscribe path, cache updates, tests).

use std::fmt;

/// Longest topic name or filter the protocol can carry: a UTF-8 string with a u16 length [MQTT-1.5.4].
pub const MAX_TOPIC_LEN: usize = 65_535;

/// Reason code 0x8F "Topic Filter invalid" (SUBACK/UNSUBACK) and 0x90 "Topic Name invalid" (PUBLISH).
pub const REASON_FILTER_INVALID: u8 = 0x8F;
pub const REASON_NAME_INVALID: u8 = 0x90;
/// 0x82 Protocol Error (No Local on a shared subscription [MQTT-3.8.3-4]).
pub const REASON_PROTOCOL_ERROR: u8 = 0x82;

/// Why a topic or filter was rejected: an MQTT v5 reason code plus a stable machine-readable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicError {
    pub reason: u8,
    pub code: &'static str,
    pub message: &'static str,
}

impl fmt::Display for TopicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (reason 0x{:02X}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for TopicError {}

const fn filter_err(code: &'static str, message: &'static str) -> TopicError {
    TopicError { reason: REASON_FILTER_INVALID, code, message }
}
const fn name_err(code: &'static str, message: &'static str) -> TopicError {
    TopicError { reason: REASON_NAME_INVALID, code, message }
}

pub const ERR_EMPTY_FILTER: TopicError = filter_err("EMPTY_TOPIC", "topic filter must be at least one character long");
pub const ERR_FILTER_TOO_LONG: TopicError = filter_err("TOPIC_TOO_LONG", "topic filter is longer than 65535 bytes");
pub const ERR_FILTER_NUL: TopicError = filter_err("NULL_CHARACTER", "topic filter contains U+0000");
pub const ERR_INVALID_WILDCARD: TopicError =
    filter_err("INVALID_WILDCARD", "'#' must be a whole last level and '+' a whole level");
pub const ERR_INVALID_SHARE_GROUP: TopicError =
    filter_err("INVALID_SHARE_GROUP", "share name must be non-empty and contain no '/', '+' or '#'");
pub const ERR_INVALID_SHARE_FILTER: TopicError =
    filter_err("INVALID_SHARE_FILTER", "a shared subscription needs a topic filter after the share name");
pub const ERR_SHARED_NO_LOCAL: TopicError = TopicError {
    reason: REASON_PROTOCOL_ERROR,
    code: "SHARED_NO_LOCAL",
    message: "No Local must not be set on a shared subscription",
};
pub const ERR_EMPTY_TOPIC: TopicError = name_err("EMPTY_TOPIC", "topic name must be at least one character long");
pub const ERR_TOPIC_TOO_LONG: TopicError = name_err("TOPIC_TOO_LONG", "topic name is longer than 65535 bytes");
pub const ERR_TOPIC_NUL: TopicError = name_err("NULL_CHARACTER", "topic name contains U+0000");
pub const ERR_WILDCARD_IN_TOPIC: TopicError =
    name_err("WILDCARD_IN_TOPIC", "topic name must not contain '+' or '#'");

/// Validates a (non-shared) topic filter: non-empty [MQTT-4.7.3-1], no U+0000 [MQTT-1.5.4-2],
/// '#' only as a whole last level [MQTT-4.7.1-1], '+' only as a whole level [MQTT-4.7.1-2].
pub fn validate_filter(filter: &str) -> Result<(), TopicError> {
    if filter.is_empty() {
        return Err(ERR_EMPTY_FILTER);
    }
    if filter.len() > MAX_TOPIC_LEN {
        return Err(ERR_FILTER_TOO_LONG);
    }
    if filter.as_bytes().contains(&0) {
        return Err(ERR_FILTER_NUL);
    }
    let mut levels = filter.split('/').peekable();
    while let Some(level) = levels.next() {
        let wild = level.bytes().any(|b| b == b'+' || b == b'#');
        if !wild {
            continue;
        }
        match level {
            "+" => {}
            "#" if levels.peek().is_none() => {}
            _ => return Err(ERR_INVALID_WILDCARD),
        }
    }
    Ok(())
}

/// Validates a topic name: non-empty [MQTT-4.7.3-1], no wildcards [MQTT-3.3.2-2], no U+0000.
pub fn validate_topic(topic: &str) -> Result<(), TopicError> {
    if topic.is_empty() {
        return Err(ERR_EMPTY_TOPIC);
    }
    if topic.len() > MAX_TOPIC_LEN {
        return Err(ERR_TOPIC_TOO_LONG);
    }
    for b in topic.bytes() {
        match b {
            0 => return Err(ERR_TOPIC_NUL),
            b'+' | b'#' => return Err(ERR_WILDCARD_IN_TOPIC),
            _ => {}
        }
    }
    Ok(())
}

/// Reference matcher (plain filter, no `$share` prefix). '+' matches exactly one level (possibly
/// empty), '#' matches its own level and everything below, including the parent: "sport/#" matches
/// "sport" [MQTT-4.7.1-2]. A filter starting with a wildcard never matches a topic starting with
/// '$' [MQTT-4.7.2-1].
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    let fb = filter.as_bytes();
    if topic.starts_with('$') && matches!(fb.first(), Some(b'+') | Some(b'#')) {
        return false;
    }
    let mut f = filter.split('/');
    let mut t = topic.split('/');
    loop {
        match (f.next(), t.next()) {
            (Some("#"), _) => return true,
            (Some("+"), Some(_)) => {}
            (Some(a), Some(b)) => {
                if a != b {
                    return false;
                }
            }
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// True when the filter contains a wildcard level.
pub fn has_wildcard(filter: &str) -> bool {
    filter.bytes().any(|b| b == b'+' || b == b'#')
}

/// Splits a shared-subscription filter: `$share/<group>/<filter>` [MQTT-4.8.2-1] (group non-empty,
/// without '/', '+', '#' [MQTT-4.8.2-2]) or `$queue/<filter>` (group "DEFAULT"). Returns
/// `Ok(None)` for an ordinary filter. The inner filter is not validated here.
pub fn parse_shared(filter: &str) -> Result<Option<(&str, &str)>, TopicError> {
    if let Some(rest) = filter.strip_prefix("$share/") {
        let (group, inner) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => {
                if rest.is_empty() || rest.bytes().any(|b| b == b'+' || b == b'#') {
                    return Err(ERR_INVALID_SHARE_GROUP);
                }
                return Err(ERR_INVALID_SHARE_FILTER);
            }
        };
        if group.is_empty() || group.bytes().any(|b| b == b'+' || b == b'#') {
            return Err(ERR_INVALID_SHARE_GROUP);
        }
        if inner.is_empty() {
            return Err(ERR_INVALID_SHARE_FILTER);
        }
        return Ok(Some((group, inner)));
    }
    if filter == "$share" {
        return Err(ERR_INVALID_SHARE_FILTER);
    }
    if let Some(inner) = filter.strip_prefix("$queue/") {
        if inner.is_empty() {
            return Err(ERR_INVALID_SHARE_FILTER);
        }
        return Ok(Some(("DEFAULT", inner)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        // [MQTT-4.7.1-2] multi-level wildcard
        assert!(topic_matches("sport/tennis/player1/#", "sport/tennis/player1"));
        assert!(topic_matches("sport/tennis/player1/#", "sport/tennis/player1/ranking"));
        assert!(topic_matches("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon"));
        assert!(topic_matches("sport/#", "sport"));
        // single-level wildcard
        assert!(topic_matches("sport/tennis/+", "sport/tennis/player1"));
        assert!(!topic_matches("sport/tennis/+", "sport/tennis/player1/ranking"));
        assert!(!topic_matches("sport/+", "sport"));
        assert!(topic_matches("sport/+", "sport/"));
        assert!(topic_matches("+", "finance"));
        assert!(!topic_matches("+", "/finance"));
        assert!(topic_matches("+/+", "/finance"));
        assert!(topic_matches("/+", "/finance"));
        // [MQTT-4.7.2-1]
        assert!(!topic_matches("#", "$SYS/monitor/Clients"));
        assert!(!topic_matches("+/monitor/Clients", "$SYS/monitor/Clients"));
        assert!(topic_matches("$SYS/#", "$SYS/monitor/Clients"));
        assert!(topic_matches("$SYS/monitor/+", "$SYS/monitor/Clients"));
        assert!(topic_matches("a//b", "a//b"));
        assert!(topic_matches("a/+/b", "a//b"));
        assert!(!topic_matches("a/b", "a//b"));
    }

    #[test]
    fn validation() {
        for ok in ["#", "+", "a/#", "+/+", "/", "a//b", "$SYS/#", "sport/+/player1"] {
            assert_eq!(validate_filter(ok), Ok(()), "{ok}");
        }
        for bad in ["a/#/b", "a#", "a/b#", "a+", "+a/b", "##", "a/#/"] {
            assert_eq!(validate_filter(bad), Err(ERR_INVALID_WILDCARD), "{bad}");
        }
        assert_eq!(validate_filter(""), Err(ERR_EMPTY_FILTER));
        assert_eq!(validate_filter("a\0b"), Err(ERR_FILTER_NUL));
        assert_eq!(validate_topic(""), Err(ERR_EMPTY_TOPIC));
        assert_eq!(validate_topic("a/+"), Err(ERR_WILDCARD_IN_TOPIC));
        assert_eq!(validate_topic("a/#").unwrap_err().reason, 0x90);
        assert_eq!(validate_topic("a/\0"), Err(ERR_TOPIC_NUL));
        assert_eq!(validate_topic("a//b"), Ok(()));
        assert_eq!(validate_topic(&"x".repeat(70_000)), Err(ERR_TOPIC_TOO_LONG));
    }

    #[test]
    fn shared_parsing() {
        assert_eq!(parse_shared("a/b"), Ok(None));
        assert_eq!(parse_shared("$share/g/a/b"), Ok(Some(("g", "a/b"))));
        assert_eq!(parse_shared("$share/g/#"), Ok(Some(("g", "#"))));
        assert_eq!(parse_shared("$queue/a/+"), Ok(Some(("DEFAULT", "a/+"))));
        assert_eq!(parse_shared("$share//a"), Err(ERR_INVALID_SHARE_GROUP));
        assert_eq!(parse_shared("$share/g+/a"), Err(ERR_INVALID_SHARE_GROUP));
        assert_eq!(parse_shared("$share/g#/a"), Err(ERR_INVALID_SHARE_GROUP));
        assert_eq!(parse_shared("$share/g"), Err(ERR_INVALID_SHARE_FILTER));
        assert_eq!(parse_shared("$share/g/"), Err(ERR_INVALID_SHARE_FILTER));
        assert_eq!(parse_shared("$share/"), Err(ERR_INVALID_SHARE_GROUP));
        assert_eq!(parse_shared("$share"), Err(ERR_INVALID_SHARE_FILTER));
        assert_eq!(parse_shared("$queue/"), Err(ERR_INVALID_SHARE_FILTER));
        assert_eq!(parse_shared("$sharex/g/a"), Ok(None));
    }
}
