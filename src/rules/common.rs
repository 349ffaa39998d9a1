//! Rules that several providers share. Each takes the provider's catalog as data instead
//! of being written once per cloud.

use crate::providers::catalog;
use crate::vocab::action::Action;
use crate::vocab::catalog::{Catalog, annotation_field, catalog_annotation};
use crate::vocab::cel;
use crate::vocab::checks::{ccm_only, ccm_request_cel};
use crate::vocab::ctx::{Ctx, Findings};
use crate::vocab::provider::Provider;
use crate::vocab::rule::{CelCheck, Check, Class, Gate, Rule, Vap, VapCtx};
use crate::vocab::service::Svc;

const ALL: &[Provider] = &Provider::ALL;

pub static RULES: &[Rule] = &[
    Rule {
        id: "lb-id-immutable",
        providers: ALL,
        class: Class::Transition,
        gate: Gate::Transition,
        default: Action::Deny,
        title: "The load balancer id annotation cannot be added, removed or changed on an existing LoadBalancer Service",
        source: "000/001 \"已创建LoadBalancer类型的Service不支持重新复用或更换负载均衡实例\"; 004 \"不支持在已有 Service 中，添加、删除或修改 ...-id\"",
        check: Check::PerProvider(lb_id_immutable),
        vap: Vap::Cel(lb_id_immutable_cel),
    },
    Rule {
        id: "type-change-drops-lb",
        providers: ALL,
        class: Class::Transition,
        gate: Gate::AnyUpdate,
        default: Action::Warn,
        title: "Changing type away from LoadBalancer makes the CCM delete the load balancer configuration",
        source: "000/001 \"当Type=LoadBalancer的Service变更为Type!=LoadBalancer时，CCM会删除为该负载均衡添加的配置\"",
        check: Check::Generic(type_change_drops_lb),
        vap: Vap::Cel(type_change_drops_lb_cel),
    },
    Rule {
        id: "finalizer-protected",
        providers: ALL,
        class: Class::Transition,
        gate: Gate::Update,
        default: Action::Deny,
        title: "Only the CCM may remove its finalizers (service.k8s.alibaba/resources, service.k8s.alibaba/nlb, ccm.finalizers)",
        source: "000/001 \"请勿手动删除或修改...Finalizer，手动操作Finalizer可能会导致...资源无法被正常回收\"",
        check: Check::Generic(finalizer_protected),
        vap: Vap::Cel(finalizer_protected_cel),
    },
    Rule {
        id: "address-type-value",
        providers: &[Provider::Ctyun, Provider::Alibaba],
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "address-type is \"internet\" or \"intranet\" (exact case; ACK's NLB controller takes any case)",
        source: "000, 001 address-type: \"internet\" / \"intranet\"; kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/model/nlb/nlb.go:21-29 (NLB: strings.EqualFold)",
        check: Check::PerProvider(address_type_value),
        vap: Vap::Cel(address_type_value_cel),
    },
    Rule {
        id: "in-cluster-access-advice",
        providers: &[Provider::Ctyun, Provider::Alibaba, Provider::Huawei],
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Warn,
        title: "externalTrafficPolicy: Local without ip-mode proxy / hostname / pass-through: in-cluster clients of the LB IP can fail",
        source: "000, 001 \"在集群内访问 LoadBalancer Service 的 External IP 的注意事项\"; 002 \"集群内使用ELB地址无法访问Service\"",
        check: Check::PerProvider(in_cluster_access_advice),
        vap: Vap::Cel(in_cluster_access_advice_cel),
    },
    Rule {
        id: "enum-values",
        providers: &[Provider::Alibaba, Provider::Huawei],
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "force-override-listeners true/false, remove-unscheduled-backend on/off, elb.class union/performance, elb.pass-through true/false",
        source: "001, 002",
        check: Check::PerProvider(enum_values),
        vap: Vap::Cel(enum_values_cel),
    },
    Rule {
        id: "lb-attributes-immutable",
        providers: &[Provider::Alibaba, Provider::Huawei],
        class: Class::Transition,
        gate: Gate::Admit,
        default: Action::Deny,
        title: "Load balancer attributes fixed at creation cannot change (ACK CLB: address-type, zones, ip-version, resource group, network-type, ip; ACK NLB: ip-version, resource group; CCE: elb.class, elb.autocreate)",
        source: "kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:pkg/controller/service/clbv1/loadbalancer.go:127-154 (\"can not change ... once created\"), nlbv2/loadbalancer.go:187-206 (ip-version and resource group fail; address-type and zones change in place); CCE Service annotation reference (class, autocreate)",
        check: Check::PerProvider(super::immutable::lb_attributes_immutable),
        vap: Vap::Cel(super::immutable::lb_attributes_immutable_cel),
    },
    Rule {
        id: "unknown-annotation",
        providers: ALL,
        class: Class::Object,
        gate: Gate::Admit,
        default: Action::Warn,
        title: "An annotation with a provider's prefix that the CCM does not know (typo or wrong case)",
        source: "004 \"注解的内容需要严格区分大小写\"; Alibaba CCM annotations.go",
        check: Check::PerProvider(super::unknown::unknown_annotation),
        vap: Vap::No("suggests the nearest known name, a fuzzy match CEL cannot make"),
    },
    Rule {
        id: "deletion-protection",
        providers: ALL,
        class: Class::Delete,
        gate: Gate::Delete,
        default: Action::Deny,
        title: "A Service marked for deletion protection (config deletionProtection) cannot be deleted",
        source: "001 \"为Service开启删除保护\"",
        check: Check::Generic(deletion_protection),
        vap: Vap::Cel(deletion_protection_cel),
    },
];

const RECREATE: &str = "delete and recreate the Service to move it to another load balancer";

/// The LB id annotation is the identity of a live load balancer: adding, removing or
/// changing it makes the CCM re-target or orphan listeners. On Alibaba the CCM records
/// the LB it bound in a label; adding the same id later is no change, another id is.
/// Huawei may record an auto-created ELB's id itself, so an added id on a Service that
/// had `elb.autocreate` is left to the CCM.
fn lb_id_immutable(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let (Some(old), Some(new)) = (ctx.old, ctx.new) else {
        return;
    };
    let (o, n) = (cat.get(old, "id"), cat.get(new, "id"));
    // The usual update keeps the id: nothing to word.
    if o.map(|a| a.value) == n.map(|a| a.value) {
        return;
    }
    let key = n.or(o).map_or_else(|| cat.key("id"), |a| a.key.to_string());
    let field = annotation_field(&key);
    match (o.map(|a| a.value), n.map(|a| a.value)) {
        (Some(a), Some(b)) if a != b => out.push(
            field,
            format!("{key} cannot change from \"{a}\" to \"{b}\" on an existing Service; {RECREATE}"),
        ),
        (Some(a), None) => out.push(
            field,
            format!("{key} cannot be removed from an existing Service (it was \"{a}\"); keep {key}: \"{a}\", or {RECREATE}"),
        ),
        (None, Some(b)) => {
            let bound = cat.lb_id_label.and_then(|l| old.label(l).map(|v| (l, v)));
            match bound {
                Some((_, v)) if v == b => {}
                Some((label, v)) => out.push(
                    field,
                    format!("{key}: \"{b}\" cannot be added: the cloud controller already bound this Service to \"{v}\" (label {label}); remove the annotation, or {RECREATE}"),
                ),
                None if cat.provider == Provider::Huawei
                    && cat.get(old, "autocreate").is_some() =>
                {
                    ccm_only(
                        ctx,
                        out,
                        field,
                        format!("{key}: \"{b}\" cannot be added to a Service whose ELB was auto-created; remove it, or {RECREATE}"),
                    )
                }
                None => out.push(
                    field,
                    format!("{key}: \"{b}\" cannot be added to an existing Service (it had no load balancer id, so the cloud controller created or manages one); remove it, or {RECREATE}"),
                ),
            }
        }
        _ => {}
    }
}

fn type_change_drops_lb(ctx: &Ctx, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if !new.is_lb() {
        out.push(
            "spec.type",
            format!(
                "spec.type changes from LoadBalancer to {}: the cloud controller deletes the load balancer's listeners and backends, and the Service is no longer reachable through it; keep type LoadBalancer unless that is intended",
                new.type_()
            ),
        );
    }
}

/// The protected finalizers: every provider's plus `ccm.finalizers`. Runs on any UPDATE,
/// since the CCM keeps its finalizer until cleanup even after the type changed.
fn finalizer_protected(ctx: &Ctx, out: &mut Findings) {
    let (Some(old), Some(new)) = (ctx.old, ctx.new) else {
        return;
    };
    let extra = &ctx.config.ccm.finalizers;
    for f in old.finalizers() {
        let protected = Provider::ALL
            .iter()
            .any(|p| catalog(*p).finalizers.contains(&f.as_str()))
            || extra.contains(f);
        if protected && !new.finalizers().contains(f) {
            ccm_only(
                ctx,
                out,
                "metadata.finalizers".into(),
                format!(
                    "metadata.finalizers: \"{f}\" cannot be removed by hand: the cloud controller removes it after releasing the load balancer, and removing it early leaks the load balancer; put it back and delete the Service normally"
                ),
            );
        }
    }
}

fn address_type_value(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    let nlb = ctx.is_nlb(cat.provider);
    let ok = |v: &str| {
        ["internet", "intranet"].iter().any(|t| {
            if nlb {
                t.eq_ignore_ascii_case(v)
            } else {
                *t == v
            }
        })
    };
    if let Some(a) = cat.get(new, "address-type")
        && !ok(a.value)
        // ACK's controllers read an empty value as unset.
        && !(cat.provider == Provider::Alibaba && a.value.is_empty())
    {
        let case = if nlb { "any case" } else { "exact, lower case" };
        out.push(
            annotation_field(a.key),
            format!(
                "{} is \"{}\"; allowed: \"internet\" or \"intranet\" ({case})",
                a.key, a.value
            ),
        );
    }
}

fn address_type_value_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, "address-type");
    let (nlb, empty_ok) = match cat.provider {
        Provider::Alibaba => (
            crate::providers::alibaba::nlb_cel(v),
            format!(" && {} != ''", a.value),
        ),
        _ => ("false".to_string(), String::new()),
    };
    Ok(vec![
        CelCheck::new(
            format!(
                "{}{empty_ok} && !(({nlb} ? {}.lowerAscii() : {}) in ['internet', 'intranet'])",
                a.present, a.value, a.value
            ),
            format!(
                "'[address-type-value] ' + {} + ' is \"' + {} + '\"; allowed: \"internet\" or \"intranet\" (' + ({nlb} ? 'any case' : 'exact, lower case') + ')'",
                a.key, a.value
            ),
        )
        .same_when(format!("{} + '=' + {}", a.key, a.value)),
    ])
}

fn in_cluster_access_advice(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    if new.traffic_policy() != Some("Local") {
        return;
    }
    // The fix is worded only when it is needed: most Services are fine.
    let (ok, fix): (bool, fn(&Catalog) -> String) = match cat.provider {
        Provider::Ctyun => (
            cat.get(new, "ip-mode").is_some_and(|a| a.value == "proxy"),
            |cat| format!("add {}: \"proxy\" (Kubernetes 1.30+)", cat.key("ip-mode")),
        ),
        Provider::Alibaba => (cat.get(new, "hostname").is_some(), |cat| {
            format!("add {} and use that name", cat.key("hostname"))
        }),
        Provider::Huawei => (
            cat.get(new, "pass-through")
                .is_some_and(|a| a.value == "true"),
            |cat| format!("add {}: \"true\"", cat.key("pass-through")),
        ),
        Provider::Volcengine => return,
    };
    if !ok {
        let fix = fix(cat);
        out.push(
            "spec.externalTrafficPolicy",
            format!("spec.externalTrafficPolicy is \"Local\": clients inside the cluster that use the load balancer IP bypass the load balancer and fail on nodes without a backend pod; use the ClusterIP/DNS name inside the cluster, or {fix}"),
        );
    }
}

fn one_of(cat: &Catalog, svc: Svc, suffix: &str, allowed: &[&str], out: &mut Findings) {
    if let Some(a) = cat.get(svc, suffix)
        && !allowed.contains(&a.value)
    {
        let mut list = String::new();
        for v in allowed {
            if !list.is_empty() {
                list.push_str(" or ");
            }
            list.extend(["\"", v, "\""]);
        }
        out.push(
            annotation_field(a.key),
            [
                a.key,
                " is \"",
                a.value,
                "\"; allowed: ",
                &list,
                " (exact, lower case)",
            ]
            .concat(),
        );
    }
}

fn enum_values(ctx: &Ctx, cat: &'static Catalog, out: &mut Findings) {
    let Some(new) = ctx.new else { return };
    match cat.provider {
        Provider::Alibaba => {
            one_of(
                cat,
                new,
                "force-override-listeners",
                &["true", "false"],
                out,
            );
            one_of(cat, new, "remove-unscheduled-backend", &["on", "off"], out);
        }
        Provider::Huawei => {
            one_of(cat, new, "class", &["union", "performance"], out);
            one_of(cat, new, "pass-through", &["true", "false"], out);
        }
        _ => {}
    }
}

fn lb_id_immutable_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let a = catalog_annotation(cat, "id");
    let (op, ov, ok) = (
        cel::on(&a.present, "oldObject"),
        cel::on(&a.value, "oldObject"),
        cel::on(&a.key, "oldObject"),
    );
    let (np, nv, nk) = (
        cel::on(&a.present, "object"),
        cel::on(&a.value, "object"),
        cel::on(&a.key, "object"),
    );
    // Adding an id: allowed when it names what the CCM bound (Alibaba's label); on Huawei,
    // after elb.autocreate, only the CCM may, and only a known CCM identity makes it a denial.
    let added = match (cat.lb_id_label, cat.provider) {
        (Some(l), _) => {
            let has = cel::on(&cel::has_label(l), "oldObject");
            format!(
                "(!{has} || oldObject.metadata.labels[{}] != {nv})",
                cel::lit(l)
            )
        }
        (None, Provider::Huawei) => {
            let auto = cel::on(&catalog_annotation(cat, "autocreate").present, "oldObject");
            match ccm_request_cel(v) {
                Some(by_ccm) => format!("(!{auto} || !{by_ccm})"),
                None => format!("!{auto}"),
            }
        }
        _ => "true".into(),
    };
    let violates =
        format!("({op} && {np} && {ov} != {nv}) || ({op} && !{np}) || (!{op} && {np} && {added})");
    let key = format!(
        "({np} ? {nk} : ({op} ? {ok} : {}))",
        cel::lit(&cat.key("id"))
    );
    let was = format!("({op} ? '\"' + {ov} + '\"' : 'unset')");
    let now = format!("({np} ? '\"' + {nv} + '\"' : 'removed')");
    Ok(vec![CelCheck::new(
        violates,
        format!(
            "'[lb-id-immutable] ' + {key} + ' cannot be added, removed or changed on an existing Service (was ' + {was} + ', now ' + {now} + '); {RECREATE}'"
        ),
    )])
}

fn type_change_drops_lb_cel(_: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let new_type = "(has(object.spec) && has(object.spec.type) ? object.spec.type : 'ClusterIP')";
    Ok(vec![CelCheck::new(
        format!("{new_type} != 'LoadBalancer'"),
        format!(
            "'[type-change-drops-lb] spec.type changes from LoadBalancer to ' + {new_type} + ': the cloud controller deletes the load balancer\\'s listeners and backends, and the Service is no longer reachable through it; keep type LoadBalancer unless that is intended'"
        ),
    )])
}

fn finalizer_protected_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(by_ccm) = ccm_request_cel(v) else {
        return Err(
            "without ccm.users or ccm.groups the webhook only warns (it cannot tell the cloud controller's own writes apart)",
        );
    };
    let mut protected: Vec<&str> = Provider::ALL
        .iter()
        .flat_map(|p| catalog(*p).finalizers.iter().copied())
        .collect();
    protected.extend(v.config.ccm.finalizers.iter().map(String::as_str));
    let removed = format!(
        "oldObject.metadata.finalizers.filter(f, f in {} && !(has(object.metadata.finalizers) && f in object.metadata.finalizers))",
        cel::list(&protected)
    );
    Ok(vec![CelCheck::new(
        format!("!{by_ccm} && has(oldObject.metadata.finalizers) && {removed}.size() > 0"),
        format!(
            "'[finalizer-protected] metadata.finalizers: \"' + {removed}[0] + '\" cannot be removed by hand: the cloud controller removes it after releasing the load balancer, and removing it early leaks the load balancer; put it back and delete the Service normally'"
        ),
    )])
}

fn in_cluster_access_advice_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let ok = match cat.provider {
        Provider::Ctyun => {
            let a = catalog_annotation(cat, "ip-mode");
            format!("({} && {} == 'proxy')", a.present, a.value)
        }
        Provider::Alibaba => catalog_annotation(cat, "hostname").present,
        Provider::Huawei => {
            let a = catalog_annotation(cat, "pass-through");
            format!("({} && {} == 'true')", a.present, a.value)
        }
        Provider::Volcengine => return Ok(vec![]),
    };
    Ok(vec![CelCheck::new(
        format!(
            "has($s.spec.externalTrafficPolicy) && $s.spec.externalTrafficPolicy == 'Local' && !{ok}"
        ),
        "'[in-cluster-access-advice] spec.externalTrafficPolicy is \"Local\": clients inside the cluster that use the load balancer IP bypass the load balancer and fail on nodes without a backend pod; use the ClusterIP/DNS name inside the cluster, or the provider\\'s pass-through setting'",
    )
    .same_when("'local'")])
}

/// One check per enumerated annotation: its value is one of `allowed`.
fn one_of_cel(cat: &Catalog, rule: &str, suffix: &str, allowed: &[&str]) -> CelCheck {
    let a = catalog_annotation(cat, suffix);
    let shown: Vec<String> = allowed.iter().map(|v| format!("\\\"{v}\\\"")).collect();
    CelCheck::new(
        format!("{} && !({} in {})", a.present, a.value, cel::list(allowed)),
        format!(
            "'[{rule}] ' + {} + ' is \"' + {} + '\"; allowed: {} (exact, lower case)'",
            a.key,
            a.value,
            shown.join(" or ")
        ),
    )
    .same_when(format!("{} + '=' + {}", a.key, a.value))
}

fn enum_values_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let Some(cat) = v.cat else { return Ok(vec![]) };
    let r = "enum-values";
    Ok(match cat.provider {
        Provider::Alibaba => vec![
            one_of_cel(cat, r, "force-override-listeners", &["true", "false"]),
            one_of_cel(cat, r, "remove-unscheduled-backend", &["on", "off"]),
        ],
        Provider::Huawei => vec![
            one_of_cel(cat, r, "class", &["union", "performance"]),
            one_of_cel(cat, r, "pass-through", &["true", "false"]),
        ],
        _ => vec![],
    })
}

fn deletion_protection_cel(v: &VapCtx) -> Result<Vec<CelCheck>, &'static str> {
    let dp = &v.config.deletion_protection;
    let mut out = Vec::new();
    if let Some(a) = &dp.annotation {
        let has = cel::on(&cel::has_annotation(a), "oldObject");
        out.push(CelCheck::new(
            format!("{has} && oldObject.metadata.annotations[{}] == 'true'", cel::lit(a)),
            format!("'[deletion-protection] Service ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + ' is protected from deletion by annotation {a}: \"true\"; remove the mark first and delete again'"),
        ));
    }
    if let Some(l) = &dp.label {
        let has = cel::on(&cel::has_label(l), "oldObject");
        out.push(CelCheck::new(
            format!("{has} && oldObject.metadata.labels[{}] == 'true'", cel::lit(l)),
            format!("'[deletion-protection] Service ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + ' is protected from deletion by label {l}: \"true\"; remove the mark first and delete again'"),
        ));
    }
    Ok(out)
}

fn deletion_protection(ctx: &Ctx, out: &mut Findings) {
    let Some(old) = ctx.old else { return };
    let dp = &ctx.config.deletion_protection;
    let name = old.namespaced_name();
    if let Some(a) = &dp.annotation
        && old.annotation(a) == Some("true")
    {
        out.push(
            annotation_field(a),
            format!("Service {name} is protected from deletion by annotation {a}: \"true\"; remove the mark first (kubectl annotate service -n {} {} {a}-) and delete again", ctx.input.namespace, ctx.input.name),
        );
    }
    if let Some(l) = &dp.label
        && old.label(l) == Some("true")
    {
        out.push(
            format!("metadata.labels[{l}]"),
            format!("Service {name} is protected from deletion by label {l}: \"true\"; remove the mark first (kubectl label service -n {} {} {l}-) and delete again", ctx.input.namespace, ctx.input.name),
        );
    }
}

#[cfg(test)]
#[path = "common_tests.rs"]
mod tests;
