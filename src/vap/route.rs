//! The engine's routing (`vocab::route`) as CEL: which Services the exported policies, the
//! mutating policy and the chart's webhooks select, so the API server calls nothing for a
//! Service another load balancer implementation serves.

use crate::vocab::cel::{self, IS_LB, on};
use crate::vocab::config::Config;
use crate::vocab::controller::Controller;
use crate::vocab::provider::Provider;
use crate::vocab::route::{
    ALIBABA_CLASS_ANNOTATION, ALIBABA_TUNNEL_ANNOTATION, Scope, builtin_classes,
};

/// CEL over `$s` (a LoadBalancer): a controller of `p` takes it.
pub fn served_by(p: Provider, scope: &Scope) -> String {
    let mut classes: Vec<&str> = scope
        .classes
        .iter()
        .filter(|(_, c)| **c == Controller::Default || p == Provider::Alibaba)
        .map(|(k, _)| k.as_str())
        .collect();
    classes.extend(builtin_classes(p).iter().map(|(c, _)| *c));
    let unset = if p == Provider::Alibaba {
        format!(
            "!(has($s.metadata.annotations) && (({class} in $s.metadata.annotations && $s.metadata.annotations[{class}] != '') || {tunnel} in $s.metadata.annotations))",
            class = cel::lit(ALIBABA_CLASS_ANNOTATION),
            tunnel = cel::lit(ALIBABA_TUNNEL_ANNOTATION)
        )
    } else {
        "true".into()
    };
    format!(
        "(has($s.spec.loadBalancerClass) ? $s.spec.loadBalancerClass in {} : {unset})",
        cel::list(&classes)
    )
}

/// CEL over `object`/`oldObject`: the request is one `p` has a say on (as
/// `Ctx::routed_to`): neither object a LoadBalancer, or a controller of `p` takes one.
pub fn routed_to(p: Provider, scope: &Scope) -> String {
    routed(&[p], scope)
}

fn routed(ps: &[Provider], scope: &Scope) -> String {
    let lb = |v: &str| format!("({v} != null && {})", on(IS_LB, v));
    let served = |v: &str| {
        let any: Vec<String> = ps.iter().map(|p| on(&served_by(*p, scope), v)).collect();
        format!("({} && ({}))", lb(v), any.join(" || "))
    };
    format!(
        "(!{} && !{}) || {} || {}",
        lb("object"),
        lb("oldObject"),
        served("object"),
        served("oldObject")
    )
}

/// The match condition every exported policy and the webhooks carry: the request is one
/// the engine checks (`engine::not_ours` is `None`).
pub fn ours(config: &Config) -> String {
    let scope = Scope::of(config);
    // A match condition reads no variables: written out.
    cel::inline(&routed(scope.providers(), &scope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::cfg;

    #[test]
    fn the_condition_names_each_class_once() {
        let c = cfg("provider: alibaba\nloadBalancerClasses:\n  corp.example/lb: default\n");
        let cel = ours(&c);
        assert!(cel.contains("'alibabacloud.com/nlb'"), "{cel}");
        assert!(cel.contains("'corp.example/lb'"), "{cel}");
        let c = cfg("provider: huawei\n");
        assert!(!ours(&c).contains("alibabacloud.com/nlb"));
    }
}
