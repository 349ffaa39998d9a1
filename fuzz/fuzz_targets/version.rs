//! Any text as a Kubernetes, CCE or CCM version; parsed ones compare consistently.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lbguard::engine::version::KubeVersion;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (a, b) = text.split_once('\n').unwrap_or((text, "v1.30.0"));
    if let (Ok(x), Ok(y)) = (a.parse::<KubeVersion>(), b.parse::<KubeVersion>()) {
        assert_eq!(x.cmp(&y), y.cmp(&x).reverse());
        assert_eq!(x.cmp(&x), std::cmp::Ordering::Equal);
        let _ = x.to_string();
    }
});
