//! The load balancer inventory: facts Kubernetes does not hold (address type, VPC, creator,
//! existing listeners), from a YAML file that is reloaded when it changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};

use crate::vocab::ctx::{Inventory, Lookup};
pub use crate::vocab::lb::{
    AddressType, Attachment, ChargeType, CreatedBy, Family, LbKind, Listener, LoadBalancer,
    SERVER_GROUP_TYPES, ServerGroup, protocol_family,
};
use crate::vocab::provider::Provider;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InventoryFile {
    #[serde(default)]
    pub load_balancers: Vec<LoadBalancer>,
}

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("cannot read inventory {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("inventory {path}: {message}")]
    Parse { path: String, message: String },
    #[error("inventory {path}: loadBalancers[{index}] (id {id}): {message}")]
    Entry {
        path: String,
        index: usize,
        id: String,
        message: String,
    },
}

/// One loaded inventory, indexed by provider and id.
#[derive(Debug, Default)]
pub struct Snapshot {
    by_id: HashMap<(Provider, String), LoadBalancer>,
    configured: bool,
}

impl Snapshot {
    /// An inventory that was configured but holds these load balancers.
    pub fn from_file(file: InventoryFile) -> Self {
        Self {
            by_id: file
                .load_balancers
                .into_iter()
                .map(|lb| ((lb.provider, lb.id.clone()), lb))
                .collect(),
            configured: true,
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Parses the YAML text; errors name the file, the entry and the field.
    pub fn parse(text: &str, path: &str) -> Result<Self, InventoryError> {
        let file: InventoryFile = if text.trim().is_empty() {
            InventoryFile::default()
        } else {
            crate::yaml::from_str(text).map_err(|message| InventoryError::Parse {
                path: path.into(),
                message,
            })?
        };
        let mut seen = HashMap::new();
        for (index, lb) in file.load_balancers.iter().enumerate() {
            let entry = |message: String| InventoryError::Entry {
                path: path.into(),
                index,
                id: lb.id.clone(),
                message,
            };
            if lb.id.trim().is_empty() {
                return Err(entry("id is empty".into()));
            }
            if let Some(kind) = lb.kind
                && !LbKind::of(lb.provider).contains(&kind)
            {
                let valid: Vec<&str> = LbKind::of(lb.provider).iter().map(|k| k.as_str()).collect();
                return Err(entry(format!(
                    "kind: \"{}\" is not a {} load balancer kind (use {})",
                    kind.as_str(),
                    lb.provider,
                    valid.join(" or ")
                )));
            }
            if let Some(first) = seen.insert((lb.provider, lb.id.clone()), index) {
                return Err(entry(format!("duplicate of loadBalancers[{first}]")));
            }
            if let Some(groups) = &lb.server_groups {
                server_groups_valid(lb, groups).map_err(entry)?;
            }
            // The CLB API's facts (InstanceChargeType, LoadBalancerSpec) on anything else.
            let clb_only = [
                (
                    "chargeType",
                    "an instance charge type",
                    lb.charge_type.is_some(),
                ),
                ("spec", "an instance spec", lb.spec.is_some()),
            ];
            if (lb.provider != Provider::Alibaba || lb.kind == Some(LbKind::Nlb))
                && let Some((key, what, _)) = clb_only.iter().find(|c| c.2)
            {
                return Err(entry(format!(
                    "{key}: only an Alibaba CLB (kind: clb) has {what} here"
                )));
            }
            if lb.spec.as_deref().is_some_and(str::is_empty) {
                return Err(entry("spec is empty (leave it out when not known)".into()));
            }
            for (i, l) in lb.listeners.iter().enumerate() {
                if l.port == 0 {
                    return Err(entry(format!("listeners[{i}].port: 0 is not a port")));
                }
                if protocol_family(&l.protocol).is_none() {
                    return Err(entry(format!(
                        "listeners[{i}].protocol: \"{}\" is not one of TCP, UDP, HTTP, HTTPS, TLS, TCPSSL",
                        l.protocol
                    )));
                }
                if !owner_is_valid(&l.owner) {
                    return Err(entry(format!(
                        "listeners[{i}].owner: \"{}\" is not external, namespace/name, or namespace/name (cluster ID)",
                        l.owner
                    )));
                }
            }
        }
        Ok(Self::from_file(file))
    }

    pub fn load(path: &Path) -> Result<Self, InventoryError> {
        let text = std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }
}

/// `serverGroups`: ACK NLB only (the NLB API's server groups), ids set, types as the API
/// answers them.
fn server_groups_valid(lb: &LoadBalancer, groups: &[ServerGroup]) -> Result<(), String> {
    if lb.provider != Provider::Alibaba || lb.kind == Some(LbKind::Clb) {
        return Err(
            "serverGroups: only an Alibaba NLB (kind: nlb) lists server groups here".into(),
        );
    }
    for (i, g) in groups.iter().enumerate() {
        if g.id.trim().is_empty() {
            return Err(format!("serverGroups[{i}].id is empty"));
        }
        if !SERVER_GROUP_TYPES.contains(&g.kind.as_str()) {
            return Err(format!(
                "serverGroups[{i}].type: \"{}\" is not Instance or Ip (as the NLB API answers ServerGroupType)",
                g.kind
            ));
        }
    }
    Ok(())
}

/// The owner forms the file describes: `external`, `namespace/name` (a Service of this
/// cluster), or `namespace/name (cluster ID)` (another cluster's, as `inventory dump` writes
/// what a CCM's listener name says).
pub fn owner_is_valid(owner: &str) -> bool {
    if owner == "external" {
        return true;
    }
    let word = |s: &str| !s.is_empty() && !s.contains([' ', '/', '(', ')']);
    let service = match owner.split_once(" (cluster ") {
        Some((service, rest)) => match rest.strip_suffix(')') {
            Some(cluster) if word(cluster) => service,
            _ => return false,
        },
        None => owner,
    };
    service
        .split_once('/')
        .is_some_and(|(ns, name)| word(ns) && word(name))
}

impl Inventory for Snapshot {
    fn configured(&self) -> bool {
        self.configured
    }

    fn lookup(&self, provider: Provider, id: &str) -> Lookup<'_> {
        match self.by_id.get(&(provider, id.to_string())) {
            Some(lb) => Lookup::Found(lb),
            None => Lookup::Unknown,
        }
    }
}

/// What the rules read: the file first (its entries override the cloud's), then what the
/// cloud said; with neither, nothing is configured.
#[derive(Clone, Copy)]
pub struct Layered<'a> {
    file: Option<&'a Snapshot>,
    cloud: Option<&'a dyn Inventory>,
}

/// The one choice between file and cloud, for admission, audit and check.
pub fn choose<'a>(cloud: Option<&'a dyn Inventory>, file: Option<&'a Snapshot>) -> Layered<'a> {
    Layered { file, cloud }
}

impl Inventory for Layered<'_> {
    fn configured(&self) -> bool {
        self.cloud.is_some() || self.file.is_some_and(|f| f.configured())
    }

    fn lookup(&self, provider: Provider, id: &str) -> Lookup<'_> {
        if let Some(f) = self.file
            && let Some(lb) = f.get(provider, id)
        {
            return Lookup::Found(lb);
        }
        match self.cloud {
            Some(c) => c.lookup(provider, id),
            None => Lookup::Unknown,
        }
    }
}

/// The inventory a server uses: the last good snapshot, swapped when the file changes.
pub struct InventoryStore {
    path: PathBuf,
    current: ArcSwap<Snapshot>,
    seen: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for InventoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InventoryStore({})", self.path.display())
    }
}

impl InventoryStore {
    /// Loads the file once; a broken first file is an error.
    pub fn load(path: &Path) -> Result<Arc<Self>, InventoryError> {
        let bytes = std::fs::read(path).map_err(|source| InventoryError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let snap = Snapshot::parse(
            &String::from_utf8_lossy(&bytes),
            &path.display().to_string(),
        )?;
        Ok(Arc::new(Self {
            path: path.into(),
            current: ArcSwap::from_pointee(snap),
            seen: Mutex::new(bytes),
        }))
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Re-reads the file; swaps in a changed, valid inventory. `Ok(true)` when swapped.
    pub fn reload(&self) -> Result<bool, InventoryError> {
        let bytes = std::fs::read(&self.path).map_err(|source| InventoryError::Read {
            path: self.path.display().to_string(),
            source,
        })?;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if *seen == bytes {
            return Ok(false);
        }
        let snap = Snapshot::parse(
            &String::from_utf8_lossy(&bytes),
            &self.path.display().to_string(),
        )?;
        self.current.store(Arc::new(snap));
        *seen = bytes;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case::ctyun_elb("ctyun", "elb", None)]
    #[case::ctyun_clb(
        "ctyun",
        "clb",
        Some("kind: \"clb\" is not a ctyun load balancer kind (use elb)")
    )]
    #[case::alibaba_clb("alibaba", "clb", None)]
    #[case::alibaba_nlb("alibaba", "nlb", None)]
    #[case::alibaba_elb("alibaba", "elb-dedicated", Some("(use clb or nlb)"))]
    #[case::huawei_shared("huawei", "elb-shared", None)]
    #[case::huawei_dedicated("huawei", "elb-dedicated", None)]
    #[case::huawei_clb("huawei", "clb", Some("(use elb-shared or elb-dedicated)"))]
    #[case::volcengine_clb("volcengine", "clb", None)]
    #[case::volcengine_nlb("volcengine", "nlb", None)]
    #[case::volcengine_elb("volcengine", "elb", Some("is not a volcengine load balancer kind"))]
    fn kinds_are_checked_per_provider(
        #[case] provider: &str,
        #[case] kind: &str,
        #[case] error: Option<&str>,
    ) {
        let text =
            format!("loadBalancers:\n  - {{id: lb-1, provider: {provider}, kind: {kind}}}\n");
        match (Snapshot::parse(&text, "inv.yaml"), error) {
            (Ok(s), None) => assert_eq!(s.len(), 1),
            (Err(e), Some(want)) => {
                let e = e.to_string();
                assert!(
                    e.contains(want) && e.contains("loadBalancers[0] (id lb-1)"),
                    "{e}"
                );
            }
            (other, want) => panic!(
                "{provider}/{kind}: {:?}, wanted {want:?}",
                other.map(|s| s.len())
            ),
        }
    }

    const GOOD: &str = r#"
loadBalancers:
  - id: lb-2ze123
    provider: alibaba
    kind: clb
    addressType: intranet
    vpcId: vpc-abc
    createdBy: user
    listeners:
      - {port: 443, protocol: HTTPS, owner: external}
    attachedFrom:
      - {cluster: prod-b, namespace: shop, name: web}
"#;

    #[test]
    fn parses_the_documented_format() {
        let s = Snapshot::parse(GOOD, "inv.yaml").unwrap();
        let lb = s.get(Provider::Alibaba, "lb-2ze123").unwrap();
        assert_eq!(lb.address_type, Some(AddressType::Intranet));
        assert_eq!(lb.listeners[0].port, 443);
        assert_eq!(lb.attached_from[0].cluster, "prod-b");
        assert!(s.get(Provider::Ctyun, "lb-2ze123").is_none());
    }

    #[test]
    fn errors_name_file_entry_and_field() {
        let e = Snapshot::parse(
            &GOOD.replace("addressType: intranet", "addressType: private"),
            "inv.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("inv.yaml") && e.contains("loadBalancers[0].addressType"),
            "{e}"
        );
        let e = Snapshot::parse(&GOOD.replace("vpcId", "vpc"), "inv.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("loadBalancers[0]") && e.contains("vpc"), "{e}");
        let e = Snapshot::parse(&GOOD.replace("HTTPS", "QUIC"), "inv.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("loadBalancers[0] (id lb-2ze123): listeners[0].protocol"),
            "{e}"
        );
        let twice = format!("{GOOD}{}", GOOD.replace("loadBalancers:\n", ""));
        let e = Snapshot::parse(&twice, "inv.yaml").unwrap_err().to_string();
        assert!(e.contains("duplicate"), "{e}");
    }

    #[rstest::rstest]
    #[case::none("", Ok(None))]
    #[case::empty("\n    serverGroups: []", Ok(Some(0)))]
    #[case::two(
        "\n    serverGroups: [{id: sgp-a, type: Instance}, {id: sgp-b, type: Ip}]",
        Ok(Some(2))
    )]
    #[case::bad_type(
        "\n    serverGroups: [{id: sgp-a, type: ip}]",
        Err("serverGroups[0].type: \"ip\" is not Instance or Ip")
    )]
    #[case::no_id(
        "\n    serverGroups: [{id: \"\", type: Ip}]",
        Err("serverGroups[0].id is empty")
    )]
    #[case::no_type("\n    serverGroups: [{id: sgp-a}]", Err("loadBalancers[0]"))]
    #[case::on_a_clb("\n    serverGroups: []\n    kind: clb", Err("only an Alibaba NLB"))]
    fn nlb_server_groups_are_optional_and_checked(
        #[case] extra: &str,
        #[case] want: Result<Option<usize>, &str>,
    ) {
        let text = format!(
            "loadBalancers:\n  - id: nlb-1\n    provider: alibaba\n    vpcId: vpc-1{extra}\n"
        );
        match (Snapshot::parse(&text, "inv.yaml"), want) {
            (Ok(s), Ok(n)) => {
                let lb = s.get(Provider::Alibaba, "nlb-1").unwrap();
                assert_eq!(lb.server_groups.as_ref().map(|g| g.len()), n);
                // What `inventory` writes reads back the same, absent staying absent.
                let back = serde_saphyr::to_string(&InventoryFile {
                    load_balancers: vec![lb.clone()],
                })
                .unwrap();
                let again = Snapshot::parse(&back, "back.yaml").unwrap();
                assert_eq!(again.get(Provider::Alibaba, "nlb-1"), Some(lb));
            }
            (Err(e), Err(want)) => {
                let e = e.to_string();
                assert!(e.contains(want), "{e}");
            }
            (got, want) => panic!("{extra}: {:?}, wanted {want:?}", got.map(|s| s.len())),
        }
    }

    /// A CLB's chargeType and spec (the CLB API's InstanceChargeType and LoadBalancerSpec).
    #[rstest::rstest]
    #[case::none("", Ok((None, None)))]
    #[case::spec("\n    chargeType: PayBySpec", Ok((Some(ChargeType::PayBySpec), None)))]
    #[case::lcu("\n    chargeType: PayByCLCU", Ok((Some(ChargeType::PayByClcu), None)))]
    #[case::api_spelling_only("\n    chargeType: paybyspec", Err("loadBalancers[0]"))]
    #[case::on_an_nlb(
        "\n    chargeType: PayBySpec\n    kind: nlb",
        Err("chargeType: only an Alibaba CLB")
    )]
    #[case::live_spec(
        "\n    chargeType: PayBySpec\n    spec: slb.s3.large",
        Ok((Some(ChargeType::PayBySpec), Some("slb.s3.large")))
    )]
    #[case::spec_alone("\n    spec: slb.s2.small", Ok((None, Some("slb.s2.small"))))]
    #[case::spec_kept_as_written("\n    spec: Slb.S9.Super", Ok((None, Some("Slb.S9.Super"))))]
    #[case::spec_empty("\n    spec: \"\"", Err("spec is empty"))]
    #[case::spec_on_an_nlb(
        "\n    spec: slb.s2.small\n    kind: nlb",
        Err("spec: only an Alibaba CLB (kind: clb) has an instance spec")
    )]
    fn clb_charge_type_and_spec_are_optional_and_checked(
        #[case] extra: &str,
        #[case] want: Result<(Option<ChargeType>, Option<&str>), &str>,
    ) {
        let text = format!("loadBalancers:\n  - id: lb-1\n    provider: alibaba{extra}\n");
        match (Snapshot::parse(&text, "inv.yaml"), want) {
            (Ok(s), Ok((c, spec))) => {
                let lb = s.get(Provider::Alibaba, "lb-1").unwrap();
                assert_eq!((lb.charge_type, lb.spec.as_deref()), (c, spec));
                // What `inventory` writes reads back the same, absent staying absent.
                let back = serde_saphyr::to_string(&InventoryFile {
                    load_balancers: vec![lb.clone()],
                })
                .unwrap();
                assert_eq!(back.contains("chargeType"), c.is_some(), "{back}");
                assert_eq!(back.contains("spec:"), spec.is_some(), "{back}");
                let again = Snapshot::parse(&back, "back.yaml").unwrap();
                assert_eq!(again.get(Provider::Alibaba, "lb-1"), Some(lb));
            }
            (Err(e), Err(want)) => {
                let e = e.to_string();
                assert!(e.contains(want), "{e}");
            }
            (got, want) => panic!("{extra}: {:?}, wanted {want:?}", got.map(|s| s.len())),
        }
    }

    #[rstest::rstest]
    #[case::external("external", true)]
    #[case::this_cluster("shop/web", true)]
    #[case::other_cluster("shop/web (cluster c-other9999)", true)]
    #[case::no_namespace("web", false)]
    #[case::three_parts("c2/shop/web", false)]
    #[case::empty_cluster("shop/web (cluster )", false)]
    #[case::unclosed("shop/web (cluster c2", false)]
    #[case::free_text("my listener", false)]
    fn listener_owners_take_the_documented_forms(#[case] owner: &str, #[case] valid: bool) {
        let text = GOOD.replace("owner: external", &format!("owner: \"{owner}\""));
        match Snapshot::parse(&text, "inv.yaml") {
            Ok(s) => {
                assert!(valid, "{owner} was accepted");
                let lb = s.get(Provider::Alibaba, "lb-2ze123").unwrap();
                assert_eq!(lb.listeners[0].owner, owner);
            }
            Err(e) => {
                let e = e.to_string();
                assert!(!valid, "{owner}: {e}");
                assert!(
                    e.contains("loadBalancers[0] (id lb-2ze123): listeners[0].owner"),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn families() {
        assert_eq!(protocol_family("https"), Some(Family::Tcp));
        assert_eq!(protocol_family("TLS"), Some(Family::Tcp));
        assert_eq!(protocol_family("UDP"), Some(Family::Udp));
        assert_eq!(protocol_family("SCTP"), None);
    }
}

#[cfg(test)]
mod reload_tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const ONE: &str = "loadBalancers:\n  - {id: lb-1, provider: ctyun, addressType: internet}\n";
    const TWO: &str = "loadBalancers:\n  - {id: lb-1, provider: ctyun, addressType: internet}\n  - {id: lb-2, provider: ctyun}\n";

    #[test]
    fn good_change_is_swapped_in_and_unchanged_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inventory.yaml");
        std::fs::write(&path, ONE).unwrap();
        let store = InventoryStore::load(&path).unwrap();
        assert_eq!(store.snapshot().len(), 1);
        assert!(!store.reload().unwrap());
        std::fs::write(&path, TWO).unwrap();
        assert!(store.reload().unwrap());
        assert_eq!(store.snapshot().len(), 2);
    }

    #[test]
    fn broken_file_keeps_the_last_good_inventory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inventory.yaml");
        std::fs::write(&path, ONE).unwrap();
        let store = InventoryStore::load(&path).unwrap();
        std::fs::write(&path, "loadBalancers: [{id: x}]\n").unwrap();
        let e = store.reload().unwrap_err().to_string();
        assert!(e.contains("provider"), "{e}");
        assert!(store.snapshot().get(Provider::Ctyun, "lb-1").is_some());
        std::fs::remove_file(&path).unwrap();
        assert!(store.reload().is_err());
        assert_eq!(store.snapshot().len(), 1);
    }

    #[test]
    fn configmap_symlink_swap_is_seen() {
        // A ConfigMap volume: inventory.yaml -> ..data/inventory.yaml, ..data -> ..<version>.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("..v1")).unwrap();
        std::fs::write(d.join("..v1/inventory.yaml"), ONE).unwrap();
        symlink("..v1", d.join("..data")).unwrap();
        symlink("..data/inventory.yaml", d.join("inventory.yaml")).unwrap();
        let store = InventoryStore::load(&d.join("inventory.yaml")).unwrap();
        std::fs::create_dir(d.join("..v2")).unwrap();
        std::fs::write(d.join("..v2/inventory.yaml"), TWO).unwrap();
        symlink("..v2", d.join("..data_tmp")).unwrap();
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
        assert!(store.reload().unwrap());
        assert_eq!(store.snapshot().len(), 2);
    }

    #[test]
    fn broken_first_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inventory.yaml");
        std::fs::write(&path, "loadBalancers: 5\n").unwrap();
        assert!(InventoryStore::load(&path).is_err());
    }
}
