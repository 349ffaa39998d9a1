//! The plan: what a cloud controller will do to the cloud for one request, in its order:
//! the load balancer it creates, reuses or deletes, the attributes it changes, the
//! listeners and server groups it creates, updates, deletes or takes over, what it converts
//! or orphans, and what it leaves as it is. ACK's CLB and NLB controllers are modelled from
//! their code at the commit `providers/data/alibaba.yaml` pins; CTyun, CCE and Volcengine
//! from what their documents publish ("unknown" elsewhere).
//!
//! Pure, like the engine: it reads the request's Service, the live object and the load
//! balancer's facts (the inventory), and assumes the cloud is as the live object last asked.
//! The plan rules (`rules::plan`) turn its destructive and surprising steps into findings;
//! `lbguard plan` prints it.

mod ack;
mod attr_table;
mod attrs;
mod clb;
mod listeners;
mod misread;
mod nlb;
mod published;
mod side;

pub use crate::vocab::plan::{Action, Counts, Plan, Step};

use crate::vocab::catalog::Catalog;
use crate::vocab::ctx::Ctx;
use crate::vocab::input::Operation;
use crate::vocab::provider::Provider;

/// Whether the request asks anything new of the cloud. A create does; an update only when
/// its annotations, spec or deletion changed, the test the controllers themselves make
/// before they reconcile (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/
/// service/clbv1/event_handler.go:75-145, nlbv2/event_handler.go:74-136). Compared in
/// place: nothing is allocated when nothing changed.
pub fn relevant(ctx: &Ctx) -> bool {
    match ctx.input.operation {
        Operation::Create => ctx.new.is_some(),
        Operation::Update => match (ctx.old, ctx.new) {
            (Some(o), Some(n)) => {
                o.0.metadata.annotations != n.0.metadata.annotations
                    || o.0.spec != n.0.spec
                    || o.0.metadata.deletion_timestamp != n.0.metadata.deletion_timestamp
            }
            _ => false,
        },
        _ => false,
    }
}

/// The plan of `cat`'s provider for this request. Computed once per request and provider
/// (the plan rules share it).
pub fn of<'c>(ctx: &'c Ctx, cat: &'static Catalog) -> &'c Plan {
    let i = Provider::ALL
        .iter()
        .position(|p| *p == cat.provider)
        .unwrap_or_default();
    ctx.plans[i].get_or_init(|| build(ctx, cat))
}

fn build(ctx: &Ctx, cat: &'static Catalog) -> Plan {
    let mut plan = Plan {
        provider: Some(cat.provider),
        ..Plan::default()
    };
    match cat.provider {
        Provider::Alibaba => ack::plan(ctx, cat, &mut plan),
        Provider::Huawei => published::huawei(ctx, cat, &mut plan),
        Provider::Ctyun => published::ctyun(ctx, cat, &mut plan),
        Provider::Volcengine => published::volcengine(ctx, cat, &mut plan),
    }
    plan
}
