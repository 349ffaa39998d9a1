//! `unknown-annotation`: a key under a provider's prefix that its controller does not read,
//! with the known key it most likely misspells.

use crate::vocab::annotations::{fewest_edits, letter_counts, letters};
use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::{Ctx, Findings};

/// Suggests the known key closest to `key`, if one is close enough to be a typo.
pub(super) fn closest(key: &str, cat: &Catalog) -> Option<String> {
    let lower = key.to_ascii_lowercase();
    // Under the current prefix only the suffixes differ (the prefix is lower case), so the
    // names are compared as they are, without building and lowering each full key.
    let (lower, prefixed) = match lower.strip_prefix(cat.prefix) {
        Some(suffix) if key.starts_with(cat.prefix) => (suffix.to_string(), false),
        _ => (lower, true),
    };
    // A name with more than `TYPO` characters the key lacks (or the other way round) is
    // passed over without computing its distance: most of the table's names are, and most
    // of the rest on counting those characters.
    let mine = letters(&lower);
    let prefix = if prefixed { letters(cat.prefix) } else { 0 };
    let counts = (!prefixed).then(|| letter_counts(&lower));
    // At least one edit per character of difference in length (the table's names are
    // ASCII, so their bytes are their characters): the cheapest test, so the first.
    let chars = lower.chars().count();
    let shared = if prefixed { cat.prefix.len() } else { 0 };
    cat.table()
        .with_letters()
        .filter(|(e, theirs, _)| {
            e.instead.is_none()
                && (shared + e.name.len()).abs_diff(chars) <= TYPO
                && fewest_edits(mine, theirs | prefix) as usize <= TYPO
        })
        .filter_map(|(e, theirs, their_counts)| {
            let name = e.name.as_str();
            if let Some(counts) = &counts
                && fewest_edits_by_count(counts, their_counts, mine | theirs) > TYPO
            {
                return None;
            }
            let d = if prefixed {
                edits_up_to(&lower, &cat.key(name).to_ascii_lowercase(), TYPO)?
            } else if name.bytes().any(|b| b.is_ascii_uppercase()) {
                edits_up_to(&lower, &name.to_ascii_lowercase(), TYPO)?
            } else {
                edits_up_to(&lower, name, TYPO)?
            };
            Some((d, name))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| cat.key(name))
}

/// The fewest edits between two strings with these `letter_counts`, over the classes in
/// `classes` (those either has): an edit removes at most one character and adds at most one,
/// so at least as many edits as either has characters over the other's.
pub(super) fn fewest_edits_by_count(a: &[u8; 64], b: &[u8; 64], classes: u64) -> usize {
    let (mut over, mut under) = (0usize, 0usize);
    let mut bits = classes;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        over += usize::from(a[i].saturating_sub(b[i]));
        under += usize::from(b[i].saturating_sub(a[i]));
    }
    over.max(under)
}

/// The most edits a misspelt key is away from the one meant.
pub(super) const TYPO: usize = 4;

/// The Levenshtein distance of `a` and `b` when it is at most `max`. A shared prefix or
/// suffix changes no distance, and keys share a long one (the provider's prefix), so only
/// what differs is compared: a table of some 200 keys made a misspelt annotation cost
/// several million instructions per admission.
pub(super) fn edits_up_to(a: &str, b: &str, max: usize) -> Option<usize> {
    let pre: usize = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    let (a, b) = (&a[pre..], &b[pre..]);
    let suf: usize = a
        .chars()
        .rev()
        .zip(b.chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    let (a, b) = (&a[..a.len() - suf], &b[..b.len() - suf]);
    // At least one edit per character of difference in length.
    let (na, nb) = (a.chars().count(), b.chars().count());
    if na.abs_diff(nb) > max {
        return None;
    }
    if nb >= ROW {
        return Some(strsim::levenshtein(a, b)).filter(|d| *d <= max);
    }
    // Levenshtein's table a row at a time, on the stack, and in each row only the cells
    // within `max` of the diagonal (a path of at most `max` edits never leaves them; a cell
    // outside counts as over `max`); given up as soon as a whole row is over `max`. The same
    // distances as `strsim::levenshtein` up to `max`, without its allocation or full rows.
    let mut bs = ['\0'; ROW];
    for (slot, c) in bs.iter_mut().zip(b.chars()) {
        *slot = c;
    }
    let over = max + 1;
    let mut row = [0usize; ROW];
    for (j, cell) in row.iter_mut().enumerate().take(nb + 1) {
        *cell = j;
    }
    for (i, ca) in (1usize..).zip(a.chars()) {
        let lo = i.saturating_sub(max).max(1);
        let hi = (i + max).min(nb);
        // (i, lo - 1): the first column, or outside the band.
        let mut left = if lo == 1 { i } else { over };
        let mut diag = row[lo - 1];
        row[lo - 1] = left;
        let mut least = left;
        for j in lo..=hi {
            let above = if j < i + max { row[j] } else { over };
            let cell = if ca == bs[j - 1] {
                diag
            } else {
                1 + diag.min(above).min(left)
            };
            diag = above;
            row[j] = cell;
            left = cell;
            least = least.min(cell);
        }
        if least > max {
            return None;
        }
    }
    Some(row[nb]).filter(|d| *d <= max)
}

/// Keys whose differing part is this long or longer go to `strsim::levenshtein`.
const ROW: usize = 64;

pub(super) fn unknown_annotation(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(anns) = ctx.new.and_then(|s| s.annotations()) else {
        return;
    };
    let extra = ctx.config.known_annotations.get(&cat.provider);
    for key in anns.keys().filter(|k| cat.claims_key(k)) {
        let known = cat.prefixes().any(|p| {
            key.strip_prefix(p)
                .is_some_and(|s| cat.knows(s) || extra.is_some_and(|e| e.iter().any(|x| x == s)))
        });
        if known {
            continue;
        }
        let instead = cat.prefixes().find_map(|p| {
            let e = cat.table().get(key.strip_prefix(p)?)?;
            Some(format!("{p}{}", e.instead.as_deref()?))
        });
        if let Some(real) = instead {
            out.push(
                annotation_field(key),
                format!("{key} is documented but the {} cloud controller reads {real} instead, so it has no effect; rename it to {real}", cat.provider),
            );
            continue;
        }
        let mut message = format!(
            "{key} is not an annotation the {} cloud controller reads, so it has no effect",
            cat.provider
        );
        match closest(key, cat) {
            Some(k) => message.extend(["; did you mean \"", &k, "\"?"]),
            None => message.push_str("; annotation names are case sensitive, check the spelling in the provider's documentation (or list it under knownAnnotations in the config)"),
        }
        out.push(annotation_field(key), message);
    }
}
