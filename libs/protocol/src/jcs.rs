//! Canonical JSON (JCS, RFC 8785) and command fingerprints.
//!
//! The fingerprint identifies an envelope for idempotency: the same command id with the same
//! fingerprint is a retry and gets the original receipt again; the same id with another
//! fingerprint is `COMMAND_ID_REUSED`. It hashes the canonical form of the whole validated
//! envelope, `protocolVersion`, `type` and precondition included, so key order and whitespace
//! in the client's bytes do not matter but every value does.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::messages::{CommandEnvelope, Tagged};

/// The JCS (RFC 8785) form of a JSON value: keys sorted by UTF-16 code units, no whitespace,
/// ECMAScript number formatting.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    // A `Value` has string keys, no duplicates and only finite numbers, which are the only
    // inputs the canonicalizer refuses.
    serde_json_canonicalizer::to_vec(value).expect("a serde_json::Value always canonicalizes")
}

/// The JCS form of a whole `game.command` envelope, as hashed by [`fingerprint`].
pub fn canonical_command(cmd: &CommandEnvelope) -> Vec<u8> {
    // The envelope's fields are UUIDs, integers, strings and a `Value` payload; none of them
    // can make the canonicalizer fail.
    serde_json_canonicalizer::to_vec(&Tagged::new(cmd)).expect("a command envelope always canonicalizes")
}

/// SHA-256 of the JCS form of the whole envelope, precondition included.
pub fn fingerprint(cmd: &CommandEnvelope) -> [u8; 32] {
    Sha256::digest(canonical_command(cmd)).into()
}

/// [`fingerprint`] as 64 lowercase hex digits.
pub fn fingerprint_hex(cmd: &CommandEnvelope) -> String {
    hex::encode(fingerprint(cmd))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn jcs(text: &str) -> String {
        String::from_utf8(canonical_json(&serde_json::from_str(text).unwrap())).unwrap()
    }

    /// RFC 8785 §3.2.2 (the "structures" example): keys sorted by UTF-16 code units, literals
    /// and numbers in ECMAScript form, strings with minimal escaping.
    #[test]
    fn rfc8785_structures_example() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let expected = r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#;
        assert_eq!(jcs(input), expected);
    }

    /// RFC 8785 §3.2.3 (sorting): property names compared as UTF-16 code units, so the
    /// surrogate pair of U+1F600 sorts before U+FB33.
    #[test]
    fn rfc8785_sorting_example() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
            \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
            \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(jcs(input), expected);
    }

    fn envelope(precondition: Value, payload: Value) -> CommandEnvelope {
        serde_json::from_value(json!({
            "matchId": "0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69",
            "commandId": "c1d2e3f4-0000-4000-8000-000000000001",
            "precondition": precondition,
            "action": {"type": "drop", "payload": payload},
        }))
        .unwrap()
    }

    #[test]
    fn fingerprint_covers_envelope_fields() {
        let cmd = envelope(json!({"kind":"match","revision":7}), json!({"column":3}));
        let canonical = String::from_utf8(canonical_command(&cmd)).unwrap();
        assert_eq!(
            canonical,
            r#"{"action":{"payload":{"column":3},"type":"drop"},"commandId":"c1d2e3f4-0000-4000-8000-000000000001","matchId":"0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69","precondition":{"kind":"match","revision":7},"protocolVersion":1,"type":"game.command"}"#
        );
        assert_eq!(fingerprint_hex(&cmd), hex::encode(Sha256::digest(canonical.as_bytes())));
        let other_precondition = envelope(json!({"kind":"match","revision":8}), json!({"column":3}));
        let other_payload = envelope(json!({"kind":"match","revision":7}), json!({"column":4}));
        assert_ne!(fingerprint(&cmd), fingerprint(&other_precondition));
        assert_ne!(fingerprint(&cmd), fingerprint(&other_payload));
    }
}
