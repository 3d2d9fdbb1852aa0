//! Conversions between the generated messages and the domain types. Everything a request
//! carries is validated here, once; a field that does not convert is [`RpcError::Invalid`].

use std::collections::{BTreeMap, HashMap};

use juegoland_core::{GameKey, SeatHolder};
use juegoland_protocol::{ClientMessage, CommandEnvelope, ServerMessage, decode_client, decode_server, encode};
use uuid::Uuid;

use crate::RpcError;
use crate::pb;

/// A UUID field; `field` names it in the error.
pub fn uuid_field(field: &str, text: &str) -> Result<Uuid, RpcError> {
    Uuid::parse_str(text).map_err(|e| RpcError::Invalid(format!("{field}: {e}")))
}

pub fn game_key_to_pb(key: &GameKey) -> pb::GameKey {
    pb::GameKey { id: key.id.clone(), rules_version: key.rules_version.clone() }
}

/// A required game key.
pub fn game_key(key: Option<pb::GameKey>) -> Result<GameKey, RpcError> {
    let key = key.ok_or_else(|| RpcError::Invalid("game: missing".into()))?;
    if key.id.is_empty() || key.rules_version.is_empty() {
        return Err(RpcError::Invalid("game: id and rules_version are required".into()));
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
pub fn seats(seats: HashMap<String, pb::SeatHolder>) -> Result<BTreeMap<String, SeatHolder>, RpcError> {
    seats
        .into_iter()
        .map(|(seat, holder)| {
            let holder = match holder.holder {
                Some(pb::seat_holder::Holder::Principal(p)) if !p.is_empty() => SeatHolder::Principal(p),
                Some(pb::seat_holder::Holder::Bot(b)) if !b.is_empty() => SeatHolder::Bot(b),
                _ => return Err(RpcError::Invalid(format!("seats.{seat}: a principal or a bot is required"))),
            };
            Ok((seat, holder))
        })
        .collect()
}

/// A JSON text field (a match config).
pub fn json_field(field: &str, text: &str) -> Result<serde_json::Value, RpcError> {
    serde_json::from_str(text).map_err(|e| RpcError::Invalid(format!("{field}: {e}")))
}

/// A command envelope as the protocol's `game.command` JSON.
pub fn envelope_to_json(envelope: &CommandEnvelope) -> String {
    juegoland_protocol::encode_client(&ClientMessage::Command(envelope.clone()))
}

/// A `game.command` JSON, through the protocol's strict decoder.
pub fn envelope(json: &str) -> Result<CommandEnvelope, RpcError> {
    match decode_client(json.as_bytes()) {
        Ok(ClientMessage::Command(envelope)) => Ok(envelope),
        Ok(other) => {
            Err(RpcError::Invalid(format!("envelope: a game.command is required, not {}", other.message_type())))
        }
        Err(e) => Err(RpcError::Invalid(format!("envelope: {e}"))),
    }
}

pub fn server_message_to_json(message: &ServerMessage) -> String {
    encode(message)
}

/// A server message a node sent, through the protocol's strict decoder.
pub fn server_message(json: &str) -> Result<ServerMessage, RpcError> {
    decode_server(json.as_bytes()).map_err(|e| RpcError::Internal(format!("server message from the node: {e}")))
}
