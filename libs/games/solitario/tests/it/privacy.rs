//! Privacy through the real engine: Solitario's [`PrivacyOracle`] and a `check_privacy` run.
//!
//! Hidden information is every card in the stock and every face-down tableau card. No output
//! may carry the face of one of them, any instance id (ids are never sent at all, hidden or
//! not) or any definition id; and p0's outputs must not change when the hidden cards'
//! identities are permuted among themselves.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, check_privacy};
use juegoland_core::{GameKey, Registry};
use juegoland_protocol::WireOffer;
use juegoland_sdk::{EntropySource, Game, InstanceId, JsonPosition, Position, below, erase};
use juegoland_solitario::{Action, BOT_DEFAULT, Data, MAIN_DECK, SEAT, Solitario, main_deck};
use serde_json::{Value, json};

/// Definition ids that also occur inside protocol codes (`ILLEGAL_ACTION`, `ACTOR_NOT_ENABLED`,
/// `INVALID_PAYLOAD`), so a substring search would report them falsely. Those two cards are
/// still covered by their face pattern and their instance id.
const SUBSTRINGS_OF_PROTOCOL_CODES: [&str; 2] = ["AC", "AD"];

struct Oracle;

fn data(position: &JsonPosition) -> Data {
    position.data.decode().expect("a Solitario position")
}

/// The hidden cards, in a fixed order: the stock, then each column's face-down cards.
fn hidden(data: &Data) -> Vec<InstanceId> {
    data.zones
        .iter()
        .filter(|(zone, _)| *zone == "stock" || zone.starts_with("tableau"))
        .flat_map(|(_, z)| z.cards.iter().filter(|c| !data.face_up.contains(*c)).cloned())
        .collect()
}

impl PrivacyOracle for Oracle {
    fn forbidden(&self, position: &JsonPosition, _recipient: &str) -> Vec<Pattern> {
        let set = main_deck();
        let data = data(position);
        let mut patterns: Vec<Pattern> = hidden(&data)
            .iter()
            .map(|id| {
                let face = set.face(id).expect("a card of the deck");
                Pattern::object(json!({"suit": face.suit, "rank": face.rank}))
            })
            .collect();
        patterns.push(Pattern::Text(format!("{MAIN_DECK}/")));
        for instance in set.instances() {
            patterns.push(Pattern::Text(instance.id.to_string()));
            if !SUBSTRINGS_OF_PROTOCOL_CODES.contains(&instance.definition_id.as_str()) {
                patterns.push(Pattern::Text(instance.definition_id.clone()));
            }
        }
        patterns
    }

    fn scramble(
        &self,
        position: &JsonPosition,
        _recipient: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<JsonPosition> {
        let data = data(position);
        let hidden = hidden(&data);
        if hidden.len() < 2 {
            return None;
        }
        // A uniformly random permutation of the hidden identities (Fisher-Yates).
        let mut permuted = hidden.clone();
        for i in (1..permuted.len()).rev() {
            permuted.swap(i, below(entropy, i as u64 + 1) as usize);
        }
        let rename: BTreeMap<&InstanceId, &InstanceId> = hidden.iter().zip(permuted.iter()).collect();
        // Knowledge follows the renaming too: a recycled (known) stock card may land among
        // the face-down tableau cards, and its new id takes its place in the stock.
        let mut json = serde_json::to_value(&data).unwrap();
        rename_ids(&mut json, &rename);
        let scrambled: Data = serde_json::from_value(json).unwrap();
        Some(Position { data: juegoland_sdk::RawJson::encode(&scrambled).unwrap(), ..position.clone() })
    }

    fn propose(
        &self,
        position: &JsonPosition,
        seat: &str,
        _offers: &[WireOffer],
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let typed = juegoland_sdk::Position {
            config: position.config.decode().ok()?,
            participants: position.participants.clone(),
            data: data(position),
            flow: position.flow.clone(),
            result: position.result.clone(),
        };
        let action = match below(entropy, 10) {
            // Now and then a random, probably illegal, move.
            0 => {
                let zones = ["waste", "stock", "tableau0", "tableau3", "tableau6", "foundation1"];
                let from = zones[below(entropy, zones.len() as u64) as usize];
                let to = format!("tableau{}", below(entropy, 7));
                Action::MoveStack(juegoland_solitario::MoveStackPayload {
                    from: from.into(),
                    to,
                    count: 1 + below(entropy, 3) as u8,
                })
            }
            1 => Action::MoveToFoundation(juegoland_solitario::MoveToFoundationPayload {
                from: format!("tableau{}", below(entropy, 7)),
            }),
            _ => Solitario.bot_action(&typed, seat, BOT_DEFAULT, entropy).unwrap_or_else(Action::draw),
        };
        let value = serde_json::to_value(&action).unwrap();
        Some((value["type"].as_str()?.to_owned(), value["payload"].clone()))
    }
}

/// Replaces every string equal to a renamed id, anywhere in `json`.
fn rename_ids(json: &mut Value, rename: &BTreeMap<&InstanceId, &InstanceId>) {
    match json {
        Value::String(s) => {
            if let Some((_, to)) = rename.iter().find(|(from, _)| from.as_str() == s) {
                *s = to.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_ids(v, rename)),
        Value::Object(map) => map.values_mut().for_each(|v| rename_ids(v, rename)),
        _ => {}
    }
}

#[test]
fn nothing_hidden_reaches_p0() {
    let mut registry = Registry::new();
    registry.register(erase(Solitario)).unwrap();
    let cfg = PlayoutConfig {
        game: GameKey { id: "solitario".into(), rules_version: "1.0.0".into() },
        seats: 1,
        config: json!({}),
        playouts: 24,
        max_steps: 160,
        seed: 0x5011_7A12,
    };
    let report = check_privacy(Arc::new(registry), &cfg, &Oracle).unwrap_or_else(|leak| panic!("{leak:#?}"));
    assert!(report.commands > 24 * 20, "{report:?}");
    assert!(report.scrambles_compared > 24 * 20, "{report:?}");
    assert!(report.finished_matches > 0, "{report:?}");
    assert!(report.spectator_outputs_checked > report.commands / 2, "spectators are checked: {report:?}");
}

#[test]
fn the_oracle_sees_the_hidden_cards_of_a_fresh_deal() {
    let mut e = juegoland_sdk::SplitMix64(1);
    let mut services = juegoland_sdk::Services::new(0, juegoland_sdk::Randomness::live(&mut e));
    let participants: BTreeMap<_, _> = [(SEAT.to_owned(), juegoland_sdk::Participant::active())].into();
    let setup = juegoland_sdk::Setup { config: juegoland_solitario::Config {}, participants: participants.clone() };
    let t = Solitario.setup(&setup, &mut services).unwrap();
    let data = t.data;
    assert_eq!(hidden(&data).len(), 52 - 7);
    let position = JsonPosition {
        config: (&json!({})).into(),
        participants,
        data: juegoland_sdk::RawJson::encode(&data).unwrap(),
        flow: t.flow,
        result: None,
    };
    let faces = Oracle.forbidden(&position, SEAT).iter().filter(|p| matches!(p, Pattern::Object(_))).count();
    assert_eq!(faces, 45);
    let scrambled = Oracle.scramble(&position, SEAT, &mut juegoland_sdk::SplitMix64(9)).unwrap();
    assert_ne!(scrambled.data, position.data);
    let typed = |p: &JsonPosition| juegoland_sdk::Position {
        config: juegoland_solitario::Config {},
        participants: p.participants.clone(),
        data: p.data.decode::<Data>().unwrap(),
        flow: p.flow.clone(),
        result: None,
    };
    Solitario.validate_position(&typed(&scrambled)).unwrap();
    let recipient = juegoland_sdk::Recipient::Seat(SEAT);
    assert_eq!(
        Solitario.project(&typed(&scrambled), recipient).view,
        Solitario.project(&typed(&position), recipient).view
    );
}
