//! TLS: a certificate resolver that polls the files by path and swaps the key in place.
//!
//! Polling by path (comparing bytes) survives the kubelet's `..data` symlink swap of Secret
//! volumes and cert-manager's in-place renewal; inotify on file paths misses the former.
//! A bad new pair is logged and counted, and the last good certificate stays in use.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::metrics::Metrics;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: no PEM certificate found")]
    NoCertificate { path: String },
    #[error("{path}: not a PEM certificate: {message}")]
    BadCertificate { path: String, message: String },
    #[error("{path}: no usable PEM private key: {message}")]
    BadKey { path: String, message: String },
    #[error("{cert} and {key} do not form a usable pair: {message}")]
    Mismatch {
        cert: String,
        key: String,
        message: String,
    },
}

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Parses a PEM certificate chain and key, checking that they belong together.
pub fn certified_key(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_path: &str,
    key_path: &str,
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadCertificate {
            path: cert_path.into(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::BadKey {
        path: key_path.into(),
        message: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| TlsError::Mismatch {
        cert: cert_path.into(),
        key: key_path.into(),
        message: e.to_string(),
    })
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Serves the current certificate; `reload` swaps it when the files change.
#[derive(Debug)]
pub struct ReloadingResolver {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: ArcSwap<CertifiedKey>,
    /// The bytes the current key was built from, to notice changes.
    seen: Mutex<(Vec<u8>, Vec<u8>)>,
}

impl ReloadingResolver {
    /// Loads the pair once; an unusable first pair is an error (the server must not start).
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Arc<Self>, TlsError> {
        let (c, k) = (read(cert_path)?, read(key_path)?);
        let key = certified_key(
            &c,
            &k,
            &cert_path.display().to_string(),
            &key_path.display().to_string(),
        )?;
        Ok(Arc::new(Self {
            cert_path: cert_path.into(),
            key_path: key_path.into(),
            current: ArcSwap::from_pointee(key),
            seen: Mutex::new((c, k)),
        }))
    }

    /// Re-reads the files; swaps in a changed, valid pair. `Ok(true)` when swapped.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let (c, k) = (read(&self.cert_path)?, read(&self.key_path)?);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.0 == c && seen.1 == k {
            return Ok(false);
        }
        let key = certified_key(
            &c,
            &k,
            &self.cert_path.display().to_string(),
            &self.key_path.display().to_string(),
        )?;
        self.current.store(Arc::new(key));
        *seen = (c, k);
        Ok(true)
    }

    /// Polls the files until the process ends.
    pub fn spawn_poller(self: &Arc<Self>, every: Duration, metrics: &Metrics) {
        let me = Arc::clone(self);
        crate::reload::spawn_poll(
            "TLS certificate",
            every,
            metrics.tls_reloads.clone(),
            metrics.tls_reload_errors.clone(),
            move || me.reload(),
        );
    }
}

impl ResolvesServerCert for ReloadingResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// TLS 1.2 and 1.3, HTTP/2 and HTTP/1.1, the certificate from the resolver.
pub fn server_config(resolver: Arc<ReloadingResolver>) -> Arc<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .expect("ring supports TLS 1.2 and 1.3")
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    // No session resumption: a resumed session skips the certificate, so after a rotation
    // clients could go on resuming sessions of the old one. The API server keeps its
    // connections open anyway, so full handshakes are rare.
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Arc::new(config)
}
