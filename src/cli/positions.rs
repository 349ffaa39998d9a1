//! Where each field of a YAML (or JSON) document is, so `check` can point at the line to
//! change: `file:line:col` in text, SARIF regions, JUnit messages. Built from the parser's
//! events (the same parser serde-saphyr uses), one map per non-empty document, in the order
//! `vocab::yaml::documents` returns them.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// 1-based line and column of a document's nodes (of the key, for mapping entries).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Doc {
    at: HashMap<Vec<Seg>, (usize, usize)>,
}

impl Doc {
    /// The position of `base` + `field` (as rule findings name fields:
    /// `metadata.annotations[key]`, `spec.ports[0].port`), or of its nearest ancestor that
    /// is in the document (a finding about a missing field points at its parent).
    pub fn locate(&self, base: &[Seg], field: &str) -> (usize, usize) {
        let mut path = base.to_vec();
        path.extend(parse_field(field));
        loop {
            if let Some(p) = self.at.get(&path) {
                return *p;
            }
            if path.pop().is_none() {
                return (1, 1);
            }
        }
    }
}

/// `a.b[key.with.dots][0].c` → `[a, b, key.with.dots, 0, c]`.
pub fn parse_field(field: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut rest = field;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('[') {
            let end = inner.find(']').unwrap_or(inner.len());
            let key = &inner[..end];
            out.push(match key.parse::<usize>() {
                Ok(i) => Seg::Index(i),
                Err(_) => Seg::Key(key.to_string()),
            });
            rest = inner.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end > 0 {
                out.push(Seg::Key(rest[..end].to_string()));
            }
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    out
}

enum Frame {
    Map { key: Option<String> },
    Seq { next: usize },
}

fn null_like(v: &str, style: ScalarStyle) -> bool {
    style == ScalarStyle::Plain && matches!(v, "" | "~" | "null" | "Null" | "NULL")
}

/// The positions of every non-empty document in `text`; stops at a syntax error (as the
/// document reader does).
pub fn index(text: &str) -> Vec<Doc> {
    let mut docs = Vec::new();
    let mut doc = Doc::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut path: Vec<Seg> = Vec::new();
    let mut empty = true;
    for item in Parser::new_from_str(text) {
        let Ok((event, span)) = item else { break };
        let at = (span.start.line(), span.start.col() + 1);
        // Where the node this event starts sits: the path of a map value or a list item.
        let enter = |stack: &mut Vec<Frame>, path: &mut Vec<Seg>| -> Option<bool> {
            match stack.last_mut() {
                None => Some(false),
                Some(Frame::Seq { next }) => {
                    path.push(Seg::Index(*next));
                    *next += 1;
                    Some(true)
                }
                Some(Frame::Map { key: Some(k) }) => {
                    path.push(Seg::Key(k.clone()));
                    Some(true)
                }
                // A key: handled by the caller.
                Some(Frame::Map { key: None }) => None,
            }
        };
        match event {
            Event::DocumentStart(..) => {
                doc = Doc::default();
                stack.clear();
                path.clear();
                empty = true;
            }
            Event::DocumentEnd if !empty => docs.push(std::mem::take(&mut doc)),
            Event::Scalar(value, style, ..) => {
                if stack.is_empty() {
                    empty = null_like(&value, style);
                    continue;
                }
                match enter(&mut stack, &mut path) {
                    None => {
                        // A mapping key: its position is the field's.
                        let mut p = path.clone();
                        p.push(Seg::Key(value.to_string()));
                        doc.at.entry(p).or_insert(at);
                        if let Some(Frame::Map { key }) = stack.last_mut() {
                            *key = Some(value.to_string());
                        }
                    }
                    Some(pushed) => {
                        doc.at.entry(path.clone()).or_insert(at);
                        if pushed {
                            path.pop();
                        }
                        if let Some(Frame::Map { key }) = stack.last_mut() {
                            *key = None;
                        }
                    }
                }
            }
            Event::Alias(_) => {
                if let Some(true) = enter(&mut stack, &mut path) {
                    path.pop();
                }
                if let Some(Frame::Map { key }) = stack.last_mut() {
                    *key = None;
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if stack.is_empty() {
                    empty = false;
                } else if enter(&mut stack, &mut path).is_none() {
                    // A complex key: no field path names it.
                    path.push(Seg::Key(String::new()));
                }
                doc.at.entry(path.clone()).or_insert(at);
                stack.push(if matches!(event, Event::MappingStart(..)) {
                    Frame::Map { key: None }
                } else {
                    Frame::Seq { next: 0 }
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                if !stack.is_empty() {
                    path.pop();
                }
                if let Some(Frame::Map { key }) = stack.last_mut() {
                    *key = None;
                }
            }
            _ => {}
        }
    }
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# a comment
---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations:
    service.beta.kubernetes.io/ctyun-loadbalancer-id: \"\"
    kubernetes.io/elb.class: union
spec:
  type: LoadBalancer
  ports:
    - {name: http, port: 80}
    - name: https
      port: 443
---
---
{\"kind\": \"List\", \"items\": [{\"kind\": \"Service\",
  \"metadata\": {\"name\": \"b\"}}]}
";

    #[test]
    fn fields_point_at_their_key() {
        let docs = index(TEXT);
        assert_eq!(docs.len(), 2, "empty documents are skipped");
        let d = &docs[0];
        assert_eq!(
            d.locate(
                &[],
                "metadata.annotations[service.beta.kubernetes.io/ctyun-loadbalancer-id]"
            ),
            (8, 5)
        );
        assert_eq!(
            d.locate(&[], "metadata.annotations[kubernetes.io/elb.class]"),
            (9, 5)
        );
        assert_eq!(d.locate(&[], "spec.type"), (11, 3));
        assert_eq!(d.locate(&[], "spec.ports[0].port"), (13, 20));
        assert_eq!(d.locate(&[], "spec.ports[1].port"), (15, 7));
        // Missing: the nearest parent that is there.
        assert_eq!(d.locate(&[], "spec.externalTrafficPolicy"), (10, 1));
        assert_eq!(d.locate(&[], "metadata.annotations[other]"), (7, 3));
        assert_eq!(d.locate(&[], ""), (3, 1));
        let items = [Seg::Key("items".into()), Seg::Index(0)];
        assert_eq!(docs[1].locate(&items, "metadata.name"), (19, 16));
    }

    #[test]
    fn field_paths_parse() {
        assert_eq!(
            parse_field("metadata.annotations[a.b/c-d][0].x"),
            vec![
                Seg::Key("metadata".into()),
                Seg::Key("annotations".into()),
                Seg::Key("a.b/c-d".into()),
                Seg::Index(0),
                Seg::Key("x".into())
            ]
        );
        assert_eq!(parse_field(""), vec![]);
    }

    #[test]
    fn broken_yaml_stops_without_panicking() {
        assert!(index("a: [1\n").len() <= 1);
        assert!(index(": : :\n- - ]]").len() <= 1);
    }
}
