//! Conversions between the generated messages and the match API. Everything a request
//! carries is validated here, once; a field that does not convert is
//! [`MatchError::Invalid`] naming it.

use std::collections::{BTreeMap, HashMap};

use juegoland_api::{Created, MatchError, MatchReply, MatchRequest, SyncReply};
use juegoland_core::{GameKey, LifecycleRequest, PackagePin, SeatHolder};
use juegoland_protocol::{ClientMessage, CommandEnvelope, ServerMessage, decode_client, decode_server, encode};
use uuid::Uuid;

use crate::pb;
use crate::pb::match_reply::Reply;
use crate::pb::match_request::Request;

/// A request on the wire.
pub fn request_to_pb(request: &MatchRequest) -> pb::MatchRequest {
    let request = match request {
        MatchRequest::Create { match_id, game, seats, config } => Request::Create(pb::CreateMatchRequest {
            match_id: match_id.to_string(),
            game: Some(game_key_to_pb(game)),
            seats: seats_to_pb(seats),
            config_json: config.to_string(),
        }),
        MatchRequest::Command { principal, envelope } => Request::Command(pb::SubmitCommandRequest {
            principal: principal.clone(),
            envelope_json: juegoland_protocol::encode_client(&ClientMessage::Command(envelope.clone())),
        }),
        MatchRequest::CommandStatus { match_id, principal, command_id } => {
            Request::CommandStatus(pb::CommandStatusRequest {
                match_id: match_id.to_string(),
                principal: principal.clone(),
                command_id: command_id.to_string(),
            })
        }
        MatchRequest::Sync { match_id, principal } => {
            Request::Sync(pb::SyncRequest { match_id: match_id.to_string(), principal: principal.clone() })
        }
        MatchRequest::Lifecycle { match_id, request } => {
            let match_id = match_id.to_string();
            match request {
                LifecycleRequest::Withdraw { seat } => {
                    Request::Withdraw(pb::WithdrawRequest { match_id, seat: seat.clone() })
                }
                LifecycleRequest::FireDeadline { id, generation } => Request::FireDeadline(pb::FireDeadlineRequest {
                    match_id,
                    deadline_id: id.clone(),
                    generation: *generation,
                }),
                LifecycleRequest::Cancel { reason_code } => {
                    Request::Cancel(pb::CancelRequest { match_id, reason_code: reason_code.clone() })
                }
            }
        }
        MatchRequest::Revision { match_id } => {
            Request::Revision(pb::RevisionRequest { match_id: match_id.to_string() })
        }
    };
    pb::MatchRequest { request: Some(request) }
}

/// A request from the wire, validated. A creation without an id gets a fresh one (the
/// platform's gRPC callers may leave it to the router).
pub fn request(request: pb::MatchRequest) -> Result<MatchRequest, MatchError> {
    let lifecycle =
        |match_id: &str, request| Ok(MatchRequest::Lifecycle { match_id: uuid_field("match_id", match_id)?, request });
    match request.request.ok_or_else(|| MatchError::Invalid("request: missing".into()))? {
        Request::Create(r) => Ok(MatchRequest::Create {
            match_id: match r.match_id.as_str() {
                "" => juegoland_api::random_uuid(),
                id => uuid_field("match_id", id)?,
            },
            game: game_key(r.game)?,
            seats: seats(r.seats)?,
            config: serde_json::from_str(&r.config_json)
                .map_err(|e| MatchError::Invalid(format!("config_json: {e}")))?,
        }),
        Request::Command(r) => {
            Ok(MatchRequest::Command { principal: r.principal, envelope: envelope(&r.envelope_json)? })
        }
        Request::CommandStatus(r) => Ok(MatchRequest::CommandStatus {
            match_id: uuid_field("match_id", &r.match_id)?,
            principal: r.principal,
            command_id: uuid_field("command_id", &r.command_id)?,
        }),
        Request::Sync(r) => {
            Ok(MatchRequest::Sync { match_id: uuid_field("match_id", &r.match_id)?, principal: r.principal })
        }
        Request::Withdraw(r) => lifecycle(&r.match_id, LifecycleRequest::Withdraw { seat: r.seat }),
        Request::FireDeadline(r) => {
            lifecycle(&r.match_id, LifecycleRequest::FireDeadline { id: r.deadline_id, generation: r.generation })
        }
        Request::Cancel(r) => lifecycle(&r.match_id, LifecycleRequest::Cancel { reason_code: r.reason_code }),
        Request::Revision(r) => Ok(MatchRequest::Revision { match_id: uuid_field("match_id", &r.match_id)? }),
    }
}

/// A reply on the wire.
pub fn reply_to_pb(reply: &MatchReply) -> pb::MatchReply {
    let reply = match reply {
        MatchReply::Created(c) => Reply::Created(pb::CreateMatchReply {
            match_id: c.match_id.to_string(),
            revision: 0,
            rules_digest: c.rules_digest.clone(),
            package: c.package.as_ref().map(|p| pb::PackagePin {
                id: p.id.clone(),
                version: p.version.clone(),
                lock_digest: p.lock_digest.clone(),
            }),
        }),
        MatchReply::Message(message) => Reply::MessageJson(encode(message)),
        MatchReply::Snapshot(s) => Reply::Snapshot(pb::SyncSnapshot {
            seat: s.seat.clone(),
            revision: s.revision,
            game: Some(game_key_to_pb(&s.game)),
            view_schema_version: s.view_schema_version,
            event_schema_version: s.event_schema_version,
            snapshot_json: encode(&s.snapshot),
        }),
        MatchReply::Revision(revision) => Reply::Revision(*revision),
    };
    pb::MatchReply { reply: Some(reply) }
}

/// A reply from the wire. A node's reply that does not decode is its fault: `Internal`.
pub fn reply(reply: pb::MatchReply) -> Result<MatchReply, MatchError> {
    let node = |e: MatchError| MatchError::Internal(format!("a node's reply: {e}"));
    match reply.reply.ok_or_else(|| MatchError::Internal("an empty reply".into()))? {
        Reply::Created(r) => Ok(MatchReply::Created(Created {
            match_id: uuid_field("match_id", &r.match_id).map_err(node)?,
            rules_digest: r.rules_digest,
            package: r.package.map(|p| PackagePin { id: p.id, version: p.version, lock_digest: p.lock_digest }),
        })),
        Reply::MessageJson(json) => Ok(MatchReply::Message(server_message(&json)?)),
        Reply::Snapshot(s) => Ok(MatchReply::Snapshot(Box::new(SyncReply {
            seat: s.seat,
            revision: s.revision,
            game: game_key(s.game).map_err(node)?,
            view_schema_version: s.view_schema_version,
            event_schema_version: s.event_schema_version,
            snapshot: server_message(&s.snapshot_json)?,
        }))),
        Reply::Revision(revision) => Ok(MatchReply::Revision(revision)),
    }
}

/// A UUID field; `field` names it in the error.
pub fn uuid_field(field: &str, text: &str) -> Result<Uuid, MatchError> {
    Uuid::parse_str(text).map_err(|e| MatchError::Invalid(format!("{field}: {e}")))
}

pub fn game_key_to_pb(key: &GameKey) -> pb::GameKey {
    pb::GameKey { id: key.id.clone(), rules_version: key.rules_version.clone() }
}

/// A required game key.
pub fn game_key(key: Option<pb::GameKey>) -> Result<GameKey, MatchError> {
    let key = key.ok_or_else(|| MatchError::Invalid("game: missing".into()))?;
    if key.id.is_empty() || key.rules_version.is_empty() {
        return Err(MatchError::Invalid("game: id and rules_version are required".into()));
    }
    Ok(GameKey { id: key.id, rules_version: key.rules_version })
}

pub fn seats_to_pb(seats: &BTreeMap<String, SeatHolder>) -> HashMap<String, pb::SeatHolder> {
    seats
        .iter()
        .map(|(seat, holder)| {
            let holder = match holder {
                SeatHolder::Principal(p) => pb::seat_holder::Holder::Principal(p.clone()),
                SeatHolder::Bot(b) => pb::seat_holder::Holder::Bot(b.clone()),
            };
            (seat.clone(), pb::SeatHolder { holder: Some(holder) })
        })
        .collect()
}

/// The seats of a creation: every seat has exactly one non-empty holder.
pub fn seats(seats: HashMap<String, pb::SeatHolder>) -> Result<BTreeMap<String, SeatHolder>, MatchError> {
    seats
        .into_iter()
        .map(|(seat, holder)| {
            let holder = match holder.holder {
                Some(pb::seat_holder::Holder::Principal(p)) if !p.is_empty() => SeatHolder::Principal(p),
                Some(pb::seat_holder::Holder::Bot(b)) if !b.is_empty() => SeatHolder::Bot(b),
                _ => return Err(MatchError::Invalid(format!("seats.{seat}: a principal or a bot is required"))),
            };
            Ok((seat, holder))
        })
        .collect()
}

/// A `game.command` JSON, through the protocol's strict decoder.
pub fn envelope(json: &str) -> Result<CommandEnvelope, MatchError> {
    match decode_client(json.as_bytes()) {
        Ok(ClientMessage::Command(envelope)) => Ok(envelope),
        Ok(other) => {
            Err(MatchError::Invalid(format!("envelope: a game.command is required, not {}", other.message_type())))
        }
        Err(e) => Err(MatchError::Invalid(format!("envelope: {e}"))),
    }
}

/// A server message a node sent, through the protocol's strict decoder.
pub fn server_message(json: &str) -> Result<ServerMessage, MatchError> {
    decode_server(json.as_bytes()).map_err(|e| MatchError::Internal(format!("server message from the node: {e}")))
}
