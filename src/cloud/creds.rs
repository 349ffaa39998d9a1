//! Cloud credentials: files in a directory (a Secret volume), re-read when they change, or
//! the environment. Never printed: `Debug` shows the key id's first characters only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::vocab::provider::Provider;

#[derive(Clone, PartialEq, Eq)]
pub struct Creds {
    pub access_key_id: String,
    pub access_key_secret: String,
    pub security_token: Option<String>,
    /// Huawei's project id (the ELB API's path names it).
    pub project_id: Option<String>,
}

impl std::fmt::Debug for Creds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: String = self.access_key_id.chars().take(4).collect();
        write!(
            f,
            "Creds({shown}…, token: {})",
            self.security_token.is_some()
        )
    }
}

/// The file names in `inventory.cloud.credentialsDir`.
pub const FILES: [&str; 4] = [
    "accessKeyId",
    "accessKeySecret",
    "securityToken",
    "projectId",
];

#[derive(Debug, thiserror::Error)]
pub enum CredsError {
    #[error("cloud credentials: cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cloud credentials: {0}")]
    Missing(String),
}

fn read_opt(dir: &Path, name: &str) -> Result<Option<String>, CredsError> {
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(s) if s.trim().is_empty() => Ok(None),
        Ok(s) => Ok(Some(s.trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CredsError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

impl Creds {
    pub fn from_dir(dir: &Path, provider: Provider) -> Result<Self, CredsError> {
        Self::from_dir_observed(dir, provider, &|_| {})
    }

    /// Reads every file from one version of a Secret volume: the kubelet swaps `..data` to
    /// a new directory at once, so the files are read under the directory it points to,
    /// and read again if it moved meanwhile (an old key id never pairs with a new secret).
    /// `after` is called after each file (tests swap the volume there).
    fn from_dir_observed(
        dir: &Path,
        provider: Provider,
        after: &dyn Fn(&str),
    ) -> Result<Self, CredsError> {
        let data = dir.join("..data");
        let mut last = None;
        for _ in 0..5 {
            let before = std::fs::read_link(&data).ok();
            let base = match &before {
                Some(target) => dir.join(target),
                None => dir.to_path_buf(),
            };
            let read = Self::read_files(&base, dir, provider, after);
            if std::fs::read_link(&data).ok() == before {
                return read;
            }
            last = Some(read);
        }
        last.unwrap_or_else(|| {
            Err(CredsError::Missing(format!(
                "{} keeps changing",
                dir.display()
            )))
        })
    }

    fn read_files(
        base: &Path,
        dir: &Path,
        provider: Provider,
        after: &dyn Fn(&str),
    ) -> Result<Self, CredsError> {
        let [id, secret, token, project] = FILES;
        let need = |name: &str, v: Option<String>| {
            v.ok_or_else(|| CredsError::Missing(format!("{} has no file {name}", dir.display())))
        };
        let read = |name: &str| {
            let v = read_opt(base, name);
            after(name);
            v
        };
        let c = Self {
            access_key_id: need(id, read(id)?)?,
            access_key_secret: need(secret, read(secret)?)?,
            security_token: read(token)?,
            project_id: read(project)?,
        };
        c.check(provider, &format!("{}/{project}", dir.display()))
    }

    /// `LBGUARD_CLOUD_ACCESS_KEY_ID`, `…_ACCESS_KEY_SECRET`, `…_SECURITY_TOKEN`,
    /// `…_PROJECT_ID`, or the names each cloud's own tools read.
    pub fn from_env(
        provider: Provider,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, CredsError> {
        let native: [&[&str]; 4] = match provider {
            Provider::Alibaba => [
                &["ALIBABA_CLOUD_ACCESS_KEY_ID"],
                &["ALIBABA_CLOUD_ACCESS_KEY_SECRET"],
                &["ALIBABA_CLOUD_SECURITY_TOKEN"],
                &[],
            ],
            Provider::Huawei => [
                &["HUAWEICLOUD_SDK_AK"],
                &["HUAWEICLOUD_SDK_SK"],
                &["HUAWEICLOUD_SDK_SECURITY_TOKEN"],
                &["HUAWEICLOUD_SDK_PROJECT_ID"],
            ],
            Provider::Volcengine => [
                &["VOLCENGINE_ACCESS_KEY"],
                &["VOLCENGINE_SECRET_KEY"],
                &["VOLCENGINE_SESSION_TOKEN"],
                &[],
            ],
            Provider::Ctyun => [&["CTYUN_AK"], &["CTYUN_SK"], &[], &[]],
        };
        let ours = [
            "LBGUARD_CLOUD_ACCESS_KEY_ID",
            "LBGUARD_CLOUD_ACCESS_KEY_SECRET",
            "LBGUARD_CLOUD_SECURITY_TOKEN",
            "LBGUARD_CLOUD_PROJECT_ID",
        ];
        let get = |i: usize| {
            std::iter::once(ours[i])
                .chain(native[i].iter().copied())
                .find_map(|n| env(n).filter(|v| !v.trim().is_empty()))
                .map(|v| v.trim().to_string())
        };
        let missing = |i: usize| {
            CredsError::Missing(format!(
                "set {} (or {}) or inventory.cloud.credentialsDir",
                ours[i],
                native[i].first().unwrap_or(&"-")
            ))
        };
        let c = Self {
            access_key_id: get(0).ok_or_else(|| missing(0))?,
            access_key_secret: get(1).ok_or_else(|| missing(1))?,
            security_token: get(2),
            project_id: get(3),
        };
        c.check(provider, ours[3])
    }

    fn check(self, provider: Provider, project_source: &str) -> Result<Self, CredsError> {
        if provider == Provider::Huawei && self.project_id.is_none() {
            return Err(CredsError::Missing(format!(
                "Huawei's ELB API needs the project id: {project_source} is missing"
            )));
        }
        Ok(self)
    }
}

/// Where the credentials come from, and the last good ones.
pub struct CredStore {
    provider: Provider,
    dir: Option<PathBuf>,
    current: ArcSwap<Creds>,
    seen: Mutex<Vec<String>>,
}

impl std::fmt::Debug for CredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CredStore({:?})", self.dir)
    }
}

impl CredStore {
    /// From the directory, or the process environment when there is none.
    pub fn load(provider: Provider, dir: Option<&Path>) -> Result<Arc<Self>, CredsError> {
        let creds = match dir {
            Some(d) => Creds::from_dir(d, provider)?,
            None => Creds::from_env(provider, |n| std::env::var(n).ok())?,
        };
        Ok(Arc::new(Self {
            provider,
            dir: dir.map(Path::to_path_buf),
            seen: Mutex::new(fingerprint(&creds)),
            current: ArcSwap::from_pointee(creds),
        }))
    }

    /// Fixed credentials (tests, `check`).
    pub fn fixed(provider: Provider, creds: Creds) -> Arc<Self> {
        Arc::new(Self {
            provider,
            dir: None,
            seen: Mutex::new(fingerprint(&creds)),
            current: ArcSwap::from_pointee(creds),
        })
    }

    pub fn get(&self) -> Arc<Creds> {
        self.current.load_full()
    }

    /// Re-reads the files; `Ok(true)` when new credentials were swapped in. A broken
    /// set (a key id without its secret mid-rotation) keeps the last good one.
    pub fn reload(&self) -> Result<bool, CredsError> {
        let Some(dir) = &self.dir else {
            return Ok(false);
        };
        let creds = Creds::from_dir(dir, self.provider)?;
        let print = fingerprint(&creds);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if *seen == print {
            return Ok(false);
        }
        self.current.store(Arc::new(creds));
        *seen = print;
        Ok(true)
    }
}

fn fingerprint(c: &Creds) -> Vec<String> {
    vec![
        c.access_key_id.clone(),
        c.access_key_secret.clone(),
        c.security_token.clone().unwrap_or_default(),
        c.project_id.clone().unwrap_or_default(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_trimmed_and_rotation_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("accessKeyId"), "AKID1\n").unwrap();
        std::fs::write(d.join("accessKeySecret"), "secret-1\n").unwrap();
        let store = CredStore::load(Provider::Alibaba, Some(d)).unwrap();
        assert_eq!(store.get().access_key_id, "AKID1");
        assert_eq!(store.get().security_token, None);
        assert!(!store.reload().unwrap());
        std::fs::write(d.join("accessKeySecret"), "secret-2").unwrap();
        assert!(store.reload().unwrap());
        assert_eq!(store.get().access_key_secret, "secret-2");
        std::fs::remove_file(d.join("accessKeySecret")).unwrap();
        let e = store.reload().unwrap_err().to_string();
        assert!(e.contains("accessKeySecret"), "{e}");
        assert_eq!(store.get().access_key_secret, "secret-2");
    }

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
}
