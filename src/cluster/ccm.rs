//! `ccm.version: auto`: the cloud controller's version, read from the image tag of the
//! Deployment or DaemonSet that runs it. Needs `get` on that one object (the chart grants it
//! by name); a controller the provider runs outside the cluster is not found, and its version
//! then has to be configured.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::PodSpec;
use kube::{Api, Client};

use crate::config::{CcmConfig, ProviderChoice, WorkloadKind};
use crate::providers::Provider;

/// A controller found in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub provider: Provider,
    /// `Deployment kube-system/cloud-controller-manager`.
    pub workload: String,
    pub image: String,
    /// The image tag, e.g. `v2.10.0` or `v1.9.3.164-g2105d2e-aliyun`.
    pub version: String,
}

/// The tag of an image reference (`registry:5000/ns/ccm:v2.1.0@sha256:...` → `v2.1.0`).
pub fn image_tag(image: &str) -> Option<&str> {
    let no_digest = image.split('@').next().unwrap_or(image);
    let name = no_digest.rsplit('/').next().unwrap_or(no_digest);
    name.split_once(':')
        .map(|(_, tag)| tag)
        .filter(|t| !t.is_empty())
}

fn image_of(spec: Option<&PodSpec>, container: Option<&str>) -> Option<String> {
    let spec = spec?;
    // Unnamed: the controller's own container, not a sidecar, when one looks like it.
    let c = match container {
        Some(name) => spec.containers.iter().find(|c| c.name == name),
        None => spec
            .containers
            .iter()
            .find(|c| {
                c.name.contains("controller-manager")
                    || c.image
                        .as_deref()
                        .is_some_and(|i| i.contains("controller-manager"))
            })
            .or(spec.containers.first()),
    };
    c.and_then(|c| c.image.clone())
}

/// Looks for the controller of each provider in play, in order; the first found wins.
pub async fn discover(
    client: &Client,
    ccm: &CcmConfig,
    choice: ProviderChoice,
) -> Result<Option<Found>, kube::Error> {
    let providers: Vec<Provider> = match choice {
        ProviderChoice::Fixed(p) => vec![p],
        ProviderChoice::Auto => Provider::ALL.to_vec(),
    };
    for p in providers {
        let Some(w) = ccm.workload_for(p) else {
            continue;
        };
        let container = w.container.as_deref();
        let try_deploy = w.kind != Some(WorkloadKind::DaemonSet);
        let try_daemon = w.kind != Some(WorkloadKind::Deployment);
        let mut found = None;
        if try_deploy {
            let api: Api<Deployment> = Api::namespaced(client.clone(), &w.namespace);
            if let Some(d) = api.get_opt(&w.name).await? {
                let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
                found = Some(("Deployment", image_of(spec, container)));
            }
        }
        if found.is_none() && try_daemon {
            let api: Api<DaemonSet> = Api::namespaced(client.clone(), &w.namespace);
            if let Some(d) = api.get_opt(&w.name).await? {
                let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
                found = Some(("DaemonSet", image_of(spec, container)));
            }
        }
        if let Some((kind, image)) = found {
            let image = image.unwrap_or_default();
            let version = image_tag(&image).unwrap_or_default().to_string();
            return Ok(Some(Found {
                provider: p,
                workload: format!("{kind} {}/{}", w.namespace, w.name),
                image,
                version,
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{cfg, fake_api as client};
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case(
        "registry.example/acs/cloud-controller-manager-amd64:v2.10.0",
        Some("v2.10.0")
    )]
    #[case(
        "host:5000/ccm:v1.9.3.164-g2105d2e-aliyun",
        Some("v1.9.3.164-g2105d2e-aliyun")
    )]
    #[case("host:5000/ccm:v1.2.3@sha256:abcd", Some("v1.2.3"))]
    #[case("host:5000/ccm", None)]
    #[case("ccm@sha256:abcd", None)]
    #[case("", None)]
    fn tags(#[case] image: &str, #[case] want: Option<&str>) {
        assert_eq!(image_tag(image), want);
    }

    fn workload(kind: &str, image: &str) -> serde_json::Value {
        json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "cloud-controller-manager", "namespace": "kube-system"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "sidecar", "image": "busybox:1.36"},
                {"name": "ccm", "image": image}
            ]}}}
        })
    }

    const DEPLOY: &str =
        "/apis/apps/v1/namespaces/kube-system/deployments/cloud-controller-manager";
    const DAEMON: &str = "/apis/apps/v1/namespaces/kube-system/daemonsets/cloud-controller-manager";

    #[tokio::test]
    async fn reads_the_named_container_of_a_daemonset() {
        let c = client(vec![(DAEMON, workload("DaemonSet", "r/ccm:v2.10.0"))]);
        let config = cfg(
            "provider: alibaba\nccm:\n  version: auto\n  workloads:\n    alibaba: {container: ccm}\n",
        );
        let found = discover(&c, &config.ccm, config.provider)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.version, "v2.10.0");
        assert_eq!(found.provider, Provider::Alibaba);
        assert_eq!(
            found.workload,
            "DaemonSet kube-system/cloud-controller-manager"
        );
    }

    #[tokio::test]
    async fn the_controller_container_of_a_deployment_by_default() {
        let image = "r/cloud-controller-manager:v1.0.0";
        let c = client(vec![(DEPLOY, workload("Deployment", image))]);
        let config = cfg("provider: ctyun\nccm:\n  version: auto\n");
        let found = discover(&c, &config.ccm, config.provider)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (found.image.as_str(), found.version.as_str()),
            (image, "v1.0.0")
        );
        // Nothing looks like the controller: the first container.
        let c = client(vec![(DEPLOY, workload("Deployment", "r/ccm:v1.0.0"))]);
        let found = discover(&c, &config.ccm, config.provider)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.image, "busybox:1.36");
    }

    #[tokio::test]
    async fn none_when_absent_or_managed_outside() {
        let c = client(vec![(DEPLOY, workload("Deployment", "r/ccm:v1.0.0"))]);
        // Huawei runs its controller in the control plane: nothing is looked up.
        let config = cfg("provider: huawei\nccm:\n  version: auto\n");
        assert_eq!(
            discover(&c, &config.ccm, config.provider).await.unwrap(),
            None
        );
        let c = client(vec![]);
        let config = cfg("provider: volcengine\nccm:\n  version: auto\n");
        assert_eq!(
            discover(&c, &config.ccm, config.provider).await.unwrap(),
            None
        );
    }

    /// What the server does with it: the version rules see it, and a workload that is gone
    /// makes it unknown again.
    #[tokio::test]
    async fn the_server_keeps_the_version_current() {
        use crate::engine::version::Known;
        use crate::server::{App, metrics::Metrics, tasks::refresh_ccm_version};
        let config = cfg("provider: alibaba\nccm:\n  version: auto\n");
        let app = App::new(config, std::sync::Arc::new(Metrics::new()));
        assert_eq!(app.versions.load().ccm, Known::Missing);
        let image = "r/cloud-controller-manager:v1.9.3.164-g2105d2e-aliyun";
        let c = client(vec![(DEPLOY, workload("Deployment", image))]);
        refresh_ccm_version(&c, &app).await;
        let want = "v1.9.3.164".parse().unwrap();
        assert_eq!(app.versions.load().ccm, Known::Yes(want));
        refresh_ccm_version(&client(vec![]), &app).await;
        assert_eq!(app.versions.load().ccm, Known::Missing);
    }
}
