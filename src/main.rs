#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    // One process-wide crypto provider, for any rustls user that asks for the default.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = lbguard::cli::Cli::parse();
    lbguard::cli::run(cli)
}
