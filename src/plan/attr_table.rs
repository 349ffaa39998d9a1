//! The attributes ACK's controllers set from annotations, one row each: what it belongs to,
//! what stays when the annotation goes, the call a change makes and the line where the
//! controller compares it only when set (`attrs` reads the table).

use super::side::code;

/// What an attribute belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum On {
    /// The load balancer.
    Lb,
    /// Each listener of these protocols (upper case; empty: every protocol).
    Listener(&'static [&'static str]),
    /// Each NLB server group of the Service.
    Group,
}

pub(super) struct Attr {
    pub suffix: &'static str,
    pub on: On,
    /// What stays when the annotation goes: "proxy protocol stays as it is".
    pub stays: &'static str,
    /// The call a change makes (listener calls are named per protocol for CLB).
    pub call: &'static str,
    pub source: &'static str,
}

const fn attr(
    suffix: &'static str,
    on: On,
    stays: &'static str,
    call: &'static str,
    source: &'static str,
) -> Attr {
    Attr {
        suffix,
        on,
        stays,
        call,
        source,
    }
}

const ALL: &[&str] = &[];
const L4: &[&str] = &["TCP", "UDP"];
const L7: &[&str] = &["HTTP", "HTTPS"];
const TCP: &[&str] = &["TCP"];
const HTTPS: &[&str] = &["HTTPS"];
const NOT_UDP: &[&str] = &["TCP", "HTTP", "HTTPS"];
const TCPSSL: &[&str] = &["TCPSSL"];
/// CLB listener calls are named per protocol (clbv1/listeners.go:404-572).
pub(super) const CLB_LISTENER: &str = "SetLoadBalancer<Protocol>ListenerAttribute";

/// CLB: clbv1/loadbalancer.go:112-240 (load balancer), clbv1/listeners.go:798-1099
/// (listeners).
pub(super) static CLB: &[Attr] = &[
    attr(
        "instance-charge-type",
        On::Lb,
        "the instance charge type stays as it is",
        "ModifyLoadBalancerInstanceChargeType",
        code!("controller/service/clbv1/loadbalancer.go:455-477"),
    ),
    attr(
        "spec",
        On::Lb,
        "the instance spec stays as it is",
        "ModifyLoadBalancerInstanceSpec",
        code!("controller/service/clbv1/loadbalancer.go:479-489"),
    ),
    attr(
        "charge-type",
        On::Lb,
        "the internet charge type stays as it is",
        "ModifyLoadBalancerInternetSpec",
        code!("controller/service/clbv1/loadbalancer.go:163-170"),
    ),
    attr(
        "bandwidth",
        On::Lb,
        "the bandwidth stays as it is",
        "ModifyLoadBalancerInternetSpec",
        code!("controller/service/clbv1/loadbalancer.go:171-179"),
    ),
    attr(
        "delete-protection",
        On::Lb,
        "deletion protection stays as it is",
        "SetLoadBalancerDeleteProtection",
        code!("controller/service/clbv1/loadbalancer.go:194-204"),
    ),
    attr(
        "modification-protection",
        On::Lb,
        "modification protection stays as it is",
        "SetLoadBalancerModificationProtection",
        code!("controller/service/clbv1/loadbalancer.go:206-217"),
    ),
    attr(
        "name",
        On::Lb,
        "the load balancer's name stays as it is",
        "SetLoadBalancerName",
        code!("controller/service/clbv1/loadbalancer.go:219-230"),
    ),
    attr(
        "additional-resource-tags",
        On::Lb,
        "the tags stay as they are",
        "TagResources",
        code!("controller/service/clbv1/loadbalancer.go:232-237"),
    ),
    attr(
        "scheduler",
        On::Listener(ALL),
        "the scheduling algorithm stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:815-821"),
    ),
    attr(
        "persistence-timeout",
        On::Listener(TCP),
        "the session persistence timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:822-829"),
    ),
    attr(
        "established-timeout",
        On::Listener(TCP),
        "the established connection timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:830-837"),
    ),
    attr(
        "proxy-protocol",
        On::Listener(L4),
        "proxy protocol stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:838-845"),
    ),
    attr(
        "http2-enabled",
        On::Listener(HTTPS),
        "HTTP/2 stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:857-863"),
    ),
    attr(
        "tls-cipher-policy",
        On::Listener(HTTPS),
        "the TLS cipher policy stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:865-871"),
    ),
    attr(
        "acl-status",
        On::Listener(ALL),
        "the access control list stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:875-881"),
    ),
    attr(
        "acl-id",
        On::Listener(ALL),
        "the access control list stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:882-889"),
    ),
    attr(
        "acl-type",
        On::Listener(ALL),
        "the access control list's type stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:890-897"),
    ),
    attr(
        "idle-timeout",
        On::Listener(L7),
        "the idle timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:898-906"),
    ),
    attr(
        "request-timeout",
        On::Listener(L7),
        "the request timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:907-915"),
    ),
    attr(
        "sticky-session",
        On::Listener(L7),
        "sticky sessions stay as they are",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:917-924"),
    ),
    attr(
        "sticky-session-type",
        On::Listener(L7),
        "the sticky session type stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:925-932"),
    ),
    attr(
        "cookie",
        On::Listener(L7),
        "the session cookie stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:933-940"),
    ),
    attr(
        "cookie-timeout",
        On::Listener(L7),
        "the cookie timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:941-948"),
    ),
    attr(
        "connection-drain",
        On::Listener(L4),
        "connection draining stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:950-957"),
    ),
    attr(
        "connection-drain-timeout",
        On::Listener(L4),
        "the connection drain timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:958-966"),
    ),
    attr(
        "xforwardedfor-proto",
        On::Listener(L7),
        "the X-Forwarded-Proto header stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:970-976"),
    ),
    attr(
        "xforwardedfor-slbport",
        On::Listener(L7),
        "the XForwardedFor_SLBPORT header stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:977-983"),
    ),
    attr(
        "xforwardedfor-clientsrcport",
        On::Listener(L7),
        "the XForwardedFor_ClientSrcPort header stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:984-990"),
    ),
    attr(
        "health-check-connect-port",
        On::Listener(ALL),
        "the health check port stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:994-1000"),
    ),
    attr(
        "health-check-interval",
        On::Listener(ALL),
        "the health check interval stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1001-1007"),
    ),
    attr(
        "healthy-threshold",
        On::Listener(ALL),
        "the healthy threshold stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1008-1014"),
    ),
    attr(
        "unhealthy-threshold",
        On::Listener(ALL),
        "the unhealthy threshold stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1015-1021"),
    ),
    attr(
        "health-check-type",
        On::Listener(TCP),
        "the health check type stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1022-1029"),
    ),
    attr(
        "health-check-domain",
        On::Listener(NOT_UDP),
        "the health check domain stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1030-1037"),
    ),
    attr(
        "health-check-uri",
        On::Listener(NOT_UDP),
        "the health check path stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1038-1045"),
    ),
    attr(
        "health-check-httpcode",
        On::Listener(NOT_UDP),
        "the healthy HTTP codes stay as they are",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1046-1053"),
    ),
    attr(
        "health-check-connect-timeout",
        On::Listener(L4),
        "the health check timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1054-1061"),
    ),
    attr(
        "health-check-switch",
        On::Listener(L4),
        "the health check stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1062-1069"),
    ),
    attr(
        "health-check-flag",
        On::Listener(L7),
        "the health check stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1070-1077"),
    ),
    attr(
        "health-check-timeout",
        On::Listener(L7),
        "the health check timeout stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1078-1085"),
    ),
    attr(
        "health-check-method",
        On::Listener(L7),
        "the health check method stays as it is",
        CLB_LISTENER,
        code!("controller/service/clbv1/listeners.go:1086-1093"),
    ),
];

/// NLB: nlbv2/loadbalancer.go:177-305 (load balancer), nlbv2/listeners.go:351-510
/// (listeners), nlbv2/server_groups.go:311-470 (server groups). Address type, zones,
/// security groups, bandwidth package and server group type have their own steps (`nlb`).
pub(super) static NLB: &[Attr] = &[
    attr(
        "ipv6-address-type",
        On::Lb,
        "the IPv6 address type stays as it is",
        "EnableLoadBalancerIpv6Internet",
        code!("controller/service/nlbv2/loadbalancer.go:263-270"),
    ),
    attr(
        "name",
        On::Lb,
        "the load balancer's name stays as it is",
        "UpdateLoadBalancerAttribute",
        code!("controller/service/nlbv2/loadbalancer.go:272-278"),
    ),
    attr(
        "cross-zone-enabled",
        On::Lb,
        "cross-zone load balancing stays as it is",
        "UpdateLoadBalancerAttribute",
        code!("controller/service/nlbv2/loadbalancer.go:280-286"),
    ),
    attr(
        "additional-resource-tags",
        On::Lb,
        "the tags stay as they are",
        "TagResources",
        code!("controller/service/nlbv2/loadbalancer.go:292-296"),
    ),
    attr(
        "proxy-protocol",
        On::Listener(ALL),
        "proxy protocol stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:376-382"),
    ),
    attr(
        "ppv2-pvl-ep-id-enabled",
        On::Listener(ALL),
        "the proxy protocol's PrivateLink endpoint id stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:383-389"),
    ),
    attr(
        "ppv2-pvl-eps-id-enabled",
        On::Listener(ALL),
        "the proxy protocol's PrivateLink service id stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:390-396"),
    ),
    attr(
        "ppv2-pvl-vpc-id-enabled",
        On::Listener(ALL),
        "the proxy protocol's VPC id stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:397-403"),
    ),
    attr(
        "idle-timeout",
        On::Listener(ALL),
        "the idle timeout stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:405-410"),
    ),
    attr(
        "cps",
        On::Listener(ALL),
        "the new-connection rate limit stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:411-415"),
    ),
    attr(
        "cert-id",
        On::Listener(TCPSSL),
        "the certificate stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:420-426"),
    ),
    attr(
        "cacert-id",
        On::Listener(TCPSSL),
        "the CA certificate stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:428-434"),
    ),
    attr(
        "cacert",
        On::Listener(TCPSSL),
        "mutual TLS stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:443-449"),
    ),
    attr(
        "tls-cipher-policy",
        On::Listener(TCPSSL),
        "the TLS security policy stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:450-456"),
    ),
    attr(
        "alpn",
        On::Listener(TCPSSL),
        "ALPN stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:457-463"),
    ),
    attr(
        "alpn-policy",
        On::Listener(TCPSSL),
        "the ALPN policy stays as it is",
        "UpdateListenerAttribute",
        code!("controller/service/nlbv2/listeners.go:464-470"),
    ),
    attr(
        "scheduler",
        On::Group,
        "the scheduling algorithm stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:325-331"),
    ),
    attr(
        "connection-drain",
        On::Group,
        "connection draining stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:332-338"),
    ),
    attr(
        "connection-drain-timeout",
        On::Group,
        "the connection drain timeout stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:339-345"),
    ),
    attr(
        "preserve-client-ip",
        On::Group,
        "client IP preservation stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:346-352"),
    ),
    attr(
        "health-check-flag",
        On::Group,
        "the health check stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:363-379"),
    ),
    attr(
        "health-check-type",
        On::Group,
        "the health check type stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:380-386"),
    ),
    attr(
        "health-check-connect-port",
        On::Group,
        "the health check port stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:387-393"),
    ),
    attr(
        "healthy-threshold",
        On::Group,
        "the healthy threshold stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:394-400"),
    ),
    attr(
        "unhealthy-threshold",
        On::Group,
        "the unhealthy threshold stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:401-407"),
    ),
    attr(
        "health-check-connect-timeout",
        On::Group,
        "the health check timeout stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:408-414"),
    ),
    attr(
        "health-check-interval",
        On::Group,
        "the health check interval stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:415-421"),
    ),
    attr(
        "health-check-domain",
        On::Group,
        "the health check domain stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:422-428"),
    ),
    attr(
        "health-check-uri",
        On::Group,
        "the health check path stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:429-435"),
    ),
    attr(
        "health-check-method",
        On::Group,
        "the health check method stays as it is",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:436-442"),
    ),
    attr(
        "health-check-httpcode",
        On::Group,
        "the healthy HTTP codes stay as they are",
        "UpdateServerGroupAttribute",
        code!("controller/service/nlbv2/server_groups.go:443-449"),
    ),
];
