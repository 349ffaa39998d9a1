//! Cloud credentials as signed with: an access key read from files (a Secret volume) or the
//! environment. Short-lived ones come from the cloud's identity services (`identity`), and
//! `store` holds and renews them. Never printed: `Debug` shows the key id's first characters
//! only.

use std::path::Path;

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

#[cfg(test)]
#[path = "creds_tests.rs"]
mod tests;
