//! Huawei Cloud: ELB v3 (`/v3/{project}/elb/loadbalancers/{id}`, `/v3/{project}/elb/listeners`),
//! and the shared ELB's v2 API for an id v3 does not know. SDK-HMAC-SHA256 signed.
//!
//! Mapping, with the sources in kubernetes-sigs/cloud-provider-huaweicloud:
//! - `kind`: v3's `guaranteed` (true: dedicated); an id only v2 knows is a shared ELB.
//! - `flavors`: `l4_flavor_id` and `l7_flavor_id` set (dedicated ELBs).
//! - `addressType`: internet when an EIP or public IP is bound.
//! - `createdBy`: the CCM names the load balancers it creates `k8s_service_{cluster}_{ns}_{name}`
//!   and describes them "Created by the ELB service(...)" (`pkg/cloudprovider/huaweicloud/
//!   dedicatedloadbalancer.go` and `sharedloadbalancer.go`, `GetLoadBalancerName` and
//!   `createLoadbalancer`); anything else is the user's.
//! - listener owners: the CCM's listener names (`{service}_{protocol}_{port}`, or the
//!   Service's UID, `elb.go` `GetListenerName`) carry no namespace, so every listener counts
//!   as external; a Service's own listeners are told apart by `rules::listeners`.

use serde_json::Value;

use super::sign::{self, Req};
use super::{Call, CloudError, Fact, non_empty, status_error, text};
use crate::vocab::lb::{AddressType, CreatedBy, LbKind, LoadBalancer};
use crate::vocab::provider::Provider;

const THROTTLED: &[&str] = &["APIGW.0308", "ELB.8902"];

/// `None` on 404.
async fn get(
    call: &Call<'_>,
    operation: &'static str,
    path: String,
    query: Vec<(String, String)>,
) -> Result<Option<Value>, CloudError> {
    let (base, host) = call.base(format!("https://elb.{}.myhuaweicloud.com", call.region))?;
    let mut req = Req {
        method: "GET",
        host,
        path,
        query,
        ..Default::default()
    };
    sign::huawei(&mut req, &call.creds, &call.stamp());
    let answer = call.send(operation, &base, &req).await?;
    let body = answer.body()?;
    if answer.status < 300 {
        return Ok(Some(body));
    }
    let err = if body["error"].is_object() {
        &body["error"]
    } else {
        &body
    };
    let code = text(err, &["error_code", "code"]);
    let message = call.scrub(text(err, &["error_msg", "message"]));
    // The API gateway's own 404 (APIGW.*) is a wrong endpoint or path, not a missing ELB.
    if answer.status == 404 && !code.starts_with("APIGW.") {
        return Ok(None);
    }
    if THROTTLED.contains(&code) {
        return Err(CloudError::Throttled(format!(
            "HTTP {} {code}: {message}",
            answer.status
        )));
    }
    Err(status_error(answer.status, code, &message))
}

fn project(call: &Call<'_>) -> Result<String, CloudError> {
    call.creds
        .project_id
        .clone()
        .ok_or_else(|| CloudError::Other("the credentials have no projectId".into()))
}

fn created_by(lb: &Value) -> CreatedBy {
    let name = lb["name"].as_str().unwrap_or_default();
    let description = lb["description"].as_str().unwrap_or_default();
    if name.starts_with("k8s_service_") || description.starts_with("Created by the ELB service(") {
        CreatedBy::Ccm
    } else {
        CreatedBy::User
    }
}

/// Listener pages read at most.
const MAX_PAGES: usize = 10;

async fn listeners(
    call: &Call<'_>,
    version: &str,
    project: &str,
    id: &str,
    lb: &mut LoadBalancer,
) -> Result<(), CloudError> {
    let mut marker = String::new();
    for _ in 0..MAX_PAGES {
        let mut query = vec![
            ("loadbalancer_id".to_string(), id.to_string()),
            ("limit".to_string(), "100".to_string()),
        ];
        if !marker.is_empty() {
            query.push(("marker".into(), marker.clone()));
        }
        let path = format!("/{version}/{project}/elb/listeners");
        let Some(page) = get(call, "ListListeners", path, query).await? else {
            return Ok(());
        };
        let list = page["listeners"].as_array().cloned().unwrap_or_default();
        for l in &list {
            lb.listeners.extend(super::listener(
                &l["protocol_port"],
                &l["protocol"],
                "external".into(),
            ));
        }
        marker = page["page_info"]["next_marker"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if marker.is_empty() || list.is_empty() {
            break;
        }
    }
    Ok(())
}

pub(crate) async fn fetch(call: &Call<'_>, id: &str) -> Result<Fact, CloudError> {
    let project = project(call)?;
    let path = format!("/v3/{project}/elb/loadbalancers/{}", sign::encode(id));
    let (version, attrs) = match get(call, "ShowLoadBalancer", path, Vec::new()).await? {
        Some(v) => ("v3", v),
        None => {
            let path = format!("/v2/{project}/elb/loadbalancers/{}", sign::encode(id));
            match get(call, "ShowLoadBalancerV2", path, Vec::new()).await? {
                Some(v) => ("v2", v),
                None => return Ok(Fact::NotFound),
            }
        }
    };
    let a = &attrs["loadbalancer"];
    let dedicated = version == "v3" && a["guaranteed"].as_bool().unwrap_or(true);
    let mut flavors = Vec::new();
    for (field, flavor) in [("l4_flavor_id", "l4"), ("l7_flavor_id", "l7")] {
        if a[field].as_str().is_some_and(|f| !f.is_empty()) {
            flavors.push(flavor.to_string());
        }
    }
    let public = ["eips", "publicips"]
        .iter()
        .any(|f| a[*f].as_array().is_some_and(|l| !l.is_empty()));
    let mut lb = LoadBalancer::new(id, Provider::Huawei);
    lb.kind = Some(if dedicated {
        LbKind::ElbDedicated
    } else {
        LbKind::ElbShared
    });
    lb.address_type = Some(if public {
        AddressType::Internet
    } else {
        AddressType::Intranet
    });
    lb.vpc_id = non_empty(&a["vpc_id"]);
    lb.created_by = Some(created_by(a));
    if dedicated {
        lb.flavors = flavors;
    }
    listeners(call, version, &project, id, &mut lb).await?;
    Ok(Fact::Found(lb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ccm_made_load_balancers_are_told_by_name_or_description() {
        let v = |n: &str, d: &str| serde_json::json!({"name": n, "description": d});
        assert_eq!(
            created_by(&v("k8s_service_c1_shop_web", "")),
            CreatedBy::Ccm
        );
        assert_eq!(
            created_by(&v(
                "x",
                "Created by the ELB service(shop/web) of the k8s cluster(c1)."
            )),
            CreatedBy::Ccm
        );
        assert_eq!(created_by(&v("shop-elb", "ours")), CreatedBy::User);
    }
}
