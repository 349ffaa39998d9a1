//! Any text as an inventory file: a snapshot or an error that names the file, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = lbguard::inventory::Snapshot::parse(text, "fuzz.yaml");
    }
});
