//! `check --exclude GLOB`: paths `check` does not read (a Helm chart's templates, vendored
//! YAML). A pattern matches a file or a directory as it is named (`./` left off), or its
//! path under the directory argument it was found in; a matched directory is not entered.

use std::path::{Component, Path};

use glob::{MatchOptions, Pattern};

/// `*` and `?` stay within one path segment; `**` spans segments.
const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

#[derive(Debug, Clone, Default)]
pub struct Exclude(Vec<Pattern>);

/// A `--exclude` value, for clap.
pub fn pattern(s: &str) -> Result<Pattern, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("an empty pattern".into());
    }
    // `charts/` means the directory.
    let s = s.trim_end_matches('/');
    let s = s.strip_prefix("./").unwrap_or(s);
    Pattern::new(s).map_err(|e| format!("not a glob pattern: {e}"))
}

/// A path as the patterns see it: `/` between segments, no `.` segments.
fn plain(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::RootDir => String::new(),
            c => c.as_os_str().to_string_lossy().into_owned(),
        })
        .collect();
    parts.join("/")
}

impl Exclude {
    pub fn new(patterns: Vec<Pattern>) -> Exclude {
        Exclude(patterns)
    }

    /// Whether `path`, found under the argument `root` (the argument itself for a file
    /// named directly), is left out.
    pub fn excludes(&self, path: &Path, root: &Path) -> bool {
        if self.0.is_empty() || path == Path::new("-") {
            return false;
        }
        let mut names = vec![plain(path)];
        if let Ok(rel) = path.strip_prefix(root) {
            let rel = plain(rel);
            if !rel.is_empty() {
                names.push(rel);
            }
        }
        // `charts/**` also names the directory `charts` itself, which is then not entered.
        names.iter().any(|n| {
            let dir = format!("{n}/");
            self.0
                .iter()
                .any(|p| p.matches_with(n, OPTIONS) || p.matches_with(&dir, OPTIONS))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(patterns: &[&str]) -> Exclude {
        Exclude::new(patterns.iter().map(|p| pattern(p).unwrap()).collect())
    }

    #[test]
    fn patterns_match_the_path_as_named_and_under_its_argument() {
        let e = ex(&["charts/**", "**/*.tpl.yaml", "kustomization.yaml"]);
        let root = Path::new(".");
        assert!(e.excludes(Path::new("./charts/web/templates/svc.yaml"), root));
        assert!(e.excludes(Path::new("./charts"), root));
        assert!(e.excludes(Path::new("deploy/a/x.tpl.yaml"), root));
        assert!(e.excludes(Path::new("./kustomization.yaml"), root));
        assert!(!e.excludes(Path::new("./deploy/kustomization.yaml"), root));
        assert!(!e.excludes(Path::new("./deploy/svc.yaml"), root));
        // Under an absolute argument, the path below it matches too.
        let root = Path::new("/manifests");
        assert!(e.excludes(Path::new("/manifests/charts/web/values.yaml"), root));
        assert!(!e.excludes(Path::new("/manifests/deploy/svc.yaml"), root));
        // `*` stays in its segment; stdin is never left out.
        let e = ex(&["*.yaml", "-"]);
        assert!(e.excludes(Path::new("svc.yaml"), Path::new("svc.yaml")));
        assert!(!e.excludes(Path::new("deploy/svc.yaml"), Path::new("deploy/svc.yaml")));
        assert!(!e.excludes(Path::new("-"), Path::new("-")));
        // A directory written with its slash.
        let e = ex(&["./vendor/"]);
        assert!(e.excludes(Path::new("./vendor"), Path::new(".")));
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(pattern("").is_err());
        assert!(pattern("a/[b").is_err());
        assert!(pattern("a**b").is_err());
    }
}
