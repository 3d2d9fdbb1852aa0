//! The platform API's webhook calls (`/v1/webhooks`) over the store's endpoints: the one
//! [`WebhookAdmin`] the all-in-one and the routers serve. The deliverers pick every change up
//! from the store within their refresh interval (`crate::webhooks`).

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use juegoland_api::FeedCursor;
use juegoland_api::webhooks::{
    ChangeWebhook, DEFAULT_OVERLAP_MS, MAX_OVERLAP_MS, PingResult, RegisterWebhook, RegisteredWebhook, ReplayWebhook,
    RotateSecret, RotatedSecret, WebhookAdmin, WebhookError, WebhookList, WebhookView,
};
use juegoland_store::{StoreError, WebhookEndpoint, WebhookEndpoints, WebhookOrigin};

use crate::webhook_config::{check_id, check_kinds, check_url};
use crate::webhooks::{HttpClient, Live, http_client, post};

/// A secret given through the API: at least this many characters…
const MIN_SECRET_CHARS: usize = 16;
/// …and at most this many.
const MAX_SECRET_CHARS: usize = 256;
/// How often a change lost to a concurrent one is tried again before answering UNAVAILABLE.
const CHANGE_ATTEMPTS: usize = 3;

/// The webhook endpoints of a store (or of a router's directory on the cluster's PostgreSQL).
pub struct StoreWebhooks {
    endpoints: Arc<dyn WebhookEndpoints>,
    client: HttpClient,
    /// How long a ping may take.
    ping_timeout: Duration,
}

impl StoreWebhooks {
    pub fn new(endpoints: Arc<dyn WebhookEndpoints>, ping_timeout: Duration) -> Self {
        Self { endpoints, client: http_client(), ping_timeout }
    }

    async fn row(&self, id: &str) -> Result<WebhookEndpoint, WebhookError> {
        self.endpoints.webhook_endpoint(id).await.map_err(store_error)?.ok_or_else(|| WebhookError::NotFound(id.into()))
    }

    async fn view(&self, row: &WebhookEndpoint) -> Result<WebhookView, WebhookError> {
        let cursor = self.endpoints.webhook_cursor(&row.id).await.map_err(store_error)?;
        let now_ms = juegoland_actors::shell::now_ms();
        Ok(WebhookView {
            id: row.id.clone(),
            url: row.url.clone(),
            kinds: row.kinds.clone(),
            origin: row.origin.as_str().to_owned(),
            created_ms: row.created_ms,
            updated_ms: row.updated_ms,
            previous_secret_until_ms: row.previous_until_ms.filter(|until| *until > now_ms),
            cursor: cursor.as_ref().map(|c| c.cursor).unwrap_or_default().to_string(),
            held_by: cursor.and_then(|c| c.claimed_by),
        })
    }

    /// Reads the endpoint, changes it with `change` and writes it at the version it read,
    /// again from the read when a concurrent change came first. The endpoint as written.
    async fn rewrite(
        &self,
        id: &str,
        change: impl Fn(&WebhookEndpoint) -> Result<WebhookEndpoint, WebhookError>,
    ) -> Result<WebhookEndpoint, WebhookError> {
        for _ in 0..CHANGE_ATTEMPTS {
            let stored = self.row(id).await?;
            if stored.origin == WebhookOrigin::Config {
                return Err(WebhookError::Configured(id.into()));
            }
            let changed = WebhookEndpoint {
                version: stored.version + 1,
                updated_ms: juegoland_actors::shell::now_ms(),
                ..change(&stored)?
            };
            if self.endpoints.update_webhook(&changed, stored.version).await.map_err(store_error)? {
                return Ok(changed);
            }
        }
        Err(WebhookError::Unavailable(format!("webhook endpoint {id:?} is being changed by another call; try again")))
    }
}

#[async_trait::async_trait]
impl WebhookAdmin for StoreWebhooks {
    async fn register(&self, request: RegisterWebhook) -> Result<RegisteredWebhook, WebhookError> {
        check_id(&request.id).map_err(|message| WebhookError::Invalid { field: "id", message })?;
        check_url(&request.url).map_err(|message| WebhookError::Invalid { field: "url", message })?;
        let kinds = request.kinds.as_deref().map(kinds).transpose()?;
        let secret = secret(request.secret)?;
        let start = match request.after.as_deref() {
            Some(after) => cursor(after)?,
            None => self.endpoints.feed_end().await.map_err(store_error)?,
        };
        let now_ms = juegoland_actors::shell::now_ms();
        let row = WebhookEndpoint {
            id: request.id.clone(),
            url: request.url,
            kinds,
            secret: secret.clone().into_bytes(),
            previous_secret: None,
            previous_until_ms: None,
            origin: WebhookOrigin::Api,
            version: 1,
            created_ms: now_ms,
            updated_ms: now_ms,
        };
        if !self.endpoints.create_webhook(&row, Some(start)).await.map_err(store_error)? {
            return Err(WebhookError::Exists(request.id));
        }
        Ok(RegisteredWebhook { webhook: self.view(&row).await?, secret })
    }

    async fn list(&self) -> Result<WebhookList, WebhookError> {
        let rows = self.endpoints.webhook_endpoints().await.map_err(store_error)?;
        let mut webhooks = Vec::with_capacity(rows.len());
        for row in &rows {
            webhooks.push(self.view(row).await?);
        }
        Ok(WebhookList { webhooks })
    }

    async fn describe(&self, id: &str) -> Result<WebhookView, WebhookError> {
        self.view(&self.row(id).await?).await
    }

    async fn change(&self, id: &str, change: ChangeWebhook) -> Result<WebhookView, WebhookError> {
        if let Some(url) = &change.url {
            check_url(url).map_err(|message| WebhookError::Invalid { field: "url", message })?;
        }
        let new_kinds = change.kinds.as_ref().map(|k| k.as_deref().map(kinds).transpose()).transpose()?;
        let row = self
            .rewrite(id, |stored| {
                Ok(WebhookEndpoint {
                    url: change.url.clone().unwrap_or_else(|| stored.url.clone()),
                    kinds: new_kinds.clone().unwrap_or_else(|| stored.kinds.clone()),
                    ..stored.clone()
                })
            })
            .await?;
        self.view(&row).await
    }

    async fn remove(&self, id: &str) -> Result<(), WebhookError> {
        if self.endpoints.remove_webhook(id).await.map_err(store_error)? {
            Ok(())
        } else {
            Err(WebhookError::NotFound(id.into()))
        }
    }

    async fn rotate(&self, id: &str, request: RotateSecret) -> Result<RotatedSecret, WebhookError> {
        let overlap_ms = request.overlap_ms.unwrap_or(DEFAULT_OVERLAP_MS);
        if overlap_ms > MAX_OVERLAP_MS {
            let message = format!("{overlap_ms} ms is more than 30 days ({MAX_OVERLAP_MS} ms)");
            return Err(WebhookError::Invalid { field: "overlapMs", message });
        }
        let secret = secret(request.secret)?;
        let row = self
            .rewrite(id, |stored| {
                let until =
                    juegoland_actors::shell::now_ms().saturating_add(i64::try_from(overlap_ms).unwrap_or(i64::MAX));
                Ok(WebhookEndpoint {
                    secret: secret.clone().into_bytes(),
                    previous_secret: (overlap_ms > 0).then(|| stored.secret.clone()),
                    previous_until_ms: (overlap_ms > 0).then_some(until),
                    ..stored.clone()
                })
            })
            .await?;
        Ok(RotatedSecret { webhook: self.view(&row).await?, secret })
    }

    async fn replay(&self, id: &str, request: ReplayWebhook) -> Result<WebhookView, WebhookError> {
        let after = cursor(&request.after)?;
        if !self.endpoints.move_webhook_cursor(id, after).await.map_err(store_error)? {
            return Err(WebhookError::NotFound(id.into()));
        }
        self.describe(id).await
    }

    async fn ping(&self, id: &str) -> Result<PingResult, WebhookError> {
        let row = self.row(id).await?;
        let live = Live::of(row).map_err(WebhookError::Internal)?;
        let body = juegoland_api::platform::WebhookBody { webhook: id, events: &[], ping: true };
        let body = Bytes::from(serde_json::to_vec(&body).map_err(|e| WebhookError::Internal(e.to_string()))?);
        let started = std::time::Instant::now();
        let (outcome, status, detail) = post(&self.client, &live, &body, self.ping_timeout).await;
        Ok(PingResult {
            outcome: outcome.label().to_owned(),
            status,
            detail,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// The kinds checked, as stored.
fn kinds(kinds: &[String]) -> Result<Vec<String>, WebhookError> {
    check_kinds(kinds).map_err(|message| WebhookError::Invalid { field: "kinds", message })
}

/// The secret given, checked, or a new one: `whsec_` and 64 hex digits (256 random bits).
fn secret(given: Option<String>) -> Result<String, WebhookError> {
    if let Some(secret) = given {
        let chars = secret.chars().count();
        if !(MIN_SECRET_CHARS..=MAX_SECRET_CHARS).contains(&chars) {
            let message =
                format!("a secret is {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters (this one: {chars})");
            return Err(WebhookError::Invalid { field: "secret", message });
        }
        return Ok(secret);
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| WebhookError::Internal(format!("random secret: {e}")))?;
    Ok(format!("whsec_{}", hex::encode(bytes)))
}

/// A feed cursor as `GET /v1/feed` gives it.
fn cursor(text: &str) -> Result<FeedCursor, WebhookError> {
    FeedCursor::parse(text).ok_or_else(|| WebhookError::Invalid {
        field: "after",
        message: format!("{text:?} is not a feed cursor (as GET /v1/feed gives them; 0-0: the feed's beginning)"),
    })
}

fn store_error(e: StoreError) -> WebhookError {
    match e {
        StoreError::Unavailable(m) => WebhookError::Unavailable(m),
        StoreError::Conflict { .. } => WebhookError::Unavailable(e.to_string()),
        StoreError::Corrupt(m) => WebhookError::Internal(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_secret_is_long_and_random_and_a_given_one_is_bounded() {
        let (a, b) = (secret(None).unwrap(), secret(None).unwrap());
        assert!(a.starts_with("whsec_") && a.len() == 70 && a != b, "{a} {b}");
        assert_eq!(secret(Some("s".repeat(16))).unwrap(), "s".repeat(16));
        for bad in ["short".to_owned(), "s".repeat(257)] {
            let e = secret(Some(bad)).unwrap_err();
            assert_eq!(e.field(), Some("secret"), "{e}");
        }
        assert_eq!(cursor("0-0").unwrap(), FeedCursor::default());
        assert_eq!(cursor("later").unwrap_err().field(), Some("after"));
    }
}
