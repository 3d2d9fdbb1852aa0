//! Privacy through the real engine: Hundido's [`PrivacyOracle`] and random playouts checked
//! by `juegoland-conformance`.
//!
//! Non-interference is the strong check: for a recipient, [`Oracle::scramble`] relocates the
//! rival's ships that the recipient has not hit to another valid layout that avoids every
//! cell the recipient fired at (so every past shot keeps its outcome); the recipient's
//! snapshot must not change by a byte. Forbidden patterns add the unambiguous leaks: an
//! internal event tag, or a rival ship not yet sunk described with its exact placement.

use std::collections::BTreeSet;

use juegoland_conformance::{Pattern, PlayoutConfig, PrivacyOracle, SPECTATOR, check_confluence, check_privacy};
use juegoland_core::GameKey;
use juegoland_hundido::{BOT_DEFAULT, Cell, Config, Data, Fleet, Hundido, ShotOutcome, Side, fleet};
use juegoland_protocol::WireOffer;
use juegoland_sdk::{EntropySource, Game, JsonPosition, Pos, Position, Recipient, SplitMix64};
use serde_json::{Value, json};

pub struct Oracle;

fn typed(position: &JsonPosition) -> Pos<Hundido> {
    Position {
        config: position.config.decode().expect("a hundido config"),
        participants: position.participants.clone(),
        data: position.data.decode().expect("hundido data"),
        flow: position.flow.clone(),
        result: position.result.clone(),
    }
}

/// The cells `side` fired at.
fn fired(data: &Data, side: Side) -> BTreeSet<Cell> {
    data.shots.iter().filter(|s| s.seat == side).map(|s| s.cell()).collect()
}

impl PrivacyOracle for Oracle {
    fn forbidden(&self, position: &JsonPosition, recipient: &str) -> Vec<Pattern> {
        // Internal event tags are never sent: only their visible forms are.
        // Nor are deadline payloads (`serial`): they are internal.
        let mut patterns: Vec<Pattern> = [
            "shipPositioned",
            "seatReady",
            "battleBegan",
            "shotResolved",
            "seatWithdrew",
            "seatTimedOut",
            "fleetAutoPlaced",
            "serial",
        ]
        .into_iter()
        .map(|t| Pattern::Text(t.to_owned()))
        .collect();
        let p = typed(position);
        // A seat may not see its rival's unsunk ships; a spectator no unsunk ship at all.
        let (shooters, own): (Vec<Side>, Option<&Fleet>) = match Side::from_seat(recipient) {
            Some(me) => (vec![me], Some(&p.data.players[me.index()].fleet)),
            None if recipient == SPECTATOR => (vec![Side::P0, Side::P1], None),
            None => return patterns,
        };
        for me in shooters {
            let rival = &p.data.players[me.other().index()].fleet;
            let sunk: BTreeSet<&str> = p
                .data
                .shots
                .iter()
                .filter(|s| s.seat == me && s.outcome == ShotOutcome::Sunk)
                .filter_map(|s| s.ship.as_deref())
                .collect();
            for (ship, at) in rival {
                // Skip a ship lying exactly where the recipient's own ship of that name lies:
                // the recipient's own board legitimately shows that object.
                if sunk.contains(ship.as_str()) || own.and_then(|own| own.get(ship)) == Some(at) {
                    continue;
                }
                patterns.push(Pattern::object(json!({
                    "ship": ship, "row": at.row, "column": at.column, "orientation": at.orientation,
                })));
            }
        }
        patterns
    }

    fn scramble(
        &self,
        position: &JsonPosition,
        recipient: &str,
        entropy: &mut dyn EntropySource,
    ) -> Option<JsonPosition> {
        // A seat's rival's fleet may move; for a spectator, both fleets.
        let shooters = match Side::from_seat(recipient) {
            Some(me) => vec![me],
            None if recipient == SPECTATOR => vec![Side::P0, Side::P1],
            None => return None,
        };
        let p = typed(position);
        let config = &p.config;
        let mut data = p.data.clone();
        let mut moved = false;
        for me in shooters {
            let rival = &p.data.players[me.other().index()].fleet;
            let blocked = fired(&p.data, me);
            // Ships the shooter hit stay (their hit cells are known); the others may move.
            let (fixed, movable): (Fleet, Fleet) =
                rival.iter().map(|(s, at)| (s.clone(), *at)).partition(|(ship, at)| {
                    fleet::cells_of(config, ship, at).is_ok_and(|cells| cells.iter().any(|c| blocked.contains(c)))
                });
            if movable.is_empty() {
                continue;
            }
            // Relocate exactly the placed, unhit ships: complete against a fleet of just those.
            let placed = Config {
                fleet: config.fleet.iter().filter(|s| rival.contains_key(&s.ship)).cloned().collect(),
                ..config.clone()
            };
            if let Some(relocated) = fleet::complete(&placed, &fixed, &blocked, Some(&mut *entropy)) {
                data.players[me.other().index()].fleet = relocated;
                moved = true;
            }
        }
        if !moved {
            return None;
        }
        let scrambled = Position { data, ..p };
        Hundido.validate_position(&scrambled).expect("a scrambled position is valid");
        Some(JsonPosition { data: juegoland_sdk::RawJson::encode(&scrambled.data).unwrap(), ..position.clone() })
    }

    fn propose(
        &self,
        position: &JsonPosition,
        seat: &str,
        _offers: &[WireOffer],
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let p = typed(position);
        let roll = entropy.next_u64() % 10;
        let action = match roll {
            // Mostly the bot, so matches reach the battle and the end.
            0..=6 => Hundido.bot_action(&p, seat, BOT_DEFAULT, entropy)?,
            // Sometimes anything: off-board, overlapping, repeated, out of turn.
            _ => crate::random_action(&p, entropy),
        };
        let v = serde_json::to_value(&action).unwrap();
        Some((v["type"].as_str().unwrap().to_owned(), v["payload"].clone()))
    }
}

fn playouts(config: Value, playouts: usize, max_steps: usize, seed: u64) -> PlayoutConfig {
    PlayoutConfig {
        game: GameKey { id: "hundido".into(), rules_version: "1.0.0".into() },
        seats: 2,
        config,
        playouts,
        max_steps,
        seed,
    }
}

fn small() -> Value {
    json!({
        "rows": 6, "columns": 6,
        "fleet": [{"ship": "long", "size": 3}, {"ship": "mid", "size": 2}, {"ship": "dot", "size": 1}],
    })
}

#[test]
fn no_recipient_learns_the_rivals_hidden_fleet() {
    let registry = crate::engine::registry();
    for (config, n, steps, seed) in [
        (json!({}), 12, 300, 1),
        (json!({"adjacency": "no-touch", "keepTurnOnHit": true}), 8, 300, 2),
        (small(), 16, 200, 3),
        // Clocked (long enough that no deadline falls due here): the views carry the clocks.
        (with_clock(small(), 3_600_000, "skip"), 8, 200, 4),
    ] {
        let report = check_privacy(registry.clone(), &playouts(config.clone(), n, steps, seed), &Oracle)
            .unwrap_or_else(|leak| panic!("leak with {config}: {leak:#?}"));
        assert!(report.scrambles_compared > 100, "{config}: {report:?}");
        assert!(report.finished_matches > 0, "{config}: {report:?}");
        assert!(report.spectator_outputs_checked > 100, "{config}: {report:?}");
    }
}

#[test]
fn the_oracle_catches_a_leaky_projection() {
    // The checker must be able to fail: a snapshot of the rival's real fleet differs from
    // one of its scrambled fleet.
    let p = {
        let mut e = juegoland_sdk::SplitMix64(4);
        let mut p = crate::start(Config::default());
        while p.flow.phase == "placement" {
            for seat in ["p0", "p1"] {
                if let Some(a) = Hundido.bot_action(&p, seat, BOT_DEFAULT, &mut e) {
                    p = crate::step(&p, seat, &a).unwrap();
                }
            }
        }
        p
    };
    let json = JsonPosition {
        config: juegoland_sdk::RawJson::encode(&p.config).unwrap(),
        participants: p.participants.clone(),
        data: juegoland_sdk::RawJson::encode(&p.data).unwrap(),
        flow: p.flow.clone(),
        result: None,
    };
    let scrambled = Oracle.scramble(&json, "p0", &mut juegoland_sdk::SplitMix64(1)).unwrap();
    assert_ne!(scrambled.data.to_value()["players"][1], json.data.to_value()["players"][1], "the rival fleet moved");
    assert_eq!(
        scrambled.data.to_value()["players"][0],
        json.data.to_value()["players"][0],
        "the recipient's fleet stays"
    );
    let own = typed(&scrambled);
    let leaky = serde_json::to_string(&own.data.players[1].fleet).unwrap();
    assert_ne!(leaky, serde_json::to_string(&p.data.players[1].fleet).unwrap());
    // And the honest projection does not move.
    let a = serde_json::to_value(Hundido.project(&p, juegoland_sdk::Recipient::Seat("p0")).view).unwrap();
    let b = serde_json::to_value(Hundido.project(&own, juegoland_sdk::Recipient::Seat("p0")).view).unwrap();
    assert_eq!(a, b);
    // The forbidden patterns name the rival's ships as placed.
    let patterns = Oracle.forbidden(&json, "p0");
    assert!(patterns.len() > 5, "{patterns:?}");
    // For a spectator, both fleets move and are forbidden as placed, and its honest
    // projection does not move either.
    let both = Oracle.scramble(&json, SPECTATOR, &mut juegoland_sdk::SplitMix64(1)).unwrap();
    let moved = typed(&both);
    for side in [0, 1] {
        assert_ne!(moved.data.players[side].fleet, p.data.players[side].fleet, "fleet {side} moved");
    }
    let spectator = juegoland_sdk::Recipient::Spectator;
    let a = serde_json::to_value(Hundido.project(&p, spectator).view).unwrap();
    let b = serde_json::to_value(Hundido.project(&moved, spectator).view).unwrap();
    assert_eq!(a, b);
    assert!(Oracle.forbidden(&json, SPECTATOR).len() > patterns.len(), "both fleets are forbidden");
}

/// [`Oracle`]'s proposals, except that a seat never proposes the `ready` that would start
/// the battle (it re-places a ship where it already lies instead, a legal no-op move).
///
/// Why: `check_confluence` also compares actor revisions, and two `ready`s are the one pair
/// whose counters depend on the order under the engine's counter rules (the first is an
/// own-stage change that bumps only its author, the second the barrier that bumps everyone),
/// though both orders reach the same position. That pair is covered at the rules level by
/// `props::placement_actions_of_different_players_commute`.
struct NoBarrier;

impl PrivacyOracle for NoBarrier {
    fn forbidden(&self, position: &JsonPosition, recipient: &str) -> Vec<Pattern> {
        Oracle.forbidden(position, recipient)
    }

    fn propose(
        &self,
        position: &JsonPosition,
        seat: &str,
        offers: &[WireOffer],
        entropy: &mut dyn EntropySource,
    ) -> Option<(String, Value)> {
        let proposal = Oracle.propose(position, seat, offers, entropy)?;
        let p = typed(position);
        let me = Side::from_seat(seat)?;
        let rival = &p.data.players[me.other().index()];
        let rival_may_ready = p.flow.stage_of(me.other().seat()) == Some(juegoland_hundido::STAGE_ARRANGE)
            && fleet::is_complete(&p.config, &rival.fleet);
        if proposal.0 != "ready" || !(rival.ready || rival_may_ready) {
            return Some(proposal);
        }
        let (ship, at) = p.data.players[me.index()].fleet.iter().next()?;
        Some((
            "placeShip".into(),
            json!({"ship": ship, "row": at.row, "column": at.column, "orientation": at.orientation}),
        ))
    }
}

#[test]
fn placement_is_confluent_through_the_engine() {
    let registry = crate::engine::registry();
    let report = check_confluence(registry, &playouts(small(), 12, 60, 5), &NoBarrier)
        .unwrap_or_else(|e| panic!("not confluent: {e}"));
    assert!(report.pairs > 10, "{report:?}");
}

/// `config` with a placement deadline of `timeout_ms` (auto placement) and a per-turn battle
/// clock of `timeout_ms` with `battle_policy`.
fn with_clock(mut config: Value, timeout_ms: u32, battle_policy: &str) -> Value {
    config["clock"] = json!({
        "placement": {"timeoutMs": timeout_ms, "policy": "defaultMove"},
        "battle": {"mode": {"kind": "perTurn", "turnMs": timeout_ms}, "policy": battle_policy},
    });
    config
}

/// Whether `json` contains `pattern` anywhere (the conformance checker's rule: a text in any
/// key or string, an object with all of the pattern's fields).
fn contains(json: &Value, pattern: &Pattern) -> bool {
    let here = match (json, pattern) {
        (Value::String(s), Pattern::Text(t)) => s.contains(t.as_str()),
        (Value::Object(map), Pattern::Text(t)) => map.keys().any(|k| k.contains(t.as_str())),
        (Value::Object(map), Pattern::Object(fields)) => fields.iter().all(|(k, v)| map.get(k) == Some(v)),
        _ => false,
    };
    here || match json {
        Value::Array(items) => items.iter().any(|v| contains(v, pattern)),
        Value::Object(map) => map.values().any(|v| contains(v, pattern)),
        _ => false,
    }
}

/// Checks every seat's snapshot (forbidden patterns and non-interference under the oracle's
/// scramble) and every publication since `from`; returns how many outputs were checked.
fn check_outputs(m: &crate::engine::Match, from: usize, rng: &mut SplitMix64) -> usize {
    let position = &m.live.state().position;
    let mut checked = 0;
    for seat in ["p0", "p1"] {
        let forbidden = Oracle.forbidden(position, seat);
        let text = juegoland_protocol::encode(&m.live.snapshot(Recipient::Seat(seat), &m.engine).unwrap());
        let value: Value = serde_json::from_str(&text).unwrap();
        if let Some(p) = forbidden.iter().find(|p| contains(&value, p)) {
            panic!("{seat}'s snapshot holds {p:?}: {text}");
        }
        if let Some(scrambled) = Oracle.scramble(position, seat, rng) {
            let mut state = m.live.state().clone();
            state.position = scrambled;
            let other = m.engine.load(state).expect("a scrambled position loads");
            let other_text = juegoland_protocol::encode(&other.snapshot(Recipient::Seat(seat), &m.engine).unwrap());
            assert_eq!(text, other_text, "{seat}'s snapshot changed with hidden state only");
        }
        checked += 1;
    }
    for (recipient, _, text) in &m.published[from..] {
        let recipient = recipient.as_deref().unwrap_or_default();
        let value: Value = serde_json::from_str(text).unwrap();
        if let Some(p) = Oracle.forbidden(position, recipient).iter().find(|p| contains(&value, p)) {
            panic!("a publication to {recipient} holds {p:?}: {text}");
        }
        checked += 1;
    }
    checked
}

/// Clocked matches through the engine in which deadlines do fire: auto-placed fleets,
/// skipped turns, default shots and forfeits. Seats act through the bot, sometimes only
/// partly through placement; a third of the time the clock runs out instead. Nothing any
/// recipient receives reveals the rival's hidden fleet, and every match replays.
#[test]
fn timeouts_reveal_no_hidden_fleet() {
    use crate::engine::Match;
    let mut checked = 0;
    let mut timeouts = 0;
    let mut results = std::collections::BTreeMap::<String, usize>::new();
    for (seed, policy) in (0..12u64).zip(["skip", "defaultMove", "forfeit"].into_iter().cycle()) {
        let mut m = Match::with_seed(with_clock(small(), 20_000, policy), seed);
        let mut rng = SplitMix64(seed);
        let mut seen = 0;
        for _ in 0..200 {
            checked += check_outputs(&m, seen, &mut rng);
            seen = m.published.len();
            if let Some(result) = &m.live.state().position.result {
                let reason = serde_json::to_value(result).unwrap()["reasonCode"].as_str().unwrap().to_owned();
                *results.entry(reason).or_default() += 1;
                break;
            }
            if rng.next_u64().is_multiple_of(3) {
                m.fire_clock().expect("the clock deadline fires");
                timeouts += 1;
                continue;
            }
            let p = typed(&m.live.state().position);
            let actors: Vec<String> = p.flow.actors.keys().cloned().collect();
            let seat = &actors[(rng.next_u64() % actors.len() as u64) as usize];
            let Some(action) = Hundido.bot_action(&p, seat, BOT_DEFAULT, &mut rng) else { continue };
            let v = serde_json::to_value(&action).unwrap();
            let action_type = v["type"].as_str().unwrap().to_owned();
            let precondition = if action_type == "fire" {
                juegoland_protocol::Precondition::Match { revision: m.live.state().revision }
            } else {
                m.actor_precondition(seat)
            };
            let envelope = m.envelope(precondition, &action_type, v["payload"].clone());
            m.run(seat, &envelope);
        }
        m.replay();
    }
    assert!(timeouts > 30 && checked > 500, "{timeouts} timeouts, {checked} outputs");
    assert!(results.values().sum::<usize>() >= 10, "most matches end: {results:?}");
    assert!(results.contains_key("timeout") && results.contains_key("fleet-destroyed"), "{results:?}");
}
