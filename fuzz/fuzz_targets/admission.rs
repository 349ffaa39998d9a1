//! Raw bytes to both admission endpoints, as the API server would POST them: never a panic,
//! never a 5xx, and a 200 answer carries the request's uid whenever it can be read.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::admission(data));
