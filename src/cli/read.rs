//! Reading `check`'s input: manifests from files, directories and stdin, every document of
//! each (a `List`'s items too), with where each Service came from.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::networking::v1::Ingress;
use serde_json::Value;

use super::positions::{self, Doc, Seg};
use crate::cluster::ClusterState;

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

/// Files named directly, and the .yaml/.yml/.json files under directories, sorted.
fn expand(paths: &[PathBuf], errors: &mut Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            let mut found = Vec::new();
            while let Some(dir) = stack.pop() {
                match std::fs::read_dir(&dir) {
                    Ok(entries) => {
                        for e in entries.flatten() {
                            let path = e.path();
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

fn collect(value: Value, origin: &str, place: Place, loaded: &mut Loaded, depth: usize) {
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
        None => loaded.skipped += 1,
    }
}

/// Reads every document of every file; errors name the file and the document.
pub fn load(paths: &[PathBuf]) -> Loaded {
    let mut loaded = Loaded::default();
    let files = expand(paths, &mut loaded.errors);
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
                Ok(v @ Value::Object(_)) => collect(v, &origin, place, &mut loaded, 0),
                Ok(_) => loaded.errors.push(format!(
                    "{origin}: not a Kubernetes object (expected a mapping)"
                )),
                Err(e) => loaded.errors.push(format!("{origin}: not valid YAML: {e}")),
            }
        }
    }
    loaded
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
