//! The inventory one admission sees from the cloud: what it said of each id asked about.
//! Whether the file or the cloud wins is `inventory`'s choice, not this view's.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cloud::base::fact::Fact;
use crate::inventory::Snapshot;
use crate::vocab::ctx::{Inventory, Lookup};
use crate::vocab::lb::LoadBalancer;
use crate::vocab::provider::Provider;

/// Why an id was not asked about: it cannot be one.
pub const INVALID_ID: &str = "not a valid load balancer id";

#[derive(Debug)]
pub struct View {
    pub(crate) provider: Provider,
    pub(crate) region: String,
    /// The file snapshot the ids were filtered with (its ids were not asked about).
    pub(crate) file: Option<Arc<Snapshot>>,
    pub(crate) facts: HashMap<String, Result<Arc<Fact>, String>>,
}

impl View {
    /// What the cloud said of each id it was asked about: the facts, or why there are none.
    pub fn answers(&self) -> Vec<(&str, Result<Option<&LoadBalancer>, &str>)> {
        let mut v: Vec<_> = self
            .facts
            .iter()
            .map(|(id, r)| {
                let r = match r {
                    Ok(f) => match f.as_ref() {
                        Fact::Found(lb) => Ok(Some(lb)),
                        Fact::NotFound => Ok(None),
                        Fact::Invalid => Err(INVALID_ID),
                    },
                    Err(e) => Err(e.as_str()),
                };
                (id.as_str(), r)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// The file snapshot this view was made with.
    pub fn file_arc(&self) -> Option<Arc<Snapshot>> {
        self.file.clone()
    }

    /// A view from fixed facts (tests, `check`).
    pub fn fixed(
        provider: Provider,
        region: &str,
        file: Option<Arc<Snapshot>>,
        facts: HashMap<String, Result<Arc<Fact>, String>>,
    ) -> Self {
        Self {
            provider,
            region: region.into(),
            file,
            facts,
        }
    }
}

impl Inventory for View {
    fn configured(&self) -> bool {
        true
    }

    fn lookup(&self, provider: Provider, id: &str) -> Lookup<'_> {
        if provider != self.provider {
            return Lookup::Unknown;
        }
        match self.facts.get(id) {
            Some(Ok(fact)) => match fact.as_ref() {
                Fact::Found(lb) => Lookup::Found(lb),
                Fact::NotFound => Lookup::NotFound {
                    region: &self.region,
                },
                Fact::Invalid => Lookup::Invalid,
            },
            Some(Err(e)) => Lookup::Unavailable(e),
            None => Lookup::Unknown,
        }
    }
}
