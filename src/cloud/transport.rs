//! One transport for every cloud: take a token, sign, send under a deadline, classify.
//! A cloud module builds its requests and maps its answers ([`Reply`]); nothing else decides
//! what an answer means. The metrics count each call by its outcome, not its HTTP status.
//! A call needs no `Cloud`: the [`Channel`] it goes through is handed to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cloud::auth::creds::Creds;
use crate::cloud::auth::sign::Stamp;
use crate::cloud::base::Clock;
use crate::cloud::base::bucket::Bucket;
use crate::cloud::base::http::Http;
use crate::cloud::base::metrics::{ApiLabels, CloudMetrics, OperationLabels};
use crate::cloud::base::outcome::{CloudError, Reply};
use crate::cloud::base::request::Req;
use crate::vocab::provider::Provider;

/// One call may take this long in the background (admissions have their own budget).
const BACKGROUND_BUDGET: Duration = Duration::from_secs(10);
/// A message from the cloud is cut to this many characters (after the scrubbing).
const MESSAGE_CHARS: usize = 200;

/// Where requests go: `https://host[:port]` and a path prefix every request goes under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `https://authority`, as the client connects.
    pub base: String,
    /// The `Host` header as the client sends it (the default port left out, as hyper does).
    pub host: String,
    /// `""`, or `/prefix` (no trailing slash).
    pub prefix: String,
}

impl Endpoint {
    /// Parses `https://host[:port][/prefix]`; a query, a fragment, user info or a prefix with
    /// characters that would need encoding are refused (lbguard could not sign them as sent).
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| format!("\"{url}\" is not an https URL"))?;
        if rest.contains(['?', '#', '@']) {
            return Err(format!(
                "\"{url}\": a query, a fragment or user info cannot be part of the endpoint"
            ));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.starts_with(':') {
            return Err(format!("\"{url}\" names no host"));
        }
        if let Some((_, port)) = authority.rsplit_once(':')
            && !authority.ends_with(']')
            && port.parse::<u16>().is_err()
        {
            return Err(format!("\"{url}\": the port \"{port}\" is not a number"));
        }
        let prefix = path.trim_end_matches('/');
        if let Some(c) = prefix
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "-._~/".contains(*c)))
        {
            return Err(format!(
                "\"{url}\": the path prefix has '{c}'; use only letters, digits, '-', '.', '_', '~' and '/'"
            ));
        }
        let host = authority
            .strip_suffix(":443")
            .unwrap_or(authority)
            .to_string();
        Ok(Self {
            base: format!("https://{authority}"),
            host,
            prefix: prefix.to_string(),
        })
    }
}

/// How a call gets its rate-limit token.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tokens {
    /// An admission: now, or the answer is "rate limit" at once.
    Now,
    /// The CLI: waiting until this instant.
    Until(Instant),
    /// The refresh: waiting, leaving half the burst to admissions.
    Background,
}

/// What every call to one provider goes through and is counted on: the HTTPS client, the
/// rate limit, the endpoint and the metrics. One per `Cloud`, handed to each call.
pub(crate) struct Channel {
    pub(crate) provider: Provider,
    pub(crate) endpoint: Option<Endpoint>,
    pub(crate) cluster_id: Option<String>,
    pub(crate) http: Http,
    pub(crate) bucket: Bucket,
    pub(crate) clock: Clock,
    pub(crate) metrics: CloudMetrics,
    /// Set when a list by ids answered for others (the filter ignored): the refresh reads one
    /// id at a time from then on.
    one_at_a_time: AtomicBool,
}

impl Channel {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        provider: Provider,
        endpoint: Option<Endpoint>,
        cluster_id: Option<String>,
        http: Http,
        bucket: Bucket,
        clock: Clock,
        metrics: CloudMetrics,
    ) -> Self {
        Self {
            provider,
            endpoint,
            cluster_id,
            http,
            bucket,
            clock,
            metrics,
            one_at_a_time: AtomicBool::new(false),
        }
    }

    pub(crate) fn now(&self) -> Instant {
        (self.clock)()
    }

    /// Whether lists by ids are not to be trusted (see [`Self::lists_ignore_ids`]).
    pub(crate) fn one_at_a_time(&self) -> bool {
        self.one_at_a_time.load(Ordering::Relaxed)
    }

    /// A list by ids answered for ids it was not asked about: its filter is ignored, so batches
    /// cannot be trusted to be what they say. Said once; the refresh reads one id at a time.
    pub(crate) fn lists_ignore_ids(&self, operation: &str) {
        if !self.one_at_a_time.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                provider = %self.provider,
                operation,
                "the cloud's list ignored its filter of load balancer ids; the refresh reads one load balancer at a time from now on"
            );
        }
    }

    /// Every page answered, the list did not end: counted as its own outcome.
    pub(crate) fn count_incomplete(&self, r: &CloudError) {
        if let e @ CloudError::Incomplete(_) = r {
            self.metrics
                .requests
                .get_or_create(&ApiLabels {
                    provider: self.provider.as_str(),
                    operation: "ListListeners",
                    result: e.label(),
                })
                .inc();
        }
    }
}

/// What a cloud module calls to reach its API, for one look-up.
pub(crate) struct Call<'a> {
    pub(crate) channel: &'a Channel,
    pub region: &'a str,
    pub creds: Arc<Creds>,
    /// The admission's deadline; `None` in the background.
    pub(crate) deadline: Option<Instant>,
    pub(crate) tokens: Tokens,
}

impl<'a> Call<'a> {
    /// A call of the background refresh: no deadline, waiting for its tokens.
    pub(crate) fn background(channel: &'a Channel, region: &'a str, creds: Arc<Creds>) -> Self {
        Self {
            channel,
            region,
            creds,
            deadline: None,
            tokens: Tokens::Background,
        }
    }
}

/// How a cloud maps an answer: the HTTP status and the JSON body.
pub(crate) type Classify = fn(u16, &Value) -> Reply;

impl Call<'_> {
    pub fn cluster_id(&self) -> Option<&str> {
        self.channel.cluster_id.as_deref()
    }

    /// One request: `None` is the cloud's documented "not found".
    pub async fn request(
        &self,
        operation: &'static str,
        public: impl FnOnce() -> String,
        mut req: Req,
        sign: impl FnOnce(&mut Req, &Creds, &Stamp),
        classify: Classify,
    ) -> Result<Option<Value>, CloudError> {
        let r = self
            .attempt(operation, public, &mut req, sign, classify)
            .await;
        let label = match &r {
            Ok(Reply::Ok(_)) => "ok",
            Ok(Reply::NotFound) => "not_found",
            Ok(Reply::Fail(e)) | Err(e) => e.label(),
        };
        self.channel
            .metrics
            .requests
            .get_or_create(&ApiLabels {
                provider: self.channel.provider.as_str(),
                operation,
                result: label,
            })
            .inc();
        match r {
            Ok(Reply::Ok(v)) => Ok(Some(v)),
            Ok(Reply::NotFound) => Ok(None),
            Ok(Reply::Fail(e)) | Err(e) => Err(e.map_text(|m| self.scrub(m))),
        }
    }

    async fn attempt(
        &self,
        operation: &'static str,
        public: impl FnOnce() -> String,
        req: &mut Req,
        sign: impl FnOnce(&mut Req, &Creds, &Stamp),
        classify: Classify,
    ) -> Result<Reply, CloudError> {
        let cloud = self.channel;
        let endpoint = match &cloud.endpoint {
            Some(e) => e.clone(),
            None => Endpoint::parse(&public()).map_err(CloudError::BadEndpoint)?,
        };
        match self.tokens {
            Tokens::Now if !cloud.bucket.try_take(cloud.now()) => return Err(CloudError::Budget),
            Tokens::Now => {}
            Tokens::Until(until) => {
                if !cloud.bucket.take_until(until).await {
                    return Err(CloudError::Budget);
                }
            }
            Tokens::Background => cloud.bucket.take_background().await,
        }
        req.host = endpoint.host.clone();
        req.path = format!("{}{}", endpoint.prefix, req.path);
        sign(req, &self.creds, &Stamp::now());
        let budget = match self.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => BACKGROUND_BUDGET,
        };
        let started = Instant::now();
        let answer = cloud.http.send(&endpoint.base, req, budget).await;
        cloud
            .metrics
            .latency
            .get_or_create(&OperationLabels {
                provider: cloud.provider.as_str(),
                operation,
            })
            .observe(started.elapsed().as_secs_f64());
        let answer = answer?;
        let Ok(body) = serde_json::from_slice::<Value>(&answer.body) else {
            return Err(not_the_api(answer.status, &answer.content_type));
        };
        Ok(classify(answer.status, &body))
    }

    pub fn scrub(&self, message: &str) -> String {
        scrub(&self.creds, message)
    }
}

/// A message without anything of the credentials, shortened (in that order: a cut secret
/// would no longer be found).
pub(crate) fn scrub(creds: &Creds, message: &str) -> String {
    let mut m = message.to_string();
    for secret in [
        Some(&creds.access_key_id),
        Some(&creds.access_key_secret),
        creds.security_token.as_ref(),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    {
        m = m.replace(secret.as_str(), "***");
    }
    if m.chars().count() > MESSAGE_CHARS {
        m = m.chars().take(MESSAGE_CHARS).collect::<String>() + "…";
    }
    m
}

/// An answer that is not JSON is never the cloud's: a gateway's or a proxy's page.
fn not_the_api(status: u16, content_type: &str) -> CloudError {
    let what = if content_type.is_empty() {
        format!("HTTP {status} with a body that is not JSON")
    } else {
        format!("HTTP {status} with a {content_type} body, not JSON")
    };
    match status {
        429 => CloudError::Throttled(what),
        s if s >= 500 => CloudError::Server(what),
        _ => CloudError::BadEndpoint(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_the_prefix_and_sign_the_host_as_sent() {
        let e = Endpoint::parse("https://127.0.0.1:8443/x/").unwrap();
        assert_eq!(
            (e.base.as_str(), e.host.as_str(), e.prefix.as_str()),
            ("https://127.0.0.1:8443", "127.0.0.1:8443", "/x")
        );
        let e = Endpoint::parse("https://api.example:443").unwrap();
        assert_eq!(
            (e.base.as_str(), e.host.as_str(), e.prefix.as_str()),
            ("https://api.example:443", "api.example", "")
        );
        for bad in [
            "http://a",
            "https://",
            "https://a/b?c=1",
            "https://u@a",
            "https://a/b c",
            "https://a/%2F",
            "https://a:x",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_page_that_is_not_json_is_never_an_answer() {
        assert!(matches!(
            not_the_api(404, "text/html"),
            CloudError::BadEndpoint(m) if m.contains("404") && m.contains("text/html")
        ));
        assert!(matches!(not_the_api(200, ""), CloudError::BadEndpoint(_)));
        assert!(matches!(
            not_the_api(502, "text/html"),
            CloudError::Server(_)
        ));
    }

    #[test]
    fn a_secret_is_scrubbed_before_the_message_is_cut() {
        let creds = Creds {
            access_key_id: "AKID".into(),
            access_key_secret: "s".repeat(40),
            security_token: None,
            project_id: None,
        };
        // The secret straddles the cut: cutting first would leave its first part behind.
        let message = format!("{}{}", "x".repeat(180), "s".repeat(40));
        let m = scrub(&creds, &message);
        assert!(!m.contains("sssss"), "{m}");
        assert!(m.ends_with("***"), "{m}");
    }
}
