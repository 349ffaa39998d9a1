//! `annotation-value-format` on Volcengine, what the API rows cannot say (they hold one
//! annotation each): a CLB listener's health-check response timeout may not exceed its check
//! interval. The two ranges are rows of providers/data/volcengine-api.yaml (HealthCheck.Interval
//! 1-300, HealthCheck.Timeout 1-60). CLB-LISTENER = CLB API 2020-04-01 CreateListener,
//! https://www.volcengine.com/docs/6406/71777 (HealthCheck.Timeout: "响应超时时间需小于等于
//! 检查时间间隔", the response timeout must be at most the check interval); the console's
//! https://docs.byteplus.com/en/docs/clb/Editing-health-check says the same ("The detect interval
//! must be greater than or equal to the established response timeout"). VCCM =
//! volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md:25-26 (the two
//! annotations, sent as HealthCheck.Interval and HealthCheck.Timeout).
//!
//! Held when both annotations are set, as the ranges are (the controller's code is not public,
//! so whether it sends HealthCheck.* with health-check-flag off cannot be read). An annotation
//! left out is not compared: what the controller sends for it (its documented default, 2, or
//! nothing and the listener keeps its own) cannot be read either. Not for an `nlb-` id: the
//! controller then calls the NLB API, whose page read here states no such order.

use super::CATALOG;
use crate::providers::api::{self, table};
use crate::vocab::catalog::catalog_annotation;
use crate::vocab::cel;
use crate::vocab::go::atoi;
use crate::vocab::provider::Provider;
use crate::vocab::rule::CelCheck;
use crate::vocab::service::Svc;

const TIMEOUT: &str = "health-check-connect-timeout";
const INTERVAL: &str = "health-check-interval";

/// The `nlbWhen` of volcengine-api.yaml: an `nlb-` id is the NLB side's.
fn nlb_side(svc: Svc) -> bool {
    table(Provider::Volcengine).is_some_and(|t| api::named_nlb(&CATALOG, svc, t))
}

/// The problems of `value`, annotation `name` (a value that passed the table's format) on
/// `svc`: a timeout above the interval.
pub fn value_pairs(name: &str, value: &str, svc: Svc) -> Vec<String> {
    if name != TIMEOUT || nlb_side(svc) {
        return Vec::new();
    }
    let Some(interval) = CATALOG.get(svc, INTERVAL) else {
        return Vec::new();
    };
    let (Ok(t), Ok(i)) = (atoi(value), atoi(interval.value)) else {
        return Vec::new();
    };
    if t <= i {
        return Vec::new();
    }
    vec![format!(
        "{t} is above {} ({i}): the CLB API refuses a HealthCheck.Timeout above HealthCheck.Interval in CreateListener/ModifyListenerAttributes (\"响应超时时间需小于等于检查时间间隔\", https://www.volcengine.com/docs/6406/71777); lower the timeout to at most {i}, or raise the interval to at least {t}",
        interval.key
    )]
}

/// The CEL of `value_pairs`.
pub fn value_pairs_cel() -> Vec<CelCheck> {
    let (t, i) = (
        catalog_annotation(&CATALOG, TIMEOUT),
        catalog_annotation(&CATALOG, INTERVAL),
    );
    let nlb = table(Provider::Volcengine)
        .and_then(|tb| api::cel::named_nlb(&CATALOG, tb))
        .unwrap_or_else(|| "false".into());
    vec![
        CelCheck::new(
            format!(
                "{} && {} && !{nlb} && {} && {} && int({}) > int({})",
                t.present,
                i.present,
                cel::atoi_number(&t.value),
                cel::atoi_number(&i.value),
                t.value,
                i.value
            ),
            format!(
                "'[annotation-value-format] ' + {} + ': ' + string(int({})) + ' is above ' + {} + ' (' + string(int({})) + '): the CLB API refuses a HealthCheck.Timeout above HealthCheck.Interval in CreateListener/ModifyListenerAttributes (https://www.volcengine.com/docs/6406/71777); lower the timeout, or raise the interval'",
                t.key, t.value, i.key, i.value
            ),
        )
        .same_when(format!("{} + '/' + {}", t.value, i.value)),
    ]
}

#[cfg(test)]
#[path = "volcengine_health_tests.rs"]
mod tests;
