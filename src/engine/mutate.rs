//! The mutating side: defaults from config, returned as the desired Service. The edge
//! diffs original and desired into a JSON Patch.
//!
//! Never overrides a user's value, and a second pass changes nothing. On UPDATE of an
//! existing LoadBalancer Service, defaults for keys that cannot change afterwards
//! (Volcengine weight, Huawei class) are not injected late (that would itself be a
//! forbidden change); if the user dropped such a key, the live value is kept instead.

use k8s_openapi::api::core::v1::Service;
use serde::Serialize;

use super::version::Known;
use super::{Ctx, EmptyCluster, Input, Inventory, Operation, Versions, exemption};
use crate::providers::{Provider, catalog, ctyun::IP_MODE_MIN};
use crate::vocab::config::{Config, Flavor};

/// One default the mutation applied, for warnings, audit annotations and `check` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppliedDefault {
    pub field: String,
    pub value: String,
    pub reason: String,
}

impl AppliedDefault {
    /// The admission warning the mutating webhook sends for it.
    pub fn warning(&self) -> String {
        format!(
            "lbguard set {}: \"{}\" ({})",
            self.field, self.value, self.reason
        )
    }
}

#[derive(Debug, Clone)]
pub struct Mutation {
    pub desired: Service,
    pub applied: Vec<AppliedDefault>,
}

impl Mutation {
    pub fn changed(&self) -> bool {
        !self.applied.is_empty()
    }

    /// One line per default, as admission warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.applied.iter().map(AppliedDefault::warning).collect()
    }
}

struct Builder<'a> {
    desired: Service,
    applied: Vec<AppliedDefault>,
    /// The live object, when this is an UPDATE of an existing LoadBalancer Service.
    live: Option<&'a Service>,
}

impl Builder<'_> {
    fn has(&self, key: &str) -> bool {
        self.desired
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(key))
    }

    /// Sets an annotation the user did not set. `fixed` marks keys that cannot change
    /// once the Service exists.
    fn annotation(&mut self, key: &str, value: &str, reason: &str, fixed: bool) {
        if self.has(key) {
            return;
        }
        let (value, reason) = match self.live {
            Some(live) if fixed => {
                match live.metadata.annotations.as_ref().and_then(|a| a.get(key)) {
                    Some(v) => (
                        v.clone(),
                        "kept from the live Service: it cannot change".to_string(),
                    ),
                    None => return,
                }
            }
            _ => (value.to_string(), reason.to_string()),
        };
        self.desired
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.to_string(), value.clone());
        self.applied.push(AppliedDefault {
            field: format!("metadata.annotations[{key}]"),
            value,
            reason,
        });
    }
}

/// Applies the configured defaults. `desired` equals the input object when nothing applies.
pub fn mutate(
    input: &Input,
    config: &Config,
    versions: &Versions,
    inventory: &dyn Inventory,
) -> Option<Mutation> {
    let object = input.object.as_ref()?;
    let mut b = Builder {
        desired: object.clone(),
        applied: Vec::new(),
        live: None,
    };
    let applicable = config.defaults.enabled
        && matches!(input.operation, Operation::Create | Operation::Update)
        && super::Svc(object).is_lb()
        && exemption(input, config).is_none();
    if !applicable {
        return Some(Mutation {
            desired: b.desired,
            applied: b.applied,
        });
    }
    b.live = input
        .old_object
        .as_ref()
        .filter(|o| input.operation == Operation::Update && super::Svc(o).is_lb());
    let ctx = Ctx::new(input, config, versions, &EmptyCluster, inventory);
    let providers = super::providers(&ctx);
    let new = super::Svc(object);
    let d = &config.defaults;

    if inventory.configured() {
        for p in [Provider::Ctyun, Provider::Alibaba] {
            let cat = catalog(p);
            if !providers.contains(&p) || cat.get(new, "address-type").is_some() {
                continue;
            }
            let lb_type = cat
                .get(new, "id")
                .and_then(|id| inventory.get(p, id.value))
                .and_then(|lb| lb.address_type);
            if let Some(t) = lb_type {
                b.annotation(
                    &cat.key("address-type"),
                    t.as_str(),
                    "the reused load balancer's address type, from the inventory",
                    true,
                );
            }
        }
    }
    if providers.contains(&Provider::Volcengine)
        && let Some(w) = d.volcengine_weight
    {
        let cat = catalog(Provider::Volcengine);
        if cat.get(new, "id").is_some() {
            b.annotation(
                &cat.key("weight"),
                &w.to_string(),
                "defaults.volcengineWeight: a reused load balancer needs a weight",
                true,
            );
        }
    }
    if providers.contains(&Provider::Ctyun)
        && d.ctyun_ip_mode_proxy
        && new.traffic_policy() == Some("Local")
        && matches!(versions.cluster, Known::Yes(v) if v >= IP_MODE_MIN)
    {
        let cat = catalog(Provider::Ctyun);
        b.annotation(&cat.key("ip-mode"), "proxy", "defaults.ctyunIpModeProxy: in-cluster clients of the LB IP go through the load balancer", false);
    }
    if providers.contains(&Provider::Huawei)
        && let Some(class) = &d.huawei_elb_class
    {
        let cat = catalog(Provider::Huawei);
        if cat.get(new, "id").is_some() || cat.get(new, "autocreate").is_some() {
            b.annotation(&cat.key("class"), class, "defaults.huaweiElbClass", true);
        }
    }
    if config.cluster.flavor == Flavor::Turbo
        && d.huawei_turbo_cluster_policy
        && new.traffic_policy().is_none()
    {
        b.desired
            .spec
            .get_or_insert_with(Default::default)
            .external_traffic_policy = Some("Cluster".into());
        b.applied.push(AppliedDefault {
            field: "spec.externalTrafficPolicy".into(),
            value: "Cluster".into(),
            reason: "CCE Turbo clusters support only Cluster".into(),
        });
    }
    for (k, v) in &d.annotations {
        b.annotation(k, v, "defaults.annotations", false);
    }
    Some(Mutation {
        desired: b.desired,
        applied: b.applied,
    })
}
