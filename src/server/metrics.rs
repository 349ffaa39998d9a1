//! Prometheus metrics, served as text on the metrics port.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub endpoint: &'static str,
    pub operation: &'static str,
    pub verdict: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViolationLabels {
    pub rule: &'static str,
    pub action: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuditLabels {
    pub rule: &'static str,
    pub action: &'static str,
    pub namespace: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RuleLabels {
    pub rule: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub endpoint: &'static str,
}

fn latency_histogram() -> Histogram {
    // 50 µs to ~3 s.
    Histogram::new(exponential_buckets(0.00005, 2.0, 16))
}

pub struct Metrics {
    pub requests: Family<RequestLabels, Counter>,
    pub violations: Family<ViolationLabels, Counter>,
    /// Findings an `LBGuardException` let through, by rule.
    pub exempted: Family<RuleLabels, Counter>,
    /// `LBGuardException`s by state (active, expiring within a week, expired), per audit.
    pub exceptions: Family<StateLabels, Gauge>,
    pub latency: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    pub tls_reloads: Counter,
    pub tls_reload_errors: Counter,
    pub inventory_reloads: Counter,
    pub inventory_reload_errors: Counter,
    pub inventory_load_balancers: Gauge,
    pub cloud: crate::cloud::CloudMetrics,
    pub cloud_credential_reloads: Counter,
    pub cloud_credential_reload_errors: Counter,
    pub watch_errors: Family<KindLabels, Counter>,
    pub cache_age_seconds: Gauge,
    pub cached_services: Gauge,
    pub audit_violations: Family<AuditLabels, Gauge>,
    /// Namespaces whose policy report a round could not write, by reason.
    pub report_failures: Family<ReasonLabels, Counter>,
    pub reservation_conflicts: Counter,
    pub claims: crate::claims::ClaimMetrics,
    registry: Registry,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    pub fn new() -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let violations = Family::<ViolationLabels, Counter>::default();
        let latency = Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let tls_reloads = Counter::default();
        let tls_reload_errors = Counter::default();
        let mut registry = Registry::with_prefix("lbguard");
        registry.register(
            "admission_requests",
            "Admission requests by endpoint, operation and verdict",
            requests.clone(),
        );
        registry.register(
            "violations",
            "Rule findings by rule and action",
            violations.clone(),
        );
        let exempted = Family::<RuleLabels, Counter>::default();
        registry.register(
            "exempted_findings",
            "Rule findings an LBGuardException let through, by rule",
            exempted.clone(),
        );
        let exceptions = Family::<StateLabels, Gauge>::default();
        registry.register(
            "exceptions",
            "LBGuardExceptions by state (active, expiring within 7 days, expired), as of the last audit round",
            exceptions.clone(),
        );
        registry.register(
            "admission_duration_seconds",
            "Time to answer an admission request",
            latency.clone(),
        );
        registry.register(
            "tls_reloads",
            "Certificate reloads that swapped in a new certificate",
            tls_reloads.clone(),
        );
        registry.register(
            "tls_reload_errors",
            "Certificate reloads that failed (the old certificate stays)",
            tls_reload_errors.clone(),
        );
        let inventory_reloads = Counter::default();
        let inventory_reload_errors = Counter::default();
        let inventory_load_balancers = Gauge::default();
        registry.register(
            "inventory_reloads",
            "Inventory reloads that swapped in a new inventory",
            inventory_reloads.clone(),
        );
        registry.register(
            "inventory_reload_errors",
            "Inventory reloads that failed (the last good inventory stays)",
            inventory_reload_errors.clone(),
        );
        registry.register(
            "inventory_load_balancers",
            "Load balancers in the current inventory",
            inventory_load_balancers.clone(),
        );
        let watch_errors = Family::<KindLabels, Counter>::default();
        let cache_age_seconds = Gauge::default();
        let cached_services = Gauge::default();
        let audit_violations = Family::<AuditLabels, Gauge>::default();
        let reservation_conflicts = Counter::default();
        registry.register(
            "watch_errors",
            "Watch failures by kind (the cache is kept)",
            watch_errors.clone(),
        );
        registry.register(
            "cluster_cache_age_seconds",
            "How long the cluster cache has been missing changes (0 while the watches are healthy)",
            cache_age_seconds.clone(),
        );
        registry.register(
            "cluster_services",
            "LoadBalancer Services in the cluster cache",
            cached_services.clone(),
        );
        registry.register(
            "audit_violations",
            "Violations found by the last audit, by rule, action and namespace",
            audit_violations.clone(),
        );
        let report_failures = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "policy_report_failures",
            "Namespaces whose policy report an audit round could not write or remove, by reason (terminating, forbidden, conflict, not_found, invalid, timeout, unavailable, other); the others are written and it is tried again next round",
            report_failures.clone(),
        );
        registry.register(
            "reservation_conflicts",
            "Admissions denied because a concurrent admission took the same listener port",
            reservation_conflicts.clone(),
        );
        let claims = crate::claims::ClaimMetrics::default();
        registry.register(
            "claims_held",
            "Listener claims (Leases) in the API server, as of the last collection",
            claims.held.clone(),
        );
        registry.register(
            "claim_conflicts",
            "Admissions denied because another Service holds a listener claim",
            claims.conflicts.clone(),
        );
        registry.register(
            "claim_errors",
            "Admissions whose listener claims could not be recorded (API error or time budget)",
            claims.errors.clone(),
        );
        registry.register(
            "claim_takeovers",
            "Stale listener claims taken over by a new holder",
            claims.takeovers.clone(),
        );
        registry.register(
            "claim_gc_deletions",
            "Stale listener claims deleted by garbage collection",
            claims.gc_deletions.clone(),
        );
        registry.register(
            "claim_duration_seconds",
            "Time to take an admission's listener claims",
            claims.latency.clone(),
        );
        let cloud = crate::cloud::CloudMetrics::default();
        registry.register(
            "cloud_api_requests",
            "Calls to the cloud's load balancer API by provider, operation and result",
            cloud.requests.clone(),
        );
        registry.register(
            "cloud_api_request_duration_seconds",
            "Time of one call to the cloud's load balancer API",
            cloud.latency.clone(),
        );
        registry.register(
            "cloud_cache_load_balancers",
            "Load balancers whose cloud facts are cached",
            cloud.cached.clone(),
        );
        registry.register(
            "cloud_oldest_fact_age_seconds",
            "Age of the oldest cached cloud fact (the refresh keeps it under inventory.cloud.refresh)",
            cloud.oldest_fact_age.clone(),
        );
        let cloud_credential_reloads = Counter::default();
        let cloud_credential_reload_errors = Counter::default();
        registry.register(
            "cloud_credential_reloads",
            "Cloud credential reloads that swapped in new credentials",
            cloud_credential_reloads.clone(),
        );
        registry.register(
            "cloud_credential_reload_errors",
            "Cloud credential reloads that failed (the last good credentials stay)",
            cloud_credential_reload_errors.clone(),
        );
        Self {
            cloud,
            cloud_credential_reloads,
            cloud_credential_reload_errors,
            claims,
            watch_errors,
            cache_age_seconds,
            cached_services,
            audit_violations,
            report_failures,
            reservation_conflicts,
            inventory_reloads,
            inventory_reload_errors,
            inventory_load_balancers,
            requests,
            violations,
            exempted,
            exceptions,
            latency,
            tls_reloads,
            tls_reload_errors,
            registry,
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
