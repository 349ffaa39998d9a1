//! Whose Service it is: which of a provider's controllers takes a LoadBalancer Service, as
//! the controllers themselves choose (`spec.loadBalancerClass`, and on Alibaba two
//! annotations). A Service no controller of the provider takes is not lbguard's: no rule,
//! default, claim or report entry.

use super::config::{Config, ProviderChoice};
use super::controller::{Classes, Controller};
use super::provider::Provider;
use super::service::Svc;

/// ACK's NLB class (kubernetes/cloud-provider-alibaba-cloud@eeb0ddc:
/// pkg/controller/helper/service_utils.go:36).
pub const ALIBABA_NLB_CLASS: &str = "alibabacloud.com/nlb";
/// The class the published Volcengine controller takes (its `--loadbalancer-class`
/// default; volcengine/volcengine-cloud-controller-manager@903e85e:docs/deploy.md:18). VKE's
/// managed controller also takes Services without a class (seed 004's examples).
pub const VOLCENGINE_CLB_CLASS: &str = "volcengine.com/clb";

/// The classes each provider's own controllers take, besides an unset class.
pub fn builtin_classes(p: Provider) -> &'static [(&'static str, Controller)] {
    match p {
        Provider::Alibaba => &[(ALIBABA_NLB_CLASS, Controller::Nlb)],
        Provider::Volcengine => &[(VOLCENGINE_CLB_CLASS, Controller::Default)],
        Provider::Ctyun | Provider::Huawei => &[],
    }
}

/// An annotation whose non-empty value makes ACK's CLB controller skip the Service
/// (service_utils.go:30, :111).
pub const ALIBABA_CLASS_ANNOTATION: &str = "service.beta.kubernetes.io/class";
/// An annotation whose presence makes ACK's CLB controller skip the Service (a tunnel
/// Service; service_utils.go:32, :108, :203-210).
pub const ALIBABA_TUNNEL_ANNOTATION: &str =
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-tunnel-type";

/// The controller of `p` that takes `svc`, or `None` when none does (not a LoadBalancer,
/// or a class another implementation serves).
pub fn controller(p: Provider, svc: Svc, classes: &Classes) -> Option<Controller> {
    if !svc.is_lb() {
        return None;
    }
    if let Some(class) = svc.load_balancer_class() {
        if let Some(c) = classes.get(class) {
            return (*c == Controller::Default || p == Provider::Alibaba).then_some(*c);
        }
        // Any other class is another implementation's: the cloud-provider library's service
        // controller (CTyun's, CCE's) skips every class, ACK's and VKE's take their own.
        return builtin_classes(p)
            .iter()
            .find(|(c, _)| *c == class)
            .map(|(_, ctl)| *ctl);
    }
    if p == Provider::Alibaba
        && (svc
            .annotation(ALIBABA_CLASS_ANNOTATION)
            .is_some_and(|v| !v.is_empty())
            || svc.annotation(ALIBABA_TUNNEL_ANNOTATION).is_some())
    {
        return None;
    }
    Some(Controller::Default)
}

/// Why no controller of `p` takes a LoadBalancer Service, for messages (`None` when one does
/// or the Service is no LoadBalancer).
pub fn why_not(p: Provider, svc: Svc, classes: &Classes) -> Option<String> {
    if !svc.is_lb() || controller(p, svc, classes).is_some() {
        return None;
    }
    Some(match svc.load_balancer_class() {
        Some(class) => format!(
            "spec.loadBalancerClass \"{class}\" is served by no {p} controller (add it to loadBalancerClasses if yours is)"
        ),
        None if svc.annotation(ALIBABA_TUNNEL_ANNOTATION).is_some() => {
            format!(
                "{ALIBABA_TUNNEL_ANNOTATION} makes it a tunnel Service, which ACK's load balancer controllers skip"
            )
        }
        None => format!(
            "annotation {ALIBABA_CLASS_ANNOTATION} makes ACK's load balancer controllers skip it"
        ),
    })
}

/// The providers a config checks and the classes it adds: what the cluster view, the
/// claims and the engine need to tell lbguard's Services from others.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub choice: ProviderChoice,
    pub classes: std::sync::Arc<Classes>,
}

impl Scope {
    pub fn of(config: &Config) -> Self {
        Self {
            choice: config.provider,
            classes: std::sync::Arc::new(config.load_balancer_classes.clone()),
        }
    }

    /// The providers whose ids a Service may carry.
    pub fn providers(&self) -> &[Provider] {
        match &self.choice {
            ProviderChoice::Fixed(p) => std::slice::from_ref(p),
            ProviderChoice::Auto => &Provider::ALL,
        }
    }
}

impl From<ProviderChoice> for Scope {
    fn from(choice: ProviderChoice) -> Self {
        Self {
            choice,
            classes: Default::default(),
        }
    }
}

/// Config problems of `loadBalancerClasses` (the NLB controller is Alibaba's only).
pub fn problems(classes: &Classes, fixed: Option<Provider>) -> Vec<String> {
    let mut out = Vec::new();
    for (class, c) in classes {
        if class.is_empty() {
            out.push("loadBalancerClasses: a class name is empty".into());
        }
        if *c == Controller::Nlb && fixed.is_some_and(|p| p != Provider::Alibaba) {
            out.push(format!(
                "loadBalancerClasses.{class}: nlb is a controller of alibaba only; use default"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Service;
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn svc(class: Option<&str>, annotations: &[(&str, &str)], type_: &str) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "annotations": annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
            "spec": {"type": type_, "loadBalancerClass": class},
        }))
        .unwrap()
    }

    #[rstest]
    #[case::alibaba_unset_is_clb(Provider::Alibaba, None, &[], Some(Controller::Default))]
    #[case::alibaba_nlb_class(Provider::Alibaba, Some(ALIBABA_NLB_CLASS), &[], Some(Controller::Nlb))]
    #[case::alibaba_metallb(Provider::Alibaba, Some("metallb.io/metallb"), &[], None)]
    #[case::alibaba_class_annotation(Provider::Alibaba, None, &[(ALIBABA_CLASS_ANNOTATION, "x")], None)]
    #[case::alibaba_empty_class_annotation(Provider::Alibaba, None, &[(ALIBABA_CLASS_ANNOTATION, "")], Some(Controller::Default))]
    #[case::alibaba_tunnel(Provider::Alibaba, None, &[(ALIBABA_TUNNEL_ANNOTATION, "")], None)]
    #[case::huawei_unset(Provider::Huawei, None, &[], Some(Controller::Default))]
    #[case::huawei_nlb_class_is_not_its(Provider::Huawei, Some(ALIBABA_NLB_CLASS), &[], None)]
    #[case::volcengine_other(Provider::Volcengine, Some("example.com/lb"), &[], None)]
    #[case::volcengine_clb_class(Provider::Volcengine, Some(VOLCENGINE_CLB_CLASS), &[], Some(Controller::Default))]
    #[case::ctyun_class_annotation_is_alibabas_only(Provider::Ctyun, None, &[(ALIBABA_CLASS_ANNOTATION, "x")], Some(Controller::Default))]
    fn built_in_routes(
        #[case] p: Provider,
        #[case] class: Option<&str>,
        #[case] anns: &[(&str, &str)],
        #[case] want: Option<Controller>,
    ) {
        let s = svc(class, anns, "LoadBalancer");
        assert_eq!(controller(p, Svc::new(&s), &Classes::new()), want);
        assert_eq!(
            why_not(p, Svc::new(&s), &Classes::new()).is_some(),
            want.is_none()
        );
    }

    #[test]
    fn the_config_adds_classes_and_nothing_routes_a_cluster_ip() {
        let classes = Classes::from([("corp.example/ccm".to_string(), Controller::Default)]);
        let s = svc(Some("corp.example/ccm"), &[], "LoadBalancer");
        assert_eq!(
            controller(Provider::Huawei, Svc::new(&s), &classes),
            Some(Controller::Default)
        );
        let s = svc(None, &[], "ClusterIP");
        assert_eq!(controller(Provider::Alibaba, Svc::new(&s), &classes), None);
        assert_eq!(why_not(Provider::Alibaba, Svc::new(&s), &classes), None);
    }

    #[test]
    fn nlb_is_alibabas_only() {
        let classes = Classes::from([("x/nlb".to_string(), Controller::Nlb)]);
        assert!(problems(&classes, Some(Provider::Alibaba)).is_empty());
        assert!(problems(&classes, None).is_empty());
        assert_eq!(problems(&classes, Some(Provider::Huawei)).len(), 1);
    }
}
