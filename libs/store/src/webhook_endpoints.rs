//! Webhook endpoints as data (migration 0016): what the platform API registers and the
//! deliverers read while they run, beside each endpoint's cursor and lease (0015).
//!
//! [`WebhookEndpoints`] is the role's trait: every [`Store`](crate::Store) has it, and so
//! has [`PgDirectory`](crate::PgDirectory), the router's connection to the cluster's
//! PostgreSQL, so a router manages endpoints without a store of its own. The two SQL
//! backends run the same statements (times are the writer's milliseconds, secrets bytes),
//! written once here ([`sql_webhook_endpoints`]).

use juegoland_api::FeedCursor;

use crate::StoreError;

/// Where an endpoint comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookOrigin {
    /// Registered through the platform API (`POST /v1/webhooks`).
    Api,
    /// A deliverer's start-up configuration (`--webhook`, `--webhooks-file`).
    Config,
}

impl WebhookOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Config => "config",
        }
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        match text {
            "api" => Ok(Self::Api),
            "config" => Ok(Self::Config),
            other => Err(StoreError::Corrupt(format!("webhook origin {other:?}"))),
        }
    }
}

/// One endpoint's row.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// 1 to 64 characters of `a-z`, `0-9`, `-`, `_`, `.`; also its cursor's name.
    pub id: String,
    /// `http://` or `https://`.
    pub url: String,
    /// The feed kinds sent; `None`: every kind.
    pub kinds: Option<Vec<String>>,
    /// The HMAC key that signs every delivery.
    pub secret: Vec<u8>,
    /// A rotated-out key that signs deliveries too until `previous_until_ms`.
    pub previous_secret: Option<Vec<u8>>,
    pub previous_until_ms: Option<i64>,
    pub origin: WebhookOrigin,
    /// Grows with every change, from 1.
    pub version: u64,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl WebhookEndpoint {
    /// The keys that sign a delivery at `now_ms`: the secret, then the previous one while
    /// its overlap lasts.
    pub fn signing_secrets(&self, now_ms: i64) -> Vec<&[u8]> {
        let mut keys = vec![self.secret.as_slice()];
        if let (Some(previous), Some(until)) = (&self.previous_secret, self.previous_until_ms)
            && now_ms < until
        {
            keys.push(previous);
        }
        keys
    }
}

impl std::fmt::Debug for WebhookEndpoint {
    /// Without the secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("id", &self.id)
            .field("kinds", &self.kinds)
            .field("previous_until_ms", &self.previous_until_ms)
            .field("origin", &self.origin)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A webhook endpoint's cursor row as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookCursor {
    pub cursor: FeedCursor,
    /// Who holds a live claim on it; `None` when released or lapsed.
    pub claimed_by: Option<String>,
    pub epoch: u64,
}

/// The webhook endpoints and their cursors. Every method is one atomic operation.
#[async_trait::async_trait]
pub trait WebhookEndpoints: Send + Sync + 'static {
    /// Every endpoint, by id.
    async fn webhook_endpoints(&self) -> Result<Vec<WebhookEndpoint>, StoreError>;
    async fn webhook_endpoint(&self, id: &str) -> Result<Option<WebhookEndpoint>, StoreError>;
    /// Writes a new endpoint (false, and nothing written, when its id is taken). With
    /// `start`, its cursor is set there and taken from any holder (its epoch grows); without,
    /// the cursor its id already has stays (the feed's start when it has none).
    async fn create_webhook(&self, endpoint: &WebhookEndpoint, start: Option<FeedCursor>) -> Result<bool, StoreError>;
    /// Replaces `endpoint.id`'s row while its version is still `expected_version` (false,
    /// and nothing written, otherwise or when it is gone).
    async fn update_webhook(&self, endpoint: &WebhookEndpoint, expected_version: u64) -> Result<bool, StoreError>;
    /// Removes the endpoint (false when there is none). Its cursor stays, so the same id
    /// written again without a start resumes where it was.
    async fn remove_webhook(&self, id: &str) -> Result<bool, StoreError>;
    /// Moves the endpoint's cursor to `to`, backwards or forwards, taking it from its holder
    /// (the epoch grows, so the holder's next advance fails and it resumes from `to`). False
    /// when no endpoint has the id.
    async fn move_webhook_cursor(&self, id: &str, to: FeedCursor) -> Result<bool, StoreError>;
    /// `id`'s cursor and holder, or `None` before its first claim.
    async fn webhook_cursor(&self, id: &str) -> Result<Option<WebhookCursor>, StoreError>;
    /// The feed's end now: every event a reader can read now is at or before it (a few
    /// just before may be after it; none written later is before it).
    async fn feed_end(&self) -> Result<FeedCursor, StoreError>;
}

/// An endpoint row: id, url, kinds, secret, previous secret, until, origin, version,
/// created, updated.
pub(crate) type EndpointRow =
    (String, String, Option<String>, Vec<u8>, Option<Vec<u8>>, Option<i64>, String, i64, i64, i64);

/// The columns of [`EndpointRow`], in order.
pub(crate) const ENDPOINT_COLUMNS: &str =
    "id, url, kinds, secret, previous_secret, previous_until_ms, origin, version, created_ms, updated_ms";

pub(crate) fn endpoint_from_row(row: EndpointRow) -> Result<WebhookEndpoint, StoreError> {
    let (id, url, kinds, secret, previous_secret, previous_until_ms, origin, version, created_ms, updated_ms) = row;
    let kinds = kinds
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("webhook {id}: kinds: {e}")))?;
    Ok(WebhookEndpoint {
        kinds,
        secret,
        previous_secret,
        previous_until_ms,
        origin: WebhookOrigin::parse(&origin)?,
        version: crate::rows::to_u64(version, "webhook version")?,
        created_ms,
        updated_ms,
        id,
        url,
    })
}

/// The endpoint's kinds and version as their columns.
pub(crate) fn endpoint_columns(endpoint: &WebhookEndpoint) -> Result<(Option<String>, i64), StoreError> {
    let kinds = endpoint.kinds.as_ref().map(|k| crate::rows::encode("webhook kinds", k)).transpose()?;
    Ok((kinds, crate::rows::to_i64(endpoint.version, "webhook version")?))
}

/// Implements [`WebhookEndpoints`] for `$store`, whose `pool` field is a sqlx pool of
/// `$dialect`, reading the feed's end with `$feed_end` (one row, the cursor's txid and seq).
macro_rules! sql_webhook_endpoints {
    ($store:ty, $dialect:expr, $feed_end:expr) => {
        #[async_trait::async_trait]
        impl $crate::webhook_endpoints::WebhookEndpoints for $store {
            async fn webhook_endpoints(
                &self,
            ) -> Result<Vec<$crate::webhook_endpoints::WebhookEndpoint>, $crate::StoreError> {
                use $crate::webhook_endpoints::{ENDPOINT_COLUMNS, EndpointRow, endpoint_from_row};
                let rows: Vec<EndpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY id"
                )))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| $crate::rows::store_error($dialect, "list the webhook endpoints", e))?;
                rows.into_iter().map(endpoint_from_row).collect()
            }

            async fn webhook_endpoint(
                &self,
                id: &str,
            ) -> Result<Option<$crate::webhook_endpoints::WebhookEndpoint>, $crate::StoreError> {
                use $crate::webhook_endpoints::{ENDPOINT_COLUMNS, EndpointRow, endpoint_from_row};
                let row: Option<EndpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1"
                )))
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| $crate::rows::store_error($dialect, "read a webhook endpoint", e))?;
                row.map(endpoint_from_row).transpose()
            }

            async fn create_webhook(
                &self,
                endpoint: &$crate::webhook_endpoints::WebhookEndpoint,
                start: Option<juegoland_api::FeedCursor>,
            ) -> Result<bool, $crate::StoreError> {
                use $crate::webhook_endpoints::{ENDPOINT_COLUMNS, endpoint_columns};
                let fail = |e| $crate::rows::store_error($dialect, "register a webhook endpoint", e);
                let (kinds, version) = endpoint_columns(endpoint)?;
                let mut tx = self.pool.begin().await.map_err(fail)?;
                let written = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO webhook_endpoints ({ENDPOINT_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING"
                )))
                .bind(&endpoint.id)
                .bind(&endpoint.url)
                .bind(kinds)
                .bind(&endpoint.secret)
                .bind(&endpoint.previous_secret)
                .bind(endpoint.previous_until_ms)
                .bind(endpoint.origin.as_str())
                .bind(version)
                .bind(endpoint.created_ms)
                .bind(endpoint.updated_ms)
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
                if written.rows_affected() != 1 {
                    return Ok(false);
                }
                if let Some(start) = start {
                    sqlx::query(
                        "INSERT INTO webhook_cursors AS w (endpoint, txid, seq, claim_epoch) VALUES ($1, $2, $3, 1)
                         ON CONFLICT (endpoint) DO UPDATE
                         SET txid = excluded.txid, seq = excluded.seq, claim_epoch = w.claim_epoch + 1",
                    )
                    .bind(&endpoint.id)
                    .bind($crate::rows::to_i64(start.txid, "webhook cursor")?)
                    .bind($crate::rows::to_i64(start.seq, "webhook cursor")?)
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
                }
                tx.commit().await.map_err(fail)?;
                Ok(true)
            }

            async fn update_webhook(
                &self,
                endpoint: &$crate::webhook_endpoints::WebhookEndpoint,
                expected_version: u64,
            ) -> Result<bool, $crate::StoreError> {
                let (kinds, version) = $crate::webhook_endpoints::endpoint_columns(endpoint)?;
                let written = sqlx::query(
                    "UPDATE webhook_endpoints
                     SET url = $2, kinds = $3, secret = $4, previous_secret = $5, previous_until_ms = $6,
                         origin = $7, version = $8, updated_ms = $9
                     WHERE id = $1 AND version = $10",
                )
                .bind(&endpoint.id)
                .bind(&endpoint.url)
                .bind(kinds)
                .bind(&endpoint.secret)
                .bind(&endpoint.previous_secret)
                .bind(endpoint.previous_until_ms)
                .bind(endpoint.origin.as_str())
                .bind(version)
                .bind(endpoint.updated_ms)
                .bind($crate::rows::to_i64(expected_version, "webhook version")?)
                .execute(&self.pool)
                .await
                .map_err(|e| $crate::rows::store_error($dialect, "change a webhook endpoint", e))?;
                Ok(written.rows_affected() == 1)
            }

            async fn remove_webhook(&self, id: &str) -> Result<bool, $crate::StoreError> {
                let removed = sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1")
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::rows::store_error($dialect, "remove a webhook endpoint", e))?;
                Ok(removed.rows_affected() == 1)
            }

            async fn move_webhook_cursor(
                &self,
                id: &str,
                to: juegoland_api::FeedCursor,
            ) -> Result<bool, $crate::StoreError> {
                // Only an endpoint that exists; its cursor row may not yet.
                let moved = sqlx::query(
                    "INSERT INTO webhook_cursors AS w (endpoint, txid, seq, claim_epoch)
                     SELECT id, $2, $3, 1 FROM webhook_endpoints WHERE id = $1
                     ON CONFLICT (endpoint) DO UPDATE
                     SET txid = excluded.txid, seq = excluded.seq, claim_epoch = w.claim_epoch + 1",
                )
                .bind(id)
                .bind($crate::rows::to_i64(to.txid, "webhook cursor")?)
                .bind($crate::rows::to_i64(to.seq, "webhook cursor")?)
                .execute(&self.pool)
                .await
                .map_err(|e| $crate::rows::store_error($dialect, "move a webhook cursor", e))?;
                Ok(moved.rows_affected() == 1)
            }

            async fn webhook_cursor(
                &self,
                id: &str,
            ) -> Result<Option<$crate::webhook_endpoints::WebhookCursor>, $crate::StoreError> {
                let now = match $dialect {
                    $crate::rows::Dialect::Postgres => "now()",
                    $crate::rows::Dialect::Sqlite => $crate::sqlite::NOW,
                };
                let row: Option<(i64, i64, Option<String>, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT txid, seq, CASE WHEN claim_until >= {now} THEN claimed_by END, claim_epoch
                     FROM webhook_cursors WHERE endpoint = $1"
                )))
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| $crate::rows::store_error($dialect, "read a webhook cursor", e))?;
                row.map($crate::rows::webhook_cursor).transpose()
            }

            async fn feed_end(&self) -> Result<juegoland_api::FeedCursor, $crate::StoreError> {
                let (txid, seq): (i64, i64) = sqlx::query_as($feed_end)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| $crate::rows::store_error($dialect, "read the feed's end", e))?;
                Ok(juegoland_api::FeedCursor {
                    txid: $crate::rows::to_u64(txid, "feed cursor")?,
                    seq: $crate::rows::to_u64(seq, "feed cursor")?,
                })
            }
        }
    };
}

pub(crate) use sql_webhook_endpoints;
