//! An instance's role credentials from the metadata service, the IMDSv2 way both Alibaba
//! Cloud's and Volcengine's SDKs use: a session token (PUT), the role's name when none is
//! given, then the role's credentials with the token in a header. Each cloud's file holds its
//! paths, headers and field names ([`Flavor`]).

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::Value;

use super::answer::{self, send};
use super::issuer::{Ctx, Issued, Issuer};
use crate::cloud::auth::creds::Creds;
use crate::cloud::auth::sign::{Req, encode};
use crate::cloud::base::http::Answer;
use crate::cloud::base::outcome::CloudError;

/// What differs between the clouds' metadata services.
pub struct Flavor {
    /// For messages: "Alibaba Cloud ECS RAM role".
    pub name: &'static str,
    pub token_path: &'static str,
    /// The header asking for a token of `TOKEN_TTL` seconds.
    pub ttl_header: &'static str,
    /// The header carrying the token.
    pub token_header: &'static str,
    /// Lists the instance's roles; the first is used.
    pub roles_path: &'static str,
    pub roles_query: &'static [(&'static str, &'static str)],
    /// The role's name is appended.
    pub creds_path: &'static str,
    /// Access key id, secret, token and expiry field names.
    pub fields: [&'static str; 4],
    /// `Code` must say `Success` (Alibaba).
    pub code_success: bool,
    /// How long before expiry the SDK renews.
    pub margin: Duration,
}

/// The token's life, as both SDKs ask (six hours).
const TOKEN_TTL: &str = "21600";

/// One cloud's instance role.
pub struct Imds {
    pub flavor: &'static Flavor,
    /// `http://100.100.100.200`, or the configured endpoint.
    pub base: String,
    /// The role, or `None` to ask the service which one the instance has.
    pub role: Option<String>,
    /// Without a token, the call fails (else it goes on without one, as IMDSv1).
    pub token_required: bool,
}

impl Imds {
    fn get(&self, path: String, query: &[(&str, &str)], token: Option<&str>) -> Req {
        let mut headers = vec![("Accept".to_string(), "*/*".to_string())];
        if let Some(t) = token {
            headers.push((self.flavor.token_header.into(), t.into()));
        }
        Req {
            method: "GET",
            path,
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            headers,
            ..Default::default()
        }
    }

    async fn token(&self, ctx: &Ctx<'_>, deadline: Instant) -> Result<Option<String>, CloudError> {
        let req = Req {
            method: "PUT",
            path: self.flavor.token_path.into(),
            headers: vec![(self.flavor.ttl_header.into(), TOKEN_TTL.into())],
            ..Default::default()
        };
        let got = send(ctx.http, &self.base, &req, deadline)
            .await
            .and_then(|a| self.ok(a, "the metadata token"));
        match got {
            Ok(a) => {
                let t = String::from_utf8_lossy(&a.body).trim().to_string();
                if t.is_empty() {
                    return Err(CloudError::Other(format!(
                        "{}: the metadata token is empty",
                        self.base
                    )));
                }
                Ok(Some(t))
            }
            // IMDSv1 (no token) is allowed: go on without one, as the SDK does.
            Err(_) if !self.token_required => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn ok(&self, a: Answer, what: &str) -> Result<Answer, CloudError> {
        if a.status == 200 {
            return Ok(a);
        }
        let cause = format!("{what} at {}: HTTP {}", self.base, a.status);
        Err(match a.status {
            429 => CloudError::Throttled(cause),
            401 | 403 => CloudError::Auth(cause),
            404 => CloudError::Other(format!("{cause} (no such role on this instance?)")),
            s if s >= 500 => CloudError::Server(cause),
            _ => CloudError::Other(cause),
        })
    }

    async fn role(
        &self,
        ctx: &Ctx<'_>,
        token: Option<&str>,
        deadline: Instant,
    ) -> Result<String, CloudError> {
        if let Some(r) = &self.role {
            return Ok(r.clone());
        }
        let req = self.get(
            self.flavor.roles_path.into(),
            self.flavor.roles_query,
            token,
        );
        let a = send(ctx.http, &self.base, &req, deadline).await?;
        let a = self.ok(a, "the role list")?;
        first_role(&String::from_utf8_lossy(&a.body)).ok_or_else(|| {
            CloudError::Auth(format!(
                "{}: the instance has no role (attach one, or choose another credential source)",
                self.base
            ))
        })
    }

    async fn exchange(&self, ctx: &Ctx<'_>) -> Result<Issued, CloudError> {
        let deadline = Instant::now() + ctx.budget;
        let token = self.token(ctx, deadline).await?;
        let role = self.role(ctx, token.as_deref(), deadline).await?;
        let path = format!("{}{}", self.flavor.creds_path, encode(&role));
        let req = self.get(path, &[], token.as_deref());
        let a = send(ctx.http, &self.base, &req, deadline).await?;
        let what = format!("the role {role}'s credentials");
        let a = self.ok(a, &what)?;
        let v: Value = answer::json(&a, &what)?;
        let f = self.flavor.fields;
        if self.flavor.code_success && v["Code"].as_str() != Some("Success") {
            return Err(CloudError::Other(format!(
                "{what}: Code is {}, not Success",
                v["Code"]
            )));
        }
        let creds = Creds {
            access_key_id: answer::field(&v, f[0], &what)?.to_string(),
            access_key_secret: answer::field(&v, f[1], &what)?.to_string(),
            security_token: v[f[2]].as_str().map(str::to_string),
            project_id: None,
        };
        let expires = answer::expiry(answer::field(&v, f[3], &what)?, &what)?;
        Ok(answer::issued(creds, expires, self.flavor.margin))
    }
}

/// The first role of a list: a JSON array, or names one a line.
fn first_role(body: &str) -> Option<String> {
    let names: Vec<String> = match serde_json::from_str::<Value>(body) {
        Ok(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => body.lines().map(str::to_string).collect(),
    };
    names
        .into_iter()
        .map(|n| n.trim().to_string())
        .find(|n| !n.is_empty())
}

impl Issuer for Imds {
    fn describe(&self) -> String {
        match &self.role {
            Some(r) => format!("{} {r} (metadata at {})", self.flavor.name, self.base),
            None => format!("{} (metadata at {})", self.flavor.name, self.base),
        }
    }

    fn issue<'a>(&'a self, ctx: &'a Ctx<'a>) -> BoxFuture<'a, Result<Issued, CloudError>> {
        Box::pin(self.exchange(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_lists() {
        assert_eq!(first_role("EcsRole\n").as_deref(), Some("EcsRole"));
        assert_eq!(first_role(r#"["a","b"]"#).as_deref(), Some("a"));
        assert_eq!(first_role("\n \n"), None);
        assert_eq!(first_role("[]"), None);
    }
}
