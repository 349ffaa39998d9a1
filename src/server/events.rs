//! Kubernetes Events for audit findings, so `kubectl describe service` shows them.

use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::App;

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
        let mut note: String = found
            .violations
            .iter()
            .map(|v| v.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        // The API rejects notes over 1 kB.
        if note.len() > 1000 {
            let mut cut = 997;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
            note.push_str("...");
        }
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
