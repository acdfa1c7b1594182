//! Topic routing: filter syntax, the subscription trie with its match cache and shared groups, and
//! the retained-topic index. Re-exports only; each concept lives in its own file.

mod cache;
mod edges;
mod filter;
mod hash;
mod interest;
mod levels;
mod prefetch;
mod retained;
mod router;
mod session_index;
mod shared;
mod subscription;
mod trie;

pub use filter::{
    has_wildcard, parse_shared, topic_matches, validate_filter, validate_topic, TopicError, MAX_TOPIC_LEN,
    REASON_FILTER_INVALID, REASON_NAME_INVALID, REASON_PROTOCOL_ERROR,
};
pub use retained::RetainedIndex;
pub use router::{Delivery, MatchResult, MatchScope, Router, RouterConfig};
pub use shared::ShareStrategy;
pub use subscription::{SubOptions, Subscription};
