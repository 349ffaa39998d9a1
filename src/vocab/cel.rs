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

/// A CEL list of string literals.
pub fn list(items: &[&str]) -> String {
    let items: Vec<String> = items.iter().map(|s| lit(s)).collect();
    format!("[{}]", items.join(", "))
}

/// `$s` carries annotation `key`.
pub fn has_annotation(key: &str) -> String {
    format!(
        "(has($s.metadata.annotations) && {} in $s.metadata.annotations)",
        lit(key)
    )
}

/// The value of annotation `key` on `$s` (guard with `has_annotation`).
pub fn annotation(key: &str) -> String {
    format!("$s.metadata.annotations[{}]", lit(key))
}

/// `$s`'s label `key` is present.
pub fn has_label(key: &str) -> String {
    format!(
        "(has($s.metadata.labels) && {} in $s.metadata.labels)",
        lit(key)
    )
}

/// `$s` is a LoadBalancer Service.
pub const IS_LB: &str = "(has($s.spec) && has($s.spec.type) && $s.spec.type == 'LoadBalancer')";

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
    /// `old`: the ratchet applies and the live object has the annotation (`None`: no
    /// ratchet, nothing is kept). `old_dup`: the live object lists `e`'s port twice too.
    pub fn new(old: Option<String>, old_entries: &str, old_dup: String) -> Self {
        let Some(old) = old else {
            return Self {
                entry: "false".into(),
                ports: "false".into(),
                dup: "false".into(),
            };
        };
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
    }
}
