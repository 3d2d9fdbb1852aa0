//! The checkers can fail: a public game passes, and an oracle that declares public facts
//! hidden is caught by both the pattern scan and the non-interference comparison.

use std::sync::Arc;

use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, SPECTATOR, check_confluence, check_privacy};
use juegoland_core::{GameKey, Registry};
use juegoland_sdk::{EntropySource, JsonPosition};
use serde_json::json;

fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    Arc::new(r)
}

fn cfg() -> PlayoutConfig {
    PlayoutConfig {
        game: GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() },
        seats: 2,
        config: json!({}),
        playouts: 6,
        max_steps: 60,
        seed: 11,
    }
}

/// Conecta 4 hides nothing.
struct Public;
impl PrivacyOracle for Public {
    fn forbidden(&self, _: &JsonPosition, _: &str) -> Vec<Pattern> {
        vec![Pattern::Text("internal-secret".into())]
    }
}

#[test]
fn a_public_game_passes_and_its_playouts_finish() {
    let report = check_privacy(registry(), &cfg(), &Public).unwrap();
    assert!(report.commands > 50, "{report:?}");
    assert!(report.finished_matches > 0, "{report:?}");
    assert!(report.outputs_checked > report.commands);
    // Conecta 4 defines a spectator projection: the spectators' outputs are checked too.
    assert!(report.spectator_outputs_checked > report.commands / 2, "{report:?}");
}

/// Pretends the last move is secret from spectators only: the seats' outputs pass, the
/// spectators' must be caught.
struct SecretFromSpectators;
impl PrivacyOracle for SecretFromSpectators {
    fn forbidden(&self, p: &JsonPosition, recipient: &str) -> Vec<Pattern> {
        match p.data.to_value().get("lastMove") {
            Some(m) if !m.is_null() && recipient == SPECTATOR => {
                vec![Pattern::object(json!({"row": m["row"], "column": m["column"]}))]
            }
            _ => vec![],
        }
    }
}

#[test]
fn what_leaks_to_spectators_only_is_reported_for_the_spectators() {
    let leak = check_privacy(registry(), &cfg(), &SecretFromSpectators).expect_err("spectators see the last move");
    assert_eq!(leak.recipient, SPECTATOR, "{leak:?}");
    assert!(leak.output == "snapshot" || leak.output == "publication", "{leak:?}");
}

/// Pretends the last move is secret: every output naming its column must be caught.
struct LastMoveSecret;
impl PrivacyOracle for LastMoveSecret {
    fn forbidden(&self, p: &JsonPosition, _: &str) -> Vec<Pattern> {
        match p.data.to_value().get("lastMove") {
            Some(m) if !m.is_null() => vec![Pattern::object(json!({"row": m["row"], "column": m["column"]}))],
            _ => vec![],
        }
    }
}

#[test]
fn a_forbidden_pattern_in_an_output_is_reported() {
    let leak = check_privacy(registry(), &cfg(), &LastMoveSecret).expect_err("the last move is in every view");
    assert!(leak.output == "snapshot" || leak.output == "publication", "{leak:?}");
    assert!(leak.json.contains("lastMove"));
}

/// Pretends the whole grid is hidden and scrambles it: the view changes, so non-interference
/// must fail.
struct GridSecret;
impl PrivacyOracle for GridSecret {
    fn forbidden(&self, _: &JsonPosition, _: &str) -> Vec<Pattern> {
        vec![]
    }
    fn scramble(&self, p: &JsonPosition, _: &str, _: &mut dyn EntropySource) -> Option<JsonPosition> {
        // Mirror the board left to right: still a valid position, visibly different once a
        // disc is off-centre.
        let mut data = p.data.to_value();
        let grid = data["grid"].as_array_mut()?;
        for row in grid.iter_mut() {
            row.as_array_mut()?.reverse();
        }
        if let Some(m) = data.get_mut("lastMove").filter(|m| !m.is_null()) {
            let c = m["column"].as_u64()?;
            m["column"] = json!(6 - c);
        }
        data["line"] = serde_json::Value::Null;
        let q = JsonPosition { data: (&data).into(), ..p.clone() };
        (q != *p && p.result.is_none()).then_some(q)
    }
}

#[test]
fn non_interference_catches_a_view_that_depends_on_hidden_state() {
    let leak = check_privacy(registry(), &cfg(), &GridSecret).expect_err("the view shows the grid");
    assert_eq!(leak.output, "non-interference", "{leak:?}");
}

#[test]
fn confluence_finds_no_pairs_in_a_game_without_actor_actions() {
    let report = check_confluence(registry(), &cfg(), &Public).unwrap();
    assert_eq!(report.pairs, 0);
}
