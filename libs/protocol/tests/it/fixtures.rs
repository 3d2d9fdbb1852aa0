//! The example envelopes under `fixtures/` validate against the published schemas and
//! round-trip through the decoders and encoders.

use jsonschema::Validator;
use juegoland_protocol::schema::{SchemaFile, schema_files};
use juegoland_protocol::{
    Ack, ClientMessage, DecodeError, ErrorCode, RejectionCode, ServerMessage, decode_client, decode_server, encode,
    encode_client,
};
use serde_json::{Value, json};

use crate::support::{COMMAND, MATCH, fixture_files};

fn validator(file: &SchemaFile) -> Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(&file.schema)
        .unwrap_or_else(|e| panic!("compile {}: {e}", file.file_name))
}

fn schema_named(name: &str) -> SchemaFile {
    schema_files().into_iter().find(|f| f.file_name == name).unwrap_or_else(|| panic!("no schema {name}"))
}

fn assert_valid(validator: &Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = validator.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

fn read(path: &std::path::Path) -> (Vec<u8>, Value) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
    (bytes, value)
}

#[test]
fn client_fixtures_validate_and_round_trip() {
    let union = validator(&schema_named("client-message.json"));
    let files = fixture_files("client");
    assert!(files.len() >= 4, "every client message kind needs a fixture");
    for path in files {
        let what = path.display().to_string();
        let (bytes, value) = read(&path);
        assert_valid(&union, &value, &what);
        let message_type = value["type"].as_str().expect("fixture has a type");
        assert_valid(&validator(&schema_named(&format!("{message_type}.json"))), &value, &what);

        let decoded = decode_client(&bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(decoded.message_type(), message_type);
        let encoded = encode_client(&decoded);
        assert_eq!(serde_json::from_str::<Value>(&encoded).unwrap(), value, "{what} changed in a round trip");
        assert_eq!(decode_client(encoded.as_bytes()).unwrap(), decoded);
    }
}

#[test]
fn server_fixtures_validate_and_round_trip() {
    let union = validator(&schema_named("server-message.json"));
    let files = fixture_files("server");
    assert!(files.len() >= 5, "every server message kind needs a fixture");
    for path in files {
        let what = path.display().to_string();
        let (bytes, value) = read(&path);
        assert_valid(&union, &value, &what);
        let message_type = value["type"].as_str().expect("fixture has a type");
        assert_valid(&validator(&schema_named(&format!("{message_type}.json"))), &value, &what);

        let decoded = decode_server(&bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(decoded.message_type(), message_type);
        let encoded = encode(&decoded);
        assert_eq!(serde_json::from_str::<Value>(&encoded).unwrap(), value, "{what} changed in a round trip");
        assert_eq!(decode_server(encoded.as_bytes()).unwrap(), decoded);
    }
}

#[test]
fn fixtures_cover_every_message_type() {
    let mut seen: Vec<String> = ["client", "server"]
        .into_iter()
        .flat_map(fixture_files)
        .map(|path| read(&path).1["type"].as_str().expect("fixture has a type").to_owned())
        .collect();
    seen.sort();
    seen.dedup();
    let mut expected: Vec<String> = schema_files()
        .into_iter()
        .filter_map(|f| f.file_name.strip_suffix(".json").filter(|n| n.starts_with("game.")).map(str::to_owned))
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
}

#[test]
fn schemas_reject_what_the_decoder_rejects() {
    let union = validator(&schema_named("client-message.json"));
    let good = json!({
        "protocolVersion": 1, "type": "game.command", "matchId": MATCH, "commandId": COMMAND,
        "precondition": {"kind": "match", "revision": 7}, "action": {"type": "drop", "payload": {"column": 3}},
    });
    assert!(union.is_valid(&good));
    let mut variants = Vec::new();
    for (pointer, replacement) in [
        ("/protocolVersion", json!(2)),
        ("/type", json!("game.frobnicate")),
        ("/precondition", json!({"kind": "match", "revision": 7, "extra": 1})),
        ("/precondition", json!({"kind": "actor", "revision": 7})),
        ("/action/payload", json!([3])),
        ("/matchId", json!("not-a-uuid")),
    ] {
        let mut bad = good.clone();
        *bad.pointer_mut(pointer).unwrap() = replacement;
        variants.push(bad);
    }
    let mut extra = good.clone();
    extra["unknown"] = json!(true);
    variants.push(extra);
    for bad in variants {
        assert!(!union.is_valid(&bad), "the schema accepts {bad}");
        assert!(decode_client(bad.to_string().as_bytes()).is_err(), "the decoder accepts {bad}");
    }
}

#[test]
fn encoded_envelopes_put_version_and_type_first() {
    let ack = Ack::rejected(MATCH.parse().unwrap(), COMMAND.parse().unwrap(), RejectionCode::StaleRevision);
    expect_test::expect![[r#"{"protocolVersion":1,"type":"game.ack","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","commandId":"c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f","status":"rejected","code":"STALE_REVISION","duplicate":false}"#]]
    .assert_eq(&encode(&ServerMessage::Ack(ack)));

    let err: DecodeError = decode_client(crate::support::command_with_payload(r#"{"a":1,"a":1}"#).as_bytes())
        .expect_err("duplicate keys are malformed");
    expect_test::expect![[r#"{"protocolVersion":1,"type":"game.error","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","code":"MALFORMED_MESSAGE","messageKey":"error.malformed_message","recovery":"none","commandId":"c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f","detail":"duplicate object key: at line 1 column 235"}"#]]
    .assert_eq(&encode(&err.to_error_message().into()));
    assert_eq!(err.code(), ErrorCode::MalformedMessage);

    let ClientMessage::Command(cmd) = decode_client(crate::support::command_with_payload("{}").as_bytes()).unwrap()
    else {
        panic!("not a command")
    };
    expect_test::expect![[r#"{"protocolVersion":1,"type":"game.command","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","commandId":"c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f","precondition":{"kind":"match","revision":7},"action":{"type":"drop","payload":{}}}"#]]
    .assert_eq(&encode_client(&ClientMessage::Command(cmd)));
}
