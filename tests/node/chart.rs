//! The chart installed for real (Helm's SDK, `tests/node/helm`) with the image from the
//! Dockerfile, as the install page says: only the image and certificate values set. Then what a
//! user relies on: pods Ready through the chart's probes, a bad `kubectl apply` denied through
//! the Service, the PodDisruptionBudget holding a drain, a rolling upgrade losing no
//! admission, and an uninstall that leaves nothing behind.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::{NS, Node};
use crate::plane::call;

const BAD: &str = "examples/alibaba/bad-address-type-value.yaml";
const DENIED: &str = "admission webhook \"validate.lbguard.io\" denied the request: [address-type-value] service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type is \"Intranet\"";
const PODS: &str = "app.kubernetes.io/name=lbguard,app.kubernetes.io/instance=lbguard";
const NODE: &str = "lbguard-node";
/// Namespaces the cases create besides the release's.
const SCRATCH: &[&str] = &["shop", "stream"];

/// What a failed case prints: the release's pods, their logs and events.
pub const DIAGNOSE: &str = "kubectl -n lbguard-system get all,pdb,endpointslices -o wide; \
    kubectl -n lbguard-system describe pods | tail -40; \
    kubectl -n lbguard-system logs -l app.kubernetes.io/name=lbguard --tail=20 --prefix";

/// Uninstalls the release and deletes what the cases created, whatever state they left.
pub fn remove(node: &Node) {
    node.sh(&format!(
        "kubectl uncordon {NODE}; helm uninstall lbguard -n {NS} --wait; \
         kubectl delete clusterrolebinding lbguard-report-reader --ignore-not-found; \
         kubectl delete namespace {NS} {} --ignore-not-found --wait=true --timeout=60s",
        SCRATCH.join(" ")
    ));
}

/// Waits for the Deployment to be rolled out, then checks that both pods are Ready through
/// the chart's own probes, run the image under test, and are as hardened as the chart says.
pub async fn ready(node: &Node) {
    node.ok(&format!(
        "kubectl -n {NS} rollout status deployment/lbguard --timeout=120s"
    ));
    let pods: Value =
        serde_json::from_str(&node.ok(&format!("kubectl -n {NS} get pods -l {PODS} -o json")))
            .unwrap();
    let pods: Vec<&Value> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect();
    assert_eq!(pods.len(), 2, "two replicas");
    for pod in pods {
        let name = pod["metadata"]["name"].as_str().unwrap();
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz", "{name}");
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz", "{name}");
        let ready = pod["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(ready, "{name} is not Ready: {}", pod["status"]);
        assert_eq!(
            c["image"].as_str().unwrap(),
            node.image,
            "{name} runs the image under test"
        );
        // The process as the kernel sees it: uid 65532, no capabilities, a read-only root.
        let status = node.ok(&format!(
            "kubectl -n {NS} exec {name} -- cat /proc/1/status"
        ));
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.split_whitespace().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        assert_eq!(field("Uid:"), ["65532"; 4], "{name}");
        assert_eq!(field("CapEff:"), ["0000000000000000"], "{name}");
        assert_eq!(field("CapPrm:"), ["0000000000000000"], "{name}");
        let write = node.sh(&format!(
            "kubectl -n {NS} exec {name} -- touch /usr/local/bin/x"
        ));
        assert!(
            !write.ok && write.text.contains("Read-only file system"),
            "{name}: {}",
            write.text
        );
        // Plain logs for a log pipe: no colour codes.
        let logs = node.ok(&format!("kubectl -n {NS} logs {name}"));
        assert!(
            !logs.contains('\u{1b}'),
            "{name} logs colour codes:\n{logs}"
        );
    }
}

/// A bad `kubectl apply` is denied, by the webhook registered through its Service.
pub fn denies(node: &Node) {
    let vwc: Value = serde_json::from_str(
        &node.ok("kubectl get validatingwebhookconfiguration lbguard -o json"),
    )
    .unwrap();
    for w in vwc["webhooks"].as_array().unwrap() {
        assert_eq!(
            w["clientConfig"]["service"]["name"], "lbguard",
            "{}",
            w["clientConfig"]
        );
        assert!(w["clientConfig"]["url"].is_null());
    }
    // A pod just Ready may take a moment to be in the Service's endpoints.
    let started = std::time::Instant::now();
    loop {
        let out = node.sh(&format!("kubectl apply -f {BAD}"));
        if !out.ok && out.text.contains(DENIED) {
            return;
        }
        assert!(
            out.text.contains("failed calling webhook")
                && started.elapsed() < Duration::from_secs(10),
            "$ kubectl apply -f {BAD}\n{}",
            out.text
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The chart with a certificate from the user's own PKI (`certs/gen.sh`, as certs/README.md
/// shows).
pub async fn secret_mode(node: &mut Node) {
    let out = node.dir.join("certs");
    node.ok(&format!(
        "certs/gen.sh lbguard.{NS}.svc {out} >/dev/null && kubectl create namespace {NS} && \
         kubectl create namespace shop && \
         kubectl -n {NS} create secret tls lbguard-tls --cert {out}/tls.crt --key {out}/tls.key && \
         helm install lbguard charts/lbguard -n {NS} {image} \
           --set certificates.mode=secret --set certificates.secret.name=lbguard-tls \
           --set certificates.secret.caBundle=$(base64 -w0 < {out}/ca.crt)",
        out = out.display(),
        image = node.image_values(),
    ));
    ready(node).await;
    denies(node);
    // Uninstalling leaves the user's Secret alone.
    node.ok(&format!("helm uninstall lbguard -n {NS} --wait"));
    node.ok(&format!("kubectl -n {NS} get secret lbguard-tls"));
}

/// The chart's defaults (a generated certificate), then a drain, an upgrade and the uninstall.
pub async fn generate_mode(node: &mut Node) {
    let install = node.ok(&format!(
        "helm install lbguard charts/lbguard -n {NS} --create-namespace {}",
        node.image_values()
    ));
    assert!(install.contains("STATUS: deployed"), "{install}");
    node.ok("kubectl create namespace shop");
    ready(node).await;
    denies(node);
    notes(node, &install).await;
    drain(node).await;
    rolling_upgrade(node).await;
    uninstall(node).await;
}

/// The chart's NOTES, as `helm install` printed them: the demo Service is denied with the
/// message they show, and their `/report` commands (secure metrics, a token) return the audit.
async fn notes(node: &Node, install: &str) {
    let notes = install
        .split_once("NOTES:\n")
        .expect("helm install prints the chart's NOTES")
        .1;
    let section = |from: &str, to: &str| -> Vec<String> {
        let start = notes
            .find(from)
            .unwrap_or_else(|| panic!("{from:?} in\n{notes}"));
        let rest = &notes[start..];
        let rest = &rest[rest.find('\n').unwrap() + 1..];
        let end = rest.find(to).unwrap_or(rest.len());
        rest[..end]
            .lines()
            .map(|l| l.strip_prefix("   ").unwrap_or(l).to_string())
            .collect()
    };
    let demo = section("2. See it deny", "\n\n");
    let expected = section("Expected:", "\n\n");
    let out = node.sh(&demo.join("\n"));
    assert!(
        !out.ok && out.text.trim() == expected.join("\n").trim(),
        "the NOTES' demo:\n{}\nprinted\n{}\nnot\n{}",
        demo.join("\n"),
        out.text,
        expected.join("\n")
    );
    // Step 3 as printed, the port-forward stopped afterwards, curl retried while it starts.
    let report = section("ClusterRole):", "\n\n");
    let curl = report.iter().position(|l| l.starts_with("curl")).unwrap();
    let script = format!(
        "cd {}\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n{}\nfor i in $(seq 40); do\n{}\n[ $? = 0 ] && exit 0; sleep 0.5; done; exit 1",
        node.dir.display(),
        report[..curl].join("\n"),
        report[curl..].join("\n").replacen("curl -s", "curl -sf", 1)
    );
    let out = node.sh(&script);
    assert!(
        out.ok,
        "the NOTES' /report commands:\n{script}\n{}",
        out.text
    );
    let last = out.text.lines().last().unwrap_or_default();
    let body: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("/report is not JSON ({e}):\n{}", out.text));
    assert!(body["summary"]["checked"].is_number(), "{body}");
    node.ok(&format!(
        "kubectl delete clusterrolebinding lbguard-report-reader && kubectl -n {NS} delete serviceaccount report-reader"
    ));
}

/// `kubectl drain` evicts one pod and is refused the second while the PodDisruptionBudget
/// needs it; that one keeps answering the whole time.
async fn drain(node: &Node) {
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    let checks = {
        let (kubeconfig, stop) = (node.kubeconfig.clone(), Arc::clone(&stop));
        tokio::task::spawn_blocking(move || {
            let mut outputs = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let out = std::process::Command::new("bash")
                    .args(["-c", &format!("kubectl apply -f {BAD} 2>&1")])
                    .current_dir(super::ROOT)
                    .env("KUBECONFIG", &kubeconfig)
                    .env("PATH", super::path())
                    .output()
                    .unwrap();
                outputs.push(String::from_utf8_lossy(&out.stdout).into_owned());
                std::thread::sleep(Duration::from_millis(200));
            }
            outputs
        })
    };
    let out = node.sh(&format!(
        "kubectl drain {NODE} --pod-selector={PODS} --timeout=20s"
    ));
    stop.store(true, Ordering::Relaxed);
    let outputs = checks.await.unwrap();
    assert!(
        !out.ok && out.text.contains("disruption budget"),
        "the drain should stop at the PodDisruptionBudget:\n{}",
        out.text
    );
    let evicted = out.text.matches("evicted").count();
    assert_eq!(evicted, 1, "one pod evicted:\n{}", out.text);
    let running: Value = serde_json::from_str(&node.ok(&format!(
        "kubectl -n {NS} get pods -l {PODS} --field-selector=status.phase=Running -o json"
    )))
    .unwrap();
    let live = running["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .count();
    assert_eq!(live, 1, "one pod left serving");
    assert!(outputs.len() > 5, "{outputs:?}");
    let lost: Vec<&String> = outputs.iter().filter(|o| !o.contains(DENIED)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} applies during the drain were not denied by lbguard: {:?}",
        lost.len(),
        outputs.len(),
        &lost[..lost.len().min(3)]
    );
    println!(
        "  drain: 1 pod evicted, the second kept by the budget, {} applies denied meanwhile",
        outputs.len()
    );
    node.ok(&format!("kubectl uncordon {NODE}"));
    ready(node).await;
}

/// Stops the load when the case ends, a failed assertion included.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `helm upgrade` with a changed value rolls the pods; Service creates (allowed) and bad ones
/// (denied) keep flowing, and every one gets lbguard's answer.
async fn rolling_upgrade(node: &Node) {
    node.ok("kubectl create namespace stream");
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    let load = {
        let (client, stop) = (node.admin.clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            let (mut allowed, mut denied, mut lost) = (0usize, 0usize, Vec::new());
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let bad = i % 2 == 1;
                let svc = json!({
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": format!("svc-{i}"), "namespace": "stream", "annotations": {
                        "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type":
                            if bad { "Intranet" } else { "intranet" }}},
                    "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                             "ports": [{"port": 80, "targetPort": 8080}]},
                });
                let r = call(
                    &client,
                    "POST",
                    "/api/v1/namespaces/stream/services",
                    Some(&svc),
                )
                .await;
                match (bad, r.status) {
                    (false, s) if (200..300).contains(&s) => allowed += 1,
                    (true, 403) if r.message().contains("[address-type-value]") => denied += 1,
                    _ => lost.push(format!("{} {}", r.status, r.message())),
                }
                i += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (allowed, denied, lost)
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = node.ok(&format!(
        "kubectl -n {NS} get pods -l {PODS} -o jsonpath='{{.items[*].metadata.name}}'"
    ));
    let upgrade = node.ok(&format!(
        "helm upgrade lbguard charts/lbguard -n {NS} --reuse-values --set logFormat=text"
    ));
    assert!(upgrade.contains("REVISION: 2"), "{upgrade}");
    node.ok(&format!(
        "kubectl -n {NS} rollout status deployment/lbguard --timeout=120s"
    ));
    // The old pods finish their shutdown delay while the load still runs.
    node.until(
        Duration::from_secs(60),
        &format!("kubectl -n {NS} get pods -l {PODS} -o jsonpath='{{.items[*].metadata.name}}'"),
        |o| o.ok && before.split_whitespace().all(|p| !o.text.contains(p)),
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let (allowed, denied, lost) = load.await.unwrap();
    println!(
        "  rolling upgrade: {allowed} creates allowed, {denied} denied, {} lost",
        lost.len()
    );
    assert!(
        allowed > 20 && denied > 20,
        "{allowed} allowed, {denied} denied"
    );
    assert!(
        lost.is_empty(),
        "{} of {} admissions lost during the upgrade: {:?}",
        lost.len(),
        allowed + denied + lost.len(),
        &lost[..lost.len().min(5)]
    );
    let args = node.ok(&format!(
        "kubectl -n {NS} get deployment lbguard -o jsonpath='{{.spec.template.spec.containers[0].args}}'"
    ));
    assert!(args.contains("--log-format=text"), "{args}");
    ready(node).await;
}

/// `helm uninstall` removes every object the release made, in its namespace and cluster-wide,
/// and with it the webhooks: Service writes pass again.
async fn uninstall(node: &Node) {
    node.ok(&format!("helm uninstall lbguard -n {NS} --wait"));
    node.until(
        Duration::from_secs(60),
        &format!("kubectl -n {NS} get pods -o name"),
        |o| o.ok && o.text.trim().is_empty(),
    )
    .await;
    // Every kind the API serves, but Events (they expire on their own); what the control plane
    // puts in every namespace stays.
    let namespaced = node.ok(&format!(
        "kubectl get $(kubectl api-resources --verbs=list --namespaced -o name | grep -v '^events' | paste -sd,) -n {NS} -o name 2>/dev/null"
    ));
    let left: Vec<&str> = namespaced
        .lines()
        .filter(|l| {
            !matches!(
                *l,
                "configmap/kube-root-ca.crt"
                    | "configmap/openshift-service-ca.crt"
                    | "serviceaccount/default"
            )
        })
        .collect();
    assert!(left.is_empty(), "left in {NS}: {left:?}");
    let cluster = node.ok(
        "kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations,clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings -o name",
    );
    let left: Vec<&str> = cluster.lines().filter(|l| l.contains("lbguard")).collect();
    assert!(left.is_empty(), "left cluster-wide: {left:?}");
    let out = node.sh(&format!("kubectl apply -f {BAD}"));
    assert!(
        out.ok,
        "without lbguard the Service is created:\n{}",
        out.text
    );
}
