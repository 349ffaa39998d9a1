//! The engine's own request type: what every front end turns its input into.

use k8s_openapi::api::core::v1::Service;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Input {
    pub operation: Operation,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub object: Option<Service>,
    pub old_object: Option<Service>,
    pub user: UserInfo,
    pub dry_run: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{which} is not a valid Service: {source}")]
    NotAService {
        which: &'static str,
        source: serde_json::Error,
    },
    #[error("{operation} request carries no {which}")]
    Missing {
        operation: &'static str,
        which: &'static str,
    },
}

/// Parses an object as a Service; `null` counts as absent.
pub fn service_from_value(
    value: Option<serde_json::Value>,
    which: &'static str,
) -> Result<Option<Service>, InputError> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(|source| InputError::NotAService { which, source }),
    }
}

impl Input {
    /// Builds an input, checking that each operation carries the objects it needs.
    pub fn new(
        operation: Operation,
        object: Option<Service>,
        old_object: Option<Service>,
        user: UserInfo,
    ) -> Result<Self, InputError> {
        let need_new = matches!(operation, Operation::Create | Operation::Update);
        if need_new && object.is_none() {
            return Err(InputError::Missing {
                operation: operation.as_str(),
                which: "object",
            });
        }
        if matches!(operation, Operation::Update | Operation::Delete) && old_object.is_none() {
            return Err(InputError::Missing {
                operation: operation.as_str(),
                which: "oldObject",
            });
        }
        let meta = object.as_ref().or(old_object.as_ref()).map(|s| &s.metadata);
        Ok(Self {
            operation,
            namespace: meta
                .and_then(|m| m.namespace.clone())
                .unwrap_or_else(|| "default".into()),
            name: meta.and_then(|m| m.name.clone()).unwrap_or_default(),
            uid: String::new(),
            object,
            old_object,
            user,
            dry_run: false,
        })
    }
}
