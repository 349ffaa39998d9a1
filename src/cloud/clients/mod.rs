//! One module per cloud, each with only its requests and mappings (its single look-up, its
//! batch list, its listener pages), on the transport and the layers below; no cloud's
//! module uses another's. A new cloud is one module here and one line in [`of`].

mod alibaba;
mod ctyun;
mod huawei;
mod volcengine;

use crate::cloud::client::Client;
use crate::vocab::provider::Provider;

/// The client of `provider`'s API.
pub(crate) fn of(provider: Provider) -> &'static dyn Client {
    match provider {
        Provider::Ctyun => &ctyun::Ctyun,
        Provider::Alibaba => &alibaba::Alibaba,
        Provider::Huawei => &huawei::Huawei,
        Provider::Volcengine => &volcengine::Volcengine,
    }
}
