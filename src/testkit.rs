//! Builders and assertions shared by the rule tests.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};

use crate::config::Config;
use crate::engine::{
    ClusterView, EmptyCluster, EmptyInventory, Input, Inventory, Operation, UserInfo, Verdict,
    Versions, evaluate,
};
use crate::inventory::Snapshot;
use crate::providers::{Provider, catalog};
use crate::rules::Action;

/// The full key of a provider annotation.
pub fn k(p: Provider, suffix: &str) -> String {
    catalog(p).key(suffix)
}

#[derive(Clone)]
pub struct SvcBuilder(pub Service);

/// A `type: LoadBalancer` Service `default/web` with port 80/TCP.
pub fn lb() -> SvcBuilder {
    SvcBuilder(Service {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            ports: Some(vec![ServicePort {
                port: 80,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    })
}

impl SvcBuilder {
    pub fn ann(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    /// A provider annotation by its short name.
    pub fn pa(self, p: Provider, suffix: &str, value: &str) -> Self {
        self.ann(k(p, suffix), value)
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(key.into(), value.into());
        self
    }

    pub fn finalizer(mut self, f: &str) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Default::default)
            .push(f.into());
        self
    }

    pub fn port(mut self, port: i32, protocol: &str) -> Self {
        let spec = self.0.spec.get_or_insert_with(Default::default);
        spec.ports
            .get_or_insert_with(Default::default)
            .push(ServicePort {
                port,
                protocol: Some(protocol.into()),
                ..Default::default()
            });
        self
    }

    pub fn only_port(mut self, port: i32, protocol: &str) -> Self {
        self.0.spec.get_or_insert_with(Default::default).ports = None;
        self.port(port, protocol)
    }

    pub fn etp(mut self, policy: &str) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .external_traffic_policy = Some(policy.into());
        self
    }

    pub fn type_(mut self, t: &str) -> Self {
        self.0.spec.get_or_insert_with(Default::default).type_ = Some(t.into());
        self
    }

    /// `spec.loadBalancerClass`.
    pub fn class(mut self, c: &str) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .load_balancer_class = Some(c.into());
        self
    }

    pub fn build(self) -> Service {
        self.0
    }

    pub fn named(mut self, namespace: &str, name: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self.0.metadata.name = Some(name.into());
        self
    }

    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.into());
        self
    }

    pub fn external_ip(mut self, ip: &str) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .external_ips
            .get_or_insert_with(Default::default)
            .push(ip.into());
        self
    }
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: vec!["system:authenticated".into()],
    }
}

pub fn create(s: SvcBuilder) -> Input {
    Input::new(Operation::Create, Some(s.0), None, user("alice")).unwrap()
}

pub fn update(old: SvcBuilder, new: SvcBuilder) -> Input {
    Input::new(Operation::Update, Some(new.0), Some(old.0), user("alice")).unwrap()
}

pub fn update_by(old: SvcBuilder, new: SvcBuilder, name: &str) -> Input {
    Input::new(Operation::Update, Some(new.0), Some(old.0), user(name)).unwrap()
}

pub fn delete(old: SvcBuilder) -> Input {
    Input::new(Operation::Delete, None, Some(old.0), user("alice")).unwrap()
}

pub fn cfg(yaml: &str) -> Config {
    crate::engine::parse_config(yaml, "test").unwrap()
}

pub fn run(input: &Input, config: &Config) -> Verdict {
    run_with(input, config, &EmptyInventory)
}

pub fn run_with(input: &Input, config: &Config, inventory: &dyn Inventory) -> Verdict {
    run_full(input, config, &EmptyCluster, inventory)
}

pub fn run_full(
    input: &Input,
    config: &Config,
    cluster: &dyn ClusterView,
    inventory: &dyn Inventory,
) -> Verdict {
    let versions = Versions::from_config(config);
    let verdict = evaluate(input, config, &versions, cluster, inventory);
    // Every rule test doubles as a test of the exported ValidatingAdmissionPolicies.
    crate::vap::eval::assert_equivalent(input, config, &versions, &verdict);
    verdict
}

/// What the exported policies of rule `id` say about `input` (their failing messages).
pub fn policy_says(input: &Input, config: &Config, id: &str) -> Vec<String> {
    let versions = Versions::from_config(config);
    crate::vap::eval::policy_messages(input, config, &versions, id)
}

/// `expect` against a cluster view.
pub fn expect_cluster(
    input: &Input,
    config: &Config,
    cluster: &dyn ClusterView,
    id: &str,
    want: Expect,
) -> Verdict {
    let v = run_full(input, config, cluster, &EmptyInventory);
    assert_outcome(&v, id, want);
    v
}

/// A cluster view holding these Services (as the watch would feed them).
pub fn cluster_with(config: &Config, services: &[Service]) -> crate::cluster::ClusterState {
    let state = crate::cluster::ClusterState::new(crate::vocab::route::Scope::of(config));
    state.replace_services(services);
    state
}

/// An inventory from YAML text.
pub fn inventory(yaml: &str) -> Snapshot {
    Snapshot::parse(yaml, "test-inventory.yaml").unwrap()
}

/// What a test expects of one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The rule reports nothing.
    Pass,
    Deny,
    Warn,
}

/// Evaluates and asserts the outcome of rule `id`, printing the verdict on failure.
pub fn expect(input: &Input, config: &Config, id: &str, want: Expect) -> Verdict {
    expect_with(input, config, &EmptyInventory, id, want)
}

/// `expect` with an inventory.
pub fn expect_with(
    input: &Input,
    config: &Config,
    inventory: &dyn Inventory,
    id: &str,
    want: Expect,
) -> Verdict {
    let v = run_with(input, config, inventory);
    assert_outcome(&v, id, want);
    v
}

/// Asserts what rule `id` did in a verdict.
pub fn assert_outcome(v: &Verdict, id: &str, want: Expect) {
    assert!(crate::rules::find(id).is_some(), "no rule {id}");
    let mine: Vec<_> = v.violations.iter().filter(|x| x.rule == id).collect();
    let got = if mine.iter().any(|x| x.action == Action::Deny) {
        Expect::Deny
    } else if mine.is_empty() {
        Expect::Pass
    } else {
        Expect::Warn
    };
    assert_eq!(got, want, "rule {id}: {:#?}", v.violations);
    for m in &mine {
        assert!(m.message.starts_with(&format!("[{id}] ")), "{}", m.message);
    }
}

/// A fake API server: answers GETs of the paths in `objects`, 404 for the rest.
pub fn fake_api(objects: Vec<(&'static str, serde_json::Value)>) -> kube::Client {
    use http::{Request, Response, StatusCode};
    use kube::client::Body;
    use serde_json::json;
    let svc = tower::service_fn(move |req: Request<Body>| {
        let path = req.uri().path().to_string();
        let hit = objects
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, o)| o.clone());
        async move {
            let (status, body) = match hit {
                Some(o) => (StatusCode::OK, o),
                None => (
                    StatusCode::NOT_FOUND,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "reason": "NotFound", "code": 404, "message": "not found"}),
                ),
            };
            Ok::<_, std::convert::Infallible>(
                Response::builder()
                    .status(status)
                    .body(Body::from(serde_json::to_vec(&body).unwrap()))
                    .unwrap(),
            )
        }
    });
    kube::Client::new(svc, "default")
}
