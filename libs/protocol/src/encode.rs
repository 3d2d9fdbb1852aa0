//! Encoding: one JSON text per message, `protocolVersion` and `type` first.
//!
//! Protocol messages always serialize (string keys, finite numbers), so these functions do
//! not return errors. [`encode_into`] reuses a caller's buffer for hot paths.

use serde::Serialize;

use crate::messages::{ClientMessage, ServerMessage};

/// Encodes a server message as one compact JSON text.
pub fn encode(msg: &ServerMessage) -> String {
    let mut buf = Vec::with_capacity(512);
    encode_into(msg, &mut buf);
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

/// Encodes a client message as one compact JSON text.
pub fn encode_client(msg: &ClientMessage) -> String {
    to_string(msg)
}

/// Appends the JSON text of a server message to `buf`, so a sender can reuse one buffer.
///
/// The hot path of every publication: instead of serde's `flatten` (which goes through a
/// map serializer), it writes the envelope fields and then the body struct, turning the
/// body's opening brace into the comma that follows `type`. The bytes are identical to the
/// `Serialize` impl's (a test checks it).
pub fn encode_into(msg: &ServerMessage, buf: &mut Vec<u8>) {
    fn tagged<T: Serialize>(buf: &mut Vec<u8>, message_type: &str, body: &T) {
        buf.extend_from_slice(b"{\"protocolVersion\":1,\"type\":\"");
        buf.extend_from_slice(message_type.as_bytes());
        buf.push(b'"');
        let at = buf.len();
        serde_json::to_writer(&mut *buf, body).expect("protocol messages always serialize into memory");
        // Every body is a struct with at least one field: it starts with `{"`.
        debug_assert_eq!(buf.get(at), Some(&b'{'));
        buf[at] = b',';
    }
    let t = msg.message_type();
    match msg {
        ServerMessage::Snapshot(m) => tagged(buf, t, m.as_ref()),
        ServerMessage::Ack(m) => tagged(buf, t, m),
        ServerMessage::CommandUnknown(m) => tagged(buf, t, m),
        ServerMessage::Cursor(m) => tagged(buf, t, m),
        ServerMessage::Error(m) => tagged(buf, t, m),
    }
}

fn to_string<T: Serialize>(msg: &T) -> String {
    serde_json::to_string(msg).expect("protocol messages always serialize into memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_encoder_writes_the_same_bytes_as_serialize() {
        for dir in ["fixtures/server"] {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            #[allow(clippy::disallowed_methods)] // Reading fixtures in a test is the shell's job.
            for entry in std::fs::read_dir(root).expect("fixtures") {
                let path = entry.expect("entry").path();
                #[allow(clippy::disallowed_methods)]
                let bytes = std::fs::read(&path).expect("fixture");
                let msg = crate::decode_server(&bytes).expect("a valid fixture");
                assert_eq!(encode(&msg), serde_json::to_string(&msg).unwrap(), "{}", path.display());
            }
        }
    }
}
