//! Small builders for the CEL that rules export (`lbguard export-vap`). `$s` stands for the
//! Service a check reads; the exporter puts `object` or `oldObject` in its place.

/// A CEL string literal.
pub fn lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// CEL for Go's `int32(n)` of an int expression `n` (Go's `%` and CEL's keep the dividend's
/// sign, so the shift by 2^32 + 2^31 makes it positive before the last `%`).
pub fn int32(n: &str) -> String {
    format!("(({n} % 4294967296 + 6442450944) % 4294967296 - 2147483648)")
}

/// CEL that is true when the string `v` is a number Go's `strconv.Atoi` reads on a 64-bit
/// build: a sign, digits, within the int64 range. Up to 18 significant digits always fit; 19
/// only up to 2^63 - 1 (down to -2^63), compared in two parts because CEL's `int()` errs past
/// them. Guard `int(v)` with it.
pub fn atoi_number(v: &str) -> String {
    let d = format!("{v}.substring(size({v}) - 19)");
    let hi = format!("int({d}.substring(0, 10))");
    format!(
        "({v}.matches('^[+-]?0*[0-9]{{1,18}}$') || ({v}.matches('^[+-]?0*[1-9][0-9]{{18}}$') && ({hi} < 9223372036 || ({hi} == 9223372036 && int({d}.substring(10)) <= ({v}.startsWith('-') ? 854775808 : 854775807)))))"
    )
}

/// A CEL list of string literals.
pub fn list(items: &[&str]) -> String {
    let items: Vec<String> = items.iter().map(|s| lit(s)).collect();
    format!("[{}]", items.join(", "))
}

/// `$s`'s annotation: the value of the first of `keys` it carries, or null. A token, not
/// CEL yet: `inline` writes it out where it stands, the policy exporter makes it one shared
/// variable (`vap::vars`), so a key read by many checks is looked up, and written, once.
pub fn annotation_token(keys: &[&str]) -> String {
    let keys: Vec<String> = keys.iter().map(|k| lit(k)).collect();
    format!("$ann($s,{})", keys.join(","))
}

/// `$s` carries annotation `key`.
pub fn has_annotation(key: &str) -> String {
    format!("({} != null)", annotation_token(&[key]))
}

/// The value of annotation `key` on `$s` (null without it; guard with `has_annotation`).
pub fn annotation(key: &str) -> String {
    annotation_token(&[key])
}

/// `$s`'s label `key` is present.
pub fn has_label(key: &str) -> String {
    format!(
        "(has($s.metadata.labels) && {} in $s.metadata.labels)",
        lit(key)
    )
}

/// `$s` is a LoadBalancer Service (a token, as the annotations').
pub const IS_LB: &str = "$lb($s)";

/// One token in CEL text: `$ann(obj,'k'...)`, `$key(obj,'k'...)`, `$lb(obj)` or
/// `$def(name,'expr')`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Token {
    /// The value of the first of the keys `obj` carries, or null.
    Annotation { obj: String, keys: Vec<String> },
    /// The first of the keys `obj` carries (the last when none).
    Key { obj: String, keys: Vec<String> },
    /// `obj` is a LoadBalancer Service.
    IsLb { obj: String },
    /// An expression many checks share (e.g. "this provider's rules apply"), named.
    Shared { name: String, expr: String },
}

impl Token {
    /// The CEL it stands for, written out. `obj` may be null (oldObject on CREATE).
    pub fn inline(&self) -> String {
        let present = |obj: &str, k: &str| {
            format!(
                "{obj} != null && has({obj}.metadata.annotations) && {} in {obj}.metadata.annotations",
                lit(k)
            )
        };
        match self {
            Token::Annotation { obj, keys } => {
                let mut out = "null".to_string();
                for k in keys.iter().rev() {
                    out = format!(
                        "{} ? {obj}.metadata.annotations[{}] : {out}",
                        present(obj, k),
                        lit(k)
                    );
                }
                format!("({out})")
            }
            Token::Key { obj, keys } => {
                let mut out = keys.last().map(|k| lit(k)).unwrap_or_default();
                for k in keys.iter().rev().skip(1) {
                    out = format!("{} ? {} : {out}", present(obj, k), lit(k));
                }
                format!("({out})")
            }
            Token::IsLb { obj } => {
                format!(
                    "(has({obj}.spec) && has({obj}.spec.type) && {obj}.spec.type == 'LoadBalancer')"
                )
            }
            Token::Shared { expr, .. } => format!("({})", inline(expr)),
        }
    }
}

/// `expr` as one shared piece of CEL named `name` (an identifier): a policy variable, or
/// written out in place.
pub fn shared(name: &str, expr: &str) -> String {
    format!("$def({name},{})", lit(expr))
}

/// Reads a CEL string literal as `lit` writes it, from the start of `s`: its value and the
/// rest of `s`.
fn read_lit(s: &str) -> Option<(String, &str)> {
    let mut chars = s.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

/// Reads the token at the start of `s` (just after its `$`): the token and the rest.
fn read_token(s: &str) -> Option<(Token, &str)> {
    let (kind, rest) = s.split_once('(')?;
    let end = rest.find([',', ')'])?;
    let obj = rest[..end].to_string();
    let mut rest = &rest[end..];
    let mut keys = Vec::new();
    while let Some(r) = rest.strip_prefix(',') {
        let (k, r) = read_lit(r)?;
        keys.push(k);
        rest = r;
    }
    let rest = rest.strip_prefix(')')?;
    let token = match kind {
        "ann" if !keys.is_empty() => Token::Annotation { obj, keys },
        "key" if !keys.is_empty() => Token::Key { obj, keys },
        "lb" if keys.is_empty() => Token::IsLb { obj },
        "def" if keys.len() == 1 => Token::Shared {
            name: obj,
            expr: keys.remove(0),
        },
        _ => return None,
    };
    Some((token, rest))
}

/// Replaces every token in `expr` with what `f` makes of it. String literals are copied as
/// they are (a `$` in a message is text).
pub fn map_tokens(expr: &str, mut f: impl FnMut(&Token) -> String) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(i) = rest.find(['$', '\'', '"']) {
        out.push_str(&rest[..i]);
        let at = &rest[i..];
        let quote = at.chars().next().unwrap_or('$');
        if quote != '$' {
            // Copy the literal through its closing quote.
            let mut end = at.len();
            let mut escaped = false;
            for (j, c) in at.char_indices().skip(1) {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    c if c == quote => {
                        end = j + 1;
                        break;
                    }
                    _ => {}
                }
            }
            out.push_str(&at[..end]);
            rest = &at[end..];
            continue;
        }
        match read_token(&at[1..]) {
            Some((t, r)) => {
                out.push_str(&f(&t));
                rest = r;
            }
            None => {
                out.push('$');
                rest = &at[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `expr` with every token written out: CEL where no policy variables are at hand (match
/// conditions, the mutating policy).
pub fn inline(expr: &str) -> String {
    map_tokens(expr, Token::inline)
}

/// The port numbers of `s`'s `spec.ports`, in order (a finding that lists them is the same
/// on two objects when these are).
pub fn service_ports(s: &str) -> String {
    format!("(has({s}.spec.ports) ? {s}.spec.ports.map(p, p.port) : [])")
}

/// When a finding of a `<value>:<port>` list check is one the live object already had, so the
/// engine's update ratchet keeps it; each is CEL inside `entries.exists(e, ...)`.
pub struct ListKept {
    /// The live object has entry `e` too (a finding about the entry alone).
    pub entry: String,
    /// ... and the same Service ports (a finding that names them).
    pub ports: String,
    /// A finding about `e`'s port being listed twice.
    pub dup: String,
}

impl ListKept {
    /// `ratchet`: the rule's update ratchet (`None`: no ratchet, nothing is kept); an entry
    /// is kept only where it applies and the live object has annotation `key`. `old_dup`: the
    /// live object lists `e`'s port twice too.
    pub fn new(ratchet: Option<&str>, key: &str, old_entries: &str, old_dup: String) -> Self {
        let Some(ratchet) = ratchet else {
            return Self {
                entry: "false".into(),
                ports: "false".into(),
                dup: "false".into(),
            };
        };
        let old = format!("({ratchet} && {})", on(&has_annotation(key), "oldObject"));
        let had = format!("{old_entries}.exists(o, o.trim() == e.trim())");
        Self {
            entry: format!("({old} && {had})"),
            ports: format!(
                "({old} && {had} && {} == {})",
                service_ports("oldObject"),
                service_ports("object")
            ),
            dup: format!("({old} && {old_dup})"),
        }
    }
}

/// Puts `object` or `oldObject` in place of `$s`.
pub fn on(expr: &str, var: &str) -> String {
    expr.replace("$s", var)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        assert_eq!(lit(r"a'b\c"), r"'a\'b\\c'");
        assert_eq!(list(&["on", "off"]), "['on', 'off']");
        for s in ["plain", r"a'b\c", "line\nbreak", ""] {
            assert_eq!(
                read_lit(&format!("{} rest", lit(s))),
                Some((s.to_string(), " rest"))
            );
        }
    }

    #[test]
    fn tokens_are_written_out_and_literals_left_alone() {
        let e = on(
            &format!(
                "{} && {} == 'a$ann(x)' && {}",
                has_annotation("k'1"),
                annotation("k2"),
                IS_LB
            ),
            "oldObject",
        );
        assert_eq!(
            inline(&e),
            "((oldObject != null && has(oldObject.metadata.annotations) && 'k\\'1' in oldObject.metadata.annotations ? oldObject.metadata.annotations['k\\'1'] : null) != null) && (oldObject != null && has(oldObject.metadata.annotations) && 'k2' in oldObject.metadata.annotations ? oldObject.metadata.annotations['k2'] : null) == 'a$ann(x)' && (has(oldObject.spec) && has(oldObject.spec.type) && oldObject.spec.type == 'LoadBalancer')"
        );
        let mut seen = Vec::new();
        map_tokens(&e, |t| {
            seen.push(t.clone());
            String::new()
        });
        assert_eq!(seen.len(), 3, "{seen:?}");
        let two = Token::Key {
            obj: "object".into(),
            keys: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            two.inline(),
            "(object != null && has(object.metadata.annotations) && 'a' in object.metadata.annotations ? 'a' : 'b')"
        );
        let nested = shared(
            "applies",
            &on(&format!("{IS_LB} && x == 'it\\'s'"), "object"),
        );
        assert_eq!(
            inline(&format!("!{nested}")),
            "!((has(object.spec) && has(object.spec.type) && object.spec.type == 'LoadBalancer') && x == 'it\\'s')"
        );
    }
}
