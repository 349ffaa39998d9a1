//! The API rows themselves: every file parses, names known annotations and sources, and
//! every limit holds at its ends and fails one past them.

use super::check;
use super::model::{Call, Param, Source, table};
use crate::providers::catalog;
use crate::vocab::provider::Provider;

fn rows() -> impl Iterator<Item = (Provider, &'static Call, &'static Param)> {
    Provider::ALL
        .into_iter()
        .filter_map(|p| table(p).map(|t| (p, t)))
        .flat_map(|(p, t)| {
            t.calls
                .iter()
                .flat_map(move |c| c.params.iter().map(move |r| (p, c, r)))
        })
}

/// Messages cite a source by its title: a source text longer than this needs one.
const LONG_SOURCE: usize = 160;
/// The longest title.
const TITLE_MAX: usize = 100;

/// Every long source has a short title for messages, and the whole text stays in the data.
#[test]
fn long_sources_have_short_titles() {
    for p in Provider::ALL {
        let Some(t) = table(p) else { continue };
        for (key, s) in &t.sources {
            match s {
                Source::Text(text) => assert!(
                    text.chars().count() <= LONG_SOURCE,
                    "{p} source {key}: {} characters, longer than {LONG_SOURCE}: give it a title ({{title, text}})",
                    text.chars().count()
                ),
                Source::Titled(s) => {
                    let n = s.title.chars().count();
                    assert!(
                        n > 0 && n <= TITLE_MAX,
                        "{p} source {key}: its title has {n} characters (at most {TITLE_MAX})"
                    );
                    assert!(
                        n < s.text.chars().count(),
                        "{p} source {key}: its title is not shorter than its text"
                    );
                }
            }
        }
    }
}

#[test]
fn every_row_names_a_known_annotation_and_source() {
    for p in Provider::ALL {
        let Some(t) = table(p) else { continue };
        let known = |n: &str| catalog(p).table().names().any(|k| k == n);
        for c in &t.calls {
            assert!(
                t.sources.contains_key(&c.source),
                "{p} {}: source {}",
                c.call,
                c.source
            );
            let conds = c.when.iter().chain(
                c.together
                    .iter()
                    .flat_map(|t| std::iter::once(&t.when).chain(&t.excludes)),
            );
            for cond in conds {
                assert!(
                    known(&cond.annotation),
                    "{p} {}: {}",
                    c.call,
                    cond.annotation
                );
            }
            for t2 in &c.together {
                for n in &t2.need {
                    let n = n.annotation();
                    assert!(known(n), "{p} {}: needs {n}", c.call);
                }
                if let Some(s) = &t2.source {
                    assert!(t.sources.contains_key(s), "{p} {}: source {s}", c.call);
                }
            }
            for r in &c.params {
                assert!(known(&r.from), "{p} {}.{}: from {}", c.call, r.name, r.from);
                if let Some(s) = &r.source {
                    assert!(
                        t.sources.contains_key(s),
                        "{p} {}.{}: source {s}",
                        c.call,
                        r.name
                    );
                }
                for cond in r.when.iter().chain(r.when_any.iter().flatten()) {
                    assert!(known(&cond.annotation), "{p} {}.{}", c.call, r.name);
                }
                assert!(
                    !r.code.is_empty() || !c.code.is_empty(),
                    "{p} {}.{}: no controller line",
                    c.call,
                    r.name
                );
            }
        }
    }
}

#[test]
fn every_example_passes_its_row() {
    for (p, c, r) in rows() {
        // A row that takes no value (`none`) refuses its example, a value the annotation's
        // other rows take.
        if r.none.is_some() {
            assert!(
                check::value_error(r, &r.example).is_some(),
                "{p} {}.{}",
                c.call,
                r.name
            );
            continue;
        }
        assert_eq!(
            check::value_error(r, &r.example),
            None,
            "{p} {}.{}",
            c.call,
            r.name
        );
    }
}

#[test]
fn every_range_passes_at_its_ends_and_fails_one_past() {
    for (p, c, r) in rows() {
        let Some((min, max)) = r.range else { continue };
        for ok in [min, max] {
            assert_eq!(
                r.item_error(&ok.to_string()),
                None,
                "{p} {}.{} {ok}",
                c.call,
                r.name
            );
        }
        for bad in [min - 1, max + 1] {
            if !r.also_numbers.contains(&bad) {
                assert!(
                    r.item_error(&bad.to_string()).is_some(),
                    "{p} {}.{} {bad}",
                    c.call,
                    r.name
                );
            }
        }
    }
}

#[test]
fn every_enum_value_passes_and_a_near_miss_fails() {
    for (p, c, r) in rows() {
        let Some(values) = &r.values else { continue };
        for v in values {
            assert_eq!(r.item_error(v), None, "{p} {}.{} {v}", c.call, r.name);
            assert!(
                r.item_error(&format!("{v}x")).is_some(),
                "{p} {}.{} {v}x",
                c.call,
                r.name
            );
            let upper = v.to_ascii_uppercase();
            if !r.fold && upper != *v {
                assert!(
                    r.item_error(&upper).is_some(),
                    "{p} {}.{} {upper}",
                    c.call,
                    r.name
                );
            }
        }
    }
}

#[test]
fn every_length_passes_at_its_ends_and_fails_one_past() {
    for (p, c, r) in rows() {
        let Some((min, max)) = r.length else { continue };
        // The example's first character, repeated: the same character set as the example.
        let ch = r.example.chars().last().unwrap();
        let head: String = r.example.chars().take(1).collect();
        let of = |n: usize| match n {
            0 => String::new(),
            n => format!("{head}{}", ch.to_string().repeat(n - 1)),
        };
        if r.values.is_none() {
            assert_eq!(
                r.item_error(&of(max)),
                None,
                "{p} {}.{} {max}",
                c.call,
                r.name
            );
            if min > 1 {
                assert_eq!(
                    r.item_error(&of(min)),
                    None,
                    "{p} {}.{} {min}",
                    c.call,
                    r.name
                );
            }
        }
        assert!(
            r.item_error(&of(max + 1)).is_some(),
            "{p} {}.{} {}",
            c.call,
            r.name,
            max + 1
        );
        if min > 0 {
            assert!(
                r.item_error(&of(min - 1)).is_some(),
                "{p} {}.{} {}",
                c.call,
                r.name,
                min - 1
            );
        }
    }
}

#[test]
fn every_count_fails_one_past() {
    for (p, c, r) in rows() {
        let Some((min, max)) = r.count else { continue };
        let sep = r.split.as_deref().unwrap();
        let items = |n: usize| {
            (0..n)
                .map(|i| {
                    r.example
                        .split(sep)
                        .next()
                        .unwrap()
                        .replace(['a', 'h'], &i.to_string())
                })
                .collect::<Vec<_>>()
                .join(sep)
        };
        assert!(
            check::value_error(r, &items(max + 1)).is_some(),
            "{p} {}.{}",
            c.call,
            r.name
        );
        // No items is an empty value, which the controllers read as absent (never checked).
        if min > 1 {
            assert!(
                check::value_error(r, &items(min - 1)).is_some(),
                "{p} {}.{}",
                c.call,
                r.name
            );
        }
    }
}

/// `onceMax` distinct items pass and one more fails; the same item repeated, or an item of
/// `onceNot`, is not counted.
#[test]
fn every_once_max_fails_one_past() {
    for (p, c, r) in rows() {
        let Some(max) = r.once_max else { continue };
        let sep = r.split.as_deref().unwrap();
        let items = |n: usize| (0..n).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
        let at = items(max).join(sep);
        assert_eq!(
            check::value_error(r, &at),
            None,
            "{p} {}.{}",
            c.call,
            r.name
        );
        let past = items(max + 1).join(sep);
        assert!(
            check::value_error(r, &past).is_some(),
            "{p} {}.{}",
            c.call,
            r.name
        );
        let repeated = format!("{at}{sep}k0=w");
        assert_eq!(
            check::value_error(r, &repeated),
            None,
            "{p} {}.{}",
            c.call,
            r.name
        );
        for n in &r.once_not {
            let own = format!("{at}{sep}{n}=x");
            assert_eq!(
                check::value_error(r, &own),
                None,
                "{p} {}.{} {n}",
                c.call,
                r.name
            );
        }
    }
}

/// A reserved prefix before the example's first item, or a refused substring after it, fails;
/// the item alone passes.
#[test]
fn every_reserved_prefix_and_substring_fails() {
    for (p, c, r) in rows() {
        let base = r.items(&r.example)[0];
        if r.not_prefix.is_empty() && r.not_contains.is_empty() {
            continue;
        }
        assert_eq!(r.item_error(base), None, "{p} {}.{} {base}", c.call, r.name);
        for x in &r.not_prefix {
            let v = format!("{x}{base}");
            assert!(r.item_error(&v).is_some(), "{p} {}.{} {v}", c.call, r.name);
        }
        for x in &r.not_contains {
            let v = format!("{base}{x}");
            assert!(r.item_error(&v).is_some(), "{p} {}.{} {v}", c.call, r.name);
        }
    }
}
