//! Secure metrics as the chart installs them, with the API server's real TokenReview and
//! SubjectAccessReview: a token bound to `<release>-metrics-reader` reads `/metrics`,
//! another gets 403, an invalid one 401.

use serde_json::json;

use crate::Env;
use crate::install::{NS, of_kind, token};
use crate::plane::apply_ok;

/// GETs `path` (`/metrics`, `/report`) from replica `i`'s metrics port with a token the
/// chart's metrics-reader role lets through (made on first use).
pub async fn scrape(env: &Env, i: usize, path: &str) -> String {
    let admin = &env.admin[0];
    let reader = of_kind(&env.lbguard.objects, "ClusterRole")
        .into_iter()
        .find(|r| r["metadata"]["name"] == "lbguard-metrics-reader")
        .expect("the chart renders lbguard-metrics-reader");
    apply_ok(admin, reader).await;
    apply_ok(
        admin,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "scraper", "namespace": NS}}),
    )
    .await;
    apply_ok(admin, &json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "scraper-lbguard"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lbguard-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": NS}],
    }))
    .await;
    let auth = format!("Bearer {}", token(admin, "scraper").await);
    let client = crate::common::Client::new(&env.lbguard.ca_pem, env.lbguard.replicas[i].metrics);
    // A new binding reaches the authorizer's cache within moments.
    for _ in 0..50 {
        let r = client
            .request_with("GET", path, &[("authorization", auth.as_str())], vec![])
            .await
            .unwrap();
        if r.status == 200 {
            return String::from_utf8_lossy(&r.body).into_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("replica {i}: {path} not readable with the metrics-reader token");
}

/// The value of one sample (`name{labels}`) in a Prometheus text page, if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

pub async fn run(env: &mut Env) {
    let admin = &env.admin[0];
    let reader = of_kind(&env.lbguard.objects, "ClusterRole")
        .into_iter()
        .find(|r| r["metadata"]["name"] == "lbguard-metrics-reader")
        .expect("the chart renders lbguard-metrics-reader");
    apply_ok(admin, reader).await;
    for sa in ["prometheus", "someone-else"] {
        apply_ok(
            admin,
            &json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": NS}}),
        )
        .await;
    }
    apply_ok(admin, &json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "prometheus-lbguard"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "lbguard-metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": NS}],
    }))
    .await;
    let allowed = token(admin, "prometheus").await;
    let other = token(admin, "someone-else").await;
    for i in 0..env.lbguard.replicas.len() {
        let client =
            crate::common::Client::new(&env.lbguard.ca_pem, env.lbguard.replicas[i].metrics);
        let get = |token: String, path: &'static str| {
            let client = &client;
            async move {
                let auth = format!("Bearer {token}");
                client
                    .request_with("GET", path, &[("authorization", auth.as_str())], vec![])
                    .await
                    .unwrap()
            }
        };
        let r = get(allowed.clone(), "/metrics").await;
        assert_eq!(
            r.status,
            200,
            "replica {i}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let text = String::from_utf8_lossy(&r.body);
        assert!(
            text.contains("lbguard_tls_reloads_total"),
            "replica {i}: {text}"
        );
        assert_eq!(
            get(allowed.clone(), "/report").await.status,
            200,
            "replica {i}: /report"
        );
        assert_eq!(
            get(other.clone(), "/metrics").await.status,
            403,
            "replica {i}: unbound token"
        );
        assert_eq!(
            get("not-a-token".into(), "/metrics").await.status,
            401,
            "replica {i}: invalid token"
        );
        let none = client.request("GET", "/metrics", vec![]).await.unwrap();
        assert_eq!(none.status, 401, "replica {i}: no token");
    }
}
