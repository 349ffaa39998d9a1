//! Places the functions an admission runs through next to each other in the `lbguard`
//! binary, in the order of `link/hot-functions.txt` (written by `scripts/bench-http
//! --hot-functions`). Spread over the whole binary they miss the CPU's caches; together the
//! same code answered 6-8% faster (BENCHMARKS.md, #41's eighth pass).
//!
//! The list names the symbols of the Dockerfile's build stage, whose hashes depend on the
//! toolchain, Cargo.lock, the features and the release profile, and ThinLTO's `.llvm.` names
//! on the paths it builds at too: `cargo build --release --bin lbguard` elsewhere matches all
//! but those. Names lld does not find are skipped, so a stale list costs speed, never a build.

use std::env;
use std::path::Path;

fn main() {
    let list = Path::new("link/hot-functions.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=LBGUARD_NO_FUNCTION_ORDER");
    // rustc links this target with its own lld (Rust 1.90, the MSRV), which reads the list;
    // another linker may not know the option.
    let lld = env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu")
        && env::var_os("RUSTC_LINKER").is_none()
        && !env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("link"));
    if !lld || env::var_os("LBGUARD_NO_FUNCTION_ORDER").is_some() || !list.is_file() {
        return;
    }
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(list);
    println!(
        "cargo:rustc-link-arg-bin=lbguard=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bin=lbguard=-Wl,--no-warn-symbol-ordering");
}
