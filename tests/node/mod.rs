//! On a real node (`../shared/node`): the image built from the Dockerfile, run by hand with
//! podman and as the chart's pods, the chart installed with Helm's SDK (also with the cloud
//! source and workload identity), and the book's tutorial run as written.
//!
//! `scripts/test` builds the image, starts the node, loads the image into it and runs
//! `cargo test --test e2e -- --node`, with `LBGUARD_IMAGE` (the image podman built) and
//! `LBGUARD_NODE_KUBECONFIG` (the node's admin kubeconfig). Without them the suite says it
//! did not run and passes, except under `CI=true`, where that is a failure.
//! `cargo test --test e2e -- --node NAME...` runs the cases whose names contain a NAME.
//! (It lives in the e2e binary so that the Dockerfile's cached dependency layer, keyed on
//! Cargo.toml, survives.)

mod chart;
mod cloud;
mod image;
mod tutorial;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The release namespace the book uses.
pub const NS: &str = "lbguard-system";

/// What every case works with.
pub struct Node {
    pub kubeconfig: PathBuf,
    /// The image as podman built it, `REPOSITORY:TAG`.
    pub image: String,
    pub admin: kube::Client,
    pub dir: PathBuf,
}

impl Node {
    pub fn repository(&self) -> &str {
        self.image.rsplit_once(':').map_or(&self.image, |(r, _)| r)
    }

    pub fn tag(&self) -> &str {
        self.image.rsplit_once(':').map_or("latest", |(_, t)| t)
    }

    /// `--set` flags for the image: the values a user sets after loading their own build.
    pub fn image_values(&self) -> String {
        format!(
            "--set image.repository={} --set image.tag={}",
            self.repository(),
            self.tag()
        )
    }

    /// Runs `script` with bash in the checkout, against the node; stdout and stderr together.
    pub fn sh(&self, script: &str) -> Output {
        let out = Command::new("bash")
            .args(["-c", &format!("{{ {script}\n}} 2>&1")])
            .current_dir(ROOT)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("PATH", path())
            .output()
            .expect("bash runs");
        Output {
            ok: out.status.success(),
            text: String::from_utf8_lossy(&out.stdout).into_owned(),
        }
    }

    /// Runs `script` and panics with its output unless it succeeds.
    pub fn ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(out.ok, "$ {script}\n{}", out.text);
        out.text
    }

    /// Polls `script` every 500 ms until `done` holds for its output, or panics after `limit`.
    pub async fn until(&self, limit: Duration, script: &str, done: impl Fn(&Output) -> bool) {
        let until = Instant::now() + limit;
        loop {
            let out = self.sh(script);
            if done(&out) {
                return;
            }
            assert!(
                Instant::now() < until,
                "not within {limit:?}:\n$ {script}\n{}",
                out.text
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[derive(Debug)]
pub struct Output {
    pub ok: bool,
    pub text: String,
}

/// PATH with this folder's `helm` (Helm's SDK behind the CLI's arguments) and, when set,
/// the envtest binaries' kubectl.
fn path() -> String {
    let mut path = format!(
        "{ROOT}/tests/node:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    if let Some(assets) = std::env::var_os("KUBEBUILDER_ASSETS") {
        path = format!("{}:{path}", Path::new(&assets).display());
    }
    path
}

fn cases() -> Vec<(&'static str, crate::runner::Case<Node>)> {
    crate::runner::cases![
        "image_as_built" => image::as_built,
        "image_hot_functions_in_order" => image::hot_functions_ordered,
        "image_run_by_hand" => image::by_hand,
        "image_as_the_cli" => image::as_cli,
        "chart_with_a_secret_certificate" => chart::secret_mode,
        "chart_generated_certificate_drain_upgrade_uninstall" => chart::generate_mode,
        "chart_cloud_workload_identity" => cloud::workload_identity,
        "tutorial_runs_as_written" => tutorial::run,
    ]
}

/// Why the suite cannot run here, if it cannot.
fn settings() -> Result<(PathBuf, String), String> {
    let image = std::env::var("LBGUARD_IMAGE")
        .ok()
        .filter(|i| !i.is_empty())
        .ok_or(
            "LBGUARD_IMAGE is not set (scripts/test builds the image with podman and sets it)",
        )?;
    let kubeconfig = std::env::var_os("LBGUARD_NODE_KUBECONFIG")
        .filter(|k| !k.is_empty())
        .map(PathBuf::from)
        .ok_or("LBGUARD_NODE_KUBECONFIG is not set (KUBECONFIG=$(../shared/node/up))")?;
    if !kubeconfig.is_file() {
        return Err(format!("{} does not exist", kubeconfig.display()));
    }
    Ok((kubeconfig, image))
}

pub fn main(filters: Vec<String>) -> ExitCode {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let (kubeconfig, image) = match settings() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("node: not run: {why}");
            return if ci {
                eprintln!("node: CI=true, so a missing image or node is a failure");
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(kubeconfig, image, filters))
}

async fn run(kubeconfig: PathBuf, image: String, filters: Vec<String>) -> ExitCode {
    let dir = tempfile::Builder::new()
        .prefix("lbguard-node-")
        .tempdir()
        .unwrap();
    let started = Instant::now();
    let mut node = Node {
        admin: crate::plane::client_from(&kubeconfig).await,
        kubeconfig,
        image,
        dir: dir.path().to_path_buf(),
    };
    tutorial::check_normalise();
    let (mut passed, mut failed) = (0, Vec::new());
    for (name, case) in cases() {
        if !crate::runner::wanted(name, &filters) {
            continue;
        }
        if crate::runner::run(name, &mut node, case, Duration::from_secs(300)).await {
            passed += 1;
        } else {
            eprintln!("{}", node.sh(chart::DIAGNOSE).text);
            failed.push(name);
        }
        // Each case starts from a cluster without lbguard.
        chart::remove(&node);
    }
    println!(
        "node: {passed} passed, {} failed in {:.1}s",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("node: failed: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}
