#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = lbguard::cli::Cli::parse();
    lbguard::cli::run(cli)
}
