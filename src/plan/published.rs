//! CTyun, Huawei CCE and Volcengine: their controllers are not public, so their plans hold
//! only what their documents publish, each step quoting its source; everything else is
//! "unknown", never a guess.

use crate::vocab::catalog::{Catalog, annotation_field};
use crate::vocab::ctx::Ctx;
use crate::vocab::input::Operation;
use crate::vocab::plan::{Action, Plan, Step};
use crate::vocab::service::Svc;

const CCE_MANAGED: &str = "CCE, cce_10_1167 (lbguard seed 003): \"CCE为负载均衡类型的Service自动创建并完全托管监听器，包括监听器的创建、更新和删除\"";
const CCE_SKIP_UPDATE: &str = "CCE, cce_10_1167 (lbguard seed 003): \"对已有Service取消监听器托管，已有监听器脱离CCE管控，后续不再更新或删除\"";
const CCE_SKIP_CREATE: &str = "CCE, cce_10_1167 (lbguard seed 003): \"CCE仅创建后端云服务器组、健康检查和后端服务器成员，不创建监听器\"";
const CCE_SKIP_DELETE: &str = "CCE, cce_10_1167 (lbguard seed 003): \"删除已取消监听器托管的Service时，仅清理后端云服务器组，监听器不会被级联删除\"";
const CCE_CASCADE: &str =
    "CCE, cce_10_1167 (lbguard seed 003): \"当托管监听器的Service被删除时，监听器会被级联删除\"";
const CCE_AUTOCREATE: &str = "CCE's LoadBalancer Service guide (lbguard seed 002): kubernetes.io/elb.autocreate creates the ELB; \"自動創建的ELB實例建議不要被其他資源使用，否則會在刪除時被占用，導致資源殘留\"";
const CCE_LISTENERS: &str = "CCE's LoadBalancer Service guide (lbguard seed 002): \"在新建的ELB實例中可以看到創建了443端口和80端口的監聽器\"";
const CTYUN_TABLE: &str = "CTyun's LoadBalancer Service guide (lbguard seed 000), its update table: \"CCM会根据Service的配置，自动创建和配置负载均衡、监听、后端主机组等资源\"; \"当Service删除时，CCM不会删除您通过ID指定的已有负载均衡\"";
const CTYUN_TYPE: &str = "CTyun's LoadBalancer Service guide (lbguard seed 000): \"当Type=LoadBalancer的Service变更为Type!=LoadBalancer时，CCM会删除为该负载均衡添加的配置\"";
const VKE_USAGE: &str = "volcengine/volcengine-cloud-controller-manager@903e85e:docs/usage.md:35-82 (use an existing CLB; create a new CLB)";
const VKE_GROUP: &str = "VKE's cross-cluster reuse guide (lbguard seed 004): \"可以查看后端服务器组中新增的后端服务器和权重\"";
const VKE_NOTHING: &str = "volcengine/volcengine-cloud-controller-manager@903e85e (docs and a chart, no code): nothing published";

/// The request's two sides, as every provider reads them.
fn sides<'a>(ctx: &'a Ctx) -> (Option<Svc<'a>>, Option<Svc<'a>>) {
    let op = ctx.input.operation;
    let old = ctx
        .old
        .filter(|o| o.is_lb() && matches!(op, Operation::Update | Operation::Delete));
    let new = ctx.new.filter(|n| n.is_lb() && op != Operation::Delete);
    (old, new)
}

/// Listener ports: `(port, protocol)`, the protocol from `protocol-port` when it names the
/// port (Huawei), else the spec's.
fn ports(cat: &Catalog, svc: Svc) -> Vec<(i32, String)> {
    let mapped = cat
        .get(svc, "protocol-port")
        .map(|a| a.value)
        .filter(|_| cat.provider == crate::vocab::provider::Provider::Huawei);
    svc.ports()
        .iter()
        .map(|p| {
            let port = p.port.to_string();
            let proto = mapped
                .and_then(|m| {
                    m.split(',')
                        .map(|e| e.split(':').collect::<Vec<_>>())
                        .find(|e| e.len() == 2 && e[1] == port)
                        .map(|e| e[0].to_ascii_uppercase())
                })
                .unwrap_or_else(|| p.protocol.as_deref().unwrap_or("TCP").to_ascii_uppercase());
            (p.port, proto)
        })
        .collect()
}

fn value<'a>(cat: &Catalog, svc: Svc<'a>, suffix: &str) -> Option<&'a str> {
    cat.get(svc, suffix)
        .map(|a| a.value)
        .filter(|v| !v.is_empty())
}

pub fn huawei(ctx: &Ctx, cat: &'static Catalog, plan: &mut Plan) {
    plan.controller = "CCE's cloud controller (published behaviour)";
    let (old, new) = sides(ctx);
    let skips = |s: Svc| {
        cat.get(s, "skip-managed-listener")
            .is_some_and(|a| a.value == "true")
    };
    let Some(n) = new else {
        if let Some(o) = old {
            plan.load_balancer = value(cat, o, "id").map(str::to_string);
            if skips(o) {
                plan.push(Step::new(Action::Keep, "the listeners on the ELB", CCE_SKIP_DELETE).detail("the Service does not manage its listeners: CCE removes only its backend server groups"));
                plan.push(Step::new(
                    Action::Delete,
                    "the backend server groups of this Service",
                    CCE_SKIP_DELETE,
                ));
            } else {
                for (port, proto) in ports(cat, o) {
                    plan.push(
                        Step::new(
                            Action::Delete,
                            format!("listener {port}/{proto}"),
                            CCE_CASCADE,
                        )
                        .detail("CCE deletes the listeners it manages with the Service"),
                    );
                }
                if value(cat, o, "id").is_none() && value(cat, o, "autocreate").is_some() {
                    plan.push(
                        Step::new(
                            Action::Delete,
                            "the ELB created by elb.autocreate",
                            CCE_AUTOCREATE,
                        )
                        .detail("reading: CCE deletes the ELB it created with the Service"),
                    );
                }
            }
        }
        return;
    };
    plan.load_balancer = value(cat, n, "id").map(str::to_string);
    match (old, value(cat, n, "id"), value(cat, n, "autocreate")) {
        (None, None, Some(spec)) => plan.push(Step::new(Action::Create, "load balancer (ELB)", CCE_AUTOCREATE).detail(format!("from kubernetes.io/elb.autocreate: {spec}")).field(annotation_field(&cat.key("autocreate")))),
        (None, None, None) => plan.push(Step::new(Action::Unknown, "load balancer", CCE_AUTOCREATE).detail("neither kubernetes.io/elb.id nor kubernetes.io/elb.autocreate: CCE publishes what it does only for these")),
        _ => {}
    }
    if skips(n) {
        if old.is_some_and(|o| !skips(o)) {
            plan.push(
                Step::new(
                    Action::Keep,
                    "the listeners of this Service leave CCE's management",
                    CCE_SKIP_UPDATE,
                )
                .detail(
                    "they stay on the ELB as they are, and CCE never updates or deletes them again",
                )
                .field(annotation_field(&cat.key("skip-managed-listener"))),
            );
        } else if old.is_none() {
            plan.push(
                Step::new(
                    Action::Create,
                    "backend server groups, health checks and members",
                    CCE_SKIP_CREATE,
                )
                .detail(
                    "no listener: create them on the ELB and bind the groups, or no traffic flows",
                ),
            );
        }
        return;
    }
    let now = ports(cat, n);
    let before = old.map(|o| ports(cat, o)).unwrap_or_default();
    for (port, proto) in &before {
        match now.iter().find(|(p, _)| p == port) {
            None => plan.push(
                Step::new(Action::Delete, format!("listener {port}/{proto}"), CCE_MANAGED)
                    .detail(format!("port {port} is no longer in the Service, and CCE manages this Service's listeners, their deletion included (reading of cce_10_1167)"))
                    .rule("plan-delete-listener")
                    .field("spec.ports"),
            ),
            Some((_, p)) if p != proto => plan.push(Step::new(Action::Unknown, format!("listener {port}/{proto}"), CCE_MANAGED).detail(format!("its protocol changes to {p}: CCE publishes nothing on a protocol change"))),
            _ => {}
        }
    }
    for (port, proto) in &now {
        if !before.iter().any(|(p, _)| p == port) {
            plan.push(Step::new(
                Action::Create,
                format!("listener {port}/{proto}"),
                CCE_LISTENERS,
            ));
        }
    }
    if old.is_some() {
        plan.basis.push("CCE publishes no per-annotation update behaviour: listener and ELB attribute changes are not planned".into());
    }
}

pub fn ctyun(ctx: &Ctx, cat: &'static Catalog, plan: &mut Plan) {
    plan.controller = "CTyun's cloud controller (published behaviour)";
    let (old, new) = sides(ctx);
    let Some(n) = new else {
        if let Some(o) = old {
            plan.load_balancer = value(cat, o, "id").map(str::to_string);
            match value(cat, o, "id") {
                Some(_) => plan.push(
                    Step::new(Action::Keep, "the reused load balancer", CTYUN_TABLE).detail(
                        "not deleted; CCM removes the configuration it added for this Service",
                    ),
                ),
                None => plan.push(Step::new(
                    Action::Delete,
                    "the load balancer CCM created",
                    CTYUN_TABLE,
                )),
            }
            plan.push(Step::new(
                Action::Delete,
                "the configuration added for this Service",
                CTYUN_TYPE,
            ));
        }
        return;
    };
    plan.load_balancer = value(cat, n, "id").map(str::to_string);
    if old.is_none() && value(cat, n, "id").is_none() {
        plan.push(
            Step::new(Action::Create, "load balancer (ELB)", CTYUN_TABLE).detail(format!(
                "address type {}",
                value(cat, n, "address-type").unwrap_or("intranet (CTyun's default)")
            )),
        );
    }
    let now = ports(cat, n);
    let before = old.map(|o| ports(cat, o)).unwrap_or_default();
    for (port, proto) in &now {
        if !before.iter().any(|(p, q)| p == port && q == proto) {
            plan.push(Step::new(
                Action::Create,
                format!("listener {port}/{proto} and its backend host group"),
                CTYUN_TABLE,
            ));
        }
    }
    for (port, proto) in &before {
        if !now.iter().any(|(p, q)| p == port && q == proto) {
            plan.push(Step::new(Action::Unknown, format!("listener {port}/{proto}"), CTYUN_TABLE).detail("its port (or protocol) leaves the Service: CTyun publishes nothing on what happens to its listener"));
        }
    }
}

pub fn volcengine(ctx: &Ctx, cat: &'static Catalog, plan: &mut Plan) {
    plan.controller = "VKE's cloud controller (published behaviour)";
    let (old, new) = sides(ctx);
    let Some(n) = new else {
        if old.is_some() {
            plan.push(
                Step::new(
                    Action::Unknown,
                    "the load balancer and its listeners",
                    VKE_NOTHING,
                )
                .detail("VKE publishes nothing on what a Service's deletion removes"),
            );
        }
        return;
    };
    plan.load_balancer = value(cat, n, "id").map(str::to_string);
    if old.is_none() {
        match value(cat, n, "id") {
            None => plan.push(
                Step::new(Action::Create, "load balancer (CLB)", VKE_USAGE).detail(format!(
                    "in subnet {}",
                    value(cat, n, "subnet-id").unwrap_or("<subnet-id: required>")
                )),
            ),
            Some(_) => {
                if let Some(groups) = value(cat, n, "server-group-id") {
                    plan.push(
                        Step::new(Action::Update, format!("server groups {groups}"), VKE_GROUP)
                            .detail(format!(
                                "yours: this Service's backends are added with weight {}",
                                value(cat, n, "weight").unwrap_or("<unset>")
                            )),
                    );
                }
            }
        }
    }
    plan.push(Step::new(Action::Unknown, "listeners", VKE_NOTHING).detail(
        "VKE publishes nothing on how its controller creates, changes or deletes listeners",
    ));
}
