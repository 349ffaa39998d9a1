//! Which cloud calls go through an HTTPS proxy: `HTTPS_PROXY` and `NO_PROXY` as curl and Go
//! read them. hyper-util's matcher parses the proxy URL (its `user:pass@` becomes a
//! `Proxy-Authorization` header) and matches names and addresses; this file adds what it
//! does not do: `host:port` entries, `*.` names, Go's order of the two spellings, and the
//! destinations never proxied (loopback, link-local and the metadata services).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use hyper::Uri;
use hyper::header::HeaderValue;
use hyper_util::client::proxy::matcher::Matcher;

/// The clouds' instance metadata services: reached from the node itself, never through a proxy.
const METADATA: [Ipv4Addr; 3] = [
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud ECS
    Ipv4Addr::new(169, 254, 169, 254), // Huawei Cloud ECS (and link-local anyway)
    Ipv4Addr::new(100, 96, 0, 96),     // Volcengine ECS
];

/// Why the proxy settings cannot be used. Never carries the proxy's credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    #[error("{var} is not a proxy URL (want http://[user:password@]host:port)")]
    BadUrl { var: &'static str },
    #[error(
        "{var}: only an http:// proxy is supported (the cloud API's TLS runs inside its CONNECT tunnel), not {scheme}://"
    )]
    Scheme { var: &'static str, scheme: String },
}

/// An HTTPS proxy and the destinations that bypass it.
pub struct Proxy {
    /// `http://host:port/`, without credentials.
    uri: Uri,
    auth: Option<HeaderValue>,
    /// Entries without a port.
    any_port: Matcher,
    /// Entries with a port, by port.
    by_port: HashMap<u16, Matcher>,
    /// `NO_PROXY` as given (no secrets), for the log.
    no_proxy: String,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("host", &self.host())
            .field("no_proxy", &self.no_proxy)
            .finish_non_exhaustive()
    }
}

/// The first of `names` set to something not empty (Go's order: the upper-case name first).
fn first(
    env: &dyn Fn(&str) -> Option<String>,
    names: [&'static str; 2],
) -> Option<(&'static str, String)> {
    names.into_iter().find_map(|n| {
        env(n)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(|v| (n, v))
    })
}

impl Proxy {
    /// Reads `HTTPS_PROXY` (else `https_proxy`) and `NO_PROXY` (else `no_proxy`) from `env`;
    /// `None` when no proxy is set. Like Go, an upper-case name that is set and not empty wins.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Self>, ProxyError> {
        let Some((var, url)) = first(env, ["HTTPS_PROXY", "https_proxy"]) else {
            return Ok(None);
        };
        let no_proxy = first(env, ["NO_PROXY", "no_proxy"])
            .map(|(_, v)| v)
            .unwrap_or_default();
        Self::new(var, &url, &no_proxy).map(Some)
    }

    /// `url` (named `var` in errors) with the `no_proxy` list.
    pub fn new(var: &'static str, url: &str, no_proxy: &str) -> Result<Self, ProxyError> {
        // A scheme hyper-util would take but the tunnel cannot (socks, https) is refused
        // here rather than silently ignored.
        if let Some((scheme, _)) = url.split_once("://")
            && !scheme.eq_ignore_ascii_case("http")
        {
            return Err(ProxyError::Scheme {
                var,
                scheme: scheme.to_ascii_lowercase(),
            });
        }
        let probe = Uri::from_static("https://lbguard.invalid/");
        let intercept = Matcher::builder()
            .https(url.to_string())
            .build()
            .intercept(&probe)
            .filter(|i| i.uri().host().is_some_and(|h| !h.is_empty()))
            .ok_or(ProxyError::BadUrl { var })?;
        let matcher = |entries: &[&str]| {
            Matcher::builder()
                .https(url.to_string())
                .no(entries.join(","))
                .build()
        };
        let mut any_port = Vec::new();
        let mut ported: HashMap<u16, Vec<&str>> = HashMap::new();
        for entry in no_proxy.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            match split_port(entry) {
                (host, Some(port)) => ported.entry(port).or_default().push(host),
                (host, None) => any_port.push(host),
            }
        }
        Ok(Self {
            uri: intercept.uri().clone(),
            auth: intercept.basic_auth().cloned(),
            any_port: matcher(&any_port),
            by_port: ported
                .into_iter()
                .map(|(port, hosts)| (port, matcher(&hosts)))
                .collect(),
            no_proxy: no_proxy.to_string(),
        })
    }

    /// The proxy's `http://host:port/`, without credentials.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The `Proxy-Authorization` value from the URL's `user:password@` (marked sensitive).
    pub fn auth(&self) -> Option<&HeaderValue> {
        self.auth.as_ref()
    }

    /// `host:port` of the proxy, for logs and messages.
    pub fn host(&self) -> String {
        let host = self.uri.host().unwrap_or_default();
        let port = self.uri.port_u16().unwrap_or(80);
        format!("{host}:{port}")
    }

    /// `NO_PROXY` as given, for the log.
    pub fn no_proxy(&self) -> &str {
        &self.no_proxy
    }

    /// Whether a call to `https://host:port` goes through the proxy. `host` as in a URI
    /// (an IPv6 address in brackets or not); it is never resolved.
    pub fn proxies(&self, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if never_proxied(host) {
            return false;
        }
        let Ok(uri) = (if host.contains(':') {
            format!("https://[{host}]/")
        } else {
            format!("https://{host}/")
        })
        .parse::<Uri>() else {
            // Not a host a URI can hold: hyper refuses it before any connection.
            return false;
        };
        let bypass = |m: &Matcher| m.intercept(&uri).is_none();
        !(bypass(&self.any_port) || self.by_port.get(&port).is_some_and(bypass))
    }
}

/// Loopback (`localhost` and the loopback addresses; names are never resolved), link-local,
/// and the metadata services.
fn never_proxied(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback() || ip.is_link_local() || METADATA.contains(&ip),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unicast_link_local()
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| never_proxied(&v4.to_string()))
        }
        Err(_) => false,
    }
}

/// `host:port`, `[v6]:port` or `[v6]` into the host and its port; a bare IPv6 address or a
/// CIDR has none. `*.example.com` is `.example.com` (Go reads it so; curl has only `*`).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (entry, None),
        }
    } else {
        match entry.split_once(':') {
            Some((host, port)) if !port.contains(':') => match port.parse() {
                Ok(port) => (host, Some(port)),
                Err(_) => (entry, None),
            },
            _ => (entry, None),
        }
    };
    let host = match host.strip_prefix("*.") {
        Some(_) => &host[1..],
        None => host,
    };
    (host, port)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[rstest]
    #[case::unset(&[], None)]
    #[case::upper(&[("HTTPS_PROXY", "http://up:3128")], Some("up:3128"))]
    #[case::lower(&[("https_proxy", "http://low:3128")], Some("low:3128"))]
    #[case::upper_wins_as_in_go(&[("HTTPS_PROXY", "http://up:1"), ("https_proxy", "http://low:2")], Some("up:1"))]
    #[case::empty_upper_falls_to_lower(&[("HTTPS_PROXY", " "), ("https_proxy", "http://low:2")], Some("low:2"))]
    #[case::no_scheme_is_http(&[("HTTPS_PROXY", "proxy.corp:8080")], Some("proxy.corp:8080"))]
    #[case::default_port_80(&[("HTTPS_PROXY", "http://proxy.corp")], Some("proxy.corp:80"))]
    #[case::http_proxy_is_not_read(&[("HTTP_PROXY", "http://p:1"), ("ALL_PROXY", "http://p:2")], None)]
    fn the_proxy_variable(
        #[case] vars: &'static [(&'static str, &'static str)],
        #[case] host: Option<&str>,
    ) {
        let p = Proxy::from_env(&env(vars)).unwrap();
        assert_eq!(p.map(|p| p.host()).as_deref(), host);
    }

    #[test]
    fn no_proxy_upper_case_wins() {
        let e = env(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", "upper.example"),
            ("no_proxy", "lower.example"),
        ]);
        let p = Proxy::from_env(&e).unwrap().unwrap();
        assert!(!p.proxies("upper.example", 443));
        assert!(p.proxies("lower.example", 443));
        let e = env(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "lower.example")]);
        let p = Proxy::from_env(&e).unwrap().unwrap();
        assert!(!p.proxies("lower.example", 443));
    }

    #[rstest]
    #[case::socks(
        "socks5://p:1080",
        "HTTPS_PROXY: only an http:// proxy is supported (the cloud API's TLS runs inside its CONNECT tunnel), not socks5://"
    )]
    #[case::https(
        "https://p:443",
        "HTTPS_PROXY: only an http:// proxy is supported (the cloud API's TLS runs inside its CONNECT tunnel), not https://"
    )]
    #[case::garbage(
        "http://exa mple:1",
        "HTTPS_PROXY is not a proxy URL (want http://[user:password@]host:port)"
    )]
    #[case::no_host(
        "http://:3128",
        "HTTPS_PROXY is not a proxy URL (want http://[user:password@]host:port)"
    )]
    fn bad_proxy_urls_are_refused(#[case] url: &str, #[case] message: &str) {
        let e = Proxy::new("HTTPS_PROXY", url, "").unwrap_err();
        assert_eq!(e.to_string(), message);
    }

    #[test]
    fn credentials_become_a_header_and_stay_out_of_debug_and_errors() {
        let p = Proxy::new("HTTPS_PROXY", "http://us%40er:s3cr%3At@proxy.corp:3128", "").unwrap();
        // base64("us@er:s3cr:t")
        assert_eq!(p.auth().unwrap(), "Basic dXNAZXI6czNjcjp0");
        assert!(p.auth().unwrap().is_sensitive());
        assert_eq!(p.uri().to_string(), "http://proxy.corp:3128/");
        let shown = format!("{p:?} {} {}", p.host(), p.uri());
        assert!(
            !shown.contains("s3cr") && !shown.contains("us%40er"),
            "{shown}"
        );
        let e = Proxy::new("HTTPS_PROXY", "socks5://user:s3cr@p:1", "").unwrap_err();
        assert!(!format!("{e} {e:?}").contains("s3cr"));
        assert!(
            Proxy::new("HTTPS_PROXY", "http://p:1", "")
                .unwrap()
                .auth()
                .is_none()
        );
    }

    #[rstest]
    // Domains: the name and every subdomain, with or without a leading dot (curl).
    #[case::domain_exact("example.com", "example.com", 443, false)]
    #[case::domain_sub("example.com", "slb.cn-hangzhou.example.com", 443, false)]
    #[case::domain_not_a_suffix_of_a_label("example.com", "notexample.com", 443, true)]
    #[case::dot_domain_sub(".example.com", "api.example.com", 443, false)]
    #[case::dot_domain_itself_as_curl(".example.com", "example.com", 443, false)]
    #[case::star_dot_domain_as_go("*.example.com", "api.example.com", 443, false)]
    #[case::case_insensitive("Example.COM", "API.example.com", 443, false)]
    #[case::other_domain("example.com", "example.org", 443, true)]
    #[case::list_with_spaces(" a.test , example.com ,", "x.example.com", 443, false)]
    // Addresses and CIDRs; names are never resolved to be matched against them.
    #[case::ip_exact("10.1.2.3", "10.1.2.3", 443, false)]
    #[case::ip_other("10.1.2.3", "10.1.2.4", 443, true)]
    #[case::cidr("10.0.0.0/8", "10.200.1.1", 443, false)]
    #[case::cidr_outside("10.0.0.0/8", "11.0.0.1", 443, true)]
    #[case::cidr_name_not_resolved("10.0.0.0/8", "internal.example", 443, true)]
    #[case::ipv6("2001:db8::1", "[2001:db8::1]", 443, false)]
    #[case::ipv6_cidr("2001:db8::/32", "2001:db8:1::5", 443, false)]
    // host:port entries match that port only (Go).
    #[case::host_port_same("example.com:8443", "api.example.com", 8443, false)]
    #[case::host_port_other("example.com:8443", "api.example.com", 443, true)]
    #[case::ip_port("10.1.2.3:443", "10.1.2.3", 443, false)]
    #[case::ip_port_other("10.1.2.3:443", "10.1.2.3", 8443, true)]
    #[case::ipv6_port("[2001:db8::1]:443", "2001:db8::1", 443, false)]
    #[case::ipv6_port_other("[2001:db8::1]:443", "2001:db8::1", 80, true)]
    // `*` bypasses everything.
    #[case::star("*", "anything.example", 443, false)]
    #[case::star_in_list("a.test,*", "anything.example", 443, false)]
    #[case::empty("", "example.com", 443, true)]
    // Never proxied, whatever NO_PROXY says.
    #[case::localhost("", "localhost", 443, false)]
    #[case::localhost_upper("", "LOCALHOST", 443, false)]
    #[case::loopback_v4("", "127.0.0.1", 443, false)]
    #[case::loopback_v4_range("", "127.8.9.10", 443, false)]
    #[case::loopback_v6("", "[::1]", 443, false)]
    #[case::loopback_v4_mapped("", "::ffff:127.0.0.1", 443, false)]
    #[case::alibaba_metadata("", "100.100.100.200", 80, false)]
    #[case::huawei_metadata("", "169.254.169.254", 80, false)]
    #[case::volcengine_metadata("", "100.96.0.96", 80, false)]
    #[case::link_local("", "169.254.1.2", 443, false)]
    #[case::link_local_v6("", "fe80::1", 443, false)]
    // A name that resolves to loopback is still proxied: lbguard never resolves it.
    #[case::name_not_resolved("", "lbguard-mock.test", 443, true)]
    #[case::sub_of_localhost_is_a_name("", "api.localhost.example", 443, true)]
    fn no_proxy_entries(
        #[case] no_proxy: &str,
        #[case] host: &str,
        #[case] port: u16,
        #[case] proxied: bool,
    ) {
        let p = Proxy::new("HTTPS_PROXY", "http://proxy.corp:3128", no_proxy).unwrap();
        assert_eq!(
            p.proxies(host, port),
            proxied,
            "{host}:{port} with NO_PROXY={no_proxy:?}"
        );
    }

    #[rstest]
    #[case::plain("example.com", ("example.com", None))]
    #[case::port("example.com:8443", ("example.com", Some(8443)))]
    #[case::star_dot("*.example.com", (".example.com", None))]
    #[case::ipv6_bare("2001:db8::1", ("2001:db8::1", None))]
    #[case::ipv6_cidr("fe80::/10", ("fe80::/10", None))]
    #[case::ipv6_bracket_port("[2001:db8::1]:443", ("2001:db8::1", Some(443)))]
    #[case::ipv6_bracket("[2001:db8::1]", ("2001:db8::1", None))]
    #[case::cidr_v4("10.0.0.0/8", ("10.0.0.0/8", None))]
    #[case::bad_port("example.com:http", ("example.com:http", None))]
    fn entries_split_into_host_and_port(#[case] entry: &str, #[case] want: (&str, Option<u16>)) {
        assert_eq!(split_port(entry), want);
    }
}
