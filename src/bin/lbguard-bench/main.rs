//! lbguard's benchmarks.
//! - `http`: lbguard's /validate and /mutate against a bare rustls + axum baseline that only
//!   parses the AdmissionReview and answers "allowed", over N keep-alive HTTPS connections.
//! - `cache`: engine time per request and memory with N Services cached (each size in its
//!   own process, so peak RSS is that size's).
//! - `claims`: what listener claims add to one /validate admission, against the in-memory
//!   Lease API (the API server's own write time comes on top), and that Services without a
//!   reused load balancer send nothing.
//! - `engine`: one UPDATE through the full rule set per provider body (ACK CLB and NLB, CCE,
//!   VKE, CTyun), in time and, under callgrind, in instructions (load-independent).
//! - `exceptions`: what N held `LBGuardException`s cost a request with a finding and a watch
//!   event, and their memory (each size in its own process).
//! - `plan`: what the plan rules add to one admission: an unchanged update (no plan), one
//!   that removes a port and an annotation, and a create, with the plan rules on and off.

mod bare;
mod cache;
mod claims;
mod engine;
mod exceptions;
mod http;
mod plan;

use cache::measure;

use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "lbguard-bench")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

/// What every benchmark measured at several sizes takes.
#[derive(clap::Args)]
struct SizedArgs {
    /// Requests timed at each size.
    #[arg(long, default_value_t = 20000)]
    requests: usize,
    #[arg(long)]
    json: bool,
    /// Internal: measure one size in this process.
    #[arg(long, hide = true)]
    one: Option<usize>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Throughput and latency of lbguard against a bare TLS baseline.
    Http {
        /// Concurrent keep-alive connections.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Measured time per target (after a 1 s warm-up).
        #[arg(long, default_value = "8s", value_parser = lbguard::server::parse_duration)]
        duration: std::time::Duration,
        /// LoadBalancer Services preloaded into lbguard's cluster view.
        #[arg(long, default_value_t = 0)]
        preload: usize,
        #[arg(long)]
        json: bool,
    },
    /// Engine time per request and cache memory at several cluster sizes.
    Cache {
        /// Cluster sizes (cached LoadBalancer Services).
        #[arg(long, value_delimiter = ',', default_value = "100,10000,100000")]
        sizes: Vec<usize>,
        #[command(flatten)]
        run: SizedArgs,
    },
    /// A bare hyper + rustls server (no axum, metrics or logs) that parses each review into
    /// a `serde_json::Value` and answers "allowed": the floor `scripts/bench-http` compares
    /// lbguard with.
    Baseline {
        #[arg(long, default_value = "127.0.0.1:8444")]
        addr: std::net::SocketAddr,
        #[arg(long)]
        tls_cert: std::path::PathBuf,
        #[arg(long)]
        tls_key: std::path::PathBuf,
        /// Answer a denial whose status message pads the answer to this many bytes (the
        /// size of lbguard's answer to the denied body), instead of "allowed".
        #[arg(long)]
        answer_bytes: Option<usize>,
    },
    /// The cost of held `LBGuardException`s per request with a finding and per watch event.
    Exceptions {
        /// Numbers of held exceptions (the store holds at most 10,000).
        #[arg(long, value_delimiter = ',', default_value = "0,100,1000,10000")]
        sizes: Vec<usize>,
        /// Namespaces the exceptions are spread over (1: all in the probe's).
        #[arg(long, default_value_t = 100)]
        namespaces: usize,
        #[command(flatten)]
        run: SizedArgs,
    },
    /// The cost of the plan rules per admission, on and off.
    Plan {
        /// Requests timed per case.
        #[arg(long, default_value_t = 20000)]
        requests: usize,
        #[arg(long)]
        json: bool,
    },
    /// One UPDATE through the full rule set per provider body: time, and with
    /// `--instructions` instructions per evaluation (callgrind; needs valgrind).
    Engine {
        /// Evaluations timed per body.
        #[arg(long, default_value_t = 20000)]
        iterations: usize,
        /// Also count instructions per evaluation over this many evaluations (under
        /// valgrind's callgrind, so the figure does not depend on the machine's load).
        #[arg(long, num_args = 0..=1, default_missing_value = "1000")]
        instructions: Option<usize>,
        #[arg(long)]
        json: bool,
        /// Internal: run one body in this process.
        #[arg(long, hide = true)]
        one: Option<String>,
    },
    /// The cost of listener claims per admission.
    Claims {
        /// Admissions timed per case.
        #[arg(long, default_value_t = 5000)]
        requests: usize,
        /// Latency the in-memory API adds to each of its answers.
        #[arg(long, default_value = "0ms", value_parser = lbguard::server::parse_duration)]
        api_latency: std::time::Duration,
    },
}

fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Cmd::Baseline {
            addr,
            tls_cert,
            tls_key,
            answer_bytes,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match runtime.block_on(bare::run(addr, &tls_cert, &tls_key, answer_bytes)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("lbguard-bench baseline: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Claims {
            requests,
            api_latency,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match runtime.block_on(claims::run(requests, api_latency)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("lbguard-bench claims: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Http {
            connections,
            duration,
            preload,
            json,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("runtime");
            match runtime.block_on(http::run(connections, duration, preload)) {
                Ok(report) => {
                    if json {
                        println!(
                            "{}",
                            serde_json::to_string_pretty(&report).unwrap_or_default()
                        );
                    } else {
                        http::print(&report);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("lbguard-bench http: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Plan { requests, json } => {
            let rows = plan::run(requests);
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                );
            } else {
                plan::print(&rows);
            }
            ExitCode::SUCCESS
        }
        Cmd::Engine {
            iterations,
            instructions,
            json,
            one,
        } => {
            if let Some(body) = one {
                engine::one(&body, iterations);
                return ExitCode::SUCCESS;
            }
            match engine::measure(iterations, instructions) {
                Ok(rows) if json => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&rows).unwrap_or_default()
                    );
                    ExitCode::SUCCESS
                }
                Ok(rows) => {
                    engine::print(&rows);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("lbguard-bench engine: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Cache { sizes, run } => by_size(
            Sized {
                command: "cache",
                sizes: &sizes,
                extra: &[],
                run: &run,
            },
            |n| measure(n, run.requests),
            cache::print,
        ),
        Cmd::Exceptions {
            sizes,
            namespaces,
            run,
        } => by_size(
            Sized {
                command: "exceptions",
                sizes: &sizes,
                extra: &["--namespaces".to_string(), namespaces.to_string()],
                run: &run,
            },
            |n| exceptions::measure(n, namespaces, run.requests),
            exceptions::print,
        ),
    }
}

/// A benchmark measured at several sizes, each in its own process.
struct Sized<'a> {
    command: &'a str,
    sizes: &'a [usize],
    /// The child's arguments besides the size and the requests.
    extra: &'a [String],
    run: &'a SizedArgs,
}

/// In the child, measures its one size and prints it as JSON; in the parent, runs a child
/// for each size and prints the rows.
fn by_size<R: serde::Serialize + serde::de::DeserializeOwned>(
    run: Sized,
    measure: impl Fn(usize) -> R,
    print: fn(&[R]),
) -> ExitCode {
    let Sized {
        command,
        sizes,
        extra,
        run,
    } = run;
    if let Some(n) = run.one {
        println!("{}", serde_json::to_string(&measure(n)).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    let Some(rows) = each_size::<R>(command, sizes, run.requests, extra) else {
        return ExitCode::FAILURE;
    };
    if run.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
    } else {
        print(&rows);
    }
    ExitCode::SUCCESS
}

/// Runs `command --one N` in a fresh process for each size, so each size's memory is its own.
fn each_size<R: serde::de::DeserializeOwned>(
    command: &str,
    sizes: &[usize],
    requests: usize,
    extra: &[String],
) -> Option<Vec<R>> {
    let exe = std::env::current_exe().expect("own path");
    let mut rows = Vec::new();
    for n in sizes {
        let out = Command::new(&exe)
            .args([
                command,
                "--one",
                &n.to_string(),
                "--requests",
                &requests.to_string(),
            ])
            .args(extra)
            .output()
            .expect("run child");
        match serde_json::from_slice::<R>(&out.stdout) {
            Ok(r) => rows.push(r),
            Err(e) => {
                eprintln!(
                    "size {n} failed: {e}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                return None;
            }
        }
    }
    Some(rows)
}
