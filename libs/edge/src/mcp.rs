//! The MCP server (Model Context Protocol, the `rmcp` crate's streamable-HTTP transport) at
//! `/v1/mcp`: an AI agent plays the one seat its grant names (`POST /v1/matches/{id}/agents`)
//! through tools, its bearer token in the `Authorization` header of every request.
//!
//! Tools: `instructions` (the game's declared instructions, the seat's profile and limits),
//! `get_view` (the seat's current snapshot: view, context, offers, revision, result),
//! `legal_actions` (the offers, each parametrized one with the JSON Schema of its payload),
//! `play` (an action type and payload; the server makes the command id and takes the
//! precondition from the seat's current offer of that type, retries the SAME command on an
//! uncertain outcome, and answers the receipt) and `wait_for_turn` (blocks, up to its timeout,
//! until the seat has an offer or the match is over).
//!
//! An agent gets exactly what a human at its seat gets: the snapshots come from a subscription
//! of the seat like a WebSocket client's (`agent.rs`), and commands go through the match API
//! under the seat's agent principal (`agent:<seat>`), so the match judges them, limits them
//! (the declared commands per minute, `juegoland-actors`) and receipts them as any seat's.
//! Refusals are the protocol's own typed errors — `{code, messageKey, recovery, …}` of a
//! `game.error`, or a receipt's rejection code — returned as tool errors (`isError`).
//!
//! The server reaches matches only through `juegoland_api::Matches` and follows them through
//! the bus, so it runs wherever the WebSocket gateway does: the all-in-one and a gateway.
//! Host validation is off (tokens authenticate every request; the DNS-rebinding guard is for
//! unauthenticated local servers). Every protocol version is served statelessly (rmcp's
//! `legacy_session_mode` off: versions before 2026-07-28 get no `Mcp-Session-Id` either, which
//! the MCP spec lets a server choose), so any gateway answers any request of an agent and a
//! cluster needs no sticky routing.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use juegoland_protocol::{
    AckStatus, ClientMessage, CommandEnvelope, ErrorCode, ErrorMessage, Precondition, Recovery, RejectionCode,
    ServerMessage, WireOffer,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::agent::{AgentSeat, AgentSeats, Seen};
use crate::auth::Tokens;
use crate::gateway::{Gateway, host_error};

/// The longest `wait_for_turn` may block, whatever its argument.
pub const MAX_WAIT: Duration = Duration::from_secs(120);
/// `wait_for_turn`'s timeout when none is given.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);
/// How long a tool waits for the seat's first snapshot.
const FIRST_SNAPSHOT: Duration = Duration::from_secs(10);
/// How long `play` waits, after an applied receipt, for the follower to hold that revision
/// (so a `get_view` right after it reads the move).
const READ_YOUR_MOVE: Duration = Duration::from_secs(2);
/// How many times `play` sends the same command when its outcome is unknown.
const SENDS: u32 = 5;

/// The agent a request's bearer token names (put in the request by [`authenticate`]).
#[derive(Clone, Debug)]
struct AgentBearer {
    match_id: Uuid,
    seat: String,
}

/// The MCP service over `gateway`, to mount at `/v1/mcp` behind [`authenticate`].
pub(crate) fn service(gateway: Gateway) -> StreamableHttpService<AgentTools, LocalSessionManager> {
    let tools = AgentTools { gateway: gateway.clone(), seats: AgentSeats::default() };
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    let config = config.disable_allowed_hosts().with_cancellation_token(gateway.config.shutdown.token());
    StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(LocalSessionManager::default()), config)
}

/// Every request to the MCP server carries an agent's grant as its bearer token: a missing or
/// invalid one is `401 UNAUTHENTICATED`, another kind of token `403 FORBIDDEN`.
pub(crate) async fn authenticate(State(tokens): State<Tokens>, mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let refuse = |status: StatusCode, code: &str, message: &str| {
        let mut response = (status, axum::Json(json!({ "code": code, "message": message }))).into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        response
    };
    let verified = match token {
        Some(token) => tokens.authenticate(token).await.map_err(Some),
        None => Err(None),
    };
    let bearer = match verified {
        Ok(bearer) => bearer,
        Err(Some(e)) => {
            let message = format!("{e} ({}): an agent's grant is required as the bearer token", e.reason());
            return refuse(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", &message);
        }
        Err(None) => {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                "an agent's grant is required as the bearer token",
            );
        }
    };
    let Some((match_id, seat)) = bearer.agent() else {
        return refuse(StatusCode::FORBIDDEN, "FORBIDDEN", "only an agent's grant plays through the MCP server");
    };
    let agent = AgentBearer { match_id, seat: seat.to_owned() };
    request.extensions_mut().insert(agent);
    next.run(request).await
}

/// The tools, one instance per MCP session or request (they share the gateway's followers).
#[derive(Clone)]
pub(crate) struct AgentTools {
    gateway: Gateway,
    seats: AgentSeats,
}

/// A tool's failure: the protocol's typed error, or a receipt's rejection, as the agent reads
/// it in the tool result (`isError: true`).
enum Failure {
    Error(ErrorMessage),
    Rejected {
        code: RejectionCode,
        command_id: Uuid,
        revision: Option<u64>,
    },
    /// The arguments do not fit the tool's input schema.
    Malformed(String),
}

impl Failure {
    fn into_result(self) -> CallToolResult {
        let body = match self {
            Failure::Error(e) => {
                let mut body = serde_json::to_value(&e).unwrap_or(Value::Null);
                body["error"] = "game.error".into();
                body
            }
            Failure::Rejected { code, command_id, revision } => {
                // A stale command was built on a view the match moved past: read it again.
                let recovery = match code {
                    RejectionCode::StaleRevision | RejectionCode::StaleEpoch => Recovery::Sync,
                    _ => Recovery::None,
                };
                json!({
                    "error": "rejected",
                    "code": code,
                    "recovery": recovery,
                    "commandId": command_id,
                    "revision": revision,
                })
            }
            Failure::Malformed(message) => json!({
                "error": "game.error",
                "code": ErrorCode::MalformedMessage,
                "messageKey": ErrorCode::MalformedMessage.message_key(),
                "recovery": Recovery::None,
                "message": message,
            }),
        };
        CallToolResult::structured_error(body)
    }
}

impl From<ErrorMessage> for Failure {
    fn from(e: ErrorMessage) -> Self {
        Failure::Error(e)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PlayArguments {
    r#type: String,
    #[serde(default = "empty_object")]
    payload: Value,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WaitArguments {
    timeout_ms: Option<u64>,
}

fn empty_object() -> Value {
    json!({})
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The tools' list (`tools/list`).
fn tools() -> Vec<Tool> {
    let none = || schema(json!({ "type": "object", "properties": {}, "additionalProperties": false }));
    vec![
        Tool::new(
            "instructions",
            "The game's instructions for agents (the rules, what the view means, how to choose an action), \
             your seat, your profile and your limits (think time, commands per minute). Read it first.",
            none(),
        ),
        Tool::new(
            "get_view",
            "Your seat's current snapshot: view, context, the offered actions, revision, result (null while the \
             match is on), whether it is your turn and until when you may think.",
            none(),
        ),
        Tool::new(
            "legal_actions",
            "The actions you may send now. A concrete offer is sent as is; a parametrized one comes with the JSON \
             Schema of its payload (`payloadSchema`) and the game's constraints: build the payload yourself.",
            none(),
        ),
        Tool::new(
            "play",
            "Send one action: its `type` and `payload` (an offer's payload, or one you built for a parametrized \
             offer). The server adds the command id and the precondition, retries the same command if the \
             outcome is unknown, and answers the receipt; a refusal is an error with the protocol's code and \
             recovery.",
            schema(json!({
                "type": "object",
                "properties": {
                    "type": { "type": "string", "minLength": 1, "maxLength": 128, "description": "The action type, e.g. drop" },
                    "payload": { "type": "object", "description": "The action's payload; {} when it takes none" },
                },
                "required": ["type"],
                "additionalProperties": false,
            })),
        ),
        Tool::new(
            "wait_for_turn",
            "Block until your seat has an action to take or the match is over, at most `timeoutMs` (default \
             30000, at most 120000); answers the snapshot then, and `ready: false` when the time ran out first.",
            schema(json!({
                "type": "object",
                "properties": {
                    "timeoutMs": { "type": "integer", "minimum": 0, "maximum": MAX_WAIT.as_millis() as u64 },
                },
                "additionalProperties": false,
            })),
        ),
    ]
}

impl ServerHandler for AgentTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("juegoland", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "You play one seat of one Juegoland match. Call `instructions` first, then loop: \
                 `wait_for_turn`, `legal_actions`, `play`, until the result is not null.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let bearer = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AgentBearer>())
            .cloned()
            // `authenticate` runs before every request reaches the service.
            .ok_or_else(|| ErrorData::internal_error("no agent grant on the request", None))?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let tool = request.name.as_ref();
        let outcome = match tool {
            "instructions" => self.instructions(&bearer, arguments).await,
            "get_view" => self.get_view(&bearer, arguments).await,
            "legal_actions" => self.legal_actions(&bearer, arguments).await,
            "play" => self.play(&bearer, arguments).await,
            "wait_for_turn" => self.wait_for_turn(&bearer, arguments).await,
            other => return Err(ErrorData::invalid_params(format!("no tool {other:?}"), None)),
        };
        let label = if outcome.is_ok() { "ok" } else { "error" };
        self.gateway.metrics.mcp_calls.with_label_values(&[tool, label]).inc();
        Ok(match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(failure) => failure.into_result(),
        }
        .into())
    }
}

fn arguments<T: for<'de> Deserialize<'de>>(value: Value) -> Result<T, Failure> {
    serde_json::from_value(value).map_err(|e| Failure::Malformed(e.to_string()))
}

impl AgentTools {
    async fn seat(&self, bearer: &AgentBearer) -> Result<Arc<AgentSeat>, Failure> {
        Ok(self.seats.seat(&self.gateway, bearer.match_id, &bearer.seat).await?)
    }

    async fn instructions(&self, bearer: &AgentBearer, args: Value) -> Result<Value, Failure> {
        let NoArguments {} = arguments(args)?;
        let seat = self.seat(bearer).await?;
        Ok(json!({
            "matchId": seat.match_id,
            "seat": seat.seat,
            "game": seat.game,
            "profile": {
                "id": seat.profile.id,
                "displayName": seat.profile.display_name,
                "modes": seat.profile.modes,
                "difficulties": seat.profile.difficulties,
            },
            "limits": seat.limits(),
            "instructions": seat.instructions,
        }))
    }

    async fn get_view(&self, bearer: &AgentBearer, args: Value) -> Result<Value, Failure> {
        let NoArguments {} = arguments(args)?;
        let seat = self.seat(bearer).await?;
        Ok(view(&seat, &seat.current(FIRST_SNAPSHOT).await?))
    }

    async fn legal_actions(&self, bearer: &AgentBearer, args: Value) -> Result<Value, Failure> {
        let NoArguments {} = arguments(args)?;
        let seat = self.seat(bearer).await?;
        let seen = seat.current(FIRST_SNAPSHOT).await?;
        let snapshot = seen.snapshot().ok_or_else(|| Failure::Error(unavailable(seat.match_id)))?;
        Ok(json!({ "revision": snapshot.revision, "actions": offers(&seat, &snapshot.actions) }))
    }

    async fn wait_for_turn(&self, bearer: &AgentBearer, args: Value) -> Result<Value, Failure> {
        let WaitArguments { timeout_ms } = arguments(args)?;
        let timeout = timeout_ms.map_or(DEFAULT_WAIT, Duration::from_millis).min(MAX_WAIT);
        let seat = self.seat(bearer).await?;
        let ready = |seen: &Seen| seen.snapshot().is_some_and(|s| !s.actions.is_empty() || s.result.is_some());
        let seen = seat.wait_for(timeout, ready).await?;
        let mut answer = view(&seat, &seen);
        answer["ready"] = ready(&seen).into();
        Ok(answer)
    }

    async fn play(&self, bearer: &AgentBearer, args: Value) -> Result<Value, Failure> {
        let PlayArguments { r#type, payload } = arguments(args)?;
        let seat = self.seat(bearer).await?;
        let seen = seat.current(FIRST_SNAPSHOT).await?;
        let snapshot = seen.snapshot().ok_or_else(|| Failure::Error(unavailable(seat.match_id)))?;
        // The precondition the engine computed for the seat's offer of this type; without
        // one (nothing of that type is offered) the current revision, and the match's
        // receipt says why it cannot apply (ACTOR_NOT_ENABLED, UNKNOWN_ACTION…).
        let precondition = snapshot
            .actions
            .iter()
            .find(|offer| offer_type(offer) == r#type)
            .map_or(Precondition::Match { revision: snapshot.revision }, offer_precondition);
        let command_id = juegoland_api::random_uuid();
        let envelope = checked_envelope(seat.match_id, command_id, precondition, &r#type, payload)?;
        let ack = self.send(&seat, &envelope).await?;
        match (ack.status, ack.revision) {
            (AckStatus::Applied, Some(revision)) => {
                // Read your own move: the follower holds the revision before the answer.
                let _ = seat.wait_for(READ_YOUR_MOVE, |s| s.snapshot().is_some_and(|s| s.revision >= revision)).await;
                Ok(json!({
                    "status": "applied",
                    "commandId": command_id,
                    "revision": revision,
                    "duplicate": ack.duplicate,
                }))
            }
            (_, revision) => {
                Err(Failure::Rejected { code: ack.code.unwrap_or(RejectionCode::IllegalAction), command_id, revision })
            }
        }
    }

    /// Sends one command, again and again with the SAME envelope while its outcome is unknown
    /// (a retryable `game.error`, or no answer from the match API), up to [`SENDS`] times.
    async fn send(&self, seat: &AgentSeat, envelope: &CommandEnvelope) -> Result<juegoland_protocol::Ack, Failure> {
        let mut pause = Duration::from_millis(50);
        let mut attempt = 1;
        loop {
            let answer = match self.gateway.matches.command(&seat.principal, envelope.clone()).await {
                Ok(ServerMessage::Error(e)) => {
                    self.gateway.metrics.errors.with_label_values(&[e.code.as_str()]).inc();
                    ServerMessage::Error(e)
                }
                Ok(answer) => answer,
                // `host_error` counts its own.
                Err(e) => ServerMessage::Error(
                    host_error(&self.gateway, &e, Some(seat.match_id)).with_command_id(envelope.command_id),
                ),
            };
            match answer {
                ServerMessage::Ack(ack) => return Ok(ack),
                // RATE_LIMITED is the agent's to wait out: it is told, not retried here.
                ServerMessage::Error(e)
                    if e.recovery == Recovery::RetrySameCommand
                        && e.code != ErrorCode::RateLimited
                        && attempt < SENDS =>
                {
                    attempt += 1;
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                ServerMessage::Error(e) => return Err(Failure::Error(e)),
                other => {
                    tracing::error!(match_id = %seat.match_id, answer = other.message_type(), "a command answered with neither an ack nor an error");
                    return Err(Failure::Error(ErrorMessage::new(ErrorCode::Internal).with_match_id(seat.match_id)));
                }
            }
        }
    }
}

/// The command, through the protocol's strict decoder: what a WebSocket client's command
/// meets (size, depth, an action type of 1 to 128 characters, a payload object) it meets here.
fn checked_envelope(
    match_id: Uuid,
    command_id: Uuid,
    precondition: Precondition,
    action_type: &str,
    payload: Value,
) -> Result<CommandEnvelope, Failure> {
    let text = json!({
        "protocolVersion": 1,
        "type": "game.command",
        "matchId": match_id,
        "commandId": command_id,
        "precondition": precondition,
        "action": { "type": action_type, "payload": payload },
    })
    .to_string();
    match juegoland_protocol::decode_client(text.as_bytes()) {
        Ok(ClientMessage::Command(envelope)) => Ok(envelope),
        Ok(_) => Err(Failure::Error(ErrorMessage::new(ErrorCode::MalformedMessage).with_match_id(match_id))),
        Err(e) => Err(Failure::Error(e.to_error_message().with_match_id(match_id).with_command_id(command_id))),
    }
}

fn unavailable(match_id: Uuid) -> ErrorMessage {
    ErrorMessage::new(ErrorCode::Unavailable).with_match_id(match_id)
}

fn offer_type(offer: &WireOffer) -> &str {
    match offer {
        WireOffer::Concrete(o) => &o.r#type,
        WireOffer::Parametrized(o) => &o.r#type,
    }
}

fn offer_precondition(offer: &WireOffer) -> Precondition {
    match offer {
        WireOffer::Concrete(o) => o.precondition,
        WireOffer::Parametrized(o) => o.precondition,
    }
}

/// The offers as an agent reads them: concrete ones as sent, parametrized ones with their
/// payload's JSON Schema (what their `schema` URN names).
fn offers(seat: &AgentSeat, actions: &[WireOffer]) -> Vec<Value> {
    actions
        .iter()
        .map(|offer| {
            let mut value = serde_json::to_value(offer).unwrap_or(Value::Null);
            if let WireOffer::Parametrized(p) = offer {
                value["payloadSchema"] = seat.payload_schemas.get(&p.r#type).cloned().unwrap_or(Value::Null);
            }
            value
        })
        .collect()
}

/// What `get_view` and `wait_for_turn` answer: the seat's snapshot and its turn.
fn view(seat: &AgentSeat, seen: &Seen) -> Value {
    let Seen::Snapshot { snapshot, turn_since } = seen else { return Value::Null };
    let think_time_ms = u64::from(seat.limits().think_time_ms);
    let deadline = turn_since.and_then(|since| {
        let since = since.duration_since(std::time::UNIX_EPOCH).ok()?;
        u64::try_from(since.as_millis()).ok().map(|ms| ms + think_time_ms)
    });
    json!({
        "matchId": snapshot.match_id,
        "seat": snapshot.seat,
        "revision": snapshot.revision,
        "view": serde_json::value::to_value(&snapshot.view).unwrap_or(Value::Null),
        "context": serde_json::value::to_value(&snapshot.context).unwrap_or(Value::Null),
        "actions": offers(seat, &snapshot.actions),
        "result": snapshot.result,
        "yourTurn": !snapshot.actions.is_empty() && snapshot.result.is_none(),
        "thinkTimeMs": think_time_ms,
        "thinkDeadlineMs": deadline,
    })
}
