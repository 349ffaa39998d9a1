//! Every annotation value parser: a Service whose provider annotations carry fuzzed values,
//! created, updated and deleted against a cluster view and an inventory. Never a panic.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::annotations(data));
