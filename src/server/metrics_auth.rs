//! Authentication and authorization of the metrics port, the way kubebuilder projects secure
//! theirs: the caller's bearer token goes to the API server in a TokenReview, and the user
//! it names must be allowed `get` on the request's non-resource URL (`/metrics`, `/report`)
//! by a SubjectAccessReview. `/report` lists offending Services by name, so an anonymous
//! scrape of the pod must not read it. Decisions are cached for a few seconds per token
//! and path, so a scraper costs the API server two creates per cache period at most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

/// How long a decision is reused for the same token and path.
const CACHE_TTL: Duration = Duration::from_secs(10);
/// Cached decisions kept at most; past that the cache starts over.
const CACHE_MAX: usize = 1024;

/// What the API server said about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// The token is not valid (401).
    Unauthenticated(String),
    /// The user may not `get` the path (403).
    Forbidden(String),
}

/// Decisions by (token hash, path), with when they were made.
type Cache = HashMap<(Vec<u8>, String), (Instant, Decision)>;

pub struct MetricsAuth {
    client: Client,
    cache: Mutex<Cache>,
}

impl MetricsAuth {
    pub fn new(client: Client) -> Arc<Self> {
        Arc::new(Self {
            client,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Asks the API server (or the cache) whether `token` may `get` `path`.
    pub async fn decide(&self, token: &str, path: &str) -> Result<Decision, kube::Error> {
        let key = (
            ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
                .as_ref()
                .to_vec(),
            path.to_string(),
        );
        if let Some((at, d)) = self.lock().get(&key)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(d.clone());
        }
        let decision = self.ask(token, path).await?;
        let mut cache = self.lock();
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(key, (Instant::now(), decision.clone()));
        Ok(decision)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn ask(&self, token: &str, path: &str) -> Result<Decision, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => user,
            _ => {
                return Ok(Decision::Unauthenticated(
                    status
                        .error
                        .filter(|e| !e.is_empty())
                        .unwrap_or_else(|| "the token is not valid".into()),
                ));
            }
        };
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some("get".into()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answered = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        let status = answered.status.unwrap_or_default();
        let who = user.username.unwrap_or_default();
        Ok(if status.allowed {
            Decision::Allowed
        } else {
            Decision::Forbidden(format!(
                "{who} may not get {path}{}",
                status
                    .reason
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ))
        })
    }
}

fn refuse(status: StatusCode, message: String) -> Response {
    let mut r = (status, message).into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

/// The middleware in front of the metrics routes.
pub async fn require(State(auth): State<Arc<MetricsAuth>>, req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let Some(token) = token else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required (Authorization: Bearer <token>)\n".into(),
        );
    };
    let path = req.uri().path().to_string();
    match auth.decide(&token, &path).await {
        Ok(Decision::Allowed) => next.run(req).await,
        Ok(Decision::Unauthenticated(why)) => {
            refuse(StatusCode::UNAUTHORIZED, format!("unauthorized: {why}\n"))
        }
        Ok(Decision::Forbidden(why)) => {
            refuse(StatusCode::FORBIDDEN, format!("forbidden: {why}\n"))
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot verify a metrics caller with the API server");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot verify the token with the API server; try again\n".into(),
            )
        }
    }
}
