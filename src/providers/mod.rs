//! Provider knowledge: one annotation catalog per cloud, and each cloud's own rules.

pub mod alibaba;
pub mod ctyun;
pub mod data;
pub mod huawei;
pub mod volcengine;

pub use crate::vocab::provider::{Catalog, Provider};

/// The catalog for a provider.
pub fn catalog(p: Provider) -> &'static Catalog {
    match p {
        Provider::Ctyun => &ctyun::CATALOG,
        Provider::Alibaba => &alibaba::CATALOG,
        Provider::Huawei => &huawei::CATALOG,
        Provider::Volcengine => &volcengine::CATALOG,
    }
}
