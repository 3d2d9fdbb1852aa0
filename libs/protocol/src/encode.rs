//! Encoding: one JSON text per message, `protocolVersion` and `type` first.
//!
//! Protocol messages always serialize (string keys, finite numbers), so these functions do
//! not return errors. [`encode_into`] reuses a caller's buffer for hot paths.

use serde::Serialize;

use crate::messages::{ClientMessage, ServerMessage};

/// Encodes a server message as one compact JSON text.
pub fn encode(msg: &ServerMessage) -> String {
    to_string(msg)
}

/// Encodes a client message as one compact JSON text.
pub fn encode_client(msg: &ClientMessage) -> String {
    to_string(msg)
}

/// Appends the JSON text of a server message to `buf`, so a sender can reuse one buffer.
pub fn encode_into(msg: &ServerMessage, buf: &mut Vec<u8>) {
    serde_json::to_writer(buf, msg).expect("protocol messages always serialize into memory");
}

fn to_string<T: Serialize>(msg: &T) -> String {
    serde_json::to_string(msg).expect("protocol messages always serialize into memory")
}
