//! Any text as an inventory file: a snapshot or an error, never a panic.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::inventory(data));
