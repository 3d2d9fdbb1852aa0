//! The platform HTTP API's bodies, as Rust types: what a platform back end sends
//! (`CreateMatch` and its `SeatSpec`, withdrawals, cancellations, replays, grants) and what it
//! reads besides the match summary, listings and the feed (a creation's answer, the grants,
//! the error body, a webhook delivery's body). The edge decodes and encodes exactly these; the
//! committed JSON Schemas under `libs/api/schemas/` are generated from them ([`schema_files`],
//! freshness-tested: `UPDATE_SCHEMAS=1 cargo test -p juegoland-api`), and the client library's
//! TypeScript types from those schemas.

use std::collections::BTreeMap;

use juegoland_core::{Expiry, GameKey, PackagePin, ReplayOf};
use juegoland_protocol::schema::SchemaFile;
use juegoland_sdk::{AgentLimits, AgentMode, Difficulty, Handover};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::webhooks::{
    ChangeWebhook, PingResult, RegisterWebhook, RegisteredWebhook, ReplayWebhook, RotateSecret, RotatedSecret,
    WebhookList, WebhookView,
};
use crate::{FeedEvent, FeedPage, MatchPage, MatchSummary};

/// Who takes a seat at creation: a platform principal (`"alice"`), a built-in bot of the game
/// (`{"bot": "default"}`) or an AI agent of a profile the game declares (`{"agent":
/// "default"}`, played through `POST /v1/matches/{id}/agents`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SeatSpec {
    Principal(String),
    Bot { bot: String },
    Agent { agent: String },
}

/// `POST /v1/matches`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateMatch {
    pub game: String,
    /// A rules version; by default the rules of the newest published package this engine
    /// runs, else the newest registered rules version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_version: Option<String>,
    /// A published package version to pin (`GET /v1/packages/{game}` lists them); by
    /// default the newest one published for the rules version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_version: Option<String>,
    /// Every seat, `p0` to `pN`.
    pub seats: BTreeMap<String, SeatSpec>,
    /// The game's config (`GET /v1/games` gives its schema and defaults).
    #[serde(default = "empty_object")]
    pub config: Value,
    /// Who plays a seat whose human is away; by default the game's own policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
    /// When the match ends by itself if nobody plays it; by default 30 minutes for a first
    /// move and a day without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<Expiry>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The answer to a creation (`POST /v1/matches`, `…/replays`): the match's id and what it
/// pinned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatedBody {
    pub match_id: Uuid,
    /// Always 0: the creation's revision.
    pub revision: u64,
    pub game: GameKey,
    /// The rules module's digest the match pins.
    pub rules_digest: String,
    /// The published package the match pins, or null when none of its rules is published.
    pub package: Option<PackagePin>,
    /// Where the node that owns the match serves its players without a hop, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_url: Option<String>,
    /// On a replay: the match it plays back, and at what speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<ReplayOf>,
}

/// `POST /v1/matches/{id}/withdrawals`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Withdraw {
    pub seat: String,
}

/// `POST /v1/matches/{id}/cancellation`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cancel {
    pub reason_code: String,
}

/// The answer to a withdrawal or a cancellation: the revision it produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevisionBody {
    pub revision: u64,
}

/// `POST /v1/matches/{id}/replays` (or no body: as played).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateReplay {
    /// The pace in percent of the original (100: as played; 10 to 10000).
    #[serde(default = "original_pace")]
    pub speed_percent: u32,
}

fn original_pace() -> u32 {
    100
}

/// The answer to `POST /v1/matches/{id}/spectators`: a token that syncs that one match as a
/// spectator (its `seat` is always null).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpectatorGrant {
    pub match_id: Uuid,
    pub token: String,
    pub seat: Option<String>,
}

/// `POST /v1/matches/{id}/agents`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentGrantRequest {
    pub seat: String,
}

/// The profile of an agent seat, as its grant tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrantedProfile {
    pub id: String,
    pub display_name: String,
    pub modes: Vec<AgentMode>,
    pub difficulties: Vec<Difficulty>,
}

/// The answer to `POST /v1/matches/{id}/agents`: a token that plays that one seat of that
/// one match, with what the agent needs to play it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentGrant {
    pub match_id: Uuid,
    pub seat: String,
    /// `agent:<seat>`.
    pub principal: String,
    pub token: String,
    /// Seconds the token is valid.
    pub expires_in: u64,
    pub game: GameKey,
    pub profile: GrantedProfile,
    pub limits: AgentLimits,
    /// The game's instructions for agents.
    pub instructions: String,
    /// Where the MCP server is (`/v1/mcp`).
    pub mcp: String,
    /// Where the WebSocket is (`/v1/ws`).
    pub websocket: String,
}

/// `POST /v1/dev/tokens` (the dev profile only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DevTokenRequest {
    pub principal: String,
}

/// The answer to `POST /v1/dev/tokens`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenBody {
    pub token: String,
}

/// Every error the HTTP API answers: a code, a message for the developer, and the part of
/// the request it is about (a JSON path such as `seats.p1`, a query parameter, a header).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Problem {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The body of a webhook delivery: `POST <url>` of 1 to `batch` feed events, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody<'a> {
    /// The endpoint's id (also the `Juegoland-Webhook` header).
    pub webhook: &'a str,
    pub events: &'a [&'a FeedEvent],
    /// True on a test request (`POST /v1/webhooks/{id}/ping`, no events); absent on deliveries.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ping: bool,
}

/// The id of a platform API schema: `urn:juegoland:api:<name>:1`.
pub fn schema_id(name: &str) -> String {
    format!("urn:juegoland:api:{name}:1")
}

/// Every schema of the platform HTTP API, as committed under `libs/api/schemas/`.
pub fn schema_files() -> Vec<SchemaFile> {
    fn file<T: JsonSchema>(name: &str) -> SchemaFile {
        SchemaFile::with_id::<T>(name, schema_id(name))
    }
    vec![
        file::<CreateMatch>("create-match"),
        file::<CreatedBody>("created"),
        file::<MatchSummary>("match-summary"),
        file::<MatchPage>("match-page"),
        file::<FeedPage>("feed-page"),
        file::<WebhookBody<'static>>("webhook-body"),
        file::<Withdraw>("withdraw"),
        file::<Cancel>("cancel"),
        file::<RevisionBody>("revision"),
        file::<CreateReplay>("create-replay"),
        file::<SpectatorGrant>("spectator-grant"),
        file::<AgentGrantRequest>("agent-grant-request"),
        file::<AgentGrant>("agent-grant"),
        file::<DevTokenRequest>("dev-token-request"),
        file::<TokenBody>("token"),
        file::<Problem>("problem"),
        file::<RegisterWebhook>("register-webhook"),
        file::<ChangeWebhook>("change-webhook"),
        file::<RotateSecret>("rotate-secret"),
        file::<ReplayWebhook>("replay-webhook"),
        file::<WebhookView>("webhook"),
        file::<WebhookList>("webhook-list"),
        file::<RegisteredWebhook>("registered-webhook"),
        file::<RotatedSecret>("rotated-secret"),
        file::<PingResult>("ping-result"),
    ]
}
