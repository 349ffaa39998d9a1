//! The cloud metrics' labels and families, registered by the server's metrics: calls by
//! outcome, their latency, and the cache's size and oldest fact.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabels {
    pub provider: &'static str,
    pub operation: &'static str,
    pub result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabels {
    pub provider: &'static str,
    pub operation: &'static str,
}

fn api_histogram() -> Histogram {
    // 1 ms to ~16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The cloud metrics, registered by the server's metrics.
#[derive(Debug, Clone)]
pub struct CloudMetrics {
    pub requests: Family<ApiLabels, Counter>,
    pub latency: Family<OperationLabels, Histogram, fn() -> Histogram>,
    pub cached: Gauge,
    pub oldest_fact_age: Gauge,
}

impl Default for CloudMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(api_histogram),
            cached: Gauge::default(),
            oldest_fact_age: Gauge::default(),
        }
    }
}
