#![forbid(unsafe_code)]

use clap::Parser;

// An admission allocates and frees a few hundred small objects across the runtime's worker
// threads; glibc's allocator made that a large share of a request (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // One process-wide crypto provider, for any rustls user that asks for the default.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = lbguard::cli::Cli::parse();
    lbguard::cli::run(cli)
}
