//! Following a list's pages: every page up to a bound, a repeated token caught. A list that
//! cannot be read to its end is "incomplete", never a silent cut: the rules that need it
//! then answer under `inventory.cloud.onError`.

use std::collections::HashSet;

use super::outcome::CloudError;

/// Pages read at most (100 listeners each on every cloud: far past any listener quota).
pub(crate) const MAX_PAGES: usize = 50;

/// The state of one paged read.
#[derive(Debug)]
pub(crate) struct Pager {
    what: String,
    pages: usize,
    max: usize,
    seen: HashSet<String>,
}

impl Pager {
    /// `what` names the list in messages ("listeners of lb-1").
    pub fn new(what: impl Into<String>) -> Self {
        Self::bounded(what, MAX_PAGES)
    }

    pub fn bounded(what: impl Into<String>, max: usize) -> Self {
        Self {
            what: what.into(),
            pages: 0,
            max,
            seen: HashSet::new(),
        }
    }

    /// After a page: the token of the next one (`None`: the list is read to its end), or
    /// why the list cannot be read completely.
    pub fn next(&mut self, token: &str) -> Result<Option<String>, CloudError> {
        self.pages += 1;
        if token.is_empty() {
            return Ok(None);
        }
        if !self.seen.insert(token.to_string()) {
            return Err(self.incomplete(&format!("the API gave the page token \"{token}\" twice")));
        }
        if self.pages >= self.max {
            return Err(self.incomplete(&format!("more than {} pages", self.max)));
        }
        Ok(Some(token.to_string()))
    }

    /// A page answered "not found" after the first: the list cannot be trusted.
    pub fn vanished(&self) -> CloudError {
        self.incomplete("a page answered \"not found\"")
    }

    /// The most pages this read may take.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Why this list cannot be read completely.
    pub fn incomplete(&self, why: &str) -> CloudError {
        CloudError::Incomplete(format!("could not read all {}: {why}", self.what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_up_to_the_bound() {
        let mut p = Pager::bounded("listeners of lb-1", 3);
        assert_eq!(p.next("a").unwrap().as_deref(), Some("a"));
        assert_eq!(p.next("b").unwrap().as_deref(), Some("b"));
        let e = p.next("c").unwrap_err().to_string();
        assert_eq!(e, "could not read all listeners of lb-1: more than 3 pages");
        let mut p = Pager::new("x");
        assert_eq!(p.next("").unwrap(), None);
    }

    #[test]
    fn a_repeated_token_is_incomplete() {
        let mut p = Pager::new("listeners of lb-1");
        assert!(p.next("t").unwrap().is_some());
        let e = p.next("t").unwrap_err();
        assert_eq!(e.label(), "incomplete");
        assert!(e.to_string().contains("\"t\" twice"), "{e}");
    }
}
