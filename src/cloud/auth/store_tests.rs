use super::*;

#[test]
fn files_are_read_trimmed_and_rotation_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("accessKeyId"), "AKID1\n").unwrap();
    std::fs::write(d.join("accessKeySecret"), "secret-1\n").unwrap();
    let store = CredStore::load(Provider::Alibaba, Some(d)).unwrap();
    assert_eq!(store.get().unwrap().access_key_id, "AKID1");
    assert_eq!(store.get().unwrap().security_token, None);
    assert!(!store.reload().unwrap());
    std::fs::write(d.join("accessKeySecret"), "secret-2").unwrap();
    assert!(store.reload().unwrap());
    assert_eq!(store.get().unwrap().access_key_secret, "secret-2");
    std::fs::remove_file(d.join("accessKeySecret")).unwrap();
    let e = store.reload().unwrap_err().to_string();
    assert!(e.contains("accessKeySecret"), "{e}");
    assert_eq!(store.get().unwrap().access_key_secret, "secret-2");
}

#[test]
fn huawei_needs_a_project_and_nothing_secret_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("accessKeyId"), "HWAKID").unwrap();
    std::fs::write(d.join("accessKeySecret"), "hush-hush").unwrap();
    let e = CredStore::load(Provider::Huawei, Some(d))
        .unwrap_err()
        .to_string();
    assert!(e.contains("project id"), "{e}");
    std::fs::write(d.join("projectId"), "p-1").unwrap();
    let c = Creds::from_dir(d, Provider::Huawei).unwrap();
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("hush") && !shown.contains("HWAKID"),
        "{shown}"
    );
}

/// Hands out numbered credentials living `life`, or fails while `fail` is set.
struct Counter {
    n: std::sync::atomic::AtomicU32,
    fail: std::sync::atomic::AtomicBool,
    life: Duration,
}

impl Issuer for Arc<Counter> {
    fn describe(&self) -> String {
        "a test issuer".into()
    }
    fn issue<'a>(
        &'a self,
        _: &'a identity::Ctx<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(async move {
            use std::sync::atomic::Ordering;
            if self.fail.load(Ordering::SeqCst) {
                return Err(CloudError::Throttled("HTTP 400 Throttling".into()));
            }
            let n = self.n.fetch_add(1, Ordering::SeqCst) + 1;
            let creds = Creds {
                access_key_id: format!("STS.{n}"),
                access_key_secret: "s".into(),
                security_token: Some("t".into()),
                project_id: None,
            };
            Ok(Issued::expiring(
                creds,
                SystemTime::now() + self.life,
                self.life / 2,
            ))
        })
    }
}

#[tokio::test]
async fn issued_credentials_are_renewed_and_the_last_good_serve_until_they_expire() {
    use std::sync::atomic::Ordering;
    let http = Http::new(&[]).unwrap();
    let counter = Arc::new(Counter {
        n: 0.into(),
        fail: false.into(),
        life: Duration::from_millis(400),
    });
    let store = CredStore::issued(Provider::Alibaba, Box::new(Arc::clone(&counter)));
    assert!(
        store.get().is_none(),
        "nothing is fetched before the first call"
    );
    let wait = Duration::from_secs(2);
    assert_eq!(
        store.current(&http, wait).await.unwrap().access_key_id,
        "STS.1"
    );
    assert_eq!(
        store.current(&http, wait).await.unwrap().access_key_id,
        "STS.1"
    );
    // Past the renewal time, the call still gets the held ones; the renewal runs behind it.
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(
        store.current(&http, wait).await.unwrap().access_key_id,
        "STS.1"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        store.current(&http, wait).await.unwrap().access_key_id,
        "STS.2"
    );
    // The issuer fails: the held credentials serve until they expire, then the cause shows.
    counter.fail.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(
        store.current(&http, wait).await.unwrap().access_key_id,
        "STS.2"
    );
    tokio::time::sleep(Duration::from_millis(250)).await;
    let e = store.current(&http, wait).await.unwrap_err();
    assert_eq!(e.label(), "credentials_error");
    let m = e.to_string();
    assert!(
        m.contains("a test issuer") && m.contains("throttled"),
        "{m}"
    );
    // Until the retry time, callers get that failure without asking again.
    counter.fail.store(false, Ordering::SeqCst);
    let again = store.current(&http, wait).await.unwrap_err();
    assert_eq!(again, e);
    assert_eq!(counter.n.load(Ordering::SeqCst), 2);
    // Past it, the next call waits for an exchange.
    store.forget_failure();
    assert_eq!(
        store.current(&http, wait).await.unwrap().access_key_id,
        "STS.3"
    );
}

#[test]
fn a_source_the_provider_lacks_is_refused() {
    let cfg = CredentialsConfig {
        source: crate::vocab::config::CredentialSource::Oidc,
        ..Default::default()
    };
    let e = CredStore::configured(Provider::Ctyun, None, &cfg, &|_| None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only an access key"), "{e}");
}
