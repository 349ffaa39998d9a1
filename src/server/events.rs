//! Kubernetes Events for audit findings, so `kubectl describe service` shows them.

use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use super::state::App;

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

/// The Event's name for one expiry: the same on every replica, so the API server keeps one
/// and a second replica's create is refused as already there. Within the 253 characters a
/// name may have.
pub fn expired_event_name(exception: &str, expires: std::time::SystemTime) -> String {
    let secs = expires
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let suffix = format!(".expired-{secs:x}");
    let mut head = exception.to_string();
    let room = 253 - suffix.len();
    if head.len() > room {
        head.truncate(room);
        while head.ends_with(['.', '-']) {
            head.pop();
        }
    }
    head + &suffix
}

/// Records one Event on each exception that expired since the last round; `announced`
/// remembers which (namespace/name@expiry), only for exceptions that still exist.
pub async fn exceptions_expired(
    client: &kube::Client,
    all: &[crate::engine::exceptions::Exception],
    announced: &mut std::collections::HashSet<String>,
) {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
    use kube::api::{Api, PostParams};

    use crate::vocab::exceptions::{GROUP, KIND, VERSION};
    let now = std::time::SystemTime::now();
    let key = |e: &crate::engine::exceptions::Exception| format!("{}@{}", e.key(), e.spec.expires);
    let present: std::collections::HashSet<String> = all.iter().map(key).collect();
    announced.retain(|k| present.contains(k));
    let instance = std::env::var("POD_NAME").unwrap_or_else(|_| "lbguard".into());
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
        let Some(expires) = e.expires() else {
            continue;
        };
        let event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(expired_event_name(&e.name, expires)),
                namespace: Some(e.namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            type_: Some("Warning".into()),
            reason: Some("ExceptionExpired".into()),
            action: Some("Audit".into()),
            note: Some(short(format!(
                "{KIND} {} expired at {}: its Services are checked again for {}",
                e.key(),
                e.spec.expires,
                e.spec.rules.join(", ")
            ))),
            regarding: Some(ObjectReference {
                api_version: Some(format!("{GROUP}/{VERSION}")),
                kind: Some(KIND.into()),
                namespace: Some(e.namespace.clone()),
                name: Some(e.name.clone()),
                ..Default::default()
            }),
            reporting_controller: Some("lbguard".into()),
            reporting_instance: Some(instance.clone()),
            ..Default::default()
        };
        let events: Api<K8sEvent> = Api::namespaced(client.clone(), &e.namespace);
        match events.create(&PostParams::default(), &event).await {
            Ok(_) => {
                announced.insert(key(e));
            }
            // Another replica recorded this expiry first.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                announced.insert(key(e));
            }
            Err(err) => {
                tracing::warn!(error = %err, exception = %e.key(), "cannot record the expiry Event; retrying next round")
            }
        }
    }
}

/// The Event's name for one exception ignored for one set of reasons: the same on every
/// replica (one Event however many run), a new one when the reasons change.
pub fn ignored_event_name(exception: &str, reasons: &[String]) -> String {
    // FNV-1a: stable across processes and versions, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in reasons.join("\n").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let suffix = format!(".ignored-{h:016x}");
    let mut head = exception.to_string();
    let room = 253 - suffix.len();
    if head.len() > room {
        head.truncate(room);
        while head.ends_with(['.', '-']) {
            head.pop();
        }
    }
    head + &suffix
}

/// Logs each exception the config does not honour once, naming why, and (with a client:
/// `exceptions.events`) records one Warning Event (`ExceptionIgnored`) on it; `announced`
/// remembers which (namespace/name and the Event's name), only for exceptions still ignored.
pub async fn exceptions_ignored(
    client: Option<&kube::Client>,
    ignored: &[crate::cluster::audit::Ignored],
    announced: &mut std::collections::HashSet<String>,
) {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
    use kube::api::{Api, PostParams};

    use crate::vocab::exceptions::{GROUP, KIND, VERSION};
    fn key(i: &crate::cluster::audit::Ignored) -> String {
        format!(
            "{}/{}@{}",
            i.namespace,
            i.name,
            ignored_event_name(&i.name, &i.reasons)
        )
    }
    let present: std::collections::HashSet<String> = ignored.iter().map(key).collect();
    announced.retain(|k| present.contains(k));
    let instance = std::env::var("POD_NAME").unwrap_or_else(|_| "lbguard".into());
    let due: Vec<_> = ignored
        .iter()
        .filter(|i| !announced.contains(&key(i)))
        .take(MAX_EVENTS_PER_ROUND)
        .collect();
    for i in due {
        let why = i.reasons.join("; ");
        tracing::warn!(namespace = %i.namespace, name = %i.name, reasons = %why, "LBGuardException covers nothing: the config does not honour it");
        let Some(client) = client else {
            announced.insert(key(i));
            continue;
        };
        let event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(ignored_event_name(&i.name, &i.reasons)),
                namespace: Some(i.namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            type_: Some("Warning".into()),
            reason: Some("ExceptionIgnored".into()),
            action: Some("Audit".into()),
            note: Some(short(format!(
                "{KIND} {}/{} covers nothing: {why}; fix it or delete it",
                i.namespace, i.name
            ))),
            regarding: Some(ObjectReference {
                api_version: Some(format!("{GROUP}/{VERSION}")),
                kind: Some(KIND.into()),
                namespace: Some(i.namespace.clone()),
                name: Some(i.name.clone()),
                ..Default::default()
            }),
            reporting_controller: Some("lbguard".into()),
            reporting_instance: Some(instance.clone()),
            ..Default::default()
        };
        let events: Api<K8sEvent> = Api::namespaced(client.clone(), &i.namespace);
        match events.create(&PostParams::default(), &event).await {
            // 409: another replica recorded it first.
            Ok(_) => {
                announced.insert(key(i));
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                announced.insert(key(i));
            }
            Err(err) => {
                tracing::warn!(error = %err, namespace = %i.namespace, name = %i.name, "cannot record the ExceptionIgnored Event; retrying next round")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn an_ignored_exception_s_event_name_follows_its_reasons() {
        let why = vec!["spec.rules[0]: \"x\" cannot be exempted".to_string()];
        let a = ignored_event_name("shop-x", &why);
        assert_eq!(a, ignored_event_name("shop-x", &why));
        assert!(
            a.starts_with("shop-x.ignored-") && a.len() == "shop-x.ignored-".len() + 16,
            "{a}"
        );
        assert_ne!(a, ignored_event_name("shop-x", &["other".to_string()]));
        let long = ignored_event_name(&"a".repeat(253), &why);
        assert!(long.len() <= 253, "{}", long.len());
    }

    #[test]
    fn an_expiry_s_event_name_is_the_same_everywhere_and_a_valid_name() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_860_800);
        assert_eq!(expired_event_name("short", t), "short.expired-6b19eb80");
        assert_eq!(
            expired_event_name("short", t),
            expired_event_name("short", t)
        );
        assert_ne!(
            expired_event_name("short", t),
            expired_event_name("short", t + Duration::from_secs(1)),
            "a renewed exception's next expiry gets its own Event"
        );
        // The longest name an object may have, ending where the cut would leave a dash.
        let long = format!("{}-{}", "a".repeat(235), "b".repeat(17));
        let name = expired_event_name(&long, t);
        assert!(name.len() <= 253, "{}", name.len());
        assert!(name.ends_with(".expired-6b19eb80"), "{name}");
        assert_eq!(
            name,
            format!("{}.expired-6b19eb80", "a".repeat(235)),
            "no dash before the dot"
        );
    }
}
