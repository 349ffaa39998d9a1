//! Any text as a Kubernetes, CCE or CCM version; parsed ones compare consistently.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::version(data));
