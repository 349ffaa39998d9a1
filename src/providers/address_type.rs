//! A default CTyun and Alibaba share: the reused load balancer's address type, from the
//! inventory.

use crate::vocab::catalog::Catalog;
use crate::vocab::ctx::{Ctx, Proposed};

/// The reused load balancer's address type, from the inventory, when the Service names the
/// load balancer but no address type (CTyun and Alibaba read it from the Service).
pub(super) fn inventory_address_type(ctx: &Ctx, cat: &'static Catalog) -> Option<Proposed> {
    let new = ctx.new?;
    if !ctx.inventory.configured() || cat.get(new, "address-type").is_some() {
        return None;
    }
    let id = cat.get(new, "id")?;
    let t = ctx.inventory.get(cat.provider, id.value)?.address_type?;
    Some(Proposed {
        key: cat.key("address-type"),
        value: t.as_str().to_string(),
        reason: "the reused load balancer's address type, from the inventory".into(),
        fixed: true,
        inventory: true,
    })
}
