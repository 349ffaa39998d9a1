//! Reading `check`'s input: manifests from files, directories and stdin, every document of
//! each (a `List`'s items too), with where each Service came from. A repository holds more
//! YAML than manifests: what is not a Kubernetes object is skipped with a note, or is an
//! error when asked (`--strict`); `--exclude` leaves paths out. Live objects (`--old`,
//! `--cluster-state`) are read the same way.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::networking::v1::Ingress;
use serde_json::Value;

use super::exclude::Exclude;
use super::positions::{self, Doc, Seg};
use crate::cluster::ClusterState;

/// What becomes of a document that is not a Kubernetes object (a list, a scalar, a mapping
/// without `kind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NonObjects {
    /// The other inputs (`--old`, `--cluster-state`, `--exceptions`): a document that is not
    /// a mapping is an error; a mapping without `kind` is skipped and counted.
    #[default]
    Mixed,
    /// `check`'s manifests: skipped, each with a note.
    Note,
    /// `check --strict`: an error.
    Error,
}

/// How to read a set of paths.
#[derive(Debug, Default)]
pub struct Reading {
    pub non_objects: NonObjects,
    pub exclude: Exclude,
}

/// One Service found in the input, with where it came from.
#[derive(Debug)]
pub struct Found {
    pub origin: String,
    pub service: Service,
    /// The file it came from, as named on the command line.
    pub file: String,
    /// Where its document's fields are.
    pub doc: Arc<Doc>,
    /// Its path in the document (`items[2]` in a List).
    pub base: Vec<Seg>,
}

/// Everything read from a set of files.
#[derive(Debug, Default)]
pub struct Loaded {
    pub services: Vec<Found>,
    /// Objects of other kinds, with where they came from.
    pub others: Vec<(String, Value)>,
    pub skipped: usize,
    /// Documents that are not Kubernetes objects, skipped (`NonObjects::Note`).
    pub ignored: usize,
    /// What was skipped and why (`NonObjects::Note`).
    pub notes: Vec<String>,
    pub errors: Vec<String>,
}

fn read_source(path: &Path) -> Result<String, String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("<stdin>: {e}"))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Files named directly, and the .yaml/.yml/.json files under directories, sorted; what
/// `exclude` matches is left out (a directory is not entered).
fn expand(paths: &[PathBuf], exclude: &Exclude, errors: &mut Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if exclude.excludes(p, p) {
            continue;
        }
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            let mut found = Vec::new();
            while let Some(dir) = stack.pop() {
                match std::fs::read_dir(&dir) {
                    Ok(entries) => {
                        for e in entries.flatten() {
                            let path = e.path();
                            if exclude.excludes(&path, p) {
                                continue;
                            }
                            if path.is_dir() {
                                stack.push(path);
                            } else if path
                                .extension()
                                .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
                            {
                                found.push(path);
                            }
                        }
                    }
                    Err(e) => errors.push(format!("{}: {e}", dir.display())),
                }
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Parses one Kubernetes object as a Service, naming the field that is wrong.
pub fn parse_service(value: Value) -> Result<Service, String> {
    let svc: Service = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })?;
    if svc.metadata.name.as_deref().is_none_or(str::is_empty) {
        return Err("Service has no metadata.name".into());
    }
    Ok(svc)
}

/// Where a document came from, for findings' positions.
struct Place<'a> {
    file: &'a str,
    doc: &'a Arc<Doc>,
    base: Vec<Seg>,
}

/// What a document that is not a Kubernetes object is, for the note or the error.
fn shape(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping without kind",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "empty",
    }
}

/// A document (or a `List` item) that is not a Kubernetes object, by `mode`.
fn non_object(value: &Value, origin: &str, mode: NonObjects, loaded: &mut Loaded) {
    let what = shape(value);
    match mode {
        NonObjects::Mixed if value.is_object() => loaded.skipped += 1,
        NonObjects::Mixed | NonObjects::Error => loaded.errors.push(format!(
            "{origin}: not a Kubernetes object ({what}; expected a mapping with apiVersion and kind)"
        )),
        NonObjects::Note => {
            loaded.ignored += 1;
            loaded
                .notes
                .push(format!("{origin} skipped: not a Kubernetes object ({what})"));
        }
    }
}

fn collect(
    value: Value,
    origin: &str,
    place: Place,
    loaded: &mut Loaded,
    depth: usize,
    mode: NonObjects,
) {
    let kind = value.get("kind").and_then(Value::as_str).map(str::to_owned);
    match kind.as_deref() {
        Some("List") | Some("ServiceList") if depth == 0 => match value.get("items").cloned() {
            Some(Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    let mut base = place.base.clone();
                    base.extend([Seg::Key("items".into()), Seg::Index(i)]);
                    let inner = Place {
                        file: place.file,
                        doc: place.doc,
                        base,
                    };
                    collect(
                        item,
                        &format!("{origin} item {}", i + 1),
                        inner,
                        loaded,
                        depth + 1,
                        mode,
                    );
                }
            }
            Some(Value::Null) | None => {}
            Some(_) => loaded
                .errors
                .push(format!("{origin}: List items is not an array")),
        },
        Some("Service") => match parse_service(value) {
            Ok(service) => loaded.services.push(Found {
                origin: origin.to_string(),
                service,
                file: place.file.to_string(),
                doc: Arc::clone(place.doc),
                base: place.base,
            }),
            Err(e) => loaded.errors.push(format!("{origin}: {e}")),
        },
        Some(_) => {
            loaded.others.push((origin.to_string(), value));
            loaded.skipped += 1;
        }
        None => non_object(&value, origin, mode, loaded),
    }
}

/// Reads every document of every file; errors name the file and the document.
pub fn load(paths: &[PathBuf]) -> Loaded {
    load_with(paths, &Reading::default())
}

/// A parse error, with a hint when the file is a template rather than YAML.
fn parse_error(origin: &str, e: &str, text: &str) -> String {
    let mut out = format!("{origin}: not valid YAML: {e}");
    if text.contains("{{") {
        out.push_str(
            " (it looks like a template: lbguard reads rendered manifests, `helm template ... | lbguard check -`; leave templates out with --exclude)",
        );
    }
    out
}

/// `load`, reading as `how` says.
pub fn load_with(paths: &[PathBuf], how: &Reading) -> Loaded {
    let mut loaded = Loaded::default();
    let files = expand(paths, &how.exclude, &mut loaded.errors);
    for path in files {
        let name = if path == Path::new("-") {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        let text = match read_source(&path) {
            Ok(t) => t,
            Err(e) => {
                loaded.errors.push(e);
                continue;
            }
        };
        // Empty documents are skipped (not counted); a syntax error ends the stream.
        let places = positions::index(&text);
        for (i, doc) in crate::yaml::documents(&text).into_iter().enumerate() {
            let origin = format!("{name} document {}", i + 1);
            let at = Arc::new(places.get(i).cloned().unwrap_or_default());
            let place = Place {
                file: &name,
                doc: &at,
                base: Vec::new(),
            };
            match doc {
                Ok(v @ Value::Object(_)) => {
                    collect(v, &origin, place, &mut loaded, 0, how.non_objects)
                }
                Ok(v) => non_object(&v, &origin, how.non_objects, &mut loaded),
                Err(e) => loaded.errors.push(parse_error(&origin, &e, &text)),
            }
        }
    }
    loaded
}

/// The live Services of `--old`, by namespace/name: a Service of the manifests with the same
/// key is an update of it.
#[derive(Debug, Default)]
pub struct Live(HashMap<(String, String), Service>);

impl Live {
    /// Reads the files; returns the errors too.
    pub fn load(paths: &[PathBuf]) -> (Self, Vec<String>) {
        let loaded = load(paths);
        let live = loaded
            .services
            .into_iter()
            .map(|f| (key_of(&f.service), f.service))
            .collect();
        (Self(live), loaded.errors)
    }

    /// The live object of `service`, if there is one.
    pub fn of(&self, service: &Service) -> Option<&Service> {
        self.0.get(&key_of(service))
    }
}

/// A Service's namespace (`default` when it names none) and name.
fn key_of(s: &Service) -> (String, String) {
    (
        s.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        s.metadata.name.clone().unwrap_or_default(),
    )
}

/// Feeds live objects into the cluster view, as the watches would; returns the errors.
pub fn feed_cluster(cluster: &ClusterState, loaded: Loaded) -> Vec<String> {
    let mut errors = loaded.errors;
    for f in &loaded.services {
        cluster.apply_service(&f.service);
    }
    for (origin, value) in loaded.others {
        match value.get("kind").and_then(Value::as_str) {
            Some("Node") => match serde_path_to_error::deserialize::<_, Node>(value) {
                Ok(n) => cluster.apply_node(&n),
                Err(e) => errors.push(format!("{origin}: {}: {}", e.path(), e.inner())),
            },
            Some("Ingress") => match serde_path_to_error::deserialize::<_, Ingress>(value) {
                Ok(i) => cluster.apply_ingress(&i),
                Err(e) => errors.push(format!("{origin}: {}: {}", e.path(), e.inner())),
            },
            _ => {}
        }
    }
    errors
}
