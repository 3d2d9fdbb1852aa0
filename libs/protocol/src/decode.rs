//! The strict decoder: the only way untrusted bytes become protocol messages.
//!
//! Checks, in order: size (before any parsing), UTF-8, then one streaming pass that builds
//! the typed message while it enforces the nesting depth, rejects duplicate object keys
//! everywhere (including inside opaque payloads, where `serde_json::Value` would silently keep
//! the last one), lone surrogate escapes, unknown fields and wrong types.
//!
//! Every failure maps to exactly one [`ErrorCode`]: `MESSAGE_TOO_LARGE` for size,
//! `UNSUPPORTED_PROTOCOL` for a `protocolVersion` other than 1 and `MALFORMED_MESSAGE` for
//! everything else. A [`DecodeError`] keeps a [`MalformedKind`] for logs and tests and the
//! ids it could read, never the raw input or the parser's message.
//!
//! `protocolVersion` is checked the moment it is read. Unknown top-level fields are only
//! reported once the whole object has been read, so a future-version message that puts its
//! new fields before `protocolVersion` still gets `UNSUPPORTED_PROTOCOL`.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use thiserror::Error;
use uuid::Uuid;

use crate::codes::{ErrorCode, Recovery};
use crate::messages::{
    Ack, Action, ClientMessage, CommandEnvelope, CommandStatusRequest, CommandUnknown, ContractTuple, Cursor,
    ErrorMessage, MAX_NAME_CHARS, MessageType, PROTOCOL_VERSION, Precondition, ServerMessage, Snapshot, SyncRequest,
    UnsubscribeRequest, parse_wire_uuid,
};

/// The largest client message, in bytes (64 KiB).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The deepest nesting of objects and arrays in a client message; the top-level object is
/// depth 1.
pub const MAX_DEPTH: usize = 32;

/// Structural limits the decoder enforces. Configurable, but raise them only after measuring.
///
/// `serde_json` itself refuses nesting deeper than 128, so a `max_depth` above 127 acts as
/// 127.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Messages longer than this many bytes are rejected before parsing.
    pub max_message_bytes: usize,
    /// The deepest allowed nesting of objects and arrays, counting the top-level object as 1.
    pub max_depth: usize,
}

impl Limits {
    /// The limits for messages from clients: 64 KiB and depth 32.
    pub const CLIENT: Limits = Limits { max_message_bytes: MAX_MESSAGE_BYTES, max_depth: MAX_DEPTH };

    /// The limits a client applies to server messages, which carry whole projections (up to
    /// 1 MiB each) and game-defined views: 4 MiB and depth 64.
    pub const SERVER: Limits = Limits { max_message_bytes: 4 * 1024 * 1024, max_depth: 64 };
}

impl Default for Limits {
    fn default() -> Self {
        Self::CLIENT
    }
}

/// What exactly was wrong with a malformed message. Only for logs, metrics and tests: the
/// client always sees `MALFORMED_MESSAGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Error)]
pub enum MalformedKind {
    #[error("invalid JSON syntax")]
    Syntax,
    #[error("invalid UTF-8 or a lone surrogate escape")]
    InvalidUnicode,
    #[error("duplicate object key")]
    DuplicateKey,
    #[error("nesting too deep")]
    TooDeep,
    #[error("unknown field")]
    UnknownField,
    #[error("unknown message type")]
    UnknownType,
    #[error("missing field")]
    MissingField,
    #[error("invalid value")]
    InvalidValue,
}

/// The ids a decoder could read from a message it rejected, so that the error reply can name
/// them. An id is only kept when it was well formed and not repeated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageIds {
    pub match_id: Option<Uuid>,
    pub command_id: Option<Uuid>,
    pub request_id: Option<String>,
    pub subscription_id: Option<String>,
}

/// The longest decoder detail an error carries, in characters.
pub const DETAIL_CHARS: usize = 200;

/// Why bytes were not accepted as a message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("unsupported protocol version {version}")]
    UnsupportedProtocol { version: i128, ids: MessageIds },
    #[error("malformed message: {kind}")]
    Malformed {
        kind: MalformedKind,
        ids: MessageIds,
        /// What the JSON decoder said of the message (`missing field `type` at line 1 column
        /// 20`): about the client's own bytes only, at most [`DETAIL_CHARS`] characters.
        detail: Option<Box<str>>,
    },
}

impl DecodeError {
    /// The protocol error code for this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::TooLarge { .. } => ErrorCode::MessageTooLarge,
            Self::UnsupportedProtocol { .. } => ErrorCode::UnsupportedProtocol,
            Self::Malformed { .. } => ErrorCode::MalformedMessage,
        }
    }

    /// The recovery the client should attempt.
    pub fn recovery(&self) -> Recovery {
        self.code().default_recovery()
    }

    /// What kind of malformation, when the message was malformed.
    pub fn malformed_kind(&self) -> Option<MalformedKind> {
        match self {
            Self::Malformed { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The ids read before the failure; none for an oversize message, which is never parsed.
    pub fn ids(&self) -> Option<&MessageIds> {
        match self {
            Self::TooLarge { .. } => None,
            Self::UnsupportedProtocol { ids, .. } | Self::Malformed { ids, .. } => Some(ids),
        }
    }

    /// The `game.error` to send back: the code, its message key and recovery, and the ids
    /// that could be read. Nothing of the input or of the parser's message is echoed.
    pub fn to_error_message(&self) -> ErrorMessage {
        let mut msg = ErrorMessage::new(self.code());
        msg.detail = Some(
            match self {
                Self::Malformed { kind, detail: Some(detail), .. } => format!("{kind}: {detail}"),
                other => other.to_string(),
            }
            .into_boxed_str(),
        );
        if let Some(ids) = self.ids() {
            msg.match_id = ids.match_id;
            msg.command_id = ids.command_id;
            msg.request_id.clone_from(&ids.request_id);
            msg.subscription_id.clone_from(&ids.subscription_id);
        }
        msg
    }
}

/// Decodes a client message with the default [`Limits`].
pub fn decode_client(bytes: &[u8]) -> Result<ClientMessage, DecodeError> {
    decode_client_with(bytes, &Limits::CLIENT)
}

/// Decodes a client message with explicit limits.
pub fn decode_client_with(bytes: &[u8], limits: &Limits) -> Result<ClientMessage, DecodeError> {
    let text = precheck(bytes, limits)?;
    let mut ctx = Ctx::new(*limits);
    let mut de = serde_json::Deserializer::from_str(text);
    let result = de.deserialize_map(ClientVisitor { ctx: &mut ctx }).and_then(|msg| de.end().map(|()| msg));
    result.map_err(|e| ctx.into_error(&e))
}

/// Decodes a server message with [`Limits::SERVER`]. For clients and tests; the server never
/// reads its own messages.
pub fn decode_server(bytes: &[u8]) -> Result<ServerMessage, DecodeError> {
    decode_server_with(bytes, &Limits::SERVER)
}

/// Decodes a server message with explicit limits.
///
/// This path is simpler than the client one: it builds a strict `Value` (depth and duplicate
/// keys checked), then converts that into the typed body named by `type`.
pub fn decode_server_with(bytes: &[u8], limits: &Limits) -> Result<ServerMessage, DecodeError> {
    let text = precheck(bytes, limits)?;
    let mut ctx = Ctx::new(*limits);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = StrictValue { depth: 1, ctx: &mut ctx }.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    let value = value.map_err(|e| ctx.into_error(&e))?;
    let Value::Object(mut map) = value else {
        return Err(DecodeError::Malformed {
            kind: MalformedKind::InvalidValue,
            ids: MessageIds::default(),
            detail: None,
        });
    };
    let ids = ids_of(&map);
    let malformed = |kind| DecodeError::Malformed { kind, ids: ids.clone(), detail: None };
    match map.remove("protocolVersion") {
        None => return Err(malformed(MalformedKind::MissingField)),
        Some(Value::Number(n)) => match n.as_i128() {
            Some(1) => {}
            Some(version) => return Err(DecodeError::UnsupportedProtocol { version, ids }),
            None => return Err(malformed(MalformedKind::InvalidValue)),
        },
        Some(_) => return Err(malformed(MalformedKind::InvalidValue)),
    }
    let kind = match map.remove("type") {
        None => return Err(malformed(MalformedKind::MissingField)),
        Some(Value::String(kind)) => kind,
        Some(_) => return Err(malformed(MalformedKind::InvalidValue)),
    };
    let body = Value::Object(map);
    let typed = match kind.as_str() {
        Snapshot::TYPE => serde_json::from_value::<Snapshot>(body).map(ServerMessage::from),
        Ack::TYPE => serde_json::from_value::<Ack>(body).map(ServerMessage::from),
        CommandUnknown::TYPE => serde_json::from_value::<CommandUnknown>(body).map(ServerMessage::from),
        Cursor::TYPE => serde_json::from_value::<Cursor>(body).map(ServerMessage::from),
        ErrorMessage::TYPE => serde_json::from_value::<ErrorMessage>(body).map(ServerMessage::from),
        _ => return Err(malformed(MalformedKind::UnknownType)),
    };
    typed.map_err(|e| malformed(classify(&e)))
}

/// The checks before parsing: size, then UTF-8 (which also lets the parser skip its own
/// per-string UTF-8 validation).
fn precheck<'a>(bytes: &'a [u8], limits: &Limits) -> Result<&'a str, DecodeError> {
    if bytes.len() > limits.max_message_bytes {
        return Err(DecodeError::TooLarge { size: bytes.len(), limit: limits.max_message_bytes });
    }
    std::str::from_utf8(bytes).map_err(|_| DecodeError::Malformed {
        kind: MalformedKind::InvalidUnicode,
        ids: MessageIds::default(),
        detail: None,
    })
}

/// The ids named at the top level of a server message, for error reports.
fn ids_of(map: &Map<String, Value>) -> MessageIds {
    let uuid = |key| map.get(key).and_then(Value::as_str).and_then(parse_wire_uuid);
    let name = |key| map.get(key).and_then(Value::as_str).filter(|s| valid_name(s)).map(str::to_owned);
    MessageIds {
        match_id: uuid("matchId"),
        command_id: uuid("commandId"),
        request_id: name("requestId"),
        subscription_id: name("subscriptionId"),
    }
}

/// Classifies a parser error the decoder's own visitors did not already classify.
///
/// Syntax errors come from `serde_json`; data errors come from serde's derived visitors, whose
/// messages start with fixed phrases. The classification only feeds logs and tests.
fn classify(error: &serde_json::Error) -> MalformedKind {
    use serde_json::error::Category;
    let message = error.to_string();
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            if message.contains("surrogate") || message.contains("unicode") || message.contains("escape") {
                MalformedKind::InvalidUnicode
            } else if message.starts_with("recursion limit") {
                MalformedKind::TooDeep
            } else {
                MalformedKind::Syntax
            }
        }
        Category::Data => {
            if message.starts_with("unknown field") {
                MalformedKind::UnknownField
            } else if message.starts_with("duplicate field") {
                MalformedKind::DuplicateKey
            } else if message.starts_with("missing field") {
                MalformedKind::MissingField
            } else {
                MalformedKind::InvalidValue
            }
        }
    }
}

/// Whether `s` is a valid identifier-like string: 1 to [`MAX_NAME_CHARS`] characters. The
/// byte-length test first bounds the character count cheaply (a character is at most 4 bytes).
fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 4 * MAX_NAME_CHARS && s.chars().count() <= MAX_NAME_CHARS
}

// ---------------------------------------------------------------------------------------------
// Decoding state
// ---------------------------------------------------------------------------------------------

/// What the visitors learn on the way: the limits, the first precise failure and the ids.
/// Visitors report failures through serde errors, which only carry text, so the precise kind
/// is recorded here instead and the serde error's text is never used for anything else.
struct Ctx {
    limits: Limits,
    kind: Option<MalformedKind>,
    unsupported: Option<i128>,
    ids: MessageIds,
    /// The protocol's names of the fields a message lacks, where the decoder knows them.
    missing: Vec<&'static str>,
}

impl Ctx {
    fn new(limits: Limits) -> Self {
        Self { limits, kind: None, unsupported: None, ids: MessageIds::default(), missing: Vec::new() }
    }

    /// A missing-field failure naming the protocol fields that are missing.
    fn missing<E: de::Error>(&mut self, fields: &[(&'static str, bool)]) -> E {
        if self.kind.is_none() {
            self.missing = fields.iter().filter(|(_, present)| !present).map(|(name, _)| *name).collect();
        }
        self.fail(MalformedKind::MissingField)
    }

    /// Records `kind` (the innermost failure wins) and returns the error to propagate.
    fn fail<E: de::Error>(&mut self, kind: MalformedKind) -> E {
        self.kind.get_or_insert(kind);
        E::custom(kind)
    }

    fn into_error(self, error: &serde_json::Error) -> DecodeError {
        if let Some(version) = self.unsupported {
            return DecodeError::UnsupportedProtocol { version, ids: self.ids };
        }
        let kind = self.kind.unwrap_or_else(|| classify(error));
        // Never the input's own text: a missing field is named by the protocol (serde's
        // message names it), anything else only by where it is.
        let mut detail = match kind {
            MalformedKind::MissingField if !self.missing.is_empty() => {
                let names: Vec<String> = self.missing.iter().map(|name| format!("`{name}`")).collect();
                format!("missing field {}", names.join(", "))
            }
            MalformedKind::MissingField if error.to_string().starts_with("missing field `") => error.to_string(),
            _ => format!("at line {} column {}", error.line(), error.column()),
        };
        if let Some((cut, _)) = detail.char_indices().nth(DETAIL_CHARS) {
            detail.truncate(cut);
            detail.push('…');
        }
        DecodeError::Malformed { kind, ids: self.ids, detail: Some(detail.into_boxed_str()) }
    }
}

// ---------------------------------------------------------------------------------------------
// The strict Value
// ---------------------------------------------------------------------------------------------

/// Builds a `serde_json::Value` while it enforces the depth limit and rejects duplicate keys.
/// `depth` is the depth this value has if it is an object or an array.
struct StrictValue<'c> {
    depth: usize,
    ctx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // JSON text cannot spell NaN or infinity, so this only fails on a parser bug.
        Number::from_f64(v).map(Value::Number).ok_or_else(|| self.ctx.fail(MalformedKind::InvalidValue))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let ctx = self.ctx;
        if self.depth > ctx.limits.max_depth {
            return Err(ctx.fail(MalformedKind::TooDeep));
        }
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
        while let Some(item) = seq.next_element_seed(StrictValue { depth: self.depth + 1, ctx: &mut *ctx })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let ctx = self.ctx;
        if self.depth > ctx.limits.max_depth {
            return Err(ctx.fail(MalformedKind::TooDeep));
        }
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(StrictValue { depth: self.depth + 1, ctx: &mut *ctx })?;
            if object.insert(key, value).is_some() {
                return Err(ctx.fail(MalformedKind::DuplicateKey));
            }
        }
        Ok(Value::Object(object))
    }
}

// ---------------------------------------------------------------------------------------------
// The client message, in one streaming pass
// ---------------------------------------------------------------------------------------------

/// The top-level keys of any client message. Every key has one meaning across all client
/// message types, so fields can be parsed before `type` is known (it may come last).
enum RootKey {
    ProtocolVersion,
    Type,
    MatchId,
    CommandId,
    RequestId,
    SubscriptionId,
    Accept,
    Precondition,
    Action,
    Unknown,
}

impl<'de> de::Deserialize<'de> for RootKey {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RootKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<RootKey, E> {
                Ok(match key {
                    "protocolVersion" => RootKey::ProtocolVersion,
                    "type" => RootKey::Type,
                    "matchId" => RootKey::MatchId,
                    "commandId" => RootKey::CommandId,
                    "requestId" => RootKey::RequestId,
                    "subscriptionId" => RootKey::SubscriptionId,
                    "accept" => RootKey::Accept,
                    "precondition" => RootKey::Precondition,
                    "action" => RootKey::Action,
                    _ => RootKey::Unknown,
                })
            }
        }
        deserializer.deserialize_identifier(V)
    }
}

#[derive(Clone, Copy)]
enum ClientType {
    Sync,
    Command,
    CommandStatus,
    Unsubscribe,
}

/// The fields of a client message as they are read.
#[derive(Default)]
struct RawClient {
    version_seen: bool,
    kind: Option<ClientType>,
    match_id: Option<Uuid>,
    command_id: Option<Uuid>,
    request_id: Option<String>,
    subscription_id: Option<String>,
    accept: Option<Vec<ContractTuple>>,
    precondition: Option<Precondition>,
    action: Option<Action>,
    unknown_field: bool,
}

struct ClientVisitor<'c> {
    ctx: &'c mut Ctx,
}

impl<'de> Visitor<'de> for ClientVisitor<'_> {
    type Value = ClientMessage;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a protocol message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClientMessage, A::Error> {
        let ctx = self.ctx;
        if ctx.limits.max_depth < 1 {
            return Err(ctx.fail(MalformedKind::TooDeep));
        }
        let mut raw = RawClient::default();
        while let Some(key) = map.next_key::<RootKey>()? {
            match key {
                RootKey::ProtocolVersion => {
                    if raw.version_seen {
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    raw.version_seen = true;
                    let version = map.next_value_seed(VersionSeed)?;
                    if version != i128::from(PROTOCOL_VERSION) {
                        ctx.unsupported = Some(version);
                        return Err(de::Error::custom("unsupported protocol version"));
                    }
                }
                RootKey::Type => {
                    if raw.kind.is_some() {
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    raw.kind = Some(map.next_value_seed(TypeSeed { ctx: &mut *ctx })?);
                }
                RootKey::MatchId => {
                    if raw.match_id.is_some() {
                        ctx.ids.match_id = None;
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    let id = map.next_value_seed(UuidSeed { ctx: &mut *ctx })?;
                    raw.match_id = Some(id);
                    ctx.ids.match_id = Some(id);
                }
                RootKey::CommandId => {
                    if raw.command_id.is_some() {
                        ctx.ids.command_id = None;
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    let id = map.next_value_seed(UuidSeed { ctx: &mut *ctx })?;
                    raw.command_id = Some(id);
                    ctx.ids.command_id = Some(id);
                }
                RootKey::RequestId => {
                    if raw.request_id.is_some() {
                        ctx.ids.request_id = None;
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    let id = map.next_value_seed(NameSeed { ctx: &mut *ctx })?;
                    ctx.ids.request_id = Some(id.clone());
                    raw.request_id = Some(id);
                }
                RootKey::SubscriptionId => {
                    if raw.subscription_id.is_some() {
                        ctx.ids.subscription_id = None;
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    let id = map.next_value_seed(NameSeed { ctx: &mut *ctx })?;
                    ctx.ids.subscription_id = Some(id.clone());
                    raw.subscription_id = Some(id);
                }
                RootKey::Accept => {
                    if raw.accept.is_some() {
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    // `accept` is an array of flat objects: depth 3 at most.
                    if ctx.limits.max_depth < 3 {
                        return Err(ctx.fail(MalformedKind::TooDeep));
                    }
                    let accept: Vec<ContractTuple> = map.next_value()?;
                    if accept.is_empty() || !accept.iter().all(valid_tuple) {
                        return Err(ctx.fail(MalformedKind::InvalidValue));
                    }
                    raw.accept = Some(accept);
                }
                RootKey::Precondition => {
                    if raw.precondition.is_some() {
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    if ctx.limits.max_depth < 2 {
                        return Err(ctx.fail(MalformedKind::TooDeep));
                    }
                    raw.precondition = Some(map.next_value_seed(PreconditionSeed { ctx: &mut *ctx })?);
                }
                RootKey::Action => {
                    if raw.action.is_some() {
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    raw.action = Some(map.next_value_seed(ActionSeed { ctx: &mut *ctx })?);
                }
                RootKey::Unknown => {
                    // Reported after the whole object is read; see the module docs.
                    raw.unknown_field = true;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        raw.finish(ctx)
    }
}

impl RawClient {
    /// Checks that exactly the fields of the message's type are present and builds it.
    fn finish<E: de::Error>(self, ctx: &mut Ctx) -> Result<ClientMessage, E> {
        if self.unknown_field {
            return Err(ctx.fail(MalformedKind::UnknownField));
        }
        let (true, Some(kind)) = (self.version_seen, self.kind) else {
            return Err(ctx.missing(&[("protocolVersion", self.version_seen), ("type", self.kind.is_some())]));
        };
        let Self { match_id, command_id, request_id, subscription_id, accept, precondition, action, .. } = self;
        let present = [
            ("matchId", match_id.is_some()),
            ("commandId", command_id.is_some()),
            ("requestId", request_id.is_some()),
            ("subscriptionId", subscription_id.is_some()),
            ("accept", accept.is_some()),
            ("precondition", precondition.is_some()),
            ("action", action.is_some()),
        ];
        let needed: &[&str] = match kind {
            ClientType::Sync => &["requestId", "matchId", "accept"],
            ClientType::Command => &["matchId", "commandId", "precondition", "action"],
            ClientType::CommandStatus => &["matchId", "commandId"],
            ClientType::Unsubscribe => &["matchId", "subscriptionId"],
        };
        let lacking: Vec<(&'static str, bool)> = present.iter().filter(|(n, _)| needed.contains(n)).copied().collect();
        // A field that belongs to another message type is an unknown field for this one.
        let extra = match kind {
            ClientType::Sync => command_id.is_some() || subscription_id.is_some() || precondition.is_some(),
            ClientType::Command => request_id.is_some() || subscription_id.is_some() || accept.is_some(),
            ClientType::CommandStatus => {
                request_id.is_some() || subscription_id.is_some() || accept.is_some() || precondition.is_some()
            }
            ClientType::Unsubscribe => {
                command_id.is_some() || request_id.is_some() || accept.is_some() || precondition.is_some()
            }
        } || (action.is_some() && !matches!(kind, ClientType::Command));
        if extra {
            return Err(ctx.fail(MalformedKind::UnknownField));
        }
        let message = match kind {
            ClientType::Sync => match (request_id, match_id, accept) {
                (Some(request_id), Some(match_id), Some(accept)) => {
                    Some(ClientMessage::Sync(SyncRequest { request_id, match_id, accept }))
                }
                _ => None,
            },
            ClientType::Command => match (match_id, command_id, precondition, action) {
                (Some(match_id), Some(command_id), Some(precondition), Some(action)) => {
                    Some(ClientMessage::Command(CommandEnvelope { match_id, command_id, precondition, action }))
                }
                _ => None,
            },
            ClientType::CommandStatus => match (match_id, command_id) {
                (Some(match_id), Some(command_id)) => {
                    Some(ClientMessage::CommandStatus(CommandStatusRequest { match_id, command_id }))
                }
                _ => None,
            },
            ClientType::Unsubscribe => match (match_id, subscription_id) {
                (Some(match_id), Some(subscription_id)) => {
                    Some(ClientMessage::Unsubscribe(UnsubscribeRequest { match_id, subscription_id }))
                }
                _ => None,
            },
        };
        message.ok_or_else(|| ctx.missing(&lacking))
    }
}

fn valid_tuple(t: &ContractTuple) -> bool {
    valid_name(&t.id) && valid_name(&t.rules_version)
}

/// `protocolVersion`: any integer is read so that a wrong one can be reported as unsupported;
/// anything else falls to serde's type error, which [`classify`] reports as an invalid value.
struct VersionSeed;

impl<'de> DeserializeSeed<'de> for VersionSeed {
    type Value = i128;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<i128, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for VersionSeed {
    type Value = i128;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i128, E> {
        Ok(v.into())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i128, E> {
        Ok(v.into())
    }
}

/// Generates a seed that reads one JSON string and maps it with `$convert`, recording
/// `$kind` when the string is refused. A non-string falls to serde's type error, which
/// [`classify`] reports as an invalid value.
macro_rules! string_seed {
    ($seed:ident -> $out:ty, $expecting:literal, |$s:ident| $convert:expr, $kind:expr) => {
        struct $seed<'c> {
            ctx: &'c mut Ctx,
        }

        impl<'de> DeserializeSeed<'de> for $seed<'_> {
            type Value = $out;

            fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<$out, D::Error> {
                deserializer.deserialize_str(self)
            }
        }

        impl<'de> Visitor<'de> for $seed<'_> {
            type Value = $out;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str($expecting)
            }

            fn visit_str<E: de::Error>(self, $s: &str) -> Result<$out, E> {
                let converted: Option<$out> = $convert;
                converted.ok_or_else(|| self.ctx.fail($kind))
            }
        }
    };
}

string_seed!(UuidSeed -> Uuid, "a hyphenated UUID", |s| parse_wire_uuid(s), MalformedKind::InvalidValue);
string_seed!(NameSeed -> String, "a string of 1 to 128 characters", |s| valid_name(s).then(|| s.to_owned()), MalformedKind::InvalidValue);
string_seed!(
    TypeSeed -> ClientType,
    "a client message type",
    |s| match s {
        SyncRequest::TYPE => Some(ClientType::Sync),
        CommandEnvelope::TYPE => Some(ClientType::Command),
        CommandStatusRequest::TYPE => Some(ClientType::CommandStatus),
        UnsubscribeRequest::TYPE => Some(ClientType::Unsubscribe),
        _ => None,
    },
    MalformedKind::UnknownType
);

/// `precondition`, read by hand: it sits on every command, and the derived reader of an
/// internally tagged enum would buffer the object before it can look at `kind`.
struct PreconditionSeed<'c> {
    ctx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for PreconditionSeed<'_> {
    type Value = Precondition;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Precondition, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PreconditionSeed<'_> {
    type Value = Precondition;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a precondition object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Precondition, A::Error> {
        #[derive(Clone, Copy, PartialEq)]
        enum Kind {
            Match,
            Actor,
            Queue,
        }
        let ctx = self.ctx;
        let (mut kind, mut revision, mut phase_epoch, mut actor_revision) = (None, None, None, None);
        while let Some(key) = map.next_key::<ShortKey>()? {
            let slot = match key.as_str() {
                "kind" => {
                    if kind.is_some() {
                        return Err(ctx.fail(MalformedKind::DuplicateKey));
                    }
                    kind = Some(match map.next_value::<ShortKey>()?.as_str() {
                        "match" => Kind::Match,
                        "actor" => Kind::Actor,
                        "queue" => Kind::Queue,
                        _ => return Err(ctx.fail(MalformedKind::InvalidValue)),
                    });
                    continue;
                }
                "revision" => &mut revision,
                "phaseEpoch" => &mut phase_epoch,
                "actorRevision" => &mut actor_revision,
                _ => return Err(ctx.fail(MalformedKind::UnknownField)),
            };
            if slot.is_some() {
                return Err(ctx.fail(MalformedKind::DuplicateKey));
            }
            *slot = Some(map.next_value::<u64>()?);
        }
        match (kind, revision, phase_epoch, actor_revision) {
            (Some(Kind::Match), Some(revision), None, None) => Ok(Precondition::Match { revision }),
            (Some(Kind::Actor), None, Some(phase_epoch), Some(actor_revision)) => {
                Ok(Precondition::Actor { phase_epoch, actor_revision })
            }
            (Some(Kind::Queue), None, None, None) => Ok(Precondition::Queue),
            (Some(Kind::Queue), ..) => Err(ctx.fail(MalformedKind::UnknownField)),
            (Some(Kind::Match), _, Some(_), _)
            | (Some(Kind::Match), _, _, Some(_))
            | (Some(Kind::Actor), Some(_), _, _) => Err(ctx.fail(MalformedKind::UnknownField)),
            _ => Err(ctx.fail(MalformedKind::MissingField)),
        }
    }
}

/// `action`: `{type, payload}` with the payload read as a strict value at depth 3.
struct ActionSeed<'c> {
    ctx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for ActionSeed<'_> {
    type Value = Action;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Action, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ActionSeed<'_> {
    type Value = Action;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an action object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Action, A::Error> {
        let ctx = self.ctx;
        if ctx.limits.max_depth < 2 {
            return Err(ctx.fail(MalformedKind::TooDeep));
        }
        let (mut action_type, mut payload) = (None, None);
        while let Some(key) = map.next_key::<ShortKey>()? {
            match key.as_str() {
                "type" if action_type.is_none() => {
                    action_type = Some(map.next_value_seed(NameSeed { ctx: &mut *ctx })?);
                }
                "payload" if payload.is_none() => {
                    let value = map.next_value_seed(StrictValue { depth: 3, ctx: &mut *ctx })?;
                    if !value.is_object() {
                        return Err(ctx.fail(MalformedKind::InvalidValue));
                    }
                    payload = Some(value);
                }
                "type" | "payload" => return Err(ctx.fail(MalformedKind::DuplicateKey)),
                _ => return Err(ctx.fail(MalformedKind::UnknownField)),
            }
        }
        match (action_type, payload) {
            (Some(r#type), Some(payload)) => Ok(Action { r#type, payload }),
            _ => Err(ctx.fail(MalformedKind::MissingField)),
        }
    }
}

/// A short key or enum string read without allocating when it has no escapes. Longer
/// strings are truncated; they never match a known key anyway.
struct ShortKey {
    buf: [u8; 16],
    len: usize,
}

impl ShortKey {
    fn as_str(&self) -> &str {
        // Only whole strings of at most 16 bytes are stored, so this is valid UTF-8; an
        // overlong string is stored as a marker that matches nothing.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<'de> de::Deserialize<'de> for ShortKey {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ShortKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ShortKey, E> {
                let mut key = ShortKey { buf: [0; 16], len: 0 };
                if s.len() <= key.buf.len() {
                    key.buf[..s.len()].copy_from_slice(s.as_bytes());
                    key.len = s.len();
                } else {
                    // "\u{0}" is not a key any visitor looks for.
                    key.len = 1;
                }
                Ok(key)
            }
        }
        deserializer.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MATCH: &str = "0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69";
    const COMMAND: &str = "c1d2e3f4-0000-4000-8000-000000000001";

    fn command(payload: &str) -> String {
        format!(
            r#"{{"protocolVersion":1,"type":"game.command","matchId":"{MATCH}","commandId":"{COMMAND}","precondition":{{"kind":"match","revision":7}},"action":{{"type":"drop","payload":{payload}}}}}"#
        )
    }

    fn kind_of(input: &str) -> MalformedKind {
        decode_client(input.as_bytes()).unwrap_err().malformed_kind().unwrap()
    }

    #[test]
    fn decodes_a_command() {
        let ClientMessage::Command(cmd) = decode_client(command(r#"{"column":3}"#).as_bytes()).unwrap() else {
            panic!("not a command");
        };
        assert_eq!(cmd.match_id.to_string(), MATCH);
        assert_eq!(cmd.precondition, Precondition::Match { revision: 7 });
        assert_eq!(cmd.action.r#type, "drop");
        assert_eq!(cmd.action.payload, serde_json::json!({"column": 3}));
    }

    #[test]
    fn type_may_come_last() {
        let input = format!(
            r#"{{"matchId":"{MATCH}","commandId":"{COMMAND}","protocolVersion":1,"type":"game.command-status"}}"#
        );
        assert!(matches!(decode_client(input.as_bytes()).unwrap(), ClientMessage::CommandStatus(_)));
    }

    #[test]
    fn fields_of_another_type_are_unknown() {
        let input = format!(
            r#"{{"protocolVersion":1,"type":"game.command-status","matchId":"{MATCH}","commandId":"{COMMAND}","subscriptionId":"s-1"}}"#
        );
        assert_eq!(kind_of(&input), MalformedKind::UnknownField);
    }

    #[test]
    fn payload_must_be_an_object() {
        assert_eq!(kind_of(&command("[1]")), MalformedKind::InvalidValue);
        assert_eq!(kind_of(&command("3")), MalformedKind::InvalidValue);
    }

    #[test]
    fn precondition_fields_must_fit_the_kind() {
        let input = command("{}").replace(r#""revision":7"#, r#""revision":7,"phaseEpoch":1"#);
        assert_eq!(kind_of(&input), MalformedKind::UnknownField);
        let input = command("{}").replace(r#""kind":"match","revision":7"#, r#""kind":"actor","phaseEpoch":1"#);
        assert_eq!(kind_of(&input), MalformedKind::MissingField);
        let actor = command("{}")
            .replace(r#""kind":"match","revision":7"#, r#""actorRevision":2,"kind":"actor","phaseEpoch":1"#);
        let ClientMessage::Command(cmd) = decode_client(actor.as_bytes()).unwrap() else { panic!("not a command") };
        assert_eq!(cmd.precondition, Precondition::Actor { phase_epoch: 1, actor_revision: 2 });
    }

    #[test]
    fn a_queue_precondition_carries_nothing_but_its_kind() {
        let queue = command("{}").replace(r#""kind":"match","revision":7"#, r#""kind":"queue""#);
        let ClientMessage::Command(cmd) = decode_client(queue.as_bytes()).unwrap() else { panic!("not a command") };
        assert_eq!(cmd.precondition, Precondition::Queue);
        assert_eq!(
            kind_of(&command("{}").replace(r#""kind":"match""#, r#""kind":"queue""#)),
            MalformedKind::UnknownField
        );
        let with_epoch = command("{}").replace(r#""kind":"match","revision":7"#, r#""kind":"queue","phaseEpoch":0"#);
        assert_eq!(kind_of(&with_epoch), MalformedKind::UnknownField);
        let twice = command("{}").replace(r#""kind":"match","revision":7"#, r#""kind":"queue","kind":"queue""#);
        assert_eq!(kind_of(&twice), MalformedKind::DuplicateKey);
        assert_eq!(kind_of(&command("{}").replace(r#""kind":"match","revision":7"#, "")), MalformedKind::MissingField);
    }

    #[test]
    fn only_hyphenated_uuids() {
        let simple = command("{}").replace(MATCH, &MATCH.replace('-', ""));
        assert_eq!(kind_of(&simple), MalformedKind::InvalidValue);
        let upper = command("{}").replace(MATCH, &MATCH.to_uppercase());
        assert!(decode_client(upper.as_bytes()).is_ok());
    }

    #[test]
    fn errors_keep_the_ids_they_could_read() {
        let err = decode_client(command(r#"{"a":1,"a":2}"#).as_bytes()).unwrap_err();
        let reply = err.to_error_message();
        assert_eq!(reply.code, ErrorCode::MalformedMessage);
        assert_eq!(reply.match_id.map(|id| id.to_string()).as_deref(), Some(MATCH));
        assert_eq!(reply.command_id.map(|id| id.to_string()).as_deref(), Some(COMMAND));
        assert_eq!(&*reply.message_key, "error.malformed_message");
    }

    #[test]
    fn a_repeated_id_is_not_echoed() {
        let other = "11111111-2222-4333-8444-555555555555";
        let input = command("{}").replace(r#""commandId""#, &format!(r#""matchId":"{other}","commandId""#));
        let err = decode_client(input.as_bytes()).unwrap_err();
        assert_eq!(err.malformed_kind(), Some(MalformedKind::DuplicateKey));
        assert_eq!(err.ids().unwrap().match_id, None);
    }

    #[test]
    fn unknown_fields_before_a_future_version_are_unsupported() {
        let input = r#"{"newThing":{"x":1},"protocolVersion":2,"type":"game.command"}"#;
        assert_eq!(decode_client(input.as_bytes()).unwrap_err().code(), ErrorCode::UnsupportedProtocol);
    }

    #[test]
    fn configurable_limits() {
        let small = Limits { max_message_bytes: 100, max_depth: 32 };
        let err = decode_client_with(command("{}").as_bytes(), &small).unwrap_err();
        assert_eq!(err.code(), ErrorCode::MessageTooLarge);
        let shallow = Limits { max_message_bytes: MAX_MESSAGE_BYTES, max_depth: 3 };
        assert!(decode_client_with(command(r#"{"a":1}"#).as_bytes(), &shallow).is_ok());
        let err = decode_client_with(command(r#"{"a":[]}"#).as_bytes(), &shallow).unwrap_err();
        assert_eq!(err.malformed_kind(), Some(MalformedKind::TooDeep));
    }
}
