//! The image built from the Dockerfile, as podman has it: what it is made of, and run by hand
//! as the install page shows (read-only root, no capabilities, a certificate mounted).

use std::ops::Not;
use std::time::{Duration, Instant};

use super::{Node, ROOT};

const CTR: &str = "lbguard-node-test";

fn inspect(node: &Node, format: &str) -> String {
    node.ok(&format!(
        "podman image inspect --format '{format}' {}",
        node.image
    ))
    .trim()
    .to_string()
}

/// User, size, a stripped binary and CA certificates.
pub async fn as_built(node: &mut Node) {
    assert_eq!(inspect(node, "{{.Config.User}}"), "65532:65532");
    assert_eq!(
        inspect(node, "{{json .Config.Entrypoint}}"),
        r#"["/usr/local/bin/lbguard"]"#
    );
    // No default role: the chart says `serve`, CI says `check`.
    assert_eq!(inspect(node, "{{json .Config.Cmd}}"), r#"["--help"]"#);

    // README states the size; it must stay true within 5 MB.
    let size: f64 = inspect(node, "{{.Size}}").parse().unwrap();
    let mb = size / 1e6;
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    let stated: f64 = readme
        .split_once("The image is ")
        .and_then(|(_, rest)| rest.split_once(" MB"))
        .and_then(|(n, _)| n.trim().parse().ok())
        .expect("README.md says \"The image is N MB\"");
    println!("  image: {mb:.0} MB (README says {stated} MB)");
    assert!(
        (mb - stated).abs() <= 5.0,
        "the image is {mb:.0} MB; README.md says {stated} MB"
    );

    // Stripped: no symbol table, no debug sections.
    let bin = node.dir.join("lbguard");
    node.ok(&format!(
        "podman run --rm --entrypoint cat {} /usr/local/bin/lbguard > {}",
        node.image,
        bin.display()
    ));
    let sections = node.ok(&format!("readelf -S -W {}", bin.display()));
    assert!(sections.contains(".text"), "{sections}");
    for s in [".symtab", ".debug_info", ".debug_line"] {
        assert!(!sections.contains(s), "the binary has {s}:\n{sections}");
    }
    // The clouds' APIs are called over TLS verified with the system's CA certificates.
    let bundle = node.ok(&format!(
        "podman run --rm --entrypoint cat {} /etc/ssl/certs/ca-certificates.crt | grep -c 'BEGIN CERTIFICATE'",
        node.image
    ));
    let count: usize = bundle.trim().parse().unwrap();
    assert!(count > 50, "{count} CA certificates");
}

/// The Dockerfile's build hands lld link/hot-functions.txt (build.rs): the functions it names
/// that the binary has sit in the list's order. Checked on the build stage, whose binary keeps
/// its symbols (podman has its layers from building the image). A list gone stale with code
/// edits finds fewer names; a build that ignores it leaves them in the compiler's order.
pub async fn hot_functions_ordered(node: &mut Node) {
    let stage = "localhost/lbguard/build:node-test";
    node.ok(&format!(
        "podman build --quiet --target build -t {stage} . >/dev/null"
    ));
    let nm = node.ok(&format!(
        "podman run --rm --entrypoint nm {stage} target/release/lbguard; podman rmi {stage} >/dev/null"
    ));
    let address: std::collections::HashMap<&str, u64> = nm
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, _, name) = (f.next()?, f.next()?, f.next()?);
            Some((name, u64::from_str_radix(a, 16).ok()?))
        })
        .collect();
    let list = std::fs::read_to_string(format!("{ROOT}/link/hot-functions.txt")).unwrap();
    let names: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    let found: Vec<u64> = names
        .iter()
        .filter_map(|n| address.get(n).copied())
        .collect();
    println!("  hot functions: {} of {} found", found.len(), names.len());
    assert!(
        found.len() * 2 >= names.len(),
        "only {} of the {} functions link/hot-functions.txt names are in the image's build: \
         regenerate it (scripts/bench-http --hot-functions link/hot-functions.txt)",
        found.len(),
        names.len()
    );
    let pairs = found.len().saturating_sub(1);
    let ascending = found.windows(2).filter(|w| w[0] < w[1]).count();
    println!("  in order: {ascending} of {pairs} neighbouring pairs");
    assert!(
        ascending * 100 >= pairs * 95,
        "{ascending} of {pairs} neighbouring hot functions are in the list's order: the image's \
         build did not hand lld link/hot-functions.txt"
    );
}

/// Run by hand with podman as the install page shows: the key must be readable by the image's
/// user, `serve` needs a cluster, `serve --standalone` serves without one, and SIGTERM stops
/// it cleanly.
pub async fn by_hand(node: &mut Node) {
    let certs = node.dir.join("by-hand");
    node.ok(&format!(
        "certs/gen.sh localhost {} >/dev/null",
        certs.display()
    ));
    let (addr, metrics) = (crate::common::free_port(), crate::common::free_port());
    let run = |extra: &str, args: &str| {
        format!(
            "podman rm -f {CTR} >/dev/null 2>&1; podman run {extra} --name {CTR} --network host \
             --read-only --cap-drop=ALL --security-opt no-new-privileges \
             -v {}:/etc/lbguard/tls:ro {} {args}",
            certs.display(),
            node.image
        )
    };
    let serve = format!(
        "serve --standalone --tls-cert=/etc/lbguard/tls/tls.crt --tls-key=/etc/lbguard/tls/tls.key \
         --addr=127.0.0.1:{addr} --metrics-addr=127.0.0.1:{metrics}"
    );

    // gen.sh writes the key 0600 for its owner (root): uid 65532 cannot read it, and says so.
    let out = node.sh(&run("--rm", &serve));
    assert!(!out.ok, "{}", out.text);
    assert!(
        out.text.contains("/etc/lbguard/tls/tls.key") && out.text.contains("ermission denied"),
        "a key the image's user cannot read:\n{}",
        out.text
    );

    // Outside a cluster `serve` (the chart's command) says what is missing instead of
    // serving.
    let out = node.sh(&run(
        "--rm",
        "serve --tls-cert=/etc/lbguard/tls/tls.crt --tls-key=/etc/lbguard/tls/tls.key",
    ));
    assert!(!out.ok, "{}", out.text);
    assert!(out.text.contains("--standalone"), "{}", out.text);

    // Readable by 65532 (the install page: chown 65532 or chmod 0644).
    node.ok(&format!("chmod 0644 {}/tls.key", certs.display()));
    node.ok(&run("-d", &serve));
    let curl = format!(
        "curl -sS --cacert {}/ca.crt https://localhost:{addr}",
        certs.display()
    );
    node.until(Duration::from_secs(30), &format!("{curl}/readyz"), |o| {
        o.ok && o.text.trim() == "ready"
    })
    .await;
    let mut review = crate::common::fixture("review-create.json");
    crate::common::set_annotations(
        &mut review,
        "object",
        &[(
            "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type",
            "Intranet",
        )],
    );
    let file = node.dir.join("review.json");
    std::fs::write(&file, review.to_string()).unwrap();
    let answer = node.ok(&format!(
        "{curl}/validate -H 'Content-Type: application/json' --data @{}",
        file.display()
    ));
    assert!(
        answer.contains("\"allowed\":false") && answer.contains("[address-type-value]"),
        "{answer}"
    );
    let status = node.ok(&format!("podman exec {CTR} cat /proc/1/status"));
    assert!(status.contains("CapEff:\t0000000000000000"), "{status}");
    assert!(
        status.contains("Uid:\t65532\t65532\t65532\t65532"),
        "{status}"
    );

    let t = Instant::now();
    node.ok(&format!("podman stop -t 30 {CTR}"));
    let took = t.elapsed();
    let code = node.ok(&format!(
        "podman inspect --format '{{{{.State.ExitCode}}}}' {CTR}"
    ));
    let logs = node.ok(&format!("podman logs {CTR}"));
    node.sh(&format!("podman rm -f {CTR}"));
    assert_eq!(code.trim(), "0", "exit code after SIGTERM; logs:\n{logs}");
    assert!(took < Duration::from_secs(10), "SIGTERM took {took:?}");
    assert!(
        !logs.contains('\u{1b}'),
        "colour codes in the logs:\n{logs}"
    );
    assert!(logs.contains("stopped"), "{logs}");
}

/// The image as the CLI, as the book's CI page writes it: `podman run --rm -v
/// "$PWD:/manifests:ro" IMAGE check /manifests`. Run with no command it says how to use it in
/// both roles. The image's user (65532) reads the mounted manifests, `check`'s exit codes (0
/// admitted, 1 denied, 2 unreadable) pass through, a repository's other YAML is skipped and a
/// chart left out with `--exclude`; the `lbguard-docker` pre-commit hook runs it.
pub async fn as_cli(node: &mut Node) {
    let out = node.sh(&format!("podman run --rm {}; echo \"exit=$?\"", node.image));
    assert!(out.text.trim_end().ends_with("exit=0"), "{}", out.text);
    for role in [
        "The webhook (what the Helm chart runs):",
        "lbguard serve --tls-cert FILE --tls-key FILE",
        "The linter, offline (CI, pre-commit, a laptop):",
        "lbguard check [--provider P] FILE|DIR...",
    ] {
        assert!(out.text.contains(role), "{role}: {}", out.text);
    }
    assert!(!out.text.contains("kubeconfig"), "{}", out.text);

    let repo = node.dir.join("cli-manifests");
    let bad_dir = repo.join("bad");
    let good_dir = repo.join("good");
    for (dir, files) in [
        (
            &bad_dir,
            &[
                ("bad.yaml", "alibaba/bad-address-type-value.yaml"),
                ("good.yaml", "alibaba/good-nlb.yaml"),
            ][..],
        ),
        (&good_dir, &[("good.yaml", "alibaba/good-nlb.yaml")][..]),
    ] {
        std::fs::create_dir_all(dir).unwrap();
        for (name, example) in files {
            std::fs::copy(format!("{ROOT}/examples/{example}"), dir.join(name)).unwrap();
        }
    }
    // A checkout as git leaves it: directories 0755, files 0644, owned by someone else.
    node.ok(&format!(
        "chmod -R u=rwX,go=rX {0} && chown -R 1000:1000 {0}",
        repo.display()
    ));
    let run = |dir: &std::path::Path, args: &str| {
        let out = node.sh(&format!(
            "cd {} && podman run --rm -v \"$PWD:/manifests:ro\" {} {args}; echo \"exit=$?\"",
            dir.display(),
            node.image
        ));
        let (text, code) = out.text.trim_end().rsplit_once("exit=").unwrap_or_default();
        (text.to_string(), code.trim().to_string())
    };

    let (text, code) = run(&bad_dir, "check /manifests");
    assert_eq!(code, "1", "{text}");
    assert!(
        text.contains("/manifests/bad.yaml:7:5: deny [address-type-value]"),
        "{text}"
    );
    assert!(text.contains("ALLOWED shop/gateway"), "{text}");
    let (text, code) = run(&good_dir, "check /manifests");
    assert_eq!(code, "0", "{text}");
    let (text, code) = run(&good_dir, "check /manifests/missing.yaml");
    assert_eq!(code, "2", "{text}");
    assert!(text.contains("/manifests/missing.yaml"), "{text}");

    // The working directory is /manifests: `check .` names files as the repository does,
    // which is what code scanning matches a SARIF result's file against.
    let (text, code) = run(&bad_dir, "check --output sarif .");
    assert_eq!(code, "1", "{text}");
    let sarif: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let uri = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"];
    assert!(
        uri.as_str()
            .is_some_and(|u| u.trim_start_matches("./") == "bad.yaml"),
        "{uri}"
    );

    // A repository as people have them: a README, a playbook, a Helm chart.
    let mixed = repo.join("mixed");
    for (name, body) in MIXED {
        let file = mixed.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    std::fs::copy(
        format!("{ROOT}/examples/alibaba/bad-address-type-value.yaml"),
        mixed.join("manifests/bad.yaml"),
    )
    .unwrap();
    node.ok(&format!("chmod -R u=rwX,go=rX {0}", mixed.display()));
    let (text, code) = run(&mixed, "check .");
    assert_eq!(code, "2", "{text}");
    assert!(
        text.contains("./charts/web/templates/svc.yaml document 1: not valid YAML")
            && text.contains("helm template"),
        "{text}"
    );
    let (text, code) = run(&mixed, "check --exclude 'charts/**' .");
    assert_eq!(code, "1", "{text}");
    assert!(
        text.contains("./manifests/bad.yaml:7:5: deny [address-type-value]"),
        "{text}"
    );
    assert!(
        text.contains("./playbook.yml document 1 skipped: not a Kubernetes object (a list)"),
        "{text}"
    );

    docker_hook(node, &mixed);
}

/// What a repository holds beside its manifests.
const MIXED: &[(&str, &str)] = &[
    (
        "manifests/README.md",
        "# Manifests\n\nApply them: kubectl apply -f manifests/\n\n- one per file\n",
    ),
    ("playbook.yml", "- hosts: all\n  roles: [web]\n"),
    ("charts/web/values.yaml", "lb: true\n"),
    (
        "charts/web/templates/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.lb }}\nspec:\n  type: LoadBalancer\n{{- end }}\n",
    ),
];

/// The `lbguard-docker` pre-commit hook (pre-commit's docker_image language: `docker run` as
/// the user, the repository at /src) with this image, podman standing in for docker:
/// `pre-commit try-repo` on the staged files of `mixed`, committed as a repository.
fn docker_hook(node: &Node, mixed: &std::path::Path) {
    if node.sh("pre-commit --version").ok.not() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true needs pre-commit"
        );
        println!("  lbguard-docker hook: not run: pre-commit is not installed");
        return;
    }
    let hooks = node.dir.join("hook-repo");
    std::fs::create_dir_all(&hooks).unwrap();
    let manifest = std::fs::read_to_string(format!("{ROOT}/.pre-commit-hooks.yaml")).unwrap();
    let published = manifest
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("entry: ")
                .filter(|e| e.contains("/lbguard:"))
        })
        .and_then(|e| e.split_whitespace().next())
        .expect("a docker_image hook")
        .to_string();
    std::fs::write(
        hooks.join(".pre-commit-hooks.yaml"),
        manifest.replace(&published, &node.image),
    )
    .unwrap();
    let shims = node.dir.join("docker-shim");
    std::fs::create_dir_all(&shims).unwrap();
    std::fs::write(shims.join("docker"), "#!/bin/sh\nexec podman \"$@\"\n").unwrap();
    let git = "git -c user.name=t -c user.email=t@t.invalid -c commit.gpgsign=false";
    node.ok(&format!(
        "chmod +x {shims}/docker && cd {hooks} && git init -q && {git} add . && {git} commit -q -m hooks \
         && cd {mixed} && git init -q && {git} add manifests playbook.yml charts",
        shims = shims.display(),
        hooks = hooks.display(),
        mixed = mixed.display()
    ));
    let try_repo = |files: &str| {
        node.sh(&format!(
            "cd {mixed} && {{ git rm -r -q --cached . >/dev/null 2>&1 || true; }} && {git} add {files} && PATH={shims}:$PATH \
             PRE_COMMIT_HOME={cache} pre-commit try-repo {hooks} lbguard-docker; echo \"exit=$?\"",
            mixed = mixed.display(),
            shims = shims.display(),
            cache = node.dir.join("pre-commit-cache").display(),
            hooks = hooks.display()
        ))
        .text
    };
    let text = try_repo("manifests playbook.yml");
    assert!(text.trim_end().ends_with("exit=1"), "{text}");
    assert!(
        text.contains("manifests/bad.yaml:7:5: deny [address-type-value]"),
        "{text}"
    );
    let text = try_repo("manifests/README.md playbook.yml");
    assert!(text.trim_end().ends_with("exit=0"), "{text}");
}
