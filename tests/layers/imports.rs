//! Which file of `src/` imports which, read from the code: every path the code names
//! (`use` trees, `crate::`/`super::`/`self::` paths, a child module or a `use`d name
//! followed by `::`), resolved to the file that defines what it names. A path through a
//! re-export (`pub use a::B` in `m`, named as `m::B`) imports both `m` and where `B` is
//! defined: a re-export neither hides an import nor stands for one. `mod x;` is no import;
//! a parent that names what its child holds imports it. Comments, strings and items under
//! `#[cfg(test)]` are not code that ships.

use std::collections::{BTreeMap, BTreeSet};

/// The lib crate's name, as a bin names it (`lbguard::...`).
const LIB: &str = "lbguard";

/// A module's absolute path, its crate first (`lbguard`, or `bin:<name>`).
type Module = Vec<String>;

/// A module's path from a file's path under `src/`: `lib.rs` is the lib crate's root,
/// `main.rs`, `bin/<n>.rs` and `bin/<n>/main.rs` are bins' roots.
pub fn module_of(rel: &str) -> Module {
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let mut krate = LIB.to_string();
    if rel == "main.rs" {
        return vec![format!("bin:{LIB}")];
    }
    if parts[0] == "bin" && parts.len() > 1 {
        krate = format!("bin:{}", parts[1].trim_end_matches(".rs"));
        parts.drain(..2);
    }
    let last = parts.pop().unwrap_or_default();
    if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs" | "") {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    let mut m = vec![krate];
    m.extend(parts);
    m
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Id(String),
    /// `::`
    Sep,
    P(char),
}

/// The code's tokens, without comments, string and char literals, and lifetimes.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let is_id = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let mut i = 0;
    let skip_string = |mut i: usize| {
        i += 1;
        while i < c.len() && c[i] != '"' {
            i += if c[i] == '\\' { 2 } else { 1 };
        }
        i + 1
    };
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(i);
        } else if ch == '\'' {
            i += if at(i + 1) == '\\' {
                let mut j = i + 3; // past the escaped character, which may be `'`
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                j + 1 - i
            } else if at(i + 2) == '\'' {
                3
            } else {
                1 // a lifetime: its name follows as an identifier
            };
        } else if ch.is_ascii_digit() {
            while i < c.len() && is_id(c[i]) {
                i += 1;
            }
        } else if is_id(ch) {
            let start = i;
            while i < c.len() && is_id(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && (at(i) == '"' || at(i) == '#') {
                let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
                if at(i + hashes) == '"' {
                    // A raw string: up to `"` and as many `#`.
                    i += hashes + 1;
                    while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                        i += 1;
                    }
                    i += hashes + 1;
                    continue;
                }
                if word == "r" && hashes == 1 {
                    i += 1; // a raw identifier: `r#` is dropped, the name follows
                    continue;
                }
            }
            if at(i) == '"' && matches!(word.as_str(), "b" | "c") {
                i = skip_string(i);
                continue;
            }
            out.push(Tok::Id(word));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::Sep);
            i += 2;
        } else if ch == '$' {
            i += 1; // `$crate` in a macro is `crate`
        } else {
            out.push(Tok::P(ch));
            i += 1;
        }
    }
    out
}

/// What one file says: the paths it names (in which module, and how written) and the
/// names its `use` lines bind, per module (a file holds inline `mod x { }` too).
#[derive(Debug, Default)]
struct Parsed {
    inline: Vec<Module>,
    refs: Vec<(Module, Vec<String>)>,
    binds: Vec<(Module, String, Vec<String>)>,
}

fn id(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Id(s)) => Some(s),
        _ => None,
    }
}

/// A `use` tree from `t[*j]`, each leaf as (the name it binds, if any; its path).
fn use_tree(
    t: &[Tok],
    j: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    let mut segs = prefix.to_vec();
    if t.get(*j) == Some(&Tok::Sep) {
        *j += 1;
    }
    while let Some(s) = id(t.get(*j)) {
        segs.push(s.to_string());
        *j += 1;
        if t.get(*j) != Some(&Tok::Sep) {
            break;
        }
        *j += 1;
    }
    match t.get(*j) {
        Some(Tok::P('{')) => {
            *j += 1;
            while !matches!(t.get(*j), None | Some(Tok::P('}'))) {
                let at = *j;
                use_tree(t, j, &segs, out);
                // A token no tree starts with is passed over, never looped on.
                if t.get(*j) == Some(&Tok::P(',')) || *j == at {
                    *j += 1;
                }
            }
            *j += 1;
        }
        Some(Tok::P('*')) => {
            *j += 1;
            out.push((None, segs));
        }
        _ => {
            if segs.last().is_some_and(|s| s == "self") {
                segs.pop();
            }
            let mut name = segs.last().cloned();
            if id(t.get(*j)) == Some("as") {
                name = id(t.get(*j + 1)).filter(|n| *n != "_").map(str::to_string);
                *j += 2;
            }
            out.push((name, segs));
        }
    }
}

/// Past the item that starts at `t[j]`: its attributes, then up to its `;` or its `{ }`.
fn skip_item(t: &[Tok], mut j: usize) -> usize {
    let mut depth = 0i32;
    while j < t.len() {
        match &t[j] {
            Tok::P('(' | '[') => depth += 1,
            Tok::P(')' | ']') => depth -= 1,
            Tok::P(';') if depth == 0 => return j + 1,
            Tok::P('{') if depth == 0 => {
                let mut braces = 0;
                while j < t.len() {
                    match t[j] {
                        Tok::P('{') => braces += 1,
                        Tok::P('}') => {
                            braces -= 1;
                            if braces == 0 {
                                return j + 1;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

fn parse(module: &Module, text: &str) -> Parsed {
    let t = tokens(text);
    let mut p = Parsed::default();
    let mut stack: Vec<(Module, i32)> = vec![(module.clone(), 0)];
    let mut depth = 0;
    let mut j = 0;
    let cfg_test = [
        Tok::P('#'),
        Tok::P('['),
        Tok::Id("cfg".into()),
        Tok::P('('),
        Tok::Id("test".into()),
        Tok::P(')'),
        Tok::P(']'),
    ];
    while j < t.len() {
        let here = stack.last().map(|s| s.0.clone()).unwrap_or_default();
        let after_sep = j > 0 && t[j - 1] == Tok::Sep;
        if t[j..].starts_with(&cfg_test) {
            j = skip_item(&t, j + cfg_test.len());
        } else if id(t.get(j)) == Some("mod") && t.get(j + 2) == Some(&Tok::P('{')) {
            let mut m = here.clone();
            m.push(id(t.get(j + 1)).unwrap_or_default().to_string());
            p.inline.push(m.clone());
            depth += 1;
            stack.push((m, depth));
            j += 3;
        } else if t[j] == Tok::P('{') {
            depth += 1;
            j += 1;
        } else if t[j] == Tok::P('}') {
            if stack.len() > 1 && stack.last().is_some_and(|s| s.1 == depth) {
                stack.pop();
            }
            depth -= 1;
            j += 1;
        } else if id(t.get(j)) == Some("use") && !after_sep {
            j += 1;
            let mut leaves = Vec::new();
            use_tree(&t, &mut j, &[], &mut leaves);
            for (name, segs) in leaves {
                if let Some(n) = name {
                    p.binds.push((here.clone(), n, segs.clone()));
                }
                p.refs.push((here.clone(), segs));
            }
        } else if let (Some(first), false, Some(Tok::Sep)) = (id(t.get(j)), after_sep, t.get(j + 1))
        {
            let mut segs = vec![first.to_string()];
            j += 2;
            while let Some(s) = id(t.get(j)) {
                segs.push(s.to_string());
                j += 1;
                if t.get(j) != Some(&Tok::Sep) {
                    break;
                }
                j += 1;
            }
            p.refs.push((here, segs));
        } else {
            j += 1;
        }
    }
    p
}

/// The import graph of a set of files (path under `src/`, text): for each file, the
/// files it imports, each with one path that shows it.
pub fn graph(files: &[(String, String)]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut modules: BTreeMap<Module, String> = BTreeMap::new();
    let mut parsed = Vec::new();
    for (rel, _) in files {
        modules.insert(module_of(rel), rel.clone());
    }
    for (rel, text) in files {
        let p = parse(&module_of(rel), text);
        for m in &p.inline {
            modules.insert(m.clone(), rel.clone());
        }
        parsed.push((rel, p));
    }
    let mut binds: BTreeMap<(Module, String), (Module, Vec<String>)> = BTreeMap::new();
    for (_, p) in &parsed {
        for (m, name, segs) in &p.binds {
            binds.insert((m.clone(), name.clone()), (m.clone(), segs.clone()));
        }
    }
    let r = Resolver {
        modules: &modules,
        binds: &binds,
    };
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (rel, p) in &parsed {
        for (m, segs) in &p.refs {
            let abs = r.absolute(m, segs, 0).unwrap_or_default();
            for to in r.files(&abs, 0).into_iter().filter(|to| to != *rel) {
                let e = out.entry((*rel).clone()).or_default();
                e.entry(to).or_insert_with(|| segs.join("::"));
            }
        }
    }
    out
}

struct Resolver<'a> {
    modules: &'a BTreeMap<Module, String>,
    binds: &'a BTreeMap<(Module, String), (Module, Vec<String>)>,
}

impl Resolver<'_> {
    /// `segs` as written in module `m`, as an absolute path; `None` when it starts outside
    /// the crate (another crate, a local type, `Self`).
    fn absolute(&self, m: &Module, segs: &[String], hops: usize) -> Option<Vec<String>> {
        let (first, rest) = segs.split_first()?;
        let mut base = match first.as_str() {
            "crate" => vec![m[0].clone()],
            "self" => m.clone(),
            LIB => vec![LIB.to_string()],
            "super" => {
                let mut b = m.clone();
                b.pop();
                b
            }
            name => {
                let mut child = m.clone();
                child.push(name.to_string());
                if self.modules.contains_key(&child) {
                    child
                } else {
                    let (bm, bsegs) = self.binds.get(&(m.clone(), name.to_string()))?;
                    if hops > 16 {
                        return None;
                    }
                    self.absolute(bm, bsegs, hops + 1)?
                }
            }
        };
        let mut rest = rest;
        while first == "super" && rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The files an absolute path depends on: the one that defines what it names (the
    /// deepest module on it) and, where the path goes on through a name a module `use`s
    /// (a re-export), that module's file too, since the path breaks without it.
    fn files(&self, abs: &[String], hops: usize) -> Vec<String> {
        let mut cur: Module = abs.first().cloned().into_iter().collect();
        let mut found = self.modules.get(&cur).cloned();
        for (i, seg) in abs.iter().enumerate().skip(1) {
            let mut next = cur.clone();
            next.push(seg.clone());
            if let Some(f) = self.modules.get(&next) {
                found = Some(f.clone());
                cur = next;
                continue;
            }
            if let Some((bm, bsegs)) = self.binds.get(&(cur.clone(), seg.clone()))
                && hops <= 16
                && let Some(mut target) = self.absolute(bm, bsegs, hops + 1)
            {
                target.extend(abs[i + 1..].iter().cloned());
                let mut out = self.files(&target, hops + 1);
                out.extend(found);
                return out;
            }
            break;
        }
        found.into_iter().collect()
    }
}

/// Every import circle: each set of files that reach one another, as one circle through
/// them (`a -> b -> a`), each arrow with the path that draws it.
pub fn circles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            for t in graph.get(&n).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(t.clone()) {
                    stack.push(t.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|k| (k, reach(k))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for (start, r) in &reached {
        if done.contains(*start) || !r.contains(*start) {
            continue;
        }
        let group: BTreeSet<String> = r
            .iter()
            .filter(|n| reached.get(n).is_some_and(|b| b.contains(*start)))
            .cloned()
            .collect();
        done.extend(group.iter().cloned());
        // The shortest way round from `start`, breadth first within the group.
        let mut prev: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(*start).clone()]);
        'search: while let Some(n) = queue.pop_front() {
            for t in graph[&n].keys().filter(|t| group.contains(*t)) {
                if !prev.contains_key(t) {
                    prev.insert(t.clone(), n.clone());
                    if t == *start {
                        break 'search;
                    }
                    queue.push_back(t.clone());
                }
            }
        }
        let mut ring = vec![(*start).clone()];
        let mut n = prev[*start].clone();
        while n != **start {
            ring.push(n.clone());
            n = prev[&n].clone();
        }
        ring.push((*start).clone());
        ring.reverse();
        let arrows: Vec<String> = ring
            .windows(2)
            .map(|w| format!("  src/{} -> src/{} ({})", w[0], w[1], graph[&w[0]][&w[1]]))
            .collect();
        out.push(format!(
            "src/{start} is in an import circle of {} files ({}):\n{}",
            group.len(),
            group.iter().cloned().collect::<Vec<_>>().join(", "),
            arrows.join("\n")
        ));
    }
    out
}
