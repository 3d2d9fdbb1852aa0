//! Managing webhook endpoints through the platform API (`/v1/webhooks`): the bodies, the
//! one failure type, and [`WebhookAdmin`], the trait the HTTP edge calls (the roles
//! implement it over the store's endpoints, so the all-in-one and a router answer alike).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// How long a rotated-out secret keeps signing by default: 24 hours.
pub const DEFAULT_OVERLAP_MS: u64 = 24 * 60 * 60 * 1000;
/// The longest overlap: 30 days.
pub const MAX_OVERLAP_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// `POST /v1/webhooks`: a new endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterWebhook {
    /// 1 to 64 characters of `a-z`, `0-9`, `-`, `_`, `.`: the body's `webhook`, the
    /// `Juegoland-Webhook` header and the metrics' `webhook` label.
    pub id: String,
    /// `http://` or `https://`.
    pub url: String,
    /// The signing secret, 16 to 256 characters; by default the server makes one
    /// (`whsec_…`). Either way the answer shows it, and nothing shows it again.
    #[serde(default)]
    pub secret: Option<String>,
    /// Only these feed kinds are sent (`created`, `seatChanged`, `finished`, `cancelled`);
    /// every kind by default.
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
    /// Deliver the feed's events after this cursor (as `GET /v1/feed` gives them; `0-0` is
    /// the feed's beginning). By default, the events written from now on.
    #[serde(default)]
    pub after: Option<String>,
}

/// `PATCH /v1/webhooks/{id}`: what changes (a field left out stays).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChangeWebhook {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The kinds sent; `null` sends every kind again.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Option<Vec<String>>>,
}

/// A field that is present, `null` included, as `Some`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(de: D) -> Result<Option<T>, D::Error> {
    T::deserialize(de).map(Some)
}

/// `POST /v1/webhooks/{id}/rotation`: a new signing secret. Until `overlapMs` has passed,
/// deliveries carry a signature by each secret, so receivers switch without a refusal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotateSecret {
    /// The new secret (16 to 256 characters); by default the server makes one.
    #[serde(default)]
    pub secret: Option<String>,
    /// How long the old secret keeps signing, in ms: 0 (not at all) to 30 days; 24 hours by
    /// default. A secret older than the old one stops signing at once.
    #[serde(default)]
    pub overlap_ms: Option<u64>,
}

/// `POST /v1/webhooks/{id}/replay`: deliver again from a feed cursor.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayWebhook {
    /// The events after this cursor are delivered again, in feed order (`0-0`: the whole
    /// feed). A cursor ahead of the endpoint's skips what is between.
    pub after: String,
}

/// One endpoint as the API shows it: never its secrets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookView {
    pub id: String,
    pub url: String,
    /// The kinds sent; `null`: every kind.
    pub kinds: Option<Vec<String>>,
    /// `api` (registered here) or `config` (from a deliverer's start-up configuration,
    /// changed there; the API can only remove it).
    pub origin: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Until when (ms since the Unix epoch) the previous secret still signs deliveries;
    /// `null` when only one secret signs.
    pub previous_secret_until_ms: Option<i64>,
    /// The feed cursor after the last event the endpoint acknowledged (`0-0`: none yet).
    pub cursor: String,
    /// The deliverer holding the endpoint now (a scheduler replica, `all-in-one`); `null`
    /// while none does.
    pub held_by: Option<String>,
}

/// `GET /v1/webhooks`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// The answer to a registration: the endpoint and its secret (shown only here).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisteredWebhook {
    pub webhook: WebhookView,
    pub secret: String,
}

/// The answer to a rotation: the new secret (shown only here) and the endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotatedSecret {
    pub webhook: WebhookView,
    pub secret: String,
}

/// The answer to `POST /v1/webhooks/{id}/ping`: what became of one signed request with no
/// events (`{"webhook": id, "events": [], "ping": true}`) sent to the endpoint now. The
/// endpoint's cursor and deliveries are not touched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PingResult {
    /// `delivered` (a 2xx), `rejected` (another status), `timeout` or `unreachable`, as
    /// the deliveries' metrics count them.
    pub outcome: String,
    /// The answer's HTTP status, when there was one.
    pub status: Option<u16>,
    /// What happened, for a person (`200 OK`, `connection refused`, …).
    pub detail: String,
    pub elapsed_ms: u64,
}

/// Why a webhook call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("no webhook endpoint {0:?}")]
    NotFound(String),
    #[error("a webhook endpoint {0:?} exists already")]
    Exists(String),
    /// A field of the request is refused.
    #[error("{field}: {message}")]
    Invalid { field: &'static str, message: String },
    /// The endpoint comes from a deliverer's configuration: change it there.
    #[error(
        "webhook endpoint {0:?} comes from the server's configuration (--webhook, --webhooks-file): change it \
         there, or remove it here"
    )]
    Configured(String),
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("internal failure: {0}")]
    Internal(String),
}

impl WebhookError {
    /// The code the HTTP API answers.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "WEBHOOK_NOT_FOUND",
            Self::Exists(_) => "WEBHOOK_EXISTS",
            Self::Invalid { .. } => "INVALID_REQUEST",
            Self::Configured(_) => "WEBHOOK_CONFIGURED",
            Self::Unavailable(_) => "UNAVAILABLE",
            Self::Internal(_) => "INTERNAL",
        }
    }

    /// The HTTP status.
    pub fn http(&self) -> u16 {
        match self {
            Self::NotFound(_) => 404,
            Self::Exists(_) | Self::Configured(_) => 409,
            Self::Invalid { .. } => 400,
            Self::Unavailable(_) => 503,
            Self::Internal(_) => 500,
        }
    }

    /// The part of the request it is about.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Exists(_) => Some("id"),
            Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// The webhook endpoints behind the platform API.
#[async_trait::async_trait]
pub trait WebhookAdmin: Send + Sync + 'static {
    async fn register(&self, request: RegisterWebhook) -> Result<RegisteredWebhook, WebhookError>;
    async fn list(&self) -> Result<WebhookList, WebhookError>;
    async fn describe(&self, id: &str) -> Result<WebhookView, WebhookError>;
    async fn change(&self, id: &str, change: ChangeWebhook) -> Result<WebhookView, WebhookError>;
    async fn remove(&self, id: &str) -> Result<(), WebhookError>;
    async fn rotate(&self, id: &str, request: RotateSecret) -> Result<RotatedSecret, WebhookError>;
    async fn replay(&self, id: &str, request: ReplayWebhook) -> Result<WebhookView, WebhookError>;
    async fn ping(&self, id: &str) -> Result<PingResult, WebhookError>;
}
