//! The providers lbguard knows.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Ctyun,
    Alibaba,
    Huawei,
    Volcengine,
}

impl Provider {
    pub const ALL: [Provider; 4] = [
        Provider::Ctyun,
        Provider::Alibaba,
        Provider::Huawei,
        Provider::Volcengine,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Ctyun => "ctyun",
            Provider::Alibaba => "alibaba",
            Provider::Huawei => "huawei",
            Provider::Volcengine => "volcengine",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Provider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!("unknown provider \"{s}\" (expected ctyun, alibaba, huawei or volcengine)")
            })
    }
}
