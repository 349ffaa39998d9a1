use super::*;

#[cfg(unix)]
#[test]
fn a_secret_volume_swapped_mid_read_never_mixes_versions() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (v, id, secret) in [
        ("..v1", "AKID-OLD", "old-secret"),
        ("..v2", "AKID-NEW", "new-secret"),
    ] {
        std::fs::create_dir(d.join(v)).unwrap();
        std::fs::write(d.join(v).join("accessKeyId"), id).unwrap();
        std::fs::write(d.join(v).join("accessKeySecret"), secret).unwrap();
    }
    symlink("..v1", d.join("..data")).unwrap();
    for f in ["accessKeyId", "accessKeySecret"] {
        symlink(format!("..data/{f}"), d.join(f)).unwrap();
    }
    // The kubelet swaps ..data right after the key id was read.
    let swap = |name: &str| {
        if name == "accessKeyId"
            && std::fs::read_link(d.join("..data")).unwrap() == Path::new("..v1")
        {
            symlink("..v2", d.join("..data.tmp")).unwrap();
            std::fs::rename(d.join("..data.tmp"), d.join("..data")).unwrap();
        }
    };
    let c = Creds::from_dir_observed(d, Provider::Alibaba, &swap).unwrap();
    let pair = (c.access_key_id.as_str(), c.access_key_secret.as_str());
    assert!(
        pair == ("AKID-OLD", "old-secret") || pair == ("AKID-NEW", "new-secret"),
        "{pair:?}"
    );
}

#[test]
fn environment_names() {
    let env = |n: &str| match n {
        "VOLCENGINE_ACCESS_KEY" => Some("AK".to_string()),
        "LBGUARD_CLOUD_ACCESS_KEY_SECRET" => Some("SK".to_string()),
        _ => None,
    };
    let c = Creds::from_env(Provider::Volcengine, env).unwrap();
    assert_eq!(
        (c.access_key_id.as_str(), c.access_key_secret.as_str()),
        ("AK", "SK")
    );
    let e = Creds::from_env(Provider::Ctyun, |_| None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("LBGUARD_CLOUD_ACCESS_KEY_ID"), "{e}");
}
