//! What applies to a request, before any rule: whether it is exempt, whether its Service is
//! lbguard's at all, and which providers' rules apply. `evaluate` and `mutate` both ask.

use crate::providers::catalog;
use crate::vocab::config::{Config, ProviderChoice};
use crate::vocab::ctx::Ctx;
use crate::vocab::input::Input;
use crate::vocab::provider::Provider;

/// The providers whose rules apply to a request: the configured one, or with `auto` each
/// whose annotations, label or finalizers the Service carries; either only when one of its
/// controllers takes the Service.
pub fn providers(ctx: &Ctx) -> Vec<Provider> {
    match ctx.config.provider {
        ProviderChoice::Fixed(p) => vec![p],
        ProviderChoice::Auto => Provider::ALL
            .into_iter()
            .filter(|p| {
                let c = catalog(*p);
                ctx.new.is_some_and(|s| c.detect(s.0)) || ctx.old.is_some_and(|s| c.detect(s.0))
            })
            .collect(),
    }
    .into_iter()
    .filter(|p| ctx.routed_to(*p))
    .collect()
}

/// Why the request's LoadBalancer Service is not lbguard's: no controller of the configured
/// provider (of any provider, under `auto`) takes it. `None` when one does.
pub fn not_ours(ctx: &Ctx) -> Option<String> {
    let candidates: &[Provider] = match &ctx.config.provider {
        ProviderChoice::Fixed(p) => std::slice::from_ref(p),
        ProviderChoice::Auto => &Provider::ALL,
    };
    if candidates.iter().any(|p| ctx.routed_to(*p)) {
        return None;
    }
    let svc = ctx.new.filter(|s| s.is_lb()).or(ctx.old)?;
    let classes = &ctx.config.load_balancer_classes;
    match (&ctx.config.provider, svc.load_balancer_class()) {
        (ProviderChoice::Auto, Some(class)) => Some(format!(
            "spec.loadBalancerClass \"{class}\" is served by no controller of ctyun, alibaba, huawei or volcengine (add it to loadBalancerClasses if it is)"
        )),
        _ => crate::vocab::route::why_not(candidates[0], svc, classes),
    }
}

/// Why a request is exempt, if it is.
pub fn exemption(input: &Input, config: &Config) -> Option<String> {
    let ex = &config.exemptions;
    if ex.namespaces.contains(&input.namespace) {
        return Some(format!("namespace {} is exempt", input.namespace));
    }
    if ex.users.contains(&input.user.username) {
        return Some(format!("user {} is exempt", input.user.username));
    }
    input
        .user
        .groups
        .iter()
        .find(|g| ex.groups.contains(g))
        .map(|g| format!("group {g} is exempt"))
}
