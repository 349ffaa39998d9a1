//! Kubernetes version strings as clusters report them.
//!
//! Not semver: CCE's `v1.29.15-r90` is a *later* build of v1.29.15, while semver would
//! sort the `-r90` pre-release before it. So a revision `-rN` compares numerically (no
//! revision = r0), and any other suffix (`+k3s1`, `-eks-4f4795d`, `-gke.100`) is ignored.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// A fourth dotted number: cloud controllers version builds as `v1.9.3.164-g2105d2e`.
    pub build: u32,
    pub revision: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "\"{input}\" is not a Kubernetes version (expected e.g. v1.31.4 or v1.29.15-r90): {reason}"
)]
pub struct VersionError {
    pub input: String,
    pub reason: &'static str,
}

impl KubeVersion {
    pub const fn new(major: u32, minor: u32, patch: u32, revision: u32) -> Self {
        Self {
            major,
            minor,
            patch,
            build: 0,
            revision,
        }
    }

    /// Same version with a fourth dotted number.
    pub const fn with_build(self, build: u32) -> Self {
        Self { build, ..self }
    }
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl FromStr for KubeVersion {
    type Err = VersionError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason| VersionError {
            input: input.to_string(),
            reason,
        };
        let s = input.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        // Build metadata never affects ordering.
        let s = s.split('+').next().unwrap_or_default();
        let (core, suffix) = match s.find('-') {
            Some(i) => (&s[..i], Some(&s[i + 1..])),
            None => (s, None),
        };
        let mut parts = core.split('.');
        let major = parts
            .next()
            .and_then(number)
            .ok_or_else(|| err("missing major version"))?;
        let minor = parts
            .next()
            .and_then(number)
            .ok_or_else(|| err("missing minor version"))?;
        let patch = match parts.next() {
            None => 0,
            Some(p) => number(p).ok_or_else(|| err("patch is not a number"))?,
        };
        let build = match parts.next() {
            None => 0,
            Some(b) => number(b).ok_or_else(|| err("build is not a number"))?,
        };
        if parts.next().is_some() {
            return Err(err("too many dot-separated parts"));
        }
        let revision = suffix
            .and_then(|s| s.split('-').next())
            .and_then(|first| first.strip_prefix('r'))
            .and_then(number)
            .unwrap_or(0);
        Ok(Self::new(major, minor, patch, revision).with_build(build))
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)?;
        if self.build > 0 {
            write!(f, ".{}", self.build)?;
        }
        if self.revision > 0 {
            write!(f, "-r{}", self.revision)?;
        }
        Ok(())
    }
}

/// Which version a rule or an annotation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VersionOf {
    /// The cloud controller's own version (`ccm.version`).
    Ccm,
    /// The cluster's version (Huawei CCE runs its controller in the managed control plane).
    Cluster,
}

/// What the engine knows about a version it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    Yes(KubeVersion),
    /// Not configured and not discovered.
    Missing,
    /// Configured or reported, but not parseable.
    Invalid(String),
}

impl Known {
    pub fn from_option(raw: Option<&str>) -> Self {
        match raw {
            None => Known::Missing,
            Some(r) => match r.parse() {
                Ok(v) => Known::Yes(v),
                Err(e) => Known::Invalid(VersionError::to_string(&e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain("v1.31.4", KubeVersion::new(1, 31, 4, 0))]
    #[case::cce_revision("v1.29.15-r90", KubeVersion::new(1, 29, 15, 90))]
    #[case::k3s("v1.30.1+k3s1", KubeVersion::new(1, 30, 1, 0))]
    #[case::eks("v1.28.3-eks-4f4795d", KubeVersion::new(1, 28, 3, 0))]
    #[case::cce_long("v1.32.13-r20-32.0.5", KubeVersion::new(1, 32, 13, 20))]
    #[case::no_v("1.19.16", KubeVersion::new(1, 19, 16, 0))]
    #[case::no_patch("v1.17", KubeVersion::new(1, 17, 0, 0))]
    #[case::gke("v1.30.5-gke.1014001", KubeVersion::new(1, 30, 5, 0))]
    #[case::ccm_build("v1.9.3.164-g2105d2e-aliyun", KubeVersion::new(1, 9, 3, 0).with_build(164))]
    fn parses(#[case] input: &str, #[case] want: KubeVersion) {
        assert_eq!(input.parse::<KubeVersion>().unwrap(), want);
    }

    #[rstest]
    #[case::empty("")]
    #[case::word("banana")]
    #[case::only_major("v1")]
    #[case::huge("v1.99999999999999999999.0")]
    #[case::letters("v1.x.3")]
    #[case::five_parts("1.2.3.4.5")]
    fn rejects(#[case] input: &str) {
        let e = input.parse::<KubeVersion>().unwrap_err();
        assert!(e.to_string().contains("not a Kubernetes version"));
    }

    #[rstest]
    #[case("v1.29.15-r90", "v1.29.15-r89", true)]
    #[case("v1.29.15-r100", "v1.29.15-r90", true)]
    #[case("v1.29.15", "v1.29.15-r90", false)]
    #[case("v1.30.0", "v1.29.15-r90", true)]
    #[case("v1.19.16", "v1.19.9", true)]
    #[case("v1.9.3.164-g2105d2e-aliyun", "v1.9.3", true)]
    #[case("v1.9.4", "v1.9.3.304-g1f42462-aliyun", true)]
    fn orders(#[case] a: &str, #[case] b: &str, #[case] greater: bool) {
        let a: KubeVersion = a.parse().unwrap();
        let b: KubeVersion = b.parse().unwrap();
        assert_eq!(a > b, greater);
    }
}
