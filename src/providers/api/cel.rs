//! The CEL of `check` (`lbguard export-vap`): the same rows, the same reading of the
//! listener protocols, the same conditions.

use super::model::{Call, Cond, Need, Param, Side, Together};
use crate::vocab::catalog::{Catalog, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::rule::CelCheck;

/// The annotation is present and not empty: its value is sent and held to the row.
fn present(cat: &Catalog, name: &str) -> String {
    let a = catalog_annotation(cat, name);
    format!("({} && {} != '')", a.present, a.value)
}

/// The annotation is set: present and not empty (with the table's `blankUnset`: not only
/// white space).
fn set(cat: &Catalog, name: &str) -> String {
    let a = catalog_annotation(cat, name);
    let blank = super::model::table(cat.provider).is_some_and(|t| t.blank_unset);
    let trim = if blank { ".trim()" } else { "" };
    format!("({} && {}{trim} != '')", a.present, a.value)
}

fn lower_list(items: &[String]) -> String {
    let l: Vec<String> = items.iter().map(|v| v.to_ascii_lowercase()).collect();
    let l: Vec<&str> = l.iter().map(String::as_str).collect();
    cel::list(&l)
}

fn str_list(items: &[String]) -> String {
    let l: Vec<&str> = items.iter().map(String::as_str).collect();
    cel::list(&l)
}

fn holds(cat: &Catalog, c: &Cond) -> String {
    let a = catalog_annotation(cat, &c.annotation);
    if !c.entry.is_empty() {
        // check's `protocol_entries`: split on ',', the protocol before the first ':', the
        // port after it a whole number (at most 10 digits, an i32 when 1-65535).
        let proto = "e.trim().substring(0, e.trim().indexOf(':')).trim()";
        let port_s = "e.trim().substring(e.trim().indexOf(':') + 1).trim()";
        let port = c.port.map_or(String::new(), |n| {
            format!(" && {port_s}.matches('^[+-]?[0-9]{{1,10}}$') && int({port_s}) == {n}")
        });
        return format!(
            "({} && {}.split(',').exists(e, e.trim().indexOf(':') >= 0 && {proto} in {}{port}))",
            set(cat, &c.annotation),
            a.value,
            str_list(&c.entry)
        );
    }
    if let Some(on) = c.exists {
        return format!("{}{}", if on { "" } else { "!" }, a.present);
    }
    let (present, a) = if c.trim {
        let value = format!("{}.trim()", a.value);
        (
            format!("({} && {value} != '')", a.present),
            crate::vocab::catalog::Annotation { value, ..a },
        )
    } else {
        (set(cat, &c.annotation), a)
    };
    if !c.not_in.is_empty() {
        return if c.fold {
            format!(
                "!({present} && {}.lowerAscii() in {})",
                a.value,
                lower_list(&c.not_in)
            )
        } else {
            format!("!({present} && {} in {})", a.value, str_list(&c.not_in))
        };
    }
    if c.present == Some(false) {
        return format!("!{present}");
    }
    if c.one_of.is_empty() {
        return present;
    }
    let inside = if c.fold {
        format!("{}.lowerAscii() in {}", a.value, lower_list(&c.one_of))
    } else {
        format!("{} in {}", a.value, str_list(&c.one_of))
    };
    format!("({present} && {inside})")
}

fn all(cat: &Catalog, conds: &[Cond]) -> String {
    let parts: Vec<String> = conds.iter().map(|c| holds(cat, c)).collect();
    if parts.is_empty() {
        "true".into()
    } else {
        parts.join(" && ")
    }
}

/// One of the lists holds (`whenAny`).
fn any(cat: &Catalog, lists: &[Vec<Cond>]) -> String {
    let parts: Vec<String> = lists.iter().map(|l| format!("({})", all(cat, l))).collect();
    format!("({})", parts.join(" || "))
}

/// The listener protocol (lower case) of Service port `p` (a CEL variable), as
/// `check::listeners` reads `protocol-port`.
pub fn listener_protocol(cat: &Catalog, p: &str) -> String {
    let pp = catalog_annotation(cat, "protocol-port");
    let entries = format!("({} ? {}.split(',') : [])", pp.present, pp.value);
    let names = format!("(size(e.split(':')) >= 2 && e.split(':')[1] == string({p}.port))");
    format!(
        "({entries}.exists(e, {names}) ? {entries}.filter(e, {names})[0].split(':')[0] : (has({p}.protocol) ? {p}.protocol : 'TCP')).lowerAscii()"
    )
}

/// The Service's listeners as `port/protocol` strings (protocol lower case), one policy
/// variable: every row's gate reads them.
pub fn listeners(cat: &Catalog) -> String {
    cel::shared(
        "$s_ack_listeners",
        &format!(
            "$s != null && has($s.spec.ports) ? $s.spec.ports.map(p, string(p.port) + '/' + {}) : []",
            listener_protocol(cat, "p")
        ),
    )
}

/// Some Service port's listener is one of these.
fn has_listener(cat: &Catalog, protocols: &[String]) -> String {
    format!(
        "{}.exists(x, x.split('/')[1] in {})",
        listeners(cat),
        lower_list(protocols)
    )
}

/// The call is made for `$s`, on the side `nlb` says (CEL over `$s`).
fn made(cat: &Catalog, call: &Call, protocols: Option<&Vec<String>>, nlb: &str) -> String {
    let side = match call.controller {
        Some(Side::Nlb) => nlb.to_string(),
        Some(Side::Clb) => format!("!{nlb}"),
        None => "true".into(),
    };
    let gate = protocols
        .or(call.protocols.as_ref())
        .map_or_else(|| "true".into(), |p| has_listener(cat, p));
    format!("({side} && {} && {gate})", all(cat, &call.when))
}

/// The number the controller sends for the string `v` (its Go `int32` with `int32`), as
/// `Param::sent`; guard with `cel::atoi_number(v)`.
fn sent(p: &Param, v: &str) -> String {
    if p.int32 {
        cel::int32(&format!("int({v})"))
    } else {
        format!("int({v})")
    }
}

/// `i` (one item) is refused by the row.
fn item_bad(p: &Param) -> String {
    let mut bad = Vec::new();
    if !p.not.is_empty() {
        bad.push(format!("i in {}", str_list(&p.not)));
    }
    if !p.not_prefix.is_empty() {
        bad.push(format!(
            "{}.exists(p, i.startsWith(p))",
            str_list(&p.not_prefix)
        ));
    }
    if !p.not_contains.is_empty() {
        bad.push(format!(
            "{}.exists(c, i.contains(c))",
            str_list(&p.not_contains)
        ));
    }
    if let Some((min, max)) = p.length {
        bad.push(format!("size(i) < {min} || size(i) > {max}"));
    }
    if let Some((min, max)) = p.range {
        let also: Vec<String> = p.also_numbers.iter().map(i64::to_string).collect();
        let n = sent(p, "i");
        bad.push(format!(
            "!({} && (({n} >= {min} && {n} <= {max}) || {n} in [{}]))",
            cel::atoi_number("i"),
            also.join(", ")
        ));
    } else {
        let mut ok = Vec::new();
        if let Some(vs) = &p.values {
            ok.push(if p.fold {
                format!("i.lowerAscii() in {}", lower_list(vs))
            } else {
                format!("i in {}", str_list(vs))
            });
        }
        if let Some(pat) = &p.pattern {
            ok.push(format!("i.matches({})", cel::lit(&format!("^(?:{pat})$"))));
        }
        if !ok.is_empty() {
            bad.push(format!("!({})", ok.join(" || ")));
        }
    }
    if bad.is_empty() {
        "false".into()
    } else {
        format!("({})", bad.join(" || "))
    }
}

/// The value of `from` is refused by the row (as `check::value_error`).
fn value_bad(cat: &Catalog, p: &Param) -> String {
    let value = catalog_annotation(cat, &p.from).value;
    if p.none.is_some() {
        // As `vocab::annotations::parse_int`.
        return format!("{value}.matches('^-?[0-9]{{1,18}}$')");
    }
    let Some(sep) = &p.split else {
        return format!("[{value}].exists(i, {})", item_bad(p));
    };
    let mut items = format!("{value}.split({})", cel::lit(sep));
    if p.trim {
        items = format!("{items}.map(i, i.trim())");
    }
    if let Some((s, _)) = p.part.as_ref().filter(|_| p.skip_empty_key) {
        items = format!(
            "{items}.filter(i, i != '' && !i.startsWith({s}))",
            s = cel::lit(s)
        );
    }
    if let Some((s, n)) = &p.part {
        items = format!(
            "{items}.map(i, size(i.split({s})) > {n} ? i.split({s})[{n}] : '')",
            s = cel::lit(s)
        );
    }
    let mut bad = vec![format!("{items}.exists(i, {})", item_bad(p))];
    if let Some((min, max)) = p.count {
        bad.push(format!("size({items}) < {min} || size({items}) > {max}"));
    }
    if p.distinct {
        bad.push(format!(
            "{items}.exists(i, size({items}.filter(j, j == i)) > 1)"
        ));
    }
    if let Some(max) = p.once_max {
        bad.push(format!(
            "size({items}.filter(i, size({items}.filter(j, j == i)) == 1 && !(i in {}))) > {max}",
            str_list(&p.once_not)
        ));
    }
    format!("({})", bad.join(" || "))
}

/// The message of a row's limit, as `check`'s: a number the controller sends as 0 it does not
/// send at all (`zeroUnsent`), so that one is refused as a typo, not as the API's.
fn limit_message(rule: &str, p: &Param, key: &str, value: &str) -> String {
    if let Some(why) = &p.none {
        return format!(
            "'[{rule}] ' + {key} + ' is \"' + {value} + '\": the controller sends it as {}, and {}'",
            p.name,
            esc(why)
        );
    }
    let refused = format!(
        "'[{rule}] ' + {key} + ' is \"' + {value} + '\": the cloud\\'s API refuses it as {} (allowed: {}); write e.g. \"{}\"'",
        p.name,
        esc(&p.allowed()),
        esc(&p.example)
    );
    if !p.zero_unsent {
        return refused;
    }
    let typo = format!(
        "'[{rule}] ' + {key} + ' is \"' + {value} + '\": the controller sends no {} for 0, so the cloud keeps what it has and the value does nothing; it is refused as a typo: write e.g. \"{}\", or remove the annotation'",
        p.name,
        esc(&p.example)
    );
    format!(
        "({} && {} == 0 ? {typo} : {refused})",
        cel::atoi_number(value),
        sent(p, value)
    )
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\'', "\\'")
        .replace('"', "\\\"")
}

/// Who refuses a `together` row's combination, for its messages.
fn refuser(t: &Together) -> String {
    esc(t.by.as_deref().unwrap_or("the cloud's API"))
}

/// A `together` row's check: the call is made (`made`), the row's condition holds and so does
/// `broken` (a needed annotation unset, an excluded one set); `message` and `witness` are CEL.
fn together(
    cat: &Catalog,
    made: &str,
    t: &Together,
    broken: &str,
    message: String,
    witness: String,
) -> CelCheck {
    CelCheck::new(
        format!("{made} && {} && {broken}", holds(cat, &t.when)),
        message,
    )
    .same_when(witness)
}

/// The message of a `together` row whose condition holds without `what` (one annotation's
/// key, or `any`'s keys joined by "or"; escaped for a CEL string), as `check`'s.
fn needs(cat: &Catalog, t: &Together, what: &str) -> String {
    let a = catalog_annotation(cat, &t.when.annotation);
    format!(
        "'[dependent-annotations] ' + {} + ': \"' + {} + '\" needs {what}: {} refuses it without {}'",
        a.key,
        a.value,
        refuser(t),
        esc(&t.params)
    )
}

/// `if` and `x` hold together (`excludes`), as `check`'s message: a value only where the
/// condition names values, and the same values as the update ratchet's witness.
fn excludes(cat: &Catalog, made: &str, t: &Together, x: &Cond) -> CelCheck {
    let named = |c: &Cond| {
        let a = catalog_annotation(cat, &c.annotation);
        if !c.entry.is_empty() {
            format!("{} + ' with {}'", a.key, esc(&c.entry_words()))
        } else if c.one_of.is_empty() {
            a.key
        } else {
            format!("{} + ': \"' + {} + '\"'", a.key, a.value)
        }
    };
    let values: Vec<String> = [&t.when, x]
        .into_iter()
        .filter(|c| !c.one_of.is_empty())
        .map(|c| catalog_annotation(cat, &c.annotation).value)
        .collect();
    let witness = std::iter::once(cel::lit(&format!(
        "{}/excludes/{}",
        t.when.annotation, x.annotation
    )))
    .chain(values)
    .collect::<Vec<_>>()
    .join(" + '/' + ");
    together(
        cat,
        made,
        t,
        &holds(cat, x),
        format!(
            "'[dependent-annotations] ' + {} + ' cannot go with ' + {} + ': {} refuses them together ({})'",
            named(&t.when),
            named(x),
            refuser(t),
            esc(&t.params)
        ),
        witness,
    )
}

/// The checks of one `together` row of a call made when `made` holds.
fn together_checks(cat: &Catalog, made: &str, t: &Together) -> Vec<CelCheck> {
    let mut out: Vec<CelCheck> = t
        .excludes
        .iter()
        .map(|x| excludes(cat, made, t, x))
        .collect();
    let a = catalog_annotation(cat, &t.when.annotation);
    // A need: the annotation set, or its condition holding; and its words (`Need::words`).
    let met = |n: &Need| match n {
        Need::Set(n) => set(cat, n),
        Need::Holds(c) => holds(cat, c),
    };
    let words = |n: &Need| n.words(cat);
    if t.any && !t.need.is_empty() {
        let none: Vec<String> = t.need.iter().map(|n| format!("!{}", met(n))).collect();
        let names: Vec<String> = t.need.iter().map(words).collect();
        out.push(together(
            cat,
            made,
            t,
            &none.join(" && "),
            needs(cat, t, &esc(&names.join(" or "))),
            format!("{} + '=' + {} + '/any'", a.key, a.value),
        ));
    } else {
        out.extend(t.need.iter().map(|n| {
            together(
                cat,
                made,
                t,
                &format!("!{}", met(n)),
                needs(cat, t, &esc(&words(n))),
                format!(
                    "{} + '=' + {} + '/' + {}",
                    a.key,
                    a.value,
                    cel::lit(n.annotation())
                ),
            )
        }));
    }
    out
}

/// `check::named_nlb` in CEL: none when the table has no `nlbWhen`.
pub fn named_nlb(cat: &Catalog, table: &super::ApiTable) -> Option<String> {
    let w = table.nlb_when.as_ref()?;
    let a = catalog_annotation(cat, &w.annotation);
    Some(format!(
        "({} && {}.startsWith({}))",
        a.present,
        a.value,
        cel::lit(&w.prefix)
    ))
}

/// One limit check: (violation and zeroUnsent, the calls it is made in, message, witness).
type Limit = ((String, bool), Vec<String>, String, String);

/// The checks of the rows `rule` owns (`dependent-annotations`, or the provider's value rule:
/// `annotation-format` on ACK, `annotation-value-format` elsewhere), for a provider whose NLB
/// test is `nlb` (or the table's `nlbWhen`).
pub fn checks(cat: &Catalog, nlb: &str, rule: &str) -> Vec<CelCheck> {
    let Some(table) = super::model::table(cat.provider) else {
        return Vec::new();
    };
    let nlb = match named_nlb(cat, table) {
        Some(named) => format!("({nlb} || {named})"),
        None => nlb.to_string(),
    };
    let nlb = nlb.as_str();
    let mut out = Vec::new();
    let mut limits: Vec<Limit> = Vec::new();
    for call in &table.calls {
        // A JSON field, or a row another rule owns (huawei-autocreate-valid): not this
        // export's (Kubernetes CEL has no JSON parser; those rules are webhook-only).
        if call
            .when
            .iter()
            .chain(
                call.together
                    .iter()
                    .flat_map(|t| std::iter::once(&t.when).chain(&t.excludes)),
            )
            .any(|c| c.field.is_some())
        {
            continue;
        }
        for p in &call.params {
            if p.field.is_some()
                || p.when
                    .iter()
                    .chain(p.when_any.iter().flatten())
                    .any(|c| c.field.is_some())
                || p.rule.as_ref().is_some_and(|r| r != rule)
            {
                continue;
            }
            let mut made = format!(
                "{} && {}",
                made(cat, call, p.protocols.as_ref(), nlb),
                all(cat, &p.when)
            );
            if !p.when_any.is_empty() {
                made = format!("{made} && {}", any(cat, &p.when_any));
            }
            let a = catalog_annotation(cat, &p.from);
            match rule {
                "dependent-annotations" if p.required => out.push(
                    CelCheck::new(
                        format!("{made} && !{}", set(cat, &p.from)),
                        cel::lit(&format!(
                            "[dependent-annotations] {} is not set, but the cloud's API needs {} in {}; set it, e.g. \"{}\"{}",
                            cat.key(&p.from),
                            p.name,
                            call.call,
                            p.example,
                            p.instead.as_ref().map_or(String::new(), |i| format!(
                                ", or set {} instead (then the controller makes no {})",
                                cat.key(i),
                                call.call
                            ))
                        )),
                    )
                    .same_when("'required'"),
                ),
                "dependent-annotations" => {}
                _ => {
                    // Rows with the same limits on the same annotation (one per listener
                    // call) are one check: the policy stays small.
                    let bad = (
                        format!("{} && {}", present(cat, &p.from), value_bad(cat, p)),
                        p.zero_unsent,
                    );
                    match limits.iter_mut().find(|(b, ..)| *b == bad) {
                        Some((_, made_in, ..)) => made_in.push(made),
                        None => limits.push((
                            bad,
                            vec![made],
                            limit_message(rule, p, &a.key, &a.value),
                            format!("{} + '=' + {}", a.key, a.value),
                        )),
                    }
                }
            }
        }
        if rule != "dependent-annotations" {
            continue;
        }
        let made = made(cat, call, None, nlb);
        for t in &call.together {
            out.extend(together_checks(cat, &made, t));
        }
    }
    for ((bad, _), made_in, message, witness) in limits {
        out.push(
            CelCheck::new(format!("({}) && {bad}", made_in.join(" || ")), message)
                .same_when(witness),
        );
    }
    out
}
