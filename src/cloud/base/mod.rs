//! The cloud layer's bottom: what knows no cloud. The outcomes every answer maps to, paging,
//! the token bucket, the HTTPS client and its proxy, the request as sent, the facts' own
//! types, the metrics' labels and the background retry.

pub mod bucket;
pub mod fact;
pub mod http;
pub mod metrics;
pub mod outcome;
pub mod paging;
pub mod proxy;
pub mod request;
pub mod retry;

use std::sync::Arc;
use std::time::Instant;

/// The clock the cache and the bucket read (tests pass their own).
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;
