//! `dependent-annotations` on Huawei: annotations CCE's table and the ELB API say go together,
//! or must not, all of them `together` rows of providers/data/huawei-api.yaml (each with its
//! source): health-check-flag "on" needs health-check-option or -options but not both,
//! no session-affinity-mode with lb-algorithm SOURCE_IP, a non-empty acl-id needs acl-status
//! and acl-type, transparent-client-ip "false" only on a shared ELB's TCP/UDP listeners, no
//! http or https entry on port 21 of a shared ELB, a tls entry needs elb.cert-id,
//! client_timeout and member_timeout need an http or https entry, client-ca-cert-id and
//! tls-certificate-ids an https or tls entry. Held by providers/api/huawei_tests.rs.

use crate::vocab::catalog::Catalog;
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::rule::{CelCheck, VapCtx};

pub fn dependent_annotations(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    crate::providers::api::check(ctx, cat, "dependent-annotations", out);
}

pub fn dependent_annotations_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    Ok(crate::providers::api::cel::checks(
        cat,
        "false",
        "dependent-annotations",
    ))
}
