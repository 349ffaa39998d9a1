//! CCE's annotation catalog, and the listener protocol it gives each Service port.

use crate::providers::data;
use crate::vocab::catalog::Catalog;
use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;

/// Seed names plus CCE's documented ELB annotations (all under `kubernetes.io/elb.`).
pub static CATALOG: Catalog = Catalog {
    provider: Provider::Huawei,
    prefix: "kubernetes.io/elb.",
    legacy_prefix: None,
    default_address_type: None,
    lb_id_label: None,
    finalizers: &[],
    table: &data::HUAWEI,
};

/// The listener protocol CCE gives each Service port, lower case (`api::cce_listeners`: the
/// reading the API rows of huawei-api.yaml use too).
pub fn listener_protocols(svc: Svc) -> Vec<(i32, String)> {
    crate::providers::api::cce_listeners(&CATALOG, svc)
        .into_iter()
        .map(|l| (l.port, l.protocol))
        .collect()
}
