//! Lint in every certificate mode, the webhooks wired to the Service, and each way the certificate is made.

use super::*;

#[test]
fn lint_is_clean_for_every_certificate_mode() {
    for values in [
        json!({}),
        json!({"certificates": {"mode": "certManager"}}),
        json!({"certificates": {"mode": "secret", "secret": {"name": "mine", "caBundle": "Y2E="}}}),
        json!({"provider": "huawei", "inventory": {"enabled": true, "loadBalancers": [{"id": "elb-1", "provider": "huawei"}]}}),
        json!({"provider": "alibaba", "inventory": {"cloud": {"enabled": true, "existingSecret": "lbguard-cloud"}},
               "monitoring": {"prometheusRule": {"enabled": true}}}),
    ] {
        let report = helm("lint", &values);
        assert_eq!(report["errors"], json!([]), "{values}: {report}");
        let bad: Vec<&Value> = report["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["severity"].as_u64() >= Some(2))
            .collect();
        assert!(bad.is_empty(), "{values}: {bad:?}");
    }
}

#[test]
fn default_install_wires_both_webhooks_to_the_service() {
    let r = render(json!({"provider": "alibaba", "webhook": {"mutate": "always"}}));
    let vwc: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
    let mwc: MutatingWebhookConfiguration = r.one("MutatingWebhookConfiguration");
    let svc: Service = r.one("Service");
    let v = &vwc.webhooks.as_ref().unwrap()[0];
    let m = &mwc.webhooks.as_ref().unwrap()[0];
    assert_eq!(v.admission_review_versions, ["v1"]);
    assert_eq!(v.side_effects, "NoneOnDryRun");
    assert_eq!(m.side_effects, "None");
    assert_eq!(v.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(v.match_policy.as_deref(), Some("Equivalent"));
    assert_eq!(v.timeout_seconds, Some(5));
    assert_eq!(m.reinvocation_policy.as_deref(), Some("IfNeeded"));
    for (cc, path) in [
        (&v.client_config, "/validate"),
        (&m.client_config, "/mutate"),
    ] {
        let s = cc.service.as_ref().unwrap();
        assert_eq!(s.name, svc.metadata.name.clone().unwrap());
        assert_eq!(s.namespace, NS);
        assert_eq!(s.path.as_deref(), Some(path));
        assert_eq!(s.port, Some(443));
    }
    let rule = &v.rules.as_ref().unwrap()[0];
    assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["services".to_string()][..])
    );
    assert_eq!(
        rule.operations.as_deref(),
        Some(&["CREATE".to_string(), "UPDATE".to_string()][..]),
        "DELETE goes to deletion-protection.lbguard.io"
    );
    for sel in [
        v.namespace_selector.as_ref().unwrap(),
        m.namespace_selector.as_ref().unwrap(),
    ] {
        let e = &sel.match_expressions.as_ref().unwrap()[0];
        assert_eq!(e.key, "kubernetes.io/metadata.name");
        assert_eq!(e.operator, "NotIn");
        let vals = e.values.as_ref().unwrap();
        for ns in ["kube-system", "kube-node-lease", NS] {
            assert!(vals.iter().any(|x| x == ns), "{ns} not excluded: {vals:?}");
        }
    }
    let mc = &v.match_conditions.as_ref().unwrap()[0];
    assert!(
        mc.expression.contains("object.spec.type == 'LoadBalancer'")
            && mc
                .expression
                .contains("oldObject.spec.type == 'LoadBalancer'")
    );
    assert!(
        m.match_conditions.as_ref().unwrap()[0]
            .expression
            .contains("object.spec.type == 'LoadBalancer'")
    );
    // The Service routes 443 to the pods' https port.
    let port = &svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    assert_eq!(port.port, 443);
}

#[test]
fn generated_certificate_secret_and_ca_bundle_agree() {
    let r = render(json!({"webhook": {"mutate": "always"}}));
    let secret: Secret = r.one("Secret");
    let data = secret.data.unwrap();
    let (crt, key, ca) = (&data["tls.crt"].0, &data["tls.key"].0, &data["ca.crt"].0);
    let vwc: ValidatingWebhookConfiguration = r.one("ValidatingWebhookConfiguration");
    let mwc: MutatingWebhookConfiguration = r.one("MutatingWebhookConfiguration");
    let vb = vwc.webhooks.unwrap()[0]
        .client_config
        .ca_bundle
        .clone()
        .unwrap()
        .0;
    let mb = mwc.webhooks.unwrap()[0]
        .client_config
        .ca_bundle
        .clone()
        .unwrap()
        .0;
    assert_eq!(&vb, ca);
    assert_eq!(&mb, ca);
    // The pair is usable by the server, and the CA really signed it for the Service name.
    lbguard::server::tls::certified_key(crt, key, "tls.crt", "tls.key")
        .expect("key matches certificate");
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(ca).unwrap())
        .unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        std::sync::Arc::new(roots),
        std::sync::Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()
    .unwrap();
    let leaf = rustls::pki_types::CertificateDer::from_pem_slice(crt).unwrap();
    let name = rustls::pki_types::ServerName::try_from(format!("lbguard.{NS}.svc")).unwrap();
    rustls::client::danger::ServerCertVerifier::verify_server_cert(
        &*verifier,
        &leaf,
        &[],
        &name,
        &[],
        rustls::pki_types::UnixTime::now(),
    )
    .expect("certificate valid for the Service DNS name");
    // The Deployment mounts that Secret.
    let dep: Deployment = r.one("Deployment");
    let vols = dep.spec.unwrap().template.spec.unwrap().volumes.unwrap();
    assert!(
        vols.iter()
            .any(|v| v.secret.as_ref().and_then(|s| s.secret_name.as_deref())
                == secret.metadata.name.as_deref())
    );
}

#[test]
fn generated_mode_reuses_the_secret_through_lookup() {
    // Without a cluster lookup finds nothing, so this is the first-install path; the
    // template reads the Secret back with lookup on upgrade (see the chart README).
    let text = std::fs::read_to_string(format!("{CHART}/templates/webhooks.yaml")).unwrap();
    assert!(text.contains("lookup \"v1\" \"Secret\" .Release.Namespace $secretName"));
    let a = render(json!({}));
    let b = render(json!({}));
    let ca = |r: &Rendered| r.kind("Secret")[0]["data"]["ca.crt"].clone();
    assert_ne!(ca(&a), ca(&b), "first installs make a fresh CA");
}

#[test]
fn cert_manager_mode_uses_a_certificate_and_ca_injection() {
    let r =
        render(json!({"certificates": {"mode": "certManager"}, "webhook": {"mutate": "always"}}));
    assert!(r.kind("Secret").is_empty());
    assert_eq!(r.kind("Issuer").len(), 1);
    let cert = r.kind("Certificate")[0];
    assert_eq!(cert["spec"]["secretName"], "lbguard-tls");
    assert_eq!(cert["spec"]["dnsNames"][0], format!("lbguard.{NS}.svc"));
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let w = r.kind(kind)[0];
        assert_eq!(
            w["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            format!("{NS}/lbguard")
        );
        assert!(w["webhooks"][0]["clientConfig"].get("caBundle").is_none());
    }
    let r = render(
        json!({"certificates": {"mode": "certManager", "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}}}),
    );
    assert!(r.kind("Issuer").is_empty());
    assert_eq!(
        r.kind("Certificate")[0]["spec"]["issuerRef"]["kind"],
        "ClusterIssuer"
    );
}

#[test]
fn existing_secret_mode_uses_the_given_secret_and_ca() {
    let r = render(
        json!({"certificates": {"mode": "secret", "secret": {"name": "corp-tls", "caBundle": "Q0E="}}}),
    );
    assert!(r.kind("Secret").is_empty());
    let w = r.kind("ValidatingWebhookConfiguration")[0];
    assert_eq!(w["webhooks"][0]["clientConfig"]["caBundle"], "Q0E=");
    let dep = r.kind("Deployment")[0];
    assert_eq!(
        dep["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "corp-tls"
    );
    let out = helm(
        "render",
        &json!({"certificates": {"mode": "secret", "secret": {"name": "corp-tls"}}}),
    );
    assert!(
        out["error"]
            .as_str()
            .unwrap_or("")
            .contains("certificates.secret.caBundle"),
        "{out}"
    );
}
