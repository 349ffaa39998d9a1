//! Where the API rows come from, for `lbguard rules --sources` and the book: messages cite a
//! source's short title, this lists its whole text.

use super::model::{ApiTable, Source};

impl Source {
    /// The whole source: the pages, tables, API calls and SDK models, with their lines.
    pub fn text(&self) -> &str {
        match self {
            Source::Text(t) => t,
            Source::Titled(t) => &t.text,
        }
    }
}

impl ApiTable {
    /// The rows `rule` reports, one entry per source: the annotations they read (without the
    /// prefix), then the calls and parameters, the source's whole text and the controller
    /// lines that map the annotations to them.
    pub fn provenance(&self, rule: &str) -> Vec<(Vec<String>, Vec<String>)> {
        let mut rows = Rows::default();
        let base = self.code_base.as_deref().unwrap_or("");
        for call in &self.calls {
            for p in call.params.iter().filter(|p| p.reported_by(rule)) {
                let key = p.source.as_ref().unwrap_or(&call.source);
                let what = format!("{} {}", call.call, p.name);
                rows.add(
                    key,
                    &p.from,
                    what,
                    p.code.iter().map(|c| format!("{base}{c}")),
                );
            }
            if rule == "dependent-annotations" {
                for t in &call.together {
                    let key = t.source.as_ref().unwrap_or(&call.source);
                    let what = format!("{} {}", call.call, t.params);
                    let code = t.code.iter().map(|c| format!("{base}{c}"));
                    rows.add(key, &t.when.annotation, what, code);
                }
            }
        }
        (rows.0.into_iter())
            .map(|r| {
                let text = self
                    .sources
                    .get(&r.key)
                    .map_or(r.key.as_str(), Source::text);
                let mut lines = vec![format!("{}: {text}", r.what.join(", "))];
                lines.extend(r.code);
                (r.from, lines)
            })
            .collect()
    }
}

/// Per source key, in the file's order: the annotations, the calls and parameters, the code
/// lines.
#[derive(Default)]
struct Rows(Vec<Row>);

struct Row {
    key: String,
    from: Vec<String>,
    what: Vec<String>,
    code: Vec<String>,
}

impl Rows {
    fn add(&mut self, key: &str, from: &str, what: String, code: impl Iterator<Item = String>) {
        let i = match self.0.iter().position(|r| r.key == key) {
            Some(i) => i,
            None => {
                self.0.push(Row {
                    key: key.to_string(),
                    from: vec![],
                    what: vec![],
                    code: vec![],
                });
                self.0.len() - 1
            }
        };
        let r = &mut self.0[i];
        push_new(&mut r.from, from.to_string());
        push_new(&mut r.what, what);
        for c in code {
            push_new(&mut r.code, c);
        }
    }
}

fn push_new(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}
