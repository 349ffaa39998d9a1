//! What the mutating export writes for a config. Whether the API server applies it as the
//! webhook does is the e2e suite's `defaults_as_policies_equal_the_webhook` (no CEL
//! interpreter here builds `Object{...}` apply configurations).

use rstest::rstest;

use super::*;
use crate::engine::{EmptyInventory, mutate};
use crate::testkit::{cfg, create, inventory, k, lb, update};
use crate::vocab::provider::Provider::{Alibaba, Ctyun, Huawei, Volcengine};

const ALL: &str = "cluster:\n  version: v1.36.2\n  flavor: turbo\ndefaults:\n  volcengineWeight: 100\n  huaweiElbClass: performance\n  ctyunIpModeProxy: true\n  annotations:\n    example.com/owner: platform\n";

fn export_of(yaml: &str) -> Mutating {
    let config = cfg(yaml);
    let versions = Versions::from_config(&config);
    export(&config, &versions, Api::for_cluster(&versions))
}

fn state<'a>(m: &'a Mutating, name: &str) -> &'a Result<(), String> {
    &m.rows
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}: {:?}", m.rows))
        .state
}

fn expressions(m: &Mutating) -> Vec<String> {
    m.objects[0]["spec"]["mutations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            assert_eq!(x["patchType"], "ApplyConfiguration");
            x["applyConfiguration"]["expression"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn every_config_default_is_one_mutation_in_the_engines_order() {
    let m = export_of(ALL);
    let names: Vec<&str> = m.exported().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "defaults.ctyunIpModeProxy",
            "defaults.huaweiElbClass",
            "defaults.volcengineWeight",
            "defaults.huaweiTurboClusterPolicy",
            "defaults.annotations[example.com/owner]"
        ]
    );
    let ex = expressions(&m);
    assert_eq!(ex.len(), 5);
    assert!(ex[0].contains("'service.beta.kubernetes.io/ctyun-loadbalancer-ip-mode': 'proxy'"));
    assert!(ex[1].contains("'kubernetes.io/elb.class': 'performance'"));
    assert!(ex[2].contains("'service.beta.kubernetes.io/volcengine-loadbalancer-weight': '100'"));
    assert!(ex[3].contains("externalTrafficPolicy: 'Cluster'"));
    assert!(ex[4].contains("'example.com/owner': 'platform'"));
    // Fixed keys keep the live value on updates; the others never look at it.
    assert!(ex[1].contains("oldObject.metadata.annotations['kubernetes.io/elb.class']"));
    assert!(!ex[0].contains("oldObject.metadata.annotations['service"));
    let inv = state(&m, "inventory address type (ctyun, alibaba)");
    assert_eq!(inv, &Err(INVENTORY.to_string()));
    assert_eq!(m.objects[1]["kind"], "MutatingAdmissionPolicyBinding");
    assert_eq!(m.objects[1]["spec"]["policyName"], NAME);
}

#[rstest]
#[case::ga("v1.36.2", Some("admissionregistration.k8s.io/v1"))]
#[case::newer("v1.38.0", Some("admissionregistration.k8s.io/v1"))]
#[case::beta("v1.35.4", Some("admissionregistration.k8s.io/v1beta1"))]
#[case::first_beta("v1.34.0", Some("admissionregistration.k8s.io/v1beta1"))]
#[case::cce("v1.34.5-r10", Some("admissionregistration.k8s.io/v1beta1"))]
#[case::too_old("v1.33.9", None)]
fn the_api_follows_the_cluster_version(#[case] version: &str, #[case] want: Option<&str>) {
    let m = export_of(&ALL.replace("v1.36.2", version));
    match want {
        Some(api) => {
            assert_eq!(m.objects.len(), 2);
            assert!(m.objects.iter().all(|o| o["apiVersion"] == api));
        }
        None => {
            assert!(m.objects.is_empty());
            let why = state(&m, "defaults.volcengineWeight").as_ref().unwrap_err();
            assert!(why.contains("needs Kubernetes 1.34"), "{why}");
        }
    }
}

#[test]
fn an_unknown_cluster_version_gets_the_ga_api() {
    let config = cfg("defaults:\n  volcengineWeight: 10\n");
    let versions = Versions::from_config(&config);
    assert_eq!(Api::for_cluster(&versions), Ok(Api::V1));
}

#[rstest]
#[case::disabled(
    "defaults:\n  enabled: false\n  volcengineWeight: 10\n",
    "defaults.volcengineWeight",
    "defaults.enabled is false"
)]
#[case::not_set(
    "cluster:\n  version: v1.36.2\n",
    "defaults.volcengineWeight",
    "not set in the config"
)]
#[case::other_provider(
    "provider: ctyun\ndefaults:\n  volcengineWeight: 10\n",
    "defaults.volcengineWeight",
    "provider is not volcengine"
)]
#[case::standard_cluster(
    "defaults:\n  volcengineWeight: 10\n",
    "defaults.huaweiTurboClusterPolicy",
    "not a turbo cluster"
)]
#[case::ip_mode_too_old(
    "cluster:\n  version: v1.29.3\ndefaults:\n  ctyunIpModeProxy: true\n",
    "defaults.ctyunIpModeProxy",
    "ip-mode needs Kubernetes 1.30"
)]
#[case::no_annotations("", "defaults.annotations", "none set")]
fn unexported_defaults_say_why(#[case] yaml: &str, #[case] name: &str, #[case] why: &str) {
    let m = export_of(yaml);
    let got = state(&m, name).as_ref().unwrap_err();
    assert!(got.contains(why), "{got}");
}

#[test]
fn nothing_to_default_writes_no_policy() {
    assert!(
        export_of("cluster:\n  version: v1.36.2\n")
            .objects
            .is_empty()
    );
    assert!(
        export_of(&format!("{ALL}  enabled: false\n"))
            .objects
            .is_empty()
    );
}

#[test]
fn a_fixed_provider_drops_the_detection() {
    let auto = expressions(&export_of(ALL));
    assert!(auto[2].contains(
        "lowerAscii().startsWith('service.beta.kubernetes.io/volcengine-loadbalancer-')"
    ));
    let fixed = export_of(&format!("provider: volcengine\n{ALL}"));
    let names: Vec<&str> = fixed.exported().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "defaults.volcengineWeight",
            "defaults.huaweiTurboClusterPolicy",
            "defaults.annotations[example.com/owner]"
        ]
    );
    assert!(!expressions(&fixed)[0].contains("lowerAscii"));
}

#[test]
fn exemptions_become_a_namespace_selector_and_a_match_condition() {
    let m = export_of(&format!(
        "{ALL}exemptions:\n  namespaces: [kube-system]\n  users: [alice]\n  groups: [ops]\n"
    ));
    let sel = &m.objects[1]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0];
    assert_eq!(sel["operator"], "NotIn");
    assert_eq!(sel["values"][0], "kube-system");
    let conditions = m.objects[0]["spec"]["matchConditions"].as_array().unwrap();
    assert_eq!(conditions[0]["name"], "is-load-balancer");
    assert_eq!(conditions[1]["name"], "served-by-provider");
    let exempt = conditions[2]["expression"].as_str().unwrap();
    assert!(
        exempt.contains("['alice']") && exempt.contains("['ops']"),
        "{exempt}"
    );
    let none = export_of(ALL);
    assert!(none.objects[1]["spec"].get("matchResources").is_none());
    assert_eq!(
        none.objects[0]["spec"]["matchConditions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn keys_are_cel_literals() {
    let m = export_of(
        "cluster:\n  version: v1.36.2\ndefaults:\n  annotations:\n    \"example.com/it's\": \"a\\\\b\"\n",
    );
    assert!(expressions(&m)[0].contains(r"'example.com/it\'s': 'a\\b'"));
}

/// With `defaults.exported` the webhook leaves the config's defaults to the policy and
/// applies only the inventory's.
#[test]
fn exported_defaults_leave_only_the_inventorys_to_the_webhook() {
    let yaml = format!("{ALL}  exported: true\n");
    let config = cfg(&yaml);
    let versions = Versions::from_config(&config);
    let services = [
        create(lb().pa(Volcengine, "id", "clb-1")),
        create(lb().pa(Huawei, "id", "e")),
        create(lb().pa(Ctyun, "id", "lb-1").etp("Local")),
        update(
            lb().pa(Volcengine, "id", "clb-1")
                .pa(Volcengine, "weight", "30"),
            lb().pa(Volcengine, "id", "clb-1"),
        ),
    ];
    for input in &services {
        let m = mutate(input, &config, &versions, &EmptyInventory).unwrap();
        assert!(!m.changed(), "{:?}", m.applied);
        let before = mutate(input, &cfg(ALL), &versions, &EmptyInventory).unwrap();
        assert!(
            before.changed(),
            "the case must take a default without the toggle"
        );
    }
    let inv = inventory(
        "loadBalancers:\n  - {id: lb-intranet, provider: alibaba, kind: clb, addressType: intranet, vpcId: vpc-1, createdBy: user}\n",
    );
    let input = create(lb().pa(Alibaba, "id", "lb-intranet"));
    let m = mutate(&input, &config, &versions, &inv).unwrap();
    assert_eq!(
        m.desired.metadata.annotations.unwrap()[&k(Alibaba, "address-type")],
        "intranet"
    );
    assert_eq!(m.applied.len(), 1, "{:?}", m.applied);
}
