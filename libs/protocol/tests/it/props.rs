//! Property tests: the decoder never panics, and fingerprints depend on values only.

use juegoland_protocol::jcs::canonical_command_generic;
use juegoland_protocol::{
    ClientMessage, ErrorCode, canonical_command, canonical_json, decode_client, decode_server, encode_client,
    fingerprint,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::support::command_with_payload;

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Eighths are exact in binary, so they survive a text round trip unchanged.
        (-1_000_000i32..1_000_000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\u{e9}\u{1f600}]{0,4}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z]{1,6}", arb_json(), 0..6).prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Writes `value` as JSON text with object keys in an order and with whitespace chosen by
/// `noise`, so that equal values get different texts.
fn write_scrambled(value: &Value, noise: &mut impl Iterator<Item = u8>, out: &mut String) {
    let space = |out: &mut String, noise: &mut dyn Iterator<Item = u8>| {
        for _ in 0..noise.next().unwrap_or(0) % 3 {
            out.push_str([" ", "\n", "\t"][usize::from(noise.next().unwrap_or(0) % 3)]);
        }
    };
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            for i in (1..entries.len()).rev() {
                entries.swap(i, usize::from(noise.next().unwrap_or(0)) % (i + 1));
            }
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(out, noise);
                out.push_str(&serde_json::to_string(key).unwrap());
                space(out, noise);
                out.push(':');
                write_scrambled(item, noise, out);
            }
            space(out, noise);
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(out, noise);
                write_scrambled(item, noise, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn command_value(payload: &Value, revision: u64) -> Value {
    let mut value: Value = serde_json::from_str(&command_with_payload("{}")).unwrap();
    value["precondition"]["revision"] = revision.into();
    value["action"]["payload"] = payload.clone();
    value
}

fn decode_command(text: &str) -> juegoland_protocol::CommandEnvelope {
    match decode_client(text.as_bytes()) {
        Ok(ClientMessage::Command(cmd)) => cmd,
        other => panic!("not a command: {other:?} from {text}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Err(err) = decode_client(&bytes) {
            prop_assert!(matches!(err.code(), ErrorCode::MalformedMessage | ErrorCode::UnsupportedProtocol));
        }
        let _ = decode_server(&bytes);
    }

    #[test]
    fn mutated_commands_never_panic(
        payload in arb_object(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = serde_json::to_vec(&command_value(&payload, 7)).unwrap();
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        match decode_client(&bytes) {
            Ok(msg) => {
                // Whatever is accepted must survive a round trip unchanged.
                let again = decode_client(encode_client(&msg).as_bytes());
                prop_assert_eq!(again.ok(), Some(msg));
            }
            Err(err) => prop_assert!(matches!(err.code(), ErrorCode::MalformedMessage | ErrorCode::UnsupportedProtocol)),
        }
    }

    #[test]
    fn random_json_never_panics(value in arb_json()) {
        let text = value.to_string();
        let _ = decode_client(text.as_bytes());
        let _ = decode_server(text.as_bytes());
        let _ = decode_client(command_with_payload(&text).as_bytes());
    }

    #[test]
    fn valid_payloads_round_trip(payload in arb_object()) {
        let text = command_value(&payload, 7).to_string();
        let cmd = decode_command(&text);
        prop_assert_eq!(&cmd.action.payload, &payload);
        let encoded = encode_client(&ClientMessage::Command(cmd.clone()));
        prop_assert_eq!(decode_command(&encoded), cmd);
    }

    #[test]
    fn fingerprint_ignores_key_order_and_whitespace(
        payload in arb_object(),
        noise in prop::collection::vec(any::<u8>(), 64..256),
    ) {
        let value = command_value(&payload, 7);
        let plain = decode_command(&value.to_string());
        let mut scrambled = String::new();
        write_scrambled(&value, &mut noise.iter().copied().cycle(), &mut scrambled);
        let scrambled_cmd = decode_command(&scrambled);
        prop_assert_eq!(fingerprint(&plain), fingerprint(&scrambled_cmd));
        prop_assert_eq!(canonical_json(&plain.action.payload), canonical_json(&scrambled_cmd.action.payload));
    }

    #[test]
    fn fast_canonical_form_matches_the_canonicalizer(
        payload in arb_object(),
        action_type in "\\PC{1,12}",
        actor in any::<Option<(u64, u64)>>(),
        queue in any::<bool>(),
        revision in any::<u64>(),
    ) {
        let mut value = command_value(&payload, revision);
        value["action"]["type"] = Value::String(action_type);
        if let Some((phase_epoch, actor_revision)) = actor {
            value["precondition"] = serde_json::json!({"kind":"actor","phaseEpoch":phase_epoch,"actorRevision":actor_revision});
        } else if queue {
            value["precondition"] = serde_json::json!({"kind":"queue"});
        }
        let cmd = decode_command(&value.to_string());
        prop_assert_eq!(
            String::from_utf8(canonical_command(&cmd)).unwrap(),
            String::from_utf8(canonical_command_generic(&cmd)).unwrap()
        );
    }

    #[test]
    fn fingerprint_sees_precondition_and_payload(payload in arb_object(), revision in 0u64..1000, key in "[a-z]{7}") {
        let base = decode_command(&command_value(&payload, revision).to_string());
        let other_revision = decode_command(&command_value(&payload, revision + 1).to_string());
        prop_assert_ne!(fingerprint(&base), fingerprint(&other_revision));
        let mut changed: Map<String, Value> = payload.as_object().cloned().unwrap_or_default();
        // Keys of seven letters never occur in `arb_object`, so this always adds a key.
        changed.insert(key, Value::Null);
        let other_payload = decode_command(&command_value(&Value::Object(changed), revision).to_string());
        prop_assert_ne!(fingerprint(&base), fingerprint(&other_payload));
    }
}
