//! Every message of protocol version 1 as Rust types.
//!
//! Each message is a body struct (`CommandEnvelope`, `Snapshot`, …) plus the two envelope
//! fields every message carries, `protocolVersion` and `type`. The bodies do not hold those
//! two fields: [`ClientMessage`] and [`ServerMessage`] add them when they serialize, and the
//! decoders in [`crate::decode`] check them. Bodies derive `Deserialize` with
//! `deny_unknown_fields` so that they can be stored and reloaded, but untrusted bytes must
//! only enter through [`crate::decode_client`], which also rejects duplicate keys, excessive
//! depth and oversize messages.

use std::collections::BTreeMap;

use juegoland_sdk::{MatchResult, RawJson};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

use crate::codes::{ErrorCode, Recovery, RejectionCode};

/// The only protocol version this crate speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The longest identifier-like string the protocol accepts (request and subscription ids,
/// action types, game ids and rules versions), counted in Unicode scalar values.
pub const MAX_NAME_CHARS: usize = 128;

/// A message body with its wire `type`.
pub trait MessageType {
    /// The value of the `type` field, e.g. `game.command`.
    const TYPE: &'static str;
}

macro_rules! message_type {
    ($($body:ty => $name:literal),* $(,)?) => {
        $(impl MessageType for $body {
            const TYPE: &'static str = $name;
        })*
    };
}

message_type! {
    SyncRequest => "game.sync",
    CommandEnvelope => "game.command",
    CommandStatusRequest => "game.command-status",
    UnsubscribeRequest => "game.unsubscribe",
    Snapshot => "game.snapshot",
    Ack => "game.ack",
    CommandUnknown => "game.command-unknown",
    Cursor => "game.cursor",
    ErrorMessage => "game.error",
}

// ---------------------------------------------------------------------------------------------
// Client → server
// ---------------------------------------------------------------------------------------------

/// A message a client sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientMessage {
    /// `game.sync`: negotiate a contract and open a new subscription.
    Sync(SyncRequest),
    /// `game.command`: submit an action.
    Command(CommandEnvelope),
    /// `game.command-status`: ask for the receipt of a command.
    CommandStatus(CommandStatusRequest),
    /// `game.unsubscribe`: close a subscription of this connection.
    Unsubscribe(UnsubscribeRequest),
}

impl ClientMessage {
    /// The wire `type` of this message.
    pub fn message_type(&self) -> &'static str {
        match self {
            Self::Sync(_) => SyncRequest::TYPE,
            Self::Command(_) => CommandEnvelope::TYPE,
            Self::CommandStatus(_) => CommandStatusRequest::TYPE,
            Self::Unsubscribe(_) => UnsubscribeRequest::TYPE,
        }
    }

    /// `error` answering this message: with its match and the id it names (request,
    /// command or subscription), so that the client knows which of its messages it answers.
    pub fn answered_by(&self, error: ErrorMessage) -> ErrorMessage {
        let error = error.with_match_id(self.match_id());
        match self {
            Self::Sync(m) => error.with_request_id(m.request_id.clone()),
            Self::Command(m) => error.with_command_id(m.command_id),
            Self::CommandStatus(m) => error.with_command_id(m.command_id),
            Self::Unsubscribe(m) => error.with_subscription_id(m.subscription_id.clone()),
        }
    }

    /// The match this message is about.
    pub fn match_id(&self) -> Uuid {
        match self {
            Self::Sync(m) => m.match_id,
            Self::Command(m) => m.match_id,
            Self::CommandStatus(m) => m.match_id,
            Self::Unsubscribe(m) => m.match_id,
        }
    }
}

/// `game.sync`: negotiate a contract and open a NEW subscription.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncRequest {
    /// Chosen by the client; the sync snapshot answering this request carries it back.
    #[schemars(length(min = 1, max = 128))]
    pub request_id: String,
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    /// The contract tuples the client can read, in order of preference.
    #[schemars(length(min = 1))]
    pub accept: Vec<ContractTuple>,
}

/// A complete contract a client can read: a game id and the exact versions it understands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContractTuple {
    #[schemars(length(min = 1, max = 128))]
    pub id: String,
    #[schemars(length(min = 1, max = 128))]
    pub rules_version: String,
    pub view_schema_version: u32,
    pub event_schema_version: u32,
}

/// `game.command`: an action submitted against a precondition. Retrying means resending this
/// exact envelope; its fingerprint (SHA-256 of its JCS form) identifies it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandEnvelope {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[serde(deserialize_with = "wire_uuid")]
    pub command_id: Uuid,
    pub precondition: Precondition,
    pub action: Action,
}

/// What the command was built against. The engine computes it for each offer; the client
/// sends it back unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum Precondition {
    /// The match must still be at this revision.
    Match { revision: u64 },
    /// The phase epoch must be unchanged and the actor's own revision must match.
    Actor { phase_epoch: u64, actor_revision: u64 },
    /// A real-time command (the `queue` policy): no revision; the match's serialization
    /// point orders it by arrival in a bounded FIFO and the rules judge it against the state
    /// it meets. Its receipt carries its command sequence.
    Queue,
}

impl Precondition {
    /// The wire `kind` of this precondition.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Match { .. } => "match",
            Self::Actor { .. } => "actor",
            Self::Queue => "queue",
        }
    }
}

/// An action: the game's action type and its payload object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Action {
    #[schemars(length(min = 1, max = 128))]
    pub r#type: String,
    /// Always a JSON object; the game's action schema decides what it holds.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub payload: Value,
}

/// `game.command-status`: ask for the receipt of a command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandStatusRequest {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[serde(deserialize_with = "wire_uuid")]
    pub command_id: Uuid,
}

/// `game.unsubscribe`: close a subscription of this connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnsubscribeRequest {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[schemars(length(min = 1, max = 128))]
    pub subscription_id: String,
}

// ---------------------------------------------------------------------------------------------
// Server → client
// ---------------------------------------------------------------------------------------------

/// A message the server sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerMessage {
    /// `game.snapshot`: the full authorized view at one revision.
    Snapshot(Box<Snapshot>),
    /// `game.ack`: a command receipt.
    Ack(Ack),
    /// `game.command-unknown`: no receipt is recorded at this moment.
    CommandUnknown(CommandUnknown),
    /// `game.cursor`: the last committed revision.
    Cursor(Cursor),
    /// `game.error`: a request failed without producing a receipt.
    Error(ErrorMessage),
}

impl ServerMessage {
    /// The wire `type` of this message.
    pub fn message_type(&self) -> &'static str {
        match self {
            Self::Snapshot(_) => Snapshot::TYPE,
            Self::Ack(_) => Ack::TYPE,
            Self::CommandUnknown(_) => CommandUnknown::TYPE,
            Self::Cursor(_) => Cursor::TYPE,
            Self::Error(_) => ErrorMessage::TYPE,
        }
    }
}

impl From<Snapshot> for ServerMessage {
    fn from(m: Snapshot) -> Self {
        Self::Snapshot(Box::new(m))
    }
}

impl From<Ack> for ServerMessage {
    fn from(m: Ack) -> Self {
        Self::Ack(m)
    }
}

impl From<CommandUnknown> for ServerMessage {
    fn from(m: CommandUnknown) -> Self {
        Self::CommandUnknown(m)
    }
}

impl From<Cursor> for ServerMessage {
    fn from(m: Cursor) -> Self {
        Self::Cursor(m)
    }
}

impl From<ErrorMessage> for ServerMessage {
    fn from(m: ErrorMessage) -> Self {
        Self::Error(m)
    }
}

/// `game.snapshot`: the full authorized view of one recipient at one revision (v1 never sends
/// deltas).
///
/// A sync answer carries `requestId`, `revision: R` and no events. A live snapshot carries
/// `fromRevision: R-1`, `revision: R` and the visible events of revision R.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = require_nullable_snapshot_fields)]
pub struct Snapshot {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[schemars(length(min = 1, max = 128))]
    pub subscription_id: String,
    /// Only on the answer to a `game.sync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub request_id: Option<String>,
    /// Only on live snapshots: the revision this one follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_revision: Option<u64>,
    pub revision: u64,
    /// The recipient's seat, or `null` for an authorized spectator. Always present.
    #[serde(deserialize_with = "nullable")]
    pub seat: Option<String>,
    // The rules' view and context for this recipient, as the texts they were serialized into.
    #[schemars(with = "Value")]
    pub view: RawJson,
    #[schemars(with = "Value")]
    pub context: RawJson,
    /// The offers for this recipient.
    pub actions: Vec<WireOffer>,
    /// `null` while the match is active. Always present.
    #[serde(deserialize_with = "nullable")]
    pub result: Option<MatchResult>,
    /// The visible events of this revision; empty on sync answers.
    pub events: Vec<WireEvent>,
    /// Who answers each seat's "your move?" — present only when some seat is not played by
    /// its human (a bot, a bot standing in for an away human, a replay script, an agent);
    /// absent when humans play every seat. A change of hands is a revision of its own, whose
    /// snapshots carry the new map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controllers: Option<BTreeMap<String, ControllerKind>>,
}

/// What answers a seat's "your move?" (engine spec § Seats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ControllerKind {
    /// Its human, over the protocol.
    Human,
    /// A built-in bot the seat was given at creation.
    Bot,
    /// A built-in bot standing in for the seat's away human (hand-over).
    Handover,
    /// A replay match's script, playing a stored match's decisions back.
    Replay,
    /// An AI agent holding the seat's credential.
    Agent,
}

impl ControllerKind {
    /// Every kind, in order (metric series start at zero for each).
    pub const ALL: [Self; 5] = [Self::Human, Self::Bot, Self::Handover, Self::Replay, Self::Agent];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Bot => "bot",
            Self::Handover => "handover",
            Self::Replay => "replay",
            Self::Agent => "agent",
        }
    }
}

/// Marks `seat` and `result` as required: they are always present, possibly `null`.
/// (`#[schemars(required)]` would also drop `null` from their types.)
fn require_nullable_snapshot_fields(schema: &mut schemars::Schema) {
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        for field in ["seat", "result"] {
            if !required.iter().any(|r| r == field) {
                required.push(Value::from(field));
            }
        }
    }
}

/// An offer: an action the recipient may submit, with the precondition to send back.
// Deserialized by hand (on the presence of `payload` or `schema`): serde's `untagged` buffers
// the input in a form a concrete offer's raw payload text cannot be read from.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WireOffer {
    /// A fully specified action: submit this payload as is.
    Concrete(ConcreteOffer),
    /// An action whose payload the client builds, constrained by a schema.
    Parametrized(ParametrizedOffer),
}

impl<'de> Deserialize<'de> for WireOffer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Every field either kind of offer has.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct AnyOffer {
            r#type: String,
            payload: Option<RawJson>,
            schema: Option<String>,
            constraints: Option<Value>,
            precondition: Precondition,
        }
        let o = AnyOffer::deserialize(deserializer)?;
        match (o.payload, o.schema, o.constraints) {
            (Some(payload), None, None) => {
                Ok(Self::Concrete(ConcreteOffer { r#type: o.r#type, payload, precondition: o.precondition }))
            }
            (None, Some(schema), Some(constraints)) => Ok(Self::Parametrized(ParametrizedOffer {
                r#type: o.r#type,
                schema,
                constraints,
                precondition: o.precondition,
            })),
            _ => Err(serde::de::Error::custom(
                "an offer has either a payload, or a schema and constraints, and nothing else",
            )),
        }
    }
}

impl WireOffer {
    /// The action type this offer is for.
    pub fn action_type(&self) -> &str {
        match self {
            Self::Concrete(o) => &o.r#type,
            Self::Parametrized(o) => &o.r#type,
        }
    }

    /// The precondition a command for this offer must carry.
    pub fn precondition(&self) -> Precondition {
        match self {
            Self::Concrete(o) => o.precondition,
            Self::Parametrized(o) => o.precondition,
        }
    }
}

/// `{"type":"drop","payload":{"column":3},"precondition":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConcreteOffer {
    pub r#type: String,
    // The payload as the text the rules' typed offer was serialized into.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub payload: RawJson,
    pub precondition: Precondition,
}

/// `{"type":"fire","schema":"urn:…","constraints":{…},"precondition":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParametrizedOffer {
    pub r#type: String,
    /// The id of the action's payload schema, e.g. `urn:juegoland:game:hundido:action:fire:1`.
    pub schema: String,
    /// Game-defined limits on the payload in the current position.
    pub constraints: Value,
    pub precondition: Precondition,
}

/// A visible event: `{"eventId":"<uuid>","type":"disc.dropped","data":{…}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireEvent {
    /// Stable per (projection, revision, local order).
    #[serde(deserialize_with = "wire_uuid")]
    pub event_id: Uuid,
    pub r#type: String,
    // The data as the text the rules' typed event was serialized into.
    #[schemars(with = "Value")]
    pub data: RawJson,
}

/// Whether a command was applied or rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AckStatus {
    Applied,
    Rejected,
}

/// `game.ack`: a command receipt. An applied receipt carries the new `revision`; a rejected
/// one carries the `code`. `duplicate` is true when this is the original receipt sent again
/// for a retried envelope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ack {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[serde(deserialize_with = "wire_uuid")]
    pub command_id: Uuid,
    pub status: AckStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<RejectionCode>,
    /// The command sequence the match gave a `queue` command when it accepted it into its
    /// FIFO (monotonically increasing per match); absent for `match` and `actor` commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    pub duplicate: bool,
}

impl Ack {
    /// The receipt of an applied command that produced `revision`.
    pub fn applied(match_id: Uuid, command_id: Uuid, revision: u64) -> Self {
        Self {
            match_id,
            command_id,
            status: AckStatus::Applied,
            revision: Some(revision),
            code: None,
            sequence: None,
            duplicate: false,
        }
    }

    /// The receipt of a rejected command.
    pub fn rejected(match_id: Uuid, command_id: Uuid, code: RejectionCode) -> Self {
        Self {
            match_id,
            command_id,
            status: AckStatus::Rejected,
            revision: None,
            code: Some(code),
            sequence: None,
            duplicate: false,
        }
    }

    /// The same receipt with the command sequence of a `queue` command.
    pub fn with_sequence(self, sequence: Option<u64>) -> Self {
        Self { sequence, ..self }
    }

    /// The same receipt, marked as sent again for a retried envelope.
    pub fn as_duplicate(self) -> Self {
        Self { duplicate: true, ..self }
    }
}

/// `game.command-unknown`: no receipt is recorded at this moment. It does not prove that a
/// delayed send will never arrive; clients retry the same command id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandUnknown {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[serde(deserialize_with = "wire_uuid")]
    pub command_id: Uuid,
}

/// `game.cursor`: the last committed revision, sent periodically per subscription.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cursor {
    #[serde(deserialize_with = "wire_uuid")]
    pub match_id: Uuid,
    #[schemars(length(min = 1, max = 128))]
    pub subscription_id: String,
    pub revision: u64,
}

/// `game.error`: a request failed without a receipt. It carries no private state, stack
/// traces or exception messages, only a code, a translation key and a recovery hint, plus the
/// ids of the request it answers when they are known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorMessage {
    /// Missing when the message never identified a valid match.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "wire_uuid_opt")]
    pub match_id: Option<Uuid>,
    pub code: ErrorCode,
    pub message_key: Box<str>,
    pub recovery: Recovery,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "wire_uuid_opt")]
    pub command_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub subscription_id: Option<String>,
    /// For the client's developer, never for a player: what exactly was wrong with the
    /// request (`malformed message: missing field: missing field `type` at line 1 column
    /// 20`). About the client's own input only; absent where the code says it all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub detail: Option<Box<str>>,
}

impl ErrorMessage {
    /// An error with the code's message key and default recovery and no ids.
    pub fn new(code: ErrorCode) -> Self {
        Self {
            match_id: None,
            code,
            message_key: code.message_key().into(),
            recovery: code.default_recovery(),
            command_id: None,
            request_id: None,
            subscription_id: None,
            detail: None,
        }
    }

    pub fn with_match_id(self, match_id: Uuid) -> Self {
        Self { match_id: Some(match_id), ..self }
    }

    pub fn with_command_id(self, command_id: Uuid) -> Self {
        Self { command_id: Some(command_id), ..self }
    }

    pub fn with_request_id(self, request_id: impl Into<String>) -> Self {
        Self { request_id: Some(request_id.into()), ..self }
    }

    pub fn with_subscription_id(self, subscription_id: impl Into<String>) -> Self {
        Self { subscription_id: Some(subscription_id.into()), ..self }
    }

    /// Overrides the code's default recovery.
    pub fn with_recovery(self, recovery: Recovery) -> Self {
        Self { recovery, ..self }
    }
}

// ---------------------------------------------------------------------------------------------
// Envelope serialization
// ---------------------------------------------------------------------------------------------

/// A body together with its envelope fields, as it is serialized: `protocolVersion` and
/// `type` first, then the body's own fields.
#[derive(Serialize)]
pub(crate) struct Tagged<'a, T> {
    #[serde(rename = "protocolVersion")]
    protocol_version: u64,
    r#type: &'static str,
    #[serde(flatten)]
    body: &'a T,
}

impl<'a, T: MessageType> Tagged<'a, T> {
    pub(crate) fn new(body: &'a T) -> Self {
        Self { protocol_version: PROTOCOL_VERSION, r#type: T::TYPE, body }
    }
}

impl Serialize for ClientMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Sync(m) => Tagged::new(m).serialize(serializer),
            Self::Command(m) => Tagged::new(m).serialize(serializer),
            Self::CommandStatus(m) => Tagged::new(m).serialize(serializer),
            Self::Unsubscribe(m) => Tagged::new(m).serialize(serializer),
        }
    }
}

impl Serialize for ServerMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Snapshot(m) => Tagged::new(m.as_ref()).serialize(serializer),
            Self::Ack(m) => Tagged::new(m).serialize(serializer),
            Self::CommandUnknown(m) => Tagged::new(m).serialize(serializer),
            Self::Cursor(m) => Tagged::new(m).serialize(serializer),
            Self::Error(m) => Tagged::new(m).serialize(serializer),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Field helpers
// ---------------------------------------------------------------------------------------------

/// Parses a UUID in its hyphenated 36-character form only. The `uuid` crate alone would
/// also accept the simple, braced and URN forms, which the wire does not allow.
pub(crate) fn parse_wire_uuid(s: &str) -> Option<Uuid> {
    if s.len() == 36 { Uuid::try_parse(s).ok() } else { None }
}

fn wire_uuid<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Uuid, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = Uuid;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a hyphenated UUID")
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Uuid, E> {
            parse_wire_uuid(s).ok_or_else(|| E::invalid_value(serde::de::Unexpected::Other("UUID"), &self))
        }
    }
    deserializer.deserialize_str(V)
}

fn wire_uuid_opt<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Uuid>, D::Error> {
    struct Some_;
    impl<'de> serde::de::Visitor<'de> for Some_ {
        type Value = Option<Uuid>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a hyphenated UUID or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            wire_uuid(d).map(Some)
        }
    }
    deserializer.deserialize_option(Some_)
}

/// Deserializes an `Option` that must be present (possibly `null`). Naming a
/// `deserialize_with` function stops serde from treating a missing field as `None`.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(deserializer)
}
