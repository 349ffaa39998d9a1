//! The plan: the cloud operations a controller will carry out for one Service, in the
//! controller's order, and what it will leave as it is. Plain data: `plan` computes it, the
//! plan rules turn its destructive and surprising steps into findings, `lbguard plan`
//! prints it.

use serde::Serialize;

use super::provider::Provider;

/// What a step does to the cloud.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// `+`: creates something.
    Create,
    /// `~`: changes something in place.
    Update,
    /// `-`: deletes or detaches something.
    Delete,
    /// `!`: rewrites something another Service (or the user) owns.
    TakeOver,
    /// `!`: stops managing something that keeps running.
    Orphan,
    /// `~`: converts something in place so that what clients use changes (an address).
    Convert,
    /// `#`: makes no call, so the cloud keeps what it has.
    Keep,
    /// `#`: reads a value differently than it is written.
    Misread,
    /// `#`: the controller fails here (the webhook's deny rules say why).
    Fails,
    /// `#`: nothing published says what happens.
    Unknown,
}

impl Action {
    /// The mark `lbguard plan` prints, as `terraform plan` does.
    pub fn symbol(self) -> char {
        match self {
            Action::Create => '+',
            Action::Update | Action::Convert => '~',
            Action::Delete => '-',
            Action::TakeOver | Action::Orphan => '!',
            Action::Keep | Action::Misread | Action::Fails | Action::Unknown => '#',
        }
    }

    /// A step a pipeline should stop for: it destroys, takes over, abandons or converts
    /// something (`lbguard plan` exits 3).
    pub fn destructive(self) -> bool {
        matches!(
            self,
            Action::Delete | Action::TakeOver | Action::Orphan | Action::Convert
        )
    }

    /// A note, not a cloud call.
    pub fn is_note(self) -> bool {
        self.symbol() == '#'
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::TakeOver => "take-over",
            Action::Orphan => "orphan",
            Action::Convert => "convert",
            Action::Keep => "keep",
            Action::Misread => "misread",
            Action::Fails => "fails",
            Action::Unknown => "unknown",
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub action: Action,
    /// What it acts on: "listener 443/TCP", "load balancer lb-x".
    pub subject: String,
    /// Why, and what follows, in one sentence.
    pub detail: String,
    /// The cloud API actions the controller calls for it, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<&'static str>,
    /// The plan rule that warns about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    /// The Service field it comes from (findings and SARIF point there).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
    /// Where the behaviour is written: `repo@commit:path:lines`, or the document.
    pub source: &'static str,
    /// Another Service it touches (namespace/name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
}

impl Step {
    pub fn new(action: Action, subject: impl Into<String>, source: &'static str) -> Self {
        Self {
            action,
            subject: subject.into(),
            detail: String::new(),
            calls: Vec::new(),
            rule: None,
            field: String::new(),
            source,
            peer: None,
        }
    }

    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = d.into();
        self
    }

    pub fn calls(mut self, calls: &[&'static str]) -> Self {
        self.calls = calls.to_vec();
        self
    }

    pub fn rule(mut self, rule: &'static str) -> Self {
        self.rule = Some(rule);
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = field.into();
        self
    }

    pub fn peer(mut self, peer: Option<String>) -> Self {
        self.peer = peer;
        self
    }

    /// The warning a plan rule gives for it, one line: what the controller does to what,
    /// and why.
    pub fn warning(&self) -> String {
        let what = match self.action {
            Action::Delete => format!("the cloud controller deletes {}", self.subject),
            Action::TakeOver => format!("the cloud controller takes over {}", self.subject),
            Action::Orphan => format!("the cloud controller abandons {}", self.subject),
            Action::Convert => format!("the cloud controller converts {}", self.subject),
            _ => self.subject.clone(),
        };
        if self.detail.is_empty() {
            what
        } else {
            format!("{what}: {}", self.detail)
        }
    }
}

/// The steps a controller will take for one Service.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    /// Which controller: "ACK CLB controller", ...
    pub controller: &'static str,
    /// The load balancer: its id, or how the controller finds or makes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<String>,
    pub steps: Vec<Step>,
    /// What the plan assumed (the facts it had or lacked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub basis: Vec<String>,
}

/// How many steps of each kind, for the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub add: usize,
    pub change: usize,
    pub destroy: usize,
    pub take_over: usize,
    pub orphan: usize,
    pub notes: usize,
}

impl Plan {
    pub fn push(&mut self, step: Step) {
        self.steps.push(step);
    }

    /// True when a pipeline should stop for review.
    pub fn destructive(&self) -> bool {
        self.steps.iter().any(|s| s.action.destructive())
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for s in &self.steps {
            match s.action {
                Action::Create => c.add += 1,
                Action::Update | Action::Convert => c.change += 1,
                Action::Delete => c.destroy += 1,
                Action::TakeOver => c.take_over += 1,
                Action::Orphan => c.orphan += 1,
                _ => c.notes += 1,
            }
        }
        c
    }
}
