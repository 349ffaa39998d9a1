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

/// Whether the Service's ELB is a shared one: `elb.class: union`, or no class on an ELB CCE
/// creates (`elb.autocreate`), which is then shared ("The default value is union", otc-0385:51).
/// An existing ELB given by `elb.id` without a class is of a kind not known here.
pub fn shared_elb(svc: Svc) -> bool {
    match CATALOG.get(svc, "class") {
        Some(c) => c.value == "union",
        None => CATALOG.get(svc, "autocreate").is_some(),
    }
}

/// CEL of [`shared_elb`] on `$s`.
pub(super) fn shared_elb_cel(cat: &Catalog) -> String {
    let class = crate::vocab::catalog::catalog_annotation(cat, "class");
    let auto = crate::vocab::catalog::catalog_annotation(cat, "autocreate");
    format!(
        "(({} && {} == 'union') || (!{} && {}))",
        class.present, class.value, class.present, auto.present
    )
}
