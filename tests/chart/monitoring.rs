//! The monitoring objects use only metrics lbguard exports.

use super::*;

/// The metric names PromQL in `text` selects: names before a `{` and any `lbguard_` name.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let bytes = text.as_bytes();
    let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut i = 0;
    while i < bytes.len() {
        if is_name(bytes[i]) && (i == 0 || !is_name(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && is_name(bytes[i]) {
                i += 1;
            }
            let word = &text[start..i];
            let selector = bytes.get(i) == Some(&b'{');
            if (selector || word.starts_with("lbguard_"))
                && !word.chars().next().unwrap().is_ascii_digit()
            {
                out.insert(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every sample name lbguard exports, from its own exposition's TYPE lines.
fn exported_metric_names() -> std::collections::BTreeSet<String> {
    use lbguard::server::metrics::{
        AuditLabels, EndpointLabels, KindLabels, Metrics, RequestLabels, ViolationLabels,
    };
    let m = Metrics::new();
    // Labelled families show up once they have a series.
    let _ = m.requests.get_or_create(&RequestLabels {
        endpoint: "validate",
        operation: "CREATE",
        verdict: "allowed",
    });
    let _ = m.violations.get_or_create(&ViolationLabels {
        rule: "x",
        action: "deny",
    });
    let _ = m.latency.get_or_create(&EndpointLabels {
        endpoint: "validate",
    });
    let _ = m
        .watch_errors
        .get_or_create(&KindLabels { kind: "Service" });
    let _ = m.cloud.requests.get_or_create(&lbguard::cloud::ApiLabels {
        provider: "alibaba",
        operation: "x",
        result: "ok",
    });
    let _ = m
        .cloud
        .latency
        .get_or_create(&lbguard::cloud::OperationLabels {
            provider: "alibaba",
            operation: "x",
        });
    let _ = m.audit_violations.get_or_create(&AuditLabels {
        rule: "x",
        action: "deny",
        namespace: "n".into(),
    });
    let text = m.render();
    let mut out = std::collections::BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        match kind {
            "counter" => {
                out.insert(format!("{name}_total"));
            }
            "histogram" => {
                for s in ["_bucket", "_sum", "_count"] {
                    out.insert(format!("{name}{s}"));
                }
            }
            _ => {
                out.insert(name.to_string());
            }
        }
    }
    out
}

#[test]
fn monitoring_renders_and_uses_only_metrics_lbguard_exports() {
    let r = render(json!({"monitoring": {
        "serviceMonitor": {"enabled": true, "prometheusServiceAccount": {"name": "prometheus", "namespace": "monitoring"}},
        "prometheusRule": {"enabled": true},
        "dashboard": {"enabled": true}},
        "provider": "alibaba",
        "inventory": {"cloud": {"enabled": true, "existingSecret": "s", "refresh": "2m"}}}));
    let exported = exported_metric_names();
    assert!(
        exported.contains("lbguard_admission_requests_total"),
        "{exported:?}"
    );
    // The alerts.
    let rule = r.kind("PrometheusRule");
    assert_eq!(rule.len(), 1);
    let alerts = rule[0]["spec"]["groups"][0]["rules"].as_array().unwrap();
    let names: Vec<&str> = alerts
        .iter()
        .map(|a| a["alert"].as_str().unwrap())
        .collect();
    for want in [
        "LbguardDown",
        "LbguardAdmissionErrors",
        "LbguardSlowAdmissions",
        "LbguardClusterCacheStale",
        "LbguardCertificateReloadFailing",
        "LbguardInventoryReloadFailing",
        "LbguardAuditViolations",
        "LbguardCloudApiFailing",
        "LbguardCloudFactsStale",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    let stale = alerts
        .iter()
        .find(|a| a["alert"] == "LbguardCloudFactsStale")
        .unwrap();
    assert!(
        stale["expr"].as_str().unwrap().ends_with("> 3 * 120"),
        "three refresh intervals of 2m: {}",
        stale["expr"]
    );
    let mut used = std::collections::BTreeSet::new();
    for a in alerts {
        let expr = a["expr"].as_str().unwrap();
        assert!(expr.contains(r#"job="lbguard""#), "{expr}");
        used.extend(metric_names(expr));
    }
    // The p99 alert fires at 80% of the webhook's 5 s timeout.
    let slow = alerts
        .iter()
        .find(|a| a["alert"] == "LbguardSlowAdmissions")
        .unwrap();
    assert!(
        slow["expr"].as_str().unwrap().trim_end().ends_with("> 4"),
        "{slow}"
    );
    // The dashboard, in a ConfigMap the Grafana sidecar picks up.
    let cm = r
        .kind("ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["name"] == "lbguard-dashboard")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    let dashboard: Value =
        serde_json::from_str(cm["data"]["lbguard.json"].as_str().unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 8);
    for p in panels {
        for t in p["targets"].as_array().unwrap() {
            used.extend(metric_names(t["expr"].as_str().unwrap()));
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = v["query"].as_str() {
            used.extend(metric_names(q));
        }
    }
    // `up` is Prometheus' own scrape metric.
    let unknown: Vec<&String> = used
        .iter()
        .filter(|n| *n != "up" && !exported.contains(*n))
        .collect();
    assert!(
        unknown.is_empty(),
        "metrics lbguard does not export: {unknown:?}"
    );
    assert!(used.len() >= 10, "{used:?}");
    // Scraping secure metrics: HTTPS with the webhook's CA and Prometheus' token, which the
    // chart lets read /metrics.
    let sm = &r.kind("ServiceMonitor")[0]["spec"]["endpoints"][0];
    assert_eq!(sm["port"], "metrics");
    assert_eq!(sm["scheme"], "https");
    assert_eq!(sm["tlsConfig"]["ca"]["secret"]["key"], "ca.crt");
    assert_eq!(sm["tlsConfig"]["serverName"], "lbguard.lbguard-system.svc");
    let crb: ClusterRoleBinding = r.named("ClusterRoleBinding", "-metrics-reader");
    assert_eq!(
        crb.subjects.unwrap()[0].namespace.as_deref(),
        Some("monitoring")
    );
    // Plain metrics: plain HTTP. Off by default, and no LbguardDown alert under Ignore.
    let r = render(
        json!({"metrics": {"secure": false}, "webhook": {"failurePolicy": "Ignore"},
        "monitoring": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true}}}),
    );
    assert_eq!(
        r.kind("ServiceMonitor")[0]["spec"]["endpoints"][0]["scheme"],
        "http"
    );
    let alerts = r.kind("PrometheusRule")[0]["spec"]["groups"][0]["rules"].clone();
    assert!(
        alerts
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["alert"] != "LbguardDown")
    );
    let d = render(json!({}));
    assert!(d.kind("ServiceMonitor").is_empty() && d.kind("PrometheusRule").is_empty());
    let report = helm(
        "lint",
        &json!({"monitoring": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true}, "dashboard": {"enabled": true}}}),
    );
    assert_eq!(report["errors"], json!([]), "{report}");
}
