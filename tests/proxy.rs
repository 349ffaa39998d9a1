//! The cloud API client through an HTTPS proxy: a local CONNECT proxy counts the tunnels it
//! opens to the mock cloud. The mock is named `lbguard-mock.test` (not loopback, so proxied;
//! only the proxy resolves it); `localhost` and 127.0.0.1 name it too and are never proxied.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::connect_proxy::{ConnectProxy, Mode};
use common::mock_cloud::{AK, Mock, REGION, SK, TUNNEL_NAME};
use lbguard::cloud::creds::CredStore;
use lbguard::cloud::http::Http;
use lbguard::cloud::proxy::Proxy;
use lbguard::cloud::{Cloud, CloudError};
use lbguard::vocab::provider::Provider;

const INV: &str = r#"
loadBalancers:
  - {id: lb-a, provider: ctyun, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: lb-a, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: user}
  - {id: elb-a, provider: huawei, kind: elb-dedicated, addressType: intranet, vpcId: vpc-1, createdBy: user, flavors: [l4]}
  - {id: clb-a, provider: volcengine, kind: clb, addressType: intranet, vpcId: vpc-1}
"#;

const ALL: [(Provider, &str); 4] = [
    (Provider::Ctyun, "lb-a"),
    (Provider::Alibaba, "lb-a"),
    (Provider::Huawei, "elb-a"),
    (Provider::Volcengine, "clb-a"),
];

/// `lb:p@ss` as the URL spells it and as the proxy receives it.
const USERINFO: &str = "lb:p%40ss@";
const BASIC: &str = "Basic bGI6cEBzcw==";

struct Setup {
    mock: Mock,
    creds: tempfile::TempDir,
}

impl Setup {
    async fn start() -> Option<Self> {
        let mock = Mock::start(INV).await?;
        let creds = tempfile::tempdir().unwrap();
        std::fs::write(creds.path().join("accessKeyId"), AK).unwrap();
        std::fs::write(creds.path().join("accessKeySecret"), SK).unwrap();
        std::fs::write(creds.path().join("projectId"), "p-1").unwrap();
        Some(Self { mock, creds })
    }

    fn port(&self) -> u16 {
        self.mock.url.rsplit_once(':').unwrap().1.parse().unwrap()
    }

    /// A cloud client for `provider` calling the mock by `host`, through `proxy`.
    fn cloud(&self, provider: Provider, host: &str, proxy: Option<Proxy>) -> Arc<Cloud> {
        let config = format!(
            "provider: {provider}\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: https://{host}:{}\n    credentialsDir: {}\n",
            self.port(),
            self.creds.path().display()
        );
        let cfg = lbguard::engine::parse_config(&config, "t").unwrap();
        let http = Http::with_proxy(self.mock.ca_pem.as_bytes(), proxy).unwrap();
        Cloud::with_http(
            provider,
            &cfg.inventory.cloud,
            cfg.cluster.id.clone(),
            CredStore::load(provider, Some(self.creds.path())).unwrap(),
            http,
            Default::default(),
            1,
            Arc::new(Instant::now),
        )
        .unwrap()
    }

    /// What the cloud said of `id` within `budget`: found, or the error's text.
    async fn ask(&self, cloud: &Arc<Cloud>, id: &str, budget: Duration) -> Result<(), String> {
        let view = cloud.view_all(&[id.to_string()], None, budget).await;
        let answers = view.answers();
        match answers.as_slice() {
            [(_, Ok(Some(_)))] => Ok(()),
            [(_, Ok(None))] => Err("not found".into()),
            [(_, Err(e))] => Err(e.to_string()),
            other => panic!("{other:?}"),
        }
    }
}

fn proxy(url: &str, no_proxy: &str) -> Option<Proxy> {
    Some(Proxy::new("HTTPS_PROXY", url, no_proxy).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clouds_calls_go_through_the_tunnel_with_the_proxys_credentials() {
    let Some(s) = Setup::start().await else {
        return;
    };
    let p = ConnectProxy::start(Mode::Auth(BASIC.into())).await;
    for (provider, id) in ALL {
        let cloud = s.cloud(provider, TUNNEL_NAME, proxy(&p.url(USERINFO), ""));
        let got = s.ask(&cloud, id, Duration::from_secs(10)).await;
        assert_eq!(got, Ok(()), "{provider}");
    }
    let asked = p.asked();
    // One tunnel per client at least (each pools its own connections), each to the name
    // lbguard was given and with the proxy's credentials.
    assert!(asked.len() >= ALL.len(), "{asked:?}");
    for a in &asked {
        assert_eq!(a.target, format!("{TUNNEL_NAME}:{}", s.port()));
        assert_eq!(a.authorization.as_deref(), Some(BASIC));
        assert!(a.opened, "{a:?}");
    }
    // TLS ran inside the tunnel to the mock, whose SDK signers checked every request.
    s.mock.assert_clean().await;
}

// One mock cloud per test (it takes seconds to start); the cases run against it in turn.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_never_goes_through_the_proxy() {
    let Some(s) = Setup::start().await else {
        return;
    };
    for (host, no_proxy) in [("localhost", ""), ("127.0.0.1", ""), ("LOCALHOST", " , ")] {
        let p = ConnectProxy::start(Mode::Open).await;
        for (provider, id) in ALL {
            let cloud = s.cloud(provider, host, proxy(&p.url(""), no_proxy));
            let got = s.ask(&cloud, id, Duration::from_secs(10)).await;
            assert_eq!(got, Ok(()), "{provider} at {host}");
        }
        assert_eq!(p.asked(), vec![], "{host}");
    }
}

/// NO_PROXY entries that take the mock's name out of the proxy go direct: lbguard resolves
/// the name itself, which it cannot (only the proxy knows it), and the proxy sees nothing.
/// Entries that do not match it leave the call in the tunnel, where it succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proxy_entries() {
    const CASES: &[(&str, bool)] = &[
        // (NO_PROXY, tunnelled)
        ("lbguard-mock.test", false),
        ("test", false),
        (".test", false),
        ("*.test", false),
        ("*", false),
        ("example.com, lbguard-mock.test", false),
        ("LBGUARD-MOCK.TEST", false),
        ("lbguard-mock.test:{port}", false),
        ("lbguard-mock.test:1", true),
        ("mock.test.example", true),
        ("mock.test", true),
        // Names are never resolved to be matched against addresses.
        ("127.0.0.0/8", true),
        ("", true),
    ];
    let Some(s) = Setup::start().await else {
        return;
    };
    for (no_proxy, tunnelled) in CASES {
        let p = ConnectProxy::start(Mode::Open).await;
        let no_proxy = no_proxy.replace("{port}", &s.port().to_string());
        let cloud = s.cloud(Provider::Alibaba, TUNNEL_NAME, proxy(&p.url(""), &no_proxy));
        let got = s.ask(&cloud, "lb-a", Duration::from_secs(5)).await;
        if *tunnelled {
            assert_eq!(got, Ok(()), "NO_PROXY={no_proxy}");
            assert!(p.tunnels() >= 1, "NO_PROXY={no_proxy}: {:?}", p.asked());
        } else {
            let e = got.unwrap_err();
            assert!(
                e.starts_with("cannot reach the API: "),
                "NO_PROXY={no_proxy}: {e}"
            );
            assert!(!e.contains("proxy"), "NO_PROXY={no_proxy}: {e}");
            assert_eq!(p.asked(), vec![], "NO_PROXY={no_proxy}");
        }
    }
}

/// A proxy that will not open the tunnel, or cannot be reached, is a connection error that
/// names it (host and port, never its credentials) and the destination, at once; one that
/// never answers ends with the call's budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_proxy_is_named_in_the_error_and_never_hangs() {
    let Some(s) = Setup::start().await else {
        return;
    };
    const AUTH407: &str =
        "it answered 407 Proxy Authentication Required: check the user and password in HTTPS_PROXY";
    let cases = [
        (Mode::Auth(BASIC.into()), "", AUTH407),
        (Mode::Auth(BASIC.into()), "lb:wr0ng-s3cret@", AUTH407),
        (
            Mode::Forbid,
            "lb:wr0ng-s3cret@",
            "it refused CONNECT (an error status such as 403: check the proxy's allow list)",
        ),
        (
            Mode::Hangup,
            "",
            "it closed the connection without answering CONNECT",
        ),
    ];
    for (mode, userinfo, cause) in cases {
        let p = ConnectProxy::start(mode.clone()).await;
        let cloud = s.cloud(Provider::Alibaba, TUNNEL_NAME, proxy(&p.url(userinfo), ""));
        let start = Instant::now();
        let e = s
            .ask(&cloud, "lb-a", Duration::from_secs(10))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            format!(
                "cannot reach the API: through the proxy 127.0.0.1:{} to {TUNNEL_NAME}:{}: {cause}",
                p.port,
                s.port()
            ),
            "{mode:?}"
        );
        assert!(!e.contains("s3cret") && !e.contains("wr0ng"), "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{mode:?}: {:?}",
            start.elapsed()
        );
        assert!(!p.asked().is_empty() && p.tunnels() == 0, "{:?}", p.asked());
    }

    // Nothing listens on the proxy's port.
    let port = common::free_port();
    let url = format!("http://lb:s3cret@127.0.0.1:{port}");
    let cloud = s.cloud(Provider::Alibaba, TUNNEL_NAME, proxy(&url, ""));
    let start = Instant::now();
    let e = s
        .ask(&cloud, "lb-a", Duration::from_secs(10))
        .await
        .unwrap_err();
    let want = format!(
        "cannot reach the API: through the proxy 127.0.0.1:{port} to {TUNNEL_NAME}:{}: cannot reach the proxy: ",
        s.port()
    );
    assert!(e.starts_with(&want), "{e}");
    assert!(e.to_lowercase().contains("refused"), "{e}");
    assert!(!e.contains("s3cret"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );

    // The proxy reads CONNECT and never answers.
    let p = ConnectProxy::start(Mode::Silent).await;
    let cloud = s.cloud(Provider::Alibaba, TUNNEL_NAME, proxy(&p.url(""), ""));
    let start = Instant::now();
    let e = s
        .ask(&cloud, "lb-a", Duration::from_millis(1500))
        .await
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert!(e.contains("no answer within"), "{e}");
    assert_eq!(p.asked().len(), 1, "{:?}", p.asked());
}

/// Plain http is for the metadata services only and never goes through the proxy, whatever
/// the name; https to the same name does.
#[tokio::test]
async fn plain_http_never_goes_through_the_proxy() {
    let p = ConnectProxy::start(Mode::Open).await;
    let http = Http::with_proxy(&[], proxy(&p.url(""), "")).unwrap();
    let port = common::free_port();
    let req = lbguard::cloud::sign::Req {
        method: "GET",
        host: format!("{TUNNEL_NAME}:{port}"),
        path: "/latest/meta-data/".into(),
        ..Default::default()
    };
    let budget = Duration::from_secs(5);
    let plain = format!("http://{TUNNEL_NAME}:{port}");
    match http.send(&plain, &req, budget).await {
        Err(CloudError::Connect(e)) => assert!(!e.contains("proxy"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(p.asked(), vec![]);
    let tls = format!("https://{TUNNEL_NAME}:{port}");
    match http.send(&tls, &req, budget).await {
        // Nothing listens behind the proxy: it answers 502.
        Err(CloudError::Connect(e)) => assert!(e.contains("refused CONNECT"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(p.asked().len(), 1, "{:?}", p.asked());
}

/// `lbguard serve --dev` in `dir` with `args`, the proxy variables `vars` (the others
/// removed) and no cluster unless a kubeconfig is named: its log until it serves or stops.
fn serve_log(
    dir: &std::path::Path,
    args: &[&std::ffi::OsStr],
    vars: &[(&str, &std::ffi::OsStr)],
) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"));
    cmd.args(["serve", "--dev", "--log-format", "json", "--dev-dir"])
        .arg(dir)
        .args(["--addr", &format!("127.0.0.1:{}", common::free_port())])
        .args([
            "--metrics-addr",
            &format!("127.0.0.1:{}", common::free_port()),
        ])
        .args(args)
        .env("KUBECONFIG", dir.join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for name in ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] {
        cmd.env_remove(name);
    }
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
        let line = line.unwrap();
        let serving = line.contains("lbguard serving");
        seen.push(line);
        if serving {
            break;
        }
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    seen.join("\n")
}

/// A config for `provider` calling the mock by its tunnel name, and its credentials.
fn config_file(port: u16, creds: &std::path::Path, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        format!(
            "provider: alibaba\ncluster:\n  id: c-own\n  vpcId: vpc-1\n  version: v1.31.0\ninventory:\n  cloud:\n    enabled: true\n    region: {REGION}\n    endpoint: https://{TUNNEL_NAME}:{}\n    credentialsDir: {}\n",
            port,
            creds.display()
        ),
    )
    .unwrap();
    path
}

/// The process's own environment, read once at start: `lbguard inventory dump` reaches the
/// cloud through the proxy HTTPS_PROXY names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_takes_the_proxy_from_its_environment() {
    let Some(s) = Setup::start().await else {
        return;
    };
    let p = ConnectProxy::start(Mode::Auth(BASIC.into())).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(s.port(), s.creds.path(), dir.path());
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &s.mock.ca_pem).unwrap();
    let url = p.url(USERINFO);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_lbguard"))
            .args(["inventory", "dump", "--id", "lb-a", "--config"])
            .arg(&config)
            .env("HTTPS_PROXY", url)
            .env("SSL_CERT_FILE", &ca)
            .env_remove("https_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("id: lb-a"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(p.tunnels() >= 1, "{:?}", p.asked());
    s.mock.assert_clean().await;
}

/// The server says at start whether its cloud calls go through a proxy, naming its host
/// only; a proxy it cannot use stops it with the reason.
#[test]
fn the_server_logs_the_proxy_host_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("accessKeyId"), AK).unwrap();
    std::fs::write(dir.path().join("accessKeySecret"), SK).unwrap();
    let config = config_file(1, dir.path(), dir.path());
    let serve = |proxy: &str| {
        serve_log(
            dir.path(),
            &["--config".as_ref(), config.as_os_str()],
            &[
                ("HTTPS_PROXY", proxy.as_ref()),
                ("NO_PROXY", ".corp.example".as_ref()),
            ],
        )
    };
    let good = serve("http://lb:s3cret@proxy.corp.example:3128");
    let bad = serve("socks5://lb:s3cret@proxy.corp.example:1080");
    let line = good
        .lines()
        .find(|l| l.contains("HTTPS proxy"))
        .unwrap_or_else(|| panic!("{good}"));
    assert!(
        line.contains(r#""proxy":"proxy.corp.example:3128""#),
        "{line}"
    );
    assert!(line.contains(r#""no_proxy":".corp.example""#), "{line}");
    assert!(good.contains("lbguard serving"), "{good}");
    assert!(!good.contains("s3cret") && !good.contains("lb:"), "{good}");
    assert!(
        bad.contains("HTTPS_PROXY: only an http:// proxy is supported"),
        "{bad}"
    );
    assert!(
        !bad.contains("s3cret") && !bad.contains("lbguard serving"),
        "{bad}"
    );
}

/// Outside a pod, the Kubernetes client follows HTTPS_PROXY for the kubeconfig's API server
/// as kubectl does (in a pod it uses the in-cluster config, without a proxy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubeconfig_api_server_is_reached_through_the_proxy_as_kubectl_does() {
    let p = ConnectProxy::start(Mode::Open).await;
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: the proxy answers 502 and lbguard runs standalone.
    let api = common::free_port();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{api}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let url = p.url("");
    let log = tokio::task::spawn_blocking(move || {
        serve_log(
            dir.path(),
            &["--use-kubeconfig".as_ref()],
            &[
                ("KUBECONFIG", kubeconfig.as_os_str()),
                ("HTTPS_PROXY", url.as_ref()),
            ],
        )
    })
    .await
    .unwrap();
    assert!(log.contains("lbguard serving"), "{log}");
    let asked = p.asked();
    assert!(
        asked.iter().any(|a| a.target == format!("127.0.0.1:{api}")),
        "{asked:?}\n{log}"
    );
}
