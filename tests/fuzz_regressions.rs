//! Replays the inputs under `tests/fuzz/<target>/` (crashes the fuzzers found, kept after
//! the fix, and a few hostile inputs) through the fuzz targets' own code.

#[path = "../fuzz/harness.rs"]
mod harness;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{} fails again", path.display());
        n += 1;
    }
    n
}

#[test]
fn admission_inputs() {
    assert!(replay("admission", harness::admission) > 0);
}

#[test]
fn annotation_inputs() {
    assert!(replay("annotations", harness::annotations) > 0);
}

#[test]
fn config_inputs() {
    assert!(replay("config", harness::config) > 0);
}

#[test]
fn inventory_inputs() {
    assert!(replay("inventory", harness::inventory) > 0);
}

#[test]
fn version_inputs() {
    assert!(replay("version", harness::version) > 0);
}
