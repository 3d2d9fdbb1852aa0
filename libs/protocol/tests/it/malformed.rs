//! Every class of bad input gets its error code, and its precise kind for logs.

use juegoland_protocol::{
    ClientMessage, DecodeError, ErrorCode, Limits, MAX_MESSAGE_BYTES, MalformedKind, Recovery, decode_client,
    decode_server,
};

use crate::support::{COMMAND, MATCH, command_with_payload, nested_objects};

const SYNC: &str = r#"{"protocolVersion":1,"type":"game.sync","requestId":"r-1","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","accept":[{"id":"conecta4","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}]}"#;

fn decode(input: impl AsRef<[u8]>) -> Result<ClientMessage, DecodeError> {
    decode_client(input.as_ref())
}

fn malformed(input: impl AsRef<[u8]>) -> MalformedKind {
    let err = decode(input).expect_err("input must be rejected");
    assert_eq!(err.code(), ErrorCode::MalformedMessage, "{err}");
    err.malformed_kind().expect("malformed errors have a kind")
}

/// `(name, input, expected kind)` for inputs that must be `MALFORMED_MESSAGE`.
fn malformed_cases() -> Vec<(&'static str, Vec<u8>, MalformedKind)> {
    let cmd = command_with_payload(r#"{"column":3}"#);
    let sub = |from: &str, to: &str| {
        assert!(cmd.contains(from), "{from} not in the base command");
        cmd.replacen(from, to, 1).into_bytes()
    };
    let mut invalid_utf8 = command_with_payload(r#"{"name":"ab"}"#).into_bytes();
    let at = invalid_utf8.windows(2).position(|w| w == b"ab").expect("marker");
    invalid_utf8[at] = 0xff;
    vec![
        ("empty input", b"".to_vec(), MalformedKind::Syntax),
        ("bad JSON", b"{\"protocolVersion\":1,".to_vec(), MalformedKind::Syntax),
        ("trailing data", format!("{cmd} {{}}").into_bytes(), MalformedKind::Syntax),
        ("not an object", b"[1,2,3]".to_vec(), MalformedKind::InvalidValue),
        (
            "duplicate top-level key",
            sub(r#""type":"game.command","#, r#""type":"game.command","type":"game.command","#),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate matchId",
            sub(r#""commandId""#, &format!(r#""matchId":"{MATCH}","commandId""#)),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate key in precondition",
            sub(r#""revision":7"#, r#""revision":7,"revision":7"#),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate key in action",
            sub(r#""type":"drop""#, r#""type":"drop","type":"drop""#),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate key in payload",
            command_with_payload(r#"{"column":3,"column":4}"#).into_bytes(),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate key deep in payload",
            command_with_payload(r#"{"a":[{"b":{"c":1,"d":[],"c":1}}]}"#).into_bytes(),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate key spelled with an escape",
            command_with_payload(r#"{"a":1,"\u0061":1}"#).into_bytes(),
            MalformedKind::DuplicateKey,
        ),
        (
            "duplicate key in accept tuple",
            SYNC.replacen(r#""id":"conecta4""#, r#""id":"conecta4","id":"x""#, 1).into_bytes(),
            MalformedKind::DuplicateKey,
        ),
        ("invalid UTF-8 bytes", invalid_utf8, MalformedKind::InvalidUnicode),
        (
            "lone leading surrogate",
            command_with_payload(r#"{"name":"\ud800"}"#).into_bytes(),
            MalformedKind::InvalidUnicode,
        ),
        (
            "lone trailing surrogate",
            command_with_payload(r#"{"name":"\udc00x"}"#).into_bytes(),
            MalformedKind::InvalidUnicode,
        ),
        (
            "lone surrogate in a key",
            command_with_payload(r#"{"\ud83d":1}"#).into_bytes(),
            MalformedKind::InvalidUnicode,
        ),
        (
            "unknown top-level field",
            sub(r#""protocolVersion":1,"#, r#""protocolVersion":1,"extra":true,"#),
            MalformedKind::UnknownField,
        ),
        (
            "unknown field in precondition",
            sub(r#""revision":7"#, r#""revision":7,"actor":"p0""#),
            MalformedKind::UnknownField,
        ),
        (
            "unknown field in action",
            sub(r#""type":"drop""#, r#""type":"drop","seat":"p0""#),
            MalformedKind::UnknownField,
        ),
        (
            "unknown field in accept tuple",
            SYNC.replacen(r#""id":"conecta4""#, r#""id":"conecta4","x":1"#, 1).into_bytes(),
            MalformedKind::UnknownField,
        ),
        (
            "field of another message type",
            sub(r#""protocolVersion":1,"#, r#""protocolVersion":1,"requestId":"r-1","#),
            MalformedKind::UnknownField,
        ),
        ("unknown message type", sub("game.command", "game.frobnicate"), MalformedKind::UnknownType),
        ("server message type from a client", sub("game.command", "game.ack"), MalformedKind::UnknownType),
        ("missing protocolVersion", sub(r#""protocolVersion":1,"#, ""), MalformedKind::MissingField),
        ("missing type", sub(r#""type":"game.command","#, ""), MalformedKind::MissingField),
        ("missing action", sub(r#","action":{"type":"drop","payload":{"column":3}}"#, ""), MalformedKind::MissingField),
        ("missing payload", sub(r#","payload":{"column":3}"#, ""), MalformedKind::MissingField),
        (
            "protocolVersion as string",
            sub(r#""protocolVersion":1"#, r#""protocolVersion":"1""#),
            MalformedKind::InvalidValue,
        ),
        (
            "protocolVersion as float",
            sub(r#""protocolVersion":1"#, r#""protocolVersion":1.5"#),
            MalformedKind::InvalidValue,
        ),
        ("revision as string", sub(r#""revision":7"#, r#""revision":"7""#), MalformedKind::InvalidValue),
        ("negative revision", sub(r#""revision":7"#, r#""revision":-1"#), MalformedKind::InvalidValue),
        ("unknown precondition kind", sub(r#""kind":"match""#, r#""kind":"phase""#), MalformedKind::InvalidValue),
        ("matchId not a UUID", sub(MATCH, "0b6e"), MalformedKind::InvalidValue),
        ("commandId as a number", sub(&format!(r#""{COMMAND}""#), "17"), MalformedKind::InvalidValue),
        ("UUID without hyphens", sub(MATCH, &MATCH.replace('-', "")), MalformedKind::InvalidValue),
        ("payload not an object", command_with_payload("[3]").into_bytes(), MalformedKind::InvalidValue),
        ("empty action type", sub(r#""type":"drop""#, r#""type":"""#), MalformedKind::InvalidValue),
        (
            "empty accept",
            SYNC.replacen(
                r#""accept":[{"id":"conecta4","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}]"#,
                r#""accept":[]"#,
                1,
            )
            .into_bytes(),
            MalformedKind::InvalidValue,
        ),
        (
            "empty requestId",
            SYNC.replacen(r#""requestId":"r-1""#, r#""requestId":"""#, 1).into_bytes(),
            MalformedKind::InvalidValue,
        ),
        (
            "requestId of 129 characters",
            SYNC.replacen("r-1", &"é".repeat(129), 1).into_bytes(),
            MalformedKind::InvalidValue,
        ),
        ("depth 33", command_with_payload(&nested_objects(31)).into_bytes(), MalformedKind::TooDeep),
        (
            "depth 33 in arrays",
            command_with_payload(&format!("{{\"a\":{}1{}}}", "[".repeat(30), "]".repeat(30))).into_bytes(),
            MalformedKind::TooDeep,
        ),
        (
            "depth far beyond serde_json's own limit",
            command_with_payload(&nested_objects(200)).into_bytes(),
            MalformedKind::TooDeep,
        ),
    ]
}

#[test]
fn every_malformed_class_is_malformed_message() {
    let mut failures = Vec::new();
    for (name, input, expected) in malformed_cases() {
        match decode(&input) {
            Ok(msg) => failures.push(format!("{name}: accepted as {}", msg.message_type())),
            Err(err) if err.code() != ErrorCode::MalformedMessage => failures.push(format!("{name}: {:?}", err.code())),
            Err(err) if err.malformed_kind() != Some(expected) => {
                failures.push(format!("{name}: {:?} instead of {expected:?}", err.malformed_kind()));
            }
            Err(err) => assert_eq!(err.recovery(), Recovery::None),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn depth_32_is_accepted() {
    // The envelope is depth 1, `action` 2 and `payload` 3, so 30 nested objects reach 32.
    assert!(decode(command_with_payload(&nested_objects(30))).is_ok());
    assert_eq!(malformed(command_with_payload(&nested_objects(31))), MalformedKind::TooDeep);
    let arrays = format!("{{\"a\":{}1{}}}", "[".repeat(29), "]".repeat(29));
    assert!(decode(command_with_payload(&arrays)).is_ok());
}

#[test]
fn size_limit_is_64_kib() {
    let base = command_with_payload(r#"{"pad":""}"#);
    let pad = MAX_MESSAGE_BYTES - base.len();
    let exact = command_with_payload(&format!(r#"{{"pad":"{}"}}"#, "x".repeat(pad)));
    assert_eq!(exact.len(), 64 * 1024);
    assert!(decode(&exact).is_ok());
    let over = command_with_payload(&format!(r#"{{"pad":"{}"}}"#, "x".repeat(pad + 1)));
    let err = decode(&over).expect_err("64 KiB + 1 is too large");
    assert_eq!(err, DecodeError::TooLarge { size: 64 * 1024 + 1, limit: 64 * 1024 });
    assert_eq!(err.code(), ErrorCode::MessageTooLarge);
    assert_eq!(err.to_error_message().match_id, None, "an oversize message is never parsed");
    // The size check comes before parsing: oversize garbage is too large, not malformed.
    assert_eq!(decode(vec![b'{'; 64 * 1024 + 1]).unwrap_err().code(), ErrorCode::MessageTooLarge);
}

#[test]
fn other_protocol_versions_are_unsupported() {
    let cmd = command_with_payload("{}");
    for version in ["2", "0", "-1", "18446744073709551615"] {
        let input = cmd.replacen(r#""protocolVersion":1"#, &format!(r#""protocolVersion":{version}"#), 1);
        let err = decode(&input).expect_err("only version 1");
        assert_eq!(err.code(), ErrorCode::UnsupportedProtocol, "version {version}");
        assert_eq!(err.recovery(), Recovery::ReloadClient);
    }
    // A version-2 message may carry fields v1 does not know, before or after the version.
    let future = r#"{"type":"game.command","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","hint":{"x":1},"protocolVersion":2}"#;
    let err = decode(future).expect_err("only version 1");
    assert_eq!(err.code(), ErrorCode::UnsupportedProtocol);
    assert_eq!(err.to_error_message().match_id.map(|id| id.to_string()).as_deref(), Some(MATCH));
}

#[test]
fn error_replies_name_readable_ids_and_never_echo_input() {
    let secret = "hunter2-private-hand";
    let input = SYNC.replacen(r#""viewSchemaVersion":1"#, &format!(r#""viewSchemaVersion":"{secret}""#), 1);
    let err = decode(&input).expect_err("wrong type");
    let reply = juegoland_protocol::encode(&err.to_error_message().into());
    assert!(!reply.contains(secret), "{reply}");
    assert!(!err.to_string().contains(secret), "{err}");
    let reply = err.to_error_message();
    assert_eq!(reply.request_id.as_deref(), Some("r-1"));
    assert_eq!(reply.match_id.map(|id| id.to_string()).as_deref(), Some(MATCH));
    assert_eq!(reply.command_id, None);
}

#[test]
fn server_decoder_is_just_as_strict() {
    let ack = format!(
        r#"{{"protocolVersion":1,"type":"game.ack","matchId":"{MATCH}","commandId":"{COMMAND}","status":"applied","revision":8,"duplicate":false}}"#
    );
    assert!(decode_server(ack.as_bytes()).is_ok());
    let cases = [
        (ack.replacen(r#""revision":8"#, r#""revision":8,"revision":9"#, 1), MalformedKind::DuplicateKey),
        (ack.replacen(r#""duplicate":false"#, r#""duplicate":false,"x":1"#, 1), MalformedKind::UnknownField),
        (ack.replacen("game.ack", "game.command", 1), MalformedKind::UnknownType),
        (ack.replacen(r#","duplicate":false"#, "", 1), MalformedKind::MissingField),
    ];
    for (input, kind) in cases {
        let err = decode_server(input.as_bytes()).expect_err("rejected");
        assert_eq!(err.malformed_kind(), Some(kind), "{input}");
        // Ids are read from a well-formed object only; duplicate keys fail before that.
        let expected_match = (kind != MalformedKind::DuplicateKey).then_some(MATCH);
        assert_eq!(err.ids().unwrap().match_id.map(|id| id.to_string()).as_deref(), expected_match);
    }
    let v2 = ack.replacen(r#""protocolVersion":1"#, r#""protocolVersion":2"#, 1);
    assert_eq!(decode_server(v2.as_bytes()).unwrap_err().code(), ErrorCode::UnsupportedProtocol);
    let deep = format!(
        r#"{{"protocolVersion":1,"type":"game.snapshot","matchId":"{MATCH}","subscriptionId":"s","revision":1,"seat":null,"view":{},"context":{{}},"actions":[],"result":null,"events":[]}}"#,
        nested_objects(64)
    );
    assert_eq!(decode_server(deep.as_bytes()).unwrap_err().malformed_kind(), Some(MalformedKind::TooDeep));
    // A snapshot must always carry `seat` and `result`, even when they are null.
    let no_seat = deep.replacen(&nested_objects(64), "{}", 1).replacen(r#""seat":null,"#, "", 1);
    assert_eq!(decode_server(no_seat.as_bytes()).unwrap_err().malformed_kind(), Some(MalformedKind::MissingField));
}

#[test]
fn limits_default_to_the_spec() {
    assert_eq!(Limits::default(), Limits { max_message_bytes: 64 * 1024, max_depth: 32 });
}
