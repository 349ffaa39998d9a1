//! Development certificates: a throwaway CA and a serving certificate, made with rcgen.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// PEM texts of a generated CA and a serving certificate signed by it.
#[derive(Debug, Clone)]
pub struct DevCerts {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Makes a CA and a certificate for the given DNS names and IP addresses.
pub fn generate(names: &[&str]) -> Result<DevCerts, rcgen::Error> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "lbguard development CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;

    let mut leaf = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    leaf.distinguished_name.push(
        DnType::CommonName,
        names.first().copied().unwrap_or("lbguard"),
    );
    let key = KeyPair::generate()?;
    let cert = leaf.signed_by(&key, &ca)?;
    Ok(DevCerts {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Paths of the dev certificate files under a directory.
pub struct DevPaths {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl DevPaths {
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("ca.crt"),
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        }
    }
}

/// Reuses the dev certificate in `dir`, or generates one for localhost/127.0.0.1.
/// Returns whether it was generated.
pub fn ensure(dir: &Path) -> std::io::Result<(DevPaths, bool)> {
    let paths = DevPaths::in_dir(dir);
    if paths.ca.exists() && paths.cert.exists() && paths.key.exists() {
        return Ok((paths, false));
    }
    let certs = generate(&["localhost", "127.0.0.1"]).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    std::fs::write(&paths.ca, certs.ca_pem)?;
    std::fs::write(&paths.cert, certs.cert_pem)?;
    write_private(&paths.key, certs.key_pem.as_bytes())?;
    Ok((paths, true))
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}
