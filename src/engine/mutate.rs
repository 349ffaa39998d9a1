//! The mutating side: defaults from config, returned as the desired Service. The edge
//! diffs original and desired into a JSON Patch.
//!
//! Never overrides a user's value, and a second pass changes nothing. On UPDATE of an
//! existing LoadBalancer Service, defaults for keys that cannot change afterwards
//! (Volcengine weight, Huawei class) are not injected late (that would itself be a
//! forbidden change); if the user dropped such a key, the live value is kept instead.
//!
//! With `defaults.exported`, the API server applies the config's defaults itself (the
//! MutatingAdmissionPolicy of `lbguard export-vap`): only the inventory's are left here.

use k8s_openapi::api::core::v1::Service;
use serde::Serialize;

use super::applies::{exemption, not_ours, providers};
use crate::vocab::config::{Config, Flavor};
use crate::vocab::ctx::{Ctx, EmptyCluster, Inventory, Versions};
use crate::vocab::input::{Input, Operation};
use crate::vocab::service::Svc;

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
        && Svc::new(object).is_lb()
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
        .filter(|o| input.operation == Operation::Update && Svc::new(o).is_lb());
    let ctx = Ctx::new(input, config, versions, &EmptyCluster, inventory);
    if not_ours(&ctx).is_some() {
        return Some(Mutation {
            desired: b.desired,
            applied: b.applied,
        });
    }
    let providers = providers(&ctx);
    let new = Svc::new(object);
    let d = &config.defaults;

    // Each provider hands over its defaults; the engine applies them where the user set
    // nothing (and, for fixed keys, never late on an update).
    for p in &providers {
        for pd in crate::providers::defaults(*p, &ctx) {
            if pd.inventory || !d.exported {
                b.annotation(&pd.key, &pd.value, &pd.reason, pd.fixed);
            }
        }
    }
    if !d.exported
        && config.cluster.flavor == Flavor::Turbo
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
    if !d.exported {
        for (k, v) in &d.annotations {
            b.annotation(k, v, "defaults.annotations", false);
        }
    }
    Some(Mutation {
        desired: b.desired,
        applied: b.applied,
    })
}
