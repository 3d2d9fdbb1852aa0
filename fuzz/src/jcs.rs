//! `jcs_fingerprint`: canonical JSON (RFC 8785) and command fingerprints. Equal values give
//! equal canonical forms, digests and fingerprints however they are written; different
//! values give different ones; the canonical form is RFC 8785's.
//!
//! Input: `TEXT [NUL CHOICES]`. TEXT is a JSON text (the seeds are real messages, views and
//! the RFC's examples); when it does not parse, the whole input draws a value instead
//! ([`crate::json::arbitrary_value`]). CHOICES draw everything else: two respellings of the
//! value, the envelope around it, and one change to it.

use arbitrary::Unstructured;
use juegoland_protocol::{
    Action, ClientMessage, CommandEnvelope, DecodeError, Precondition, canonical_command, canonical_json,
    decode_client, digest_hex, fingerprint,
};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::json::{arbitrary_value, jcs_equal, mutate, reference_jcs, respell};

pub fn run(data: &[u8]) {
    let (text, choices) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let (value, choices) = match serde_json::from_slice::<Value>(text) {
        Ok(v) => (v, choices),
        Err(_) => {
            let mut u = Unstructured::new(data);
            let Ok(v) = arbitrary_value(&mut u, 4) else { return };
            (v, &data[data.len() - u.len()..])
        }
    };
    let mut u = Unstructured::new(choices);
    let _ = check(&mut u, &value);
}

fn check(u: &mut Unstructured<'_>, value: &Value) -> arbitrary::Result<()> {
    // The canonical form is RFC 8785's, and canonical again when read back.
    let canonical = canonical_json(value);
    let mut reference = String::new();
    reference_jcs(value, &mut reference);
    assert_eq!(
        String::from_utf8_lossy(&canonical),
        reference,
        "the canonicalizer disagrees with RFC 8785 on {value:?}"
    );
    let back: Value = serde_json::from_slice(&canonical).expect("a canonical form parses");
    assert!(jcs_equal(value, &back), "the canonical form {reference} reads back as another value");
    assert_eq!(canonical_json(&back), canonical, "canonicalizing is not idempotent on {reference}");
    let digest = digest_hex(value);

    // Two other spellings of the value: the same value, canonical form and digest.
    let envelope = Envelope::draw(u)?;
    let mut fingerprints = Vec::new();
    for _ in 0..2 {
        let mut text = String::new();
        respell(u, value, &mut text)?;
        let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("a respelling does not parse: {e}"));
        assert!(
            jcs_equal(value, &parsed),
            "{text:?} is {value:?} respelled, but serde_json reads it as {parsed:?}: equal JSON values must read as \
             equal values (numbers as the nearest double)"
        );
        assert_eq!(canonical_json(&parsed), canonical, "{text:?} and {reference} canonicalize differently");
        assert_eq!(digest_hex(&parsed), digest, "{text:?} and {reference} have different digests");
        // The same value as a command's payload, through the strict decoder.
        fingerprints.push(envelope.decode(u, &text)?);
    }
    let direct = envelope.fingerprint(value);
    for decoded in &fingerprints {
        match decoded {
            Ok(f) => assert_eq!(*f, direct, "a respelled command's fingerprint differs from its value's"),
            Err(e) => assert!(
                e.malformed_kind() == Some(juegoland_protocol::MalformedKind::TooDeep)
                    || e.code() == juegoland_protocol::ErrorCode::MessageTooLarge,
                "a respelled command of a JSON value was refused: {e:?}"
            ),
        }
    }

    // A changed value: different exactly when the change made it a different value.
    let changed = mutate(u, value)?;
    let equal = jcs_equal(value, &changed);
    assert_eq!(canonical_json(&changed) == canonical, equal, "{value:?} and {changed:?}: canonical forms");
    assert_eq!(digest_hex(&changed) == digest, equal, "{value:?} and {changed:?}: digests");
    assert_eq!(envelope.fingerprint(&changed) == direct, equal, "{value:?} and {changed:?}: fingerprints");
    Ok(())
}

/// The command envelope the value travels in as `payload.v`.
struct Envelope {
    match_id: Uuid,
    command_id: Uuid,
    precondition: Precondition,
    action_type: String,
}

impl Envelope {
    fn draw(u: &mut Unstructured<'_>) -> arbitrary::Result<Self> {
        let precondition = match u.int_in_range(0..=2u8)? {
            0 => Precondition::Match { revision: u.arbitrary()? },
            1 => Precondition::Actor { phase_epoch: u.arbitrary()?, actor_revision: u.arbitrary()? },
            _ => Precondition::Queue,
        };
        let action_type: String = u.arbitrary()?;
        let action_type =
            if action_type.is_empty() || action_type.chars().count() > 128 { "drop".into() } else { action_type };
        Ok(Envelope {
            match_id: Uuid::from_u128(u.arbitrary()?),
            command_id: Uuid::from_u128(u.arbitrary()?),
            precondition,
            action_type,
        })
    }

    fn command(&self, value: &Value) -> CommandEnvelope {
        CommandEnvelope {
            match_id: self.match_id,
            command_id: self.command_id,
            precondition: self.precondition,
            action: Action { r#type: self.action_type.clone(), payload: json!({ "v": value }) },
        }
    }

    fn fingerprint(&self, value: &Value) -> [u8; 32] {
        let command = self.command(value);
        let generic = juegoland_protocol::jcs::canonical_command_generic(&command);
        assert_eq!(canonical_command(&command), generic, "the fast and the generic canonical command differ");
        fingerprint(&command)
    }

    /// The envelope as a client could write it around `payload_text` (members in any order,
    /// whitespace, UUIDs in either case), through the strict decoder, and its fingerprint.
    fn decode(&self, u: &mut Unstructured<'_>, payload_text: &str) -> arbitrary::Result<Result<[u8; 32], DecodeError>> {
        let uuid = |u: &mut Unstructured<'_>, id: Uuid| -> arbitrary::Result<String> {
            let text = id.hyphenated().to_string();
            Ok(if u.arbitrary()? { text.to_uppercase() } else { text })
        };
        let precondition = match self.precondition {
            Precondition::Match { revision } => format!(r#"{{"kind":"match","revision":{revision}}}"#),
            Precondition::Actor { phase_epoch, actor_revision } => {
                format!(r#"{{"actorRevision":{actor_revision},"phaseEpoch":{phase_epoch},"kind":"actor"}}"#)
            }
            Precondition::Queue => r#"{"kind":"queue"}"#.to_owned(),
        };
        let action_type = serde_json::to_string(&self.action_type).expect("a string serializes");
        let mut members = [
            r#""protocolVersion":1"#.to_owned(),
            r#""type":"game.command""#.to_owned(),
            format!(r#""matchId":"{}""#, uuid(u, self.match_id)?),
            format!(r#""commandId":"{}""#, uuid(u, self.command_id)?),
            format!(r#""precondition":{precondition}"#),
            format!(r#""action":{{"payload":{{"v":{payload_text}}},"type":{action_type}}}"#),
        ];
        for i in (1..members.len()).rev() {
            let j = u.int_in_range(0..=i)?;
            members.swap(i, j);
        }
        let text = format!("{{{}}}", members.join(if u.arbitrary()? { ", " } else { "," }));
        Ok(decode_client(text.as_bytes()).map(|message| match message {
            ClientMessage::Command(command) => {
                assert_eq!(command, self.command(&command.action.payload["v"]), "the decoder changed the envelope");
                fingerprint(&command)
            }
            other => panic!("a game.command decoded as {other:?}"),
        }))
    }
}
