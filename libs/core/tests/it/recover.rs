//! Recovery of stored revisions (`Engine::recover`): from any stored state, the log entries
//! after it, decided again with their instants and randomness traces, give back exactly the
//! states that were committed; an entry the rules would not decide the same way is refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{Decision, Engine, GameKey, LiveMatch, LogEntry, LoggedOp, MatchState, Registry, SeatHolder};
use juegoland_protocol::{Action, CommandEnvelope};
use juegoland_sdk::SplitMix64;
use juegoland_sdk::random::DrawResult;
use serde_json::json;
use uuid::Uuid;

fn engine() -> Engine {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_hundido::Hundido)).unwrap();
    r.register(juegoland_sdk::erase(juegoland_solitario::Solitario)).unwrap();
    Engine::new(Arc::new(r))
}

/// A match of `game` between bots, played to its end (or `max` revisions): every committed
/// state (index = revision) and the log.
pub(crate) fn played(
    engine: &Engine,
    game: &str,
    seats: usize,
    config: serde_json::Value,
    max: u64,
) -> (Vec<MatchState>, Vec<LogEntry>) {
    let key = GameKey { id: game.into(), rules_version: "1.0.0".into() };
    let seats: BTreeMap<_, _> = (0..seats).map(|i| (format!("p{i}"), SeatHolder::Bot("default".into()))).collect();
    let mut entropy = SplitMix64(42);
    let (pending, mut live) =
        engine.create(Uuid::from_u128(77), &key, seats, &config, 1_000, &mut entropy).expect("create");
    let created = live.advance(pending);
    let (mut states, mut log) = (vec![live.state().clone()], vec![created.log.unwrap()]);
    let mut now_ms = 1_000;
    while !live.state().is_finished() && live.state().revision < max {
        now_ms += 250;
        let commit = match bot_move(engine, &live, now_ms, &mut entropy) {
            Some(Decision::Commit(p)) => live.advance(*p),
            _ => panic!("the bots of {game} are stuck at revision {}", live.state().revision),
        };
        if let Some(entry) = commit.log {
            states.push(live.state().clone());
            log.push(entry);
        }
    }
    (states, log)
}

/// The move of the first enabled seat's bot, decided by the engine.
fn bot_move(engine: &Engine, live: &LiveMatch, now_ms: i64, entropy: &mut SplitMix64) -> Option<Decision> {
    let s = live.state();
    let game = live.game();
    s.position.flow.actors.keys().find_map(|seat| {
        let (action_type, payload) = game.game.bot_action(live.loaded(), seat, "default", entropy)?;
        let precondition = live.precondition(seat, &action_type);
        let envelope = CommandEnvelope {
            match_id: s.match_id,
            command_id: Uuid::from_u128(1_000 + u128::from(s.revision)),
            precondition,
            action: Action { r#type: action_type, payload },
        };
        Some(engine.command(live, &format!("bot:{seat}"), &envelope, None, now_ms, entropy))
    })
}

fn recovered(engine: &Engine, from: &MatchState, entries: &[LogEntry]) -> Result<MatchState, juegoland_core::Fault> {
    let mut live = engine.load(from.clone())?;
    for entry in entries {
        live = engine.recover(live, entry)?;
    }
    Ok(live.state().clone())
}

#[test]
fn every_game_recovers_its_states_from_any_snapshot() {
    let engine = engine();
    let clock = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1_000}, "policy": "defaultMove"}});
    for (game, seats, config) in [("conecta4", 2, clock), ("hundido", 2, json!({})), ("solitario", 1, json!({}))] {
        let (states, log) = played(&engine, game, seats, config, 400);
        assert!(states.len() > 10, "{game} made {} revisions", states.len());
        for from in (0..states.len()).step_by(7) {
            let last = recovered(&engine, &states[from], &log[from + 1..]).unwrap_or_else(|e| panic!("{game}: {e}"));
            assert_eq!(&last, states.last().unwrap(), "{game} from revision {from}");
        }
        if game == "solitario" {
            assert!(log.iter().any(|e| !e.trace.is_empty()), "solitario draws randomness");
        }
    }
}

#[test]
fn a_revision_the_rules_would_not_decide_again_is_refused() {
    let engine = engine();
    let (states, log) = played(&engine, "solitario", 1, json!({}), 400);
    // A draw changed, where the revision drew; where it did not, a draw it never made.
    let mut tampered = log[1].clone();
    match tampered.trace.first_mut() {
        Some(draw) => match &mut draw.result {
            DrawResult::Value(v) => *v += 1,
            DrawResult::Permutation(p) => p.reverse(),
        },
        None => tampered.trace.push(log[0].trace.first().expect("the deal draws").clone()),
    }
    let base = &states[0];
    let e = recovered(&engine, base, std::slice::from_ref(&tampered)).unwrap_err();
    assert!(e.0.contains("diverged"), "{e}");

    // Another command than the one logged, a gap, and a second creation are refused too.
    let (states, log) = played(&engine, "conecta4", 2, json!({}), 10);
    let mut other = log[3].clone();
    if let LoggedOp::Command { payload, .. } = &mut other.op {
        *payload = json!({ "column": 6 });
    }
    assert!(recovered(&engine, &states[2], &[other]).is_err(), "another move");
    assert!(recovered(&engine, &states[2], &log[4..5]).is_err(), "a gap");
    assert!(recovered(&engine, &states[2], &log[0..1]).is_err(), "a creation");
    assert_eq!(recovered(&engine, &states[2], &log[3..]).unwrap(), *states.last().unwrap());
}
