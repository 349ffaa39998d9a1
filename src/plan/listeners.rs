//! Listeners and server groups as ACK's controllers model them: one listener per Service
//! port (its protocol from `protocol-port`, an NLB port range from `listener-port-range`),
//! matched with the load balancer's by port and protocol (clbv1/listeners.go:645-708,
//! nlbv2/model_applier.go:436-500, 634-639), and one server group per port named after the
//! node port (or the target port with the ENI backend).

use super::side::Side;
use crate::vocab::go;
use crate::vocab::lb::LoadBalancer;

/// A listener the Service asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Want {
    pub port: i32,
    /// Upper case, as lbguard prints it; CLB sends it in lower case.
    pub proto: String,
    /// NLB `listener-port-range`: the range replaces the port.
    pub range: Option<(i64, i64)>,
    /// The server group's name for this port.
    pub group: String,
}

impl Want {
    pub fn label(&self) -> String {
        match self.range {
            Some((s, e)) => format!("{s}-{e}/{}", self.proto),
            None => format!("{}/{}", self.port, self.proto),
        }
    }
}

/// A listener on the load balancer: from the facts, or without them the ones the live
/// object asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Have {
    pub port: i32,
    pub proto: String,
    pub range: Option<(i64, i64)>,
    /// `external`, `namespace/name`, or `namespace/name (cluster)`.
    pub owner: String,
    pub mine: bool,
}

impl Have {
    pub fn label(&self) -> String {
        match self.range {
            Some((s, e)) => format!("{s}-{e}/{}", self.proto),
            None => format!("{}/{}", self.port, self.proto),
        }
    }

    /// The Service of this cluster it belongs to, when not this one.
    pub fn peer(&self) -> Option<String> {
        (!self.mine && self.owner != "external" && !self.owner.contains(' '))
            .then(|| self.owner.clone())
    }

    pub fn whose(&self) -> String {
        if self.mine {
            "this Service's".into()
        } else if self.owner == "external" {
            "made outside Kubernetes".into()
        } else {
            format!("Service {}'s", self.owner)
        }
    }

    /// Why it goes, and whose it was.
    pub fn whose_detail(&self, why: &str) -> String {
        if self.mine {
            why.to_string()
        } else {
            format!("{why}; it is {} listener, not this Service's", self.whose())
        }
    }

    pub fn matches(&self, w: &Want) -> bool {
        let port = match (w.range, self.range) {
            (None, None) => w.port == self.port,
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
        port && self.proto.eq_ignore_ascii_case(&w.proto)
    }
}

/// The listeners a Service asks for, or the controller's error for `protocol-port` or
/// `listener-port-range` (annotation-format says what is wrong).
pub(super) fn wanted(side: &Side, nlb: bool, cluster: &str) -> Result<Vec<Want>, String> {
    let mapped = side.get("protocol-port");
    let ranges = side.get("listener-port-range");
    let eni = side
        .svc
        .annotation(crate::providers::alibaba::nlb::BACKEND_TYPE)
        .map(|v| v == "eni");
    let mut out = Vec::new();
    for p in side.svc.ports() {
        let spec = p.protocol.as_deref().unwrap_or("TCP");
        let proto = match mapped {
            None => spec.to_ascii_uppercase(),
            Some(m) => protocol(m, p.port, nlb)?.unwrap_or_else(|| spec.to_ascii_uppercase()),
        };
        let range = match (nlb, ranges) {
            (true, Some(r)) => port_range(r, p.port)?,
            _ => None,
        };
        let mut ints = itoa::Buffer::new();
        let group_port = if eni == Some(true) {
            match &p.target_port {
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i)) => {
                    ints.format(*i)
                }
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => {
                    s.as_str()
                }
                None => ints.format(p.port),
            }
        } else {
            match p.node_port {
                Some(n) if n != 0 => ints.format(n),
                _ => "<nodePort>",
            }
        };
        let (svc, ns) = (
            side.svc.0.metadata.name.as_deref().unwrap_or_default(),
            side.svc
                .0
                .metadata
                .namespace
                .as_deref()
                .unwrap_or("default"),
        );
        let group = group_name(nlb, range, group_port, &proto, [svc, ns, cluster]);
        out.push(Want {
            port: p.port,
            proto,
            range,
            group,
        });
    }
    Ok(out)
}

/// A port's server group name: CLB `k8s/{port}/{svc}/{ns}/{cluster}`, NLB
/// `k8s.{port}.{proto}.{svc}.{ns}.{cluster}` (`{start}_{end}` for a port range). Joined in
/// place: `format!` cost some 1,800 instructions a port on every admission (BENCHMARKS.md, #41).
fn group_name(
    nlb: bool,
    range: Option<(i64, i64)>,
    port: &str,
    proto: &str,
    [svc, ns, cluster]: [&str; 3],
) -> String {
    if !nlb {
        return ["k8s/", port, "/", svc, "/", ns, "/", cluster].concat();
    }
    let mut out = String::with_capacity(64);
    out.push_str("k8s.");
    match range {
        Some((start, end)) => {
            let mut ints = itoa::Buffer::new();
            out.push_str(ints.format(start));
            out.push('_');
            out.push_str(ints.format(end));
        }
        None => out.push_str(port),
    }
    for part in [proto, svc, ns, cluster] {
        out.push('.');
        out.push_str(part);
    }
    out
}

/// `protocol-port` for one port, as `protocol` (clbv1/listeners.go:711-737) and
/// `nlbListenerProtocol` (nlbv2/listeners.go:620-644) read it: the first entry naming the
/// port; CLB takes http/https/tcp/udp exactly, NLB TCP/UDP/TCPSSL in any case.
fn protocol(value: &str, port: i32, nlb: bool) -> Result<Option<String>, String> {
    for entry in value.split(',') {
        let mut parts = entry.split(':');
        let (Some(proto), Some(named)) = (parts.next(), parts.next()) else {
            return Err(format!("protocol-port entry \"{entry}\" has no colon"));
        };
        let ok = if nlb {
            ["TCP", "UDP", "TCPSSL"]
                .iter()
                .any(|p| p.eq_ignore_ascii_case(proto))
        } else {
            ["http", "https", "tcp", "udp"].contains(&proto)
        };
        if !ok {
            return Err(format!(
                "protocol-port protocol \"{proto}\" is not one the controller takes"
            ));
        }
        if crate::vocab::checks::is_port_text(named, port) {
            return Ok(Some(proto.to_ascii_uppercase()));
        }
    }
    Ok(None)
}

/// `listener-port-range` for one port (nlbv2/listeners.go:77-110).
fn port_range(value: &str, port: i32) -> Result<Option<(i64, i64)>, String> {
    let port = port.to_string();
    for entry in value.split(',') {
        let pp: Vec<&str> = entry.split(':').collect();
        if pp.len() != 2 {
            return Err(format!(
                "listener-port-range entry \"{entry}\" is not <start>-<end>:<port>"
            ));
        }
        if pp[1] == port {
            let bounds: Vec<&str> = pp[0].split('-').collect();
            let [s, e] = bounds[..] else {
                return Err(format!(
                    "listener-port-range entry \"{entry}\" is not <start>-<end>:<port>"
                ));
            };
            let (s, e) = (go::atoi(s)?, go::atoi(e)?);
            if s >= e || s < 1 || e > 65535 {
                return Err(format!(
                    "listener-port-range entry \"{entry}\" is not a valid range"
                ));
            }
            return Ok(Some((s, e)));
        }
    }
    Ok(None)
}

/// The load balancer's listeners the controller compares with: the facts' (all of them,
/// or only this Service's when `only_mine`), or without facts those the live side asked
/// for, when the controller managed them.
pub(super) fn held(
    side: &Side,
    facts: Option<&LoadBalancer>,
    nlb: bool,
    only_mine: bool,
) -> Vec<Have> {
    let me = side.me();
    match facts {
        Some(lb) => lb
            .listeners
            .iter()
            .map(|l| Have {
                port: i32::from(l.port),
                proto: l.protocol.to_ascii_uppercase(),
                range: None,
                mine: l.owner == me,
                owner: l.owner.clone(),
            })
            .filter(|h| h.mine || !only_mine)
            .collect(),
        None if side.manages_listeners() => wanted(side, nlb, "")
            .unwrap_or_default()
            .into_iter()
            .map(|w| Have {
                port: w.port,
                proto: w.proto,
                range: w.range,
                owner: me.clone(),
                mine: true,
            })
            .collect(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::group_name;

    #[test]
    fn group_names_read_as_the_format_strings_they_replace() {
        let names = ["web", "shop", "c-1"];
        for (nlb, range, port, proto) in [
            (false, None, "31830", "TCP"),
            (false, Some((80, 90)), "<nodePort>", "HTTP"),
            (true, None, "8080", "TCPSSL"),
            (true, Some((-1, 4294967296)), "443", "UDP"),
        ] {
            let [svc, ns, cluster] = names;
            let expected = match (nlb, range) {
                (false, _) => format!("k8s/{port}/{svc}/{ns}/{cluster}"),
                (true, Some((s, e))) => format!("k8s.{s}_{e}.{proto}.{svc}.{ns}.{cluster}"),
                (true, None) => format!("k8s.{port}.{proto}.{svc}.{ns}.{cluster}"),
            };
            assert_eq!(group_name(nlb, range, port, proto, names), expected);
        }
    }
}
