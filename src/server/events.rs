//! Kubernetes Events for audit findings, so `kubectl describe service` shows them.

use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::App;

/// The API rejects notes over 1 kB: cut at a character boundary.
fn short(mut note: String) -> String {
    if note.len() > 1000 {
        let mut cut = 997;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
        note.push_str("...");
    }
    note
}

/// At most this many Events per audit round, so a bad cluster does not flood the API.
pub const MAX_EVENTS_PER_ROUND: usize = 100;

pub async fn publish(client: &kube::Client, app: &App, offending: &[Service]) {
    let reporter = Reporter {
        controller: "lbguard".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let report = app.report.load();
    for svc in offending.iter().take(MAX_EVENTS_PER_ROUND) {
        let (ns, name) = (
            svc.metadata.namespace.as_deref().unwrap_or("default"),
            svc.metadata.name.as_deref().unwrap_or_default(),
        );
        let Some(found) = report
            .services
            .iter()
            .find(|s| s.namespace == ns && s.name == name)
        else {
            continue;
        };
        let note = short(
            found
                .violations
                .iter()
                .filter(|v| v.exception.is_none())
                .map(|v| v.message.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        );
        let event = Event {
            type_: EventType::Warning,
            reason: "LoadBalancerPolicy".into(),
            note: Some(note),
            action: "Audit".into(),
            secondary: None,
        };
        if let Err(e) = recorder.publish(&event, &svc.object_ref(&())).await {
            tracing::warn!(error = %e, namespace = ns, name, "cannot record audit Event");
        }
    }
}

/// An exception whose time ran out this long ago or less gets its Event; older ones got it
/// before (or lbguard was not running then), so a restart does not repeat them.
pub const EXPIRED_EVENT_WINDOW: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Records one Event on each exception that expired since the last round; `announced`
/// remembers which (namespace/name@expiry), only for exceptions that still exist.
pub async fn exceptions_expired(
    client: &kube::Client,
    all: &[crate::engine::exceptions::Exception],
    announced: &mut std::collections::HashSet<String>,
) {
    use crate::vocab::exceptions::{GROUP, KIND, VERSION};
    let now = std::time::SystemTime::now();
    let key = |e: &crate::engine::exceptions::Exception| format!("{}@{}", e.key(), e.spec.expires);
    let present: std::collections::HashSet<String> = all.iter().map(key).collect();
    announced.retain(|k| present.contains(k));
    let reporter = Reporter {
        controller: "lbguard".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let due = crate::engine::exceptions::expired(all, now)
        .into_iter()
        .filter(|e| {
            e.expires()
                .is_some_and(|t| now.duration_since(t).unwrap_or_default() <= EXPIRED_EVENT_WINDOW)
        })
        .filter(|e| !announced.contains(&key(e)))
        .take(MAX_EVENTS_PER_ROUND)
        .collect::<Vec<_>>();
    for e in due {
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some(format!("{GROUP}/{VERSION}")),
            kind: Some(KIND.into()),
            namespace: Some(e.namespace.clone()),
            name: Some(e.name.clone()),
            ..Default::default()
        };
        let event = Event {
            type_: EventType::Warning,
            reason: "ExceptionExpired".into(),
            note: Some(short(format!(
                "{KIND} {} expired at {}: its Services are checked again for {}",
                e.key(),
                e.spec.expires,
                e.spec.rules.join(", ")
            ))),
            action: "Audit".into(),
            secondary: None,
        };
        match recorder.publish(&event, &reference).await {
            Ok(()) => {
                announced.insert(key(e));
            }
            Err(err) => {
                tracing::warn!(error = %err, exception = %e.key(), "cannot record the expiry Event; retrying next round")
            }
        }
    }
}
