//! `protocol_decode`: the strict decoder on any bytes, as a client (or a server, for the
//! client library's reader) sends them.
//!
//! Input: the bytes of one message (the seeds are the protocol's fixtures and malformed
//! variants of them).
//!
//! Holds: no panic; a refusal is a typed `DecodeError` whose code is one of the three a
//! decoder may answer, with that code's recovery, and whose `game.error` encodes and decodes
//! as a server message naming only ids the input carried; a message that decodes encodes
//! and decodes to the same message (and a command to the same fingerprint).

use juegoland_protocol::{
    ClientMessage, DecodeError, ErrorCode, ServerMessage, decode_client, decode_server, encode, encode_client,
    fingerprint,
};

pub fn run(data: &[u8]) {
    match decode_client(data) {
        Ok(message) => round_trip_client(&message),
        Err(e) => check_refusal(data, &e),
    }
    match decode_server(data) {
        Ok(message) => {
            let again = decode_server(encode(&message).as_bytes()).expect("an encoded server message decodes");
            assert_eq!(again, message, "a server message changed through encode and decode");
        }
        Err(e) => check_refusal(data, &e),
    }
}

fn round_trip_client(message: &ClientMessage) {
    let text = encode_client(message);
    let again =
        decode_client(text.as_bytes()).unwrap_or_else(|e| panic!("an encoded client message is refused: {e:?}"));
    assert_eq!(&again, message, "a client message changed through encode and decode");
    if let (ClientMessage::Command(a), ClientMessage::Command(b)) = (message, &again) {
        assert_eq!(fingerprint(a), fingerprint(b), "a command's fingerprint changed through encode and decode");
    }
}

fn check_refusal(data: &[u8], e: &DecodeError) {
    let code = e.code();
    assert!(
        matches!(code, ErrorCode::MalformedMessage | ErrorCode::MessageTooLarge | ErrorCode::UnsupportedProtocol),
        "a decoder answered {code:?}"
    );
    assert_eq!(e.recovery(), code.default_recovery());
    assert_eq!(e.malformed_kind().is_some(), code == ErrorCode::MalformedMessage);
    let reply = e.to_error_message();
    assert_eq!(reply.code, code);
    let text = encode(&reply.clone().into());
    match decode_server(text.as_bytes()) {
        Ok(ServerMessage::Error(back)) => assert_eq!(back, reply, "a decoder's game.error changed on the wire"),
        other => panic!("a decoder's game.error does not decode as one: {other:?}"),
    }
    // Ids named in the answer come from the input: nothing is made up. (Checked on inputs
    // without escapes, where an id's text is in the input as it is.)
    let input = String::from_utf8_lossy(data).to_lowercase();
    if input.contains('\\') {
        return;
    }
    let named = [reply.match_id, reply.command_id].into_iter().flatten().map(|id| id.hyphenated().to_string());
    for id in named {
        assert!(input.contains(&id), "the answer names {id}, which the input does not carry");
    }
    for name in [&reply.request_id, &reply.subscription_id].into_iter().flatten() {
        let quoted = serde_json::to_string(name).expect("a string serializes").to_lowercase();
        assert!(
            input.contains(&name.to_lowercase()) || input.contains(&quoted),
            "the answer names {name:?}, which the input does not carry"
        );
    }
}
