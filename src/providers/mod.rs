//! Provider knowledge: one annotation catalog per cloud, and each cloud's own rules.

mod address_type;
pub mod alibaba;
pub mod api;
pub mod ctyun;
pub mod data;
pub mod huawei;
pub mod volcengine;

pub use crate::vocab::catalog::Catalog;
use crate::vocab::ctx::{Ctx, Proposed};
pub use crate::vocab::provider::Provider;
use crate::vocab::service::Svc;

/// The catalog for a provider.
pub fn catalog(p: Provider) -> &'static Catalog {
    match p {
        Provider::Ctyun => &ctyun::CATALOG,
        Provider::Alibaba => &alibaba::CATALOG,
        Provider::Huawei => &huawei::CATALOG,
        Provider::Volcengine => &volcengine::CATALOG,
    }
}

/// The defaults provider `p` proposes for the Service in `ctx` (config.defaults and the
/// inventory), in the order they are applied.
pub fn defaults(p: Provider, ctx: &Ctx) -> Vec<Proposed> {
    match p {
        Provider::Ctyun => ctyun::defaults(ctx),
        Provider::Alibaba => alibaba::defaults(ctx),
        Provider::Huawei => huawei::defaults(ctx),
        Provider::Volcengine => volcengine::defaults(ctx),
    }
}

/// What provider `p` documents inside its JSON annotations, field by field, and the ranges
/// that depend on the Service's listeners (Huawei's keepalive_timeout) or on another
/// annotation (Volcengine's health-check timeout, at most the interval): the problems of
/// `value` (a value that passed the table's format) for annotation `name` (without the
/// prefix) on `svc`. The API's limits a table format cannot say are the API rows' (`api`).
pub fn json_fields(p: Provider, name: &str, value: &str, svc: Svc) -> Vec<String> {
    match p {
        Provider::Huawei => huawei::json_fields(name, value, svc),
        Provider::Volcengine => volcengine::value_pairs(name, value, svc),
        _ => Vec::new(),
    }
}

/// The CEL of `json_fields` and of the API rows' value limits, where CEL can say them
/// (Huawei's JSON cannot be read in CEL, and its export is refused before this is asked).
/// Volcengine's NLB side is the API table's `nlbWhen`, so the controller test is `false`.
pub fn json_fields_cel(cat: &Catalog) -> Vec<crate::vocab::rule::CelCheck> {
    let mut out = api::cel::checks(cat, "false", "annotation-value-format");
    if cat.provider == Provider::Volcengine {
        out.extend(volcengine::value_pairs_cel());
    }
    out
}
