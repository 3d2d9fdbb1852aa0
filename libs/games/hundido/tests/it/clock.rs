//! The optional clocks at the rules level: config validation, the placement deadline (auto
//! placement or forfeit), the battle clock (skip, default shot, forfeit; per turn or per
//! player), replacing the deadline on every turn, stale firings, the end of the match
//! cancelling the clock, the views, and replay of the auto-placement's randomness.

use std::collections::BTreeMap;

use juegoland_hundido::{
    Action, Cell, ClockView, Clocks, Config, Event, Hundido, Orientation, REASON_ABANDONED, REASON_TIMEOUT, ShipSpec,
    Side, SkippedTurn, VisibleEvent, default_target, fleet,
};
use juegoland_sdk::{
    CLOCK_DEADLINE, ClockMode, DeadlineOp, Game, Lifecycle, MatchResult, Outcome, ParticipantStatus, PhaseClock, Pos,
    Position, Randomness, Recipient, RuleError, Services, Setup, SplitMix64, TimeoutPolicy, Trace, Trans, TurnClock,
    erase,
};
use serde_json::{Value, json};

use crate::participants;

const H: Orientation = Orientation::Horizontal;
const PLACEMENT_MS: u32 = 60_000;
const TURN_MS: u32 = 20_000;

/// A 6 × 6 board with a `long` ship of 3 and a `short` one of 2.
fn small(clock: Clocks) -> Config {
    Config {
        rows: 6,
        columns: 6,
        fleet: vec![ShipSpec::new("long", 3), ShipSpec::new("short", 2)],
        clock: Some(clock),
        ..Config::default()
    }
}

fn clocks(placement: Option<TimeoutPolicy>, battle: Option<(ClockMode, TimeoutPolicy)>) -> Clocks {
    Clocks {
        placement: placement.map(|policy| PhaseClock { timeout_ms: PLACEMENT_MS, policy }),
        battle: battle.map(|(mode, policy)| TurnClock { mode, policy }),
    }
}

fn per_turn() -> ClockMode {
    ClockMode::PerTurn { turn_ms: TURN_MS }
}

/// Runs `f` with services at `now_ms`; returns its output and the randomness trace.
fn at<T>(now_ms: i64, f: impl FnOnce(&mut Services<'_>) -> T) -> (T, Trace) {
    let mut entropy = SplitMix64(now_ms as u64);
    let mut services = Services::new(now_ms, Randomness::live(&mut entropy));
    let out = f(&mut services);
    (out, services.finish().expect("labels are unique"))
}

fn start_at(config: Config, now_ms: i64) -> (Pos<Hundido>, Trans<Hundido>) {
    let (t, _) = at(now_ms, |s| Hundido.setup(&Setup { config: config.clone(), participants: participants() }, s));
    let t = t.unwrap();
    let p = Position { config, participants: participants(), data: t.data.clone(), flow: t.flow.clone(), result: None };
    Hundido.validate_position(&p).unwrap();
    (p, t)
}

fn commit(p: &Pos<Hundido>, t: &Trans<Hundido>) -> Pos<Hundido> {
    let next = Position { data: t.data.clone(), flow: t.flow.clone(), result: t.result.clone(), ..p.clone() };
    Hundido.validate_position(&next).unwrap_or_else(|e| panic!("{e}"));
    next
}

fn act(p: &Pos<Hundido>, now_ms: i64, seat: &str, action: Action) -> Result<Trans<Hundido>, RuleError> {
    at(now_ms, |s| Hundido.apply(p, seat, &action, s)).0
}

fn fire_deadline(p: &Pos<Hundido>, now_ms: i64, payload: &Value) -> Result<Trans<Hundido>, RuleError> {
    let event = Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload: payload.clone() };
    at(now_ms, |s| Hundido.on_lifecycle(p, &event, s)).0
}

fn schedule(t: &Trans<Hundido>) -> (i64, Value) {
    match &t.deadlines[..] {
        [DeadlineOp::Schedule { id, due_ms, payload }] if id == CLOCK_DEADLINE => (*due_ms, payload.clone()),
        other => panic!("expected one clock schedule, got {other:?}"),
    }
}

fn cancels(t: &Trans<Hundido>) {
    assert_eq!(t.deadlines, vec![DeadlineOp::Cancel { id: CLOCK_DEADLINE.into() }]);
}

fn view_clock(p: &Pos<Hundido>, recipient: Recipient<'_>) -> Option<ClockView> {
    Hundido.project(p, recipient).view.clock
}

/// Both seats place the small fleet (long at row 0, short at row 2, from column 0) and ready,
/// at `now_ms`; returns the battle and the transition that started it.
fn battle(config: Config, now_ms: i64) -> (Pos<Hundido>, Trans<Hundido>) {
    let (mut p, _) = start_at(config, now_ms);
    for seat in ["p0", "p1"] {
        p = commit(&p, &act(&p, now_ms, seat, Action::place("long", 0, 0, H)).unwrap());
        p = commit(&p, &act(&p, now_ms, seat, Action::place("short", 2, 0, H)).unwrap());
    }
    p = commit(&p, &act(&p, now_ms, "p0", Action::ready()).unwrap());
    let t = act(&p, now_ms, "p1", Action::ready()).unwrap();
    (commit(&p, &t), t)
}

#[test]
fn the_clock_config_is_optional_strict_and_checked() {
    let game = erase(Hundido);
    let clock = json!({
        "placement": {"timeoutMs": 120000, "policy": "defaultMove"},
        "battle": {"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "skip"},
    });
    let decoded = game.decode_config(&json!({"clock": clock})).unwrap();
    assert_eq!(decoded["clock"], clock);
    assert!(game.decode_config(&json!({})).unwrap().get("clock").is_none(), "untimed configs keep their shape");
    assert!(jsonschema::is_valid(&game.schemas().config, &json!({"clock": clock})));
    assert!(!jsonschema::is_valid(&game.schemas().config, &json!({"clock": {"placement": {"timeoutMs": 1}}})));

    let setup = |clock: Clocks| {
        at(0, |s| Hundido.setup(&Setup { config: small(clock), participants: participants() }, s)).0.err()
    };
    assert_eq!(
        setup(clocks(Some(TimeoutPolicy::Skip), None)),
        Some(RuleError::illegal(
            "invalid-clock: placement: timeout policy \"skip\" is not supported here (supported: defaultMove, forfeit)"
        ))
    );
    assert_eq!(
        setup(clocks(None, None)),
        Some(RuleError::illegal("invalid-clock: a clock needs a placement deadline, a battle clock or both"))
    );
    let huge = ClockMode::PerPlayer { budget_ms: 1_000, increment_ms: 3_600_001 };
    assert_eq!(
        setup(clocks(None, Some((huge, TimeoutPolicy::Skip)))),
        Some(RuleError::illegal("invalid-clock: battle: incrementMs must be between 0 and 3600000 ms, got 3600001"))
    );
    for policy in [TimeoutPolicy::Skip, TimeoutPolicy::DefaultMove, TimeoutPolicy::Forfeit] {
        assert_eq!(setup(clocks(Some(TimeoutPolicy::Forfeit), Some((per_turn(), policy)))), None);
    }

    // No clock: no deadlines, no clock data or view, and deadlines refused.
    let (p, t) = start_at(Config::default(), 0);
    assert!(t.deadlines.is_empty());
    assert_eq!(p.data.clock, None);
    assert!(serde_json::to_value(Hundido.project(&p, Recipient::Spectator).view).unwrap().get("clock").is_none());
    assert_eq!(fire_deadline(&p, 0, &json!({"serial": 1})).err(), Some(RuleError::illegal("no-deadlines")));
}

#[test]
fn placement_actions_leave_the_deadline_alone_until_the_battle_replaces_it() {
    let config = small(clocks(Some(TimeoutPolicy::Forfeit), Some((per_turn(), TimeoutPolicy::Skip))));
    let (p, t) = start_at(config.clone(), 1_000);
    assert_eq!(schedule(&t), (61_000, json!({"serial": 1})));
    let shown = view_clock(&p, Recipient::Seat("p1")).unwrap();
    assert_eq!(serde_json::to_value(&shown.running).unwrap(), json!({"startedMs": 1000, "dueMs": 61000}));

    // Placing and the first ready change no deadline and no clock data (they stay
    // independent `actor` actions).
    let t = act(&p, 2_000, "p0", Action::place("long", 0, 0, H)).unwrap();
    assert!(t.deadlines.is_empty());
    assert_eq!(t.data.clock, p.data.clock);
    // Too late is too late, even for a legal placement.
    assert_eq!(act(&p, 61_000, "p0", Action::place("long", 0, 0, H)).err(), Some(RuleError::illegal("out-of-time")));

    // The barrier into battle replaces the placement deadline with p0's first turn.
    let (b, t) = battle(config, 5_000);
    assert_eq!(schedule(&t), (25_000, json!({"serial": 2, "seat": "p0"})));
    let running = b.data.clock.as_ref().unwrap().running.clone().unwrap();
    assert_eq!((running.seat.as_deref(), running.started_ms), (Some("p0"), 5_000));

    // A placement deadline without a battle clock is cancelled when the battle starts.
    let (_, t) = battle(small(clocks(Some(TimeoutPolicy::Forfeit), None)), 5_000);
    cancels(&t);
    // A battle clock without a placement deadline starts with the battle.
    let (p, t) = start_at(small(clocks(None, Some((per_turn(), TimeoutPolicy::Skip)))), 0);
    assert!(t.deadlines.is_empty());
    assert_eq!(view_clock(&p, Recipient::Spectator).unwrap().running, None);
}

#[test]
fn placement_default_move_completes_and_readies_every_late_fleet() {
    let config = small(clocks(Some(TimeoutPolicy::DefaultMove), Some((per_turn(), TimeoutPolicy::Forfeit))));
    let (mut p, t) = start_at(config, 0);
    let (due, payload) = schedule(&t);
    // p0 placed one ship and is not ready; p1 placed nothing.
    p = commit(&p, &act(&p, 10, "p0", Action::place("short", 5, 4, H)).unwrap());

    let (out, trace) = at(due, |s| {
        Hundido.on_lifecycle(&p, &Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload: payload.clone() }, s)
    });
    let t = out.unwrap();
    let after = commit(&p, &t);
    assert_eq!(after.flow.phase, "battle");
    assert_eq!(after.flow.stage_of("p0"), Some("fire"));
    for side in Side::BOTH {
        let own = &after.data.players[side.index()];
        assert!(own.ready && fleet::is_complete(&after.config, &own.fleet));
    }
    assert_eq!(after.data.players[0].fleet["short"], p.data.players[0].fleet["short"], "placed ships stay");
    // The new ships were drawn with labelled randomness (private trace), one draw per ship.
    let labels: Vec<&str> = trace.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["autoPlace.p0.long", "autoPlace.p1.long", "autoPlace.p1.short"]);
    // ...and the same trace replays to the same fleets.
    let mut replay = Services::new(due, Randomness::replay(&trace));
    let again = Hundido
        .on_lifecycle(&p, &Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload }, &mut replay)
        .unwrap();
    assert_eq!(again.data, t.data);
    replay.finish().unwrap();

    // The battle clock starts for p0 at the firing instant.
    assert_eq!(schedule(&t), (due + i64::from(TURN_MS), json!({"serial": 2, "seat": "p0"})));
    let kinds: Vec<&str> = t
        .events
        .iter()
        .map(|e| match e {
            Event::SeatTimedOut { .. } => "timedOut",
            Event::FleetAutoPlaced { .. } => "autoPlaced",
            Event::SeatReady { .. } => "ready",
            Event::BattleBegan { .. } => "battle",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["timedOut", "autoPlaced", "ready", "timedOut", "autoPlaced", "ready", "battle"]);
    // What anyone sees of it: counts and readiness, never a coordinate.
    for recipient in [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator] {
        let visible: Vec<VisibleEvent> =
            t.events.iter().flat_map(|e| Hundido.project_event(&p, &after, e, recipient)).collect();
        let text = serde_json::to_string(&visible).unwrap();
        assert!(!text.contains("row") && !text.contains("orientation"), "{text}");
        assert!(text.contains("clock.expired"), "{text}");
    }
    // Each seat's own view shows its own (auto-placed) fleet; the rival's stays hidden.
    let seen = serde_json::to_value(Hundido.project(&after, Recipient::Seat("p0")).view).unwrap();
    for (ship, at) in &after.data.players[1].fleet {
        let hidden = json!({"ship": ship, "row": at.row, "column": at.column, "orientation": at.orientation});
        assert!(!seen.to_string().contains(&hidden.to_string()), "p1's {ship} leaked to p0");
    }
}

#[test]
fn an_auto_placed_fleet_is_not_predictable() {
    let config = small(clocks(Some(TimeoutPolicy::DefaultMove), None));
    let (p, t) = start_at(config.clone(), 0);
    let (due, payload) = schedule(&t);
    let layouts: std::collections::BTreeSet<String> = (0..8)
        .map(|seed| {
            let mut entropy = SplitMix64(seed);
            let mut services = Services::new(due, Randomness::live(&mut entropy));
            let event = Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload: payload.clone() };
            let t = Hundido.on_lifecycle(&p, &event, &mut services).unwrap();
            serde_json::to_string(&t.data.players[1].fleet).unwrap()
        })
        .collect();
    assert!(layouts.len() > 1, "an idle seat's fleet must not be a fixed layout: {layouts:?}");
    let deterministic = fleet::complete(&config, &Default::default(), &Default::default(), None).unwrap();
    assert!(layouts.len() > 4 || !layouts.contains(&serde_json::to_string(&deterministic).unwrap()));
}

#[test]
fn placement_forfeit_makes_the_unready_seat_lose_or_abandons() {
    let config = small(clocks(Some(TimeoutPolicy::Forfeit), Some((per_turn(), TimeoutPolicy::Skip))));
    let (mut p, t) = start_at(config, 0);
    let (due, payload) = schedule(&t);
    // Neither ready: no winner.
    let t = fire_deadline(&p, due, &payload).unwrap();
    assert_eq!(t.result, Some(MatchResult::cancelled(REASON_ABANDONED)));
    assert_eq!(t.events, vec![Event::SeatTimedOut { seat: Side::P0 }, Event::SeatTimedOut { seat: Side::P1 }]);
    assert!(t.deadlines.is_empty(), "the consumed deadline was the only one");
    commit(&p, &t);
    // p1 ready, p0 not: p0 loses.
    for ship in [("long", 0), ("short", 2)] {
        p = commit(&p, &act(&p, 10, "p1", Action::place(ship.0, ship.1, 0, H)).unwrap());
    }
    p = commit(&p, &act(&p, 10, "p1", Action::ready()).unwrap());
    let t = fire_deadline(&p, due + 5, &payload).unwrap();
    assert_eq!(t.result, Some(MatchResult::completed(REASON_TIMEOUT, [("p0", Outcome::Loss), ("p1", Outcome::Win)])));
    let after = commit(&p, &t);
    assert_eq!(view_clock(&after, Recipient::Spectator).unwrap().running, None);
    assert_eq!(fire_deadline(&after, due + 5, &payload).err(), Some(RuleError::illegal("match-finished")));
}

#[test]
fn a_shot_in_time_replaces_the_battle_clock_and_a_late_one_is_refused() {
    let config = small(clocks(None, Some((per_turn(), TimeoutPolicy::Forfeit))));
    let (b, t) = battle(config, 0);
    let (due, old) = schedule(&t);
    assert_eq!(due, 20_000);
    assert_eq!(act(&b, 20_000, "p0", Action::fire(5, 5)).err(), Some(RuleError::illegal("out-of-time")));
    assert_eq!(act(&b, 19_999, "p0", Action::fire(9, 9)).err(), Some(RuleError::illegal("out-of-bounds")));
    let t = act(&b, 19_999, "p0", Action::fire(5, 5)).unwrap();
    assert_eq!(schedule(&t), (39_999, json!({"serial": 2, "seat": "p1"})));
    let b = commit(&b, &t);
    // The finished turn's payload is stale even if it arrives.
    assert_eq!(fire_deadline(&b, 39_999, &old).err(), Some(RuleError::illegal("stale-clock")));
    // The placement-style payload (no seat) is stale in battle.
    assert_eq!(fire_deadline(&b, 39_999, &json!({"serial": 2})).err(), Some(RuleError::illegal("stale-clock")));
    assert_eq!(
        at(0, |s| Hundido.on_lifecycle(
            &b,
            &Lifecycle::DeadlineExpired { id: "turn".into(), payload: json!({"serial": 2}) },
            s
        ))
        .0
        .err(),
        Some(RuleError::illegal("unknown-deadline"))
    );
}

#[test]
fn battle_forfeit_makes_the_shooter_lose() {
    let config = small(clocks(None, Some((per_turn(), TimeoutPolicy::Forfeit))));
    let (b, _) = battle(config, 0);
    let t = act(&b, 100, "p0", Action::fire(5, 5)).unwrap();
    let (due, payload) = schedule(&t);
    let b = commit(&b, &t);
    let t = fire_deadline(&b, due, &payload).unwrap();
    assert_eq!(t.result, Some(MatchResult::completed(REASON_TIMEOUT, [("p1", Outcome::Loss), ("p0", Outcome::Win)])));
    assert_eq!(t.events, vec![Event::SeatTimedOut { seat: Side::P1 }]);
    assert_eq!(t.flow.turn, b.flow.turn);
    commit(&b, &t);
}

#[test]
fn battle_default_move_fires_at_the_first_untargeted_cell() {
    let config = small(clocks(None, Some((per_turn(), TimeoutPolicy::DefaultMove))));
    let (mut b, t) = battle(config, 0);
    let (mut due, mut payload) = schedule(&t);
    // Nobody fires: the rules shoot row by row for both seats, and p0 (first) wins.
    let mut shots = 0;
    while b.result.is_none() {
        let side = Side::from_seat(b.flow.actors.keys().next().unwrap()).unwrap();
        let target = default_target(&b.config, &b.data, side).unwrap();
        let t = fire_deadline(&b, due, &payload).unwrap();
        assert_eq!(t.events[0], Event::SeatTimedOut { seat: side });
        assert!(matches!(t.events[1], Event::ShotResolved { seat, row, column, .. }
            if seat == side && Cell::new(row, column) == target));
        b = commit(&b, &t);
        shots += 1;
        if b.result.is_none() {
            (due, payload) = schedule(&t);
        } else {
            assert!(t.deadlines.is_empty(), "the consumed deadline was the only one");
        }
    }
    // Both fleets lie in rows 0 and 2; p0 reaches (2, 1) first, on its 14th shot.
    assert_eq!(shots, 27);
    assert_eq!(
        b.result,
        Some(MatchResult::completed("fleet-destroyed", [("p0", Outcome::Win), ("p1", Outcome::Loss)]))
    );
}

#[test]
fn battle_skip_passes_the_turn_and_two_in_a_row_abandon() {
    let config = small(clocks(None, Some((per_turn(), TimeoutPolicy::Skip))));
    let (b, t) = battle(config, 0);
    let (due, payload) = schedule(&t);
    let t = fire_deadline(&b, due, &payload).unwrap();
    assert_eq!(t.events, vec![Event::SeatTimedOut { seat: Side::P0 }]);
    assert_eq!(t.data.skips, vec![SkippedTurn { seat: Side::P0, shots: 0 }]);
    assert_eq!((t.flow.turn, t.flow.round, t.flow.stage_of("p1")), (1, 1, Some("fire")));
    let b = commit(&b, &t);
    assert_eq!(schedule(&t).0, 40_000);
    // p1 fires in time; then p0 skips again, and p1 too: nobody is playing.
    let t = act(&b, 30_000, "p1", Action::fire(4, 4)).unwrap();
    let b = commit(&b, &t);
    let (due, payload_p0) = schedule(&t);
    let t = fire_deadline(&b, due, &payload_p0).unwrap();
    let b = commit(&b, &t);
    let (due, payload_p1) = schedule(&t);
    let t = fire_deadline(&b, due, &payload_p1).unwrap();
    assert_eq!(t.result, Some(MatchResult::cancelled(REASON_ABANDONED)));
    assert!(t.flow.actors.is_empty());
    assert_eq!(t.flow.turn, 4);
    let end = commit(&b, &t);
    assert_eq!(end.data.skips.len(), 3);
    let visible = Hundido.project_event(&b, &end, &t.events[0], Recipient::Spectator);
    assert_eq!(serde_json::to_value(visible).unwrap(), json!([{"type": "clock.expired", "data": {"seat": "p1"}}]));
}

#[test]
fn per_player_battle_budgets_are_charged_and_shown() {
    let mode = ClockMode::PerPlayer { budget_ms: 30_000, increment_ms: 1_000 };
    let config = small(clocks(Some(TimeoutPolicy::DefaultMove), Some((mode, TimeoutPolicy::Skip))));
    let (b, t) = battle(config, 0);
    assert_eq!(schedule(&t).0, 30_000);
    let t = act(&b, 12_000, "p0", Action::fire(5, 5)).unwrap();
    assert_eq!(schedule(&t).0, 42_000);
    let b = commit(&b, &t);
    let v = serde_json::to_value(view_clock(&b, Recipient::Seat("p1")).unwrap()).unwrap();
    assert_eq!(v["remainingMs"], json!({"p0": 19_000, "p1": 30_000}));
    assert_eq!(v["running"], json!({"seat": "p1", "startedMs": 12_000, "dueMs": 42_000}));
    assert_eq!(v["settings"]["battle"]["mode"], json!({"kind": "perPlayer", "budgetMs": 30000, "incrementMs": 1000}));
    // p1 lets its whole budget go: skipped, and from then on it is due at once.
    let (due, payload) = schedule(&t);
    let t = fire_deadline(&b, due, &payload).unwrap();
    let b = commit(&b, &t);
    assert_eq!(b.data.clock.as_ref().unwrap().remaining_ms, BTreeMap::from([("p0".into(), 19_000), ("p1".into(), 0)]));
    let t = act(&b, due + 500, "p0", Action::fire(5, 4)).unwrap();
    assert_eq!(schedule(&t).0, due + 500, "p1 has no time left");
}

#[test]
fn finishing_the_match_cancels_the_clock() {
    // The last sinking shot (p1 fires at water in between).
    let config = small(clocks(None, Some((per_turn(), TimeoutPolicy::Skip))));
    let (mut b, _) = battle(config.clone(), 0);
    let shots = [(0, 0), (0, 1), (0, 2), (2, 0)];
    for (i, (r, c)) in shots.into_iter().enumerate() {
        let now = 100 * i as i64;
        b = commit(&b, &act(&b, now, "p0", Action::fire(r, c)).unwrap());
        b = commit(&b, &act(&b, now + 50, "p1", Action::fire(5, i as u8)).unwrap());
    }
    let t = act(&b, 1_000, "p0", Action::fire(2, 1)).unwrap();
    assert_eq!(t.result.as_ref().map(|r| matches!(r, MatchResult::Completed { .. })), Some(true));
    cancels(&t);

    // A withdrawal, in placement (with a placement deadline) and in battle.
    let (p, _) = start_at(small(clocks(Some(TimeoutPolicy::Forfeit), None)), 0);
    let (battling, _) = battle(config, 0);
    for pos in [p, battling] {
        let mut marked = pos.clone();
        marked.participants.get_mut("p1").unwrap().status = ParticipantStatus::Withdrawn;
        let t = at(10, |s| Hundido.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p1".into() }, s)).0.unwrap();
        cancels(&t);
        let end = commit(&marked, &t);
        assert_eq!(end.data.clock.as_ref().unwrap().running, None);
    }
    // Without a running clock (a battle clock only, still in placement) nothing is cancelled.
    let (p, _) = start_at(small(clocks(None, Some((per_turn(), TimeoutPolicy::Skip)))), 0);
    let mut marked = p.clone();
    marked.participants.get_mut("p0").unwrap().status = ParticipantStatus::Withdrawn;
    let t = at(10, |s| Hundido.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p0".into() }, s)).0.unwrap();
    assert!(t.deadlines.is_empty());
}

#[test]
fn the_validator_checks_clocks_and_skips() {
    let config = small(clocks(Some(TimeoutPolicy::Forfeit), Some((per_turn(), TimeoutPolicy::Skip))));
    let (b, t) = battle(config.clone(), 0);
    let (due, payload) = schedule(&t);
    let skipped = commit(&b, &fire_deadline(&b, due, &payload).unwrap());
    let bad = |p: &Pos<Hundido>, f: &dyn Fn(&mut Pos<Hundido>), needle: &str| {
        let mut q = p.clone();
        f(&mut q);
        let e = Hundido.validate_position(&q).expect_err(needle);
        assert!(e.0.contains(needle), "{needle:?} not in {e}");
    };
    bad(&b, &|q| q.data.clock = None, "data.clock is missing");
    bad(&b, &|q| q.config.clock = None, "the config has no clock");
    bad(&b, &|q| q.data.clock.as_mut().unwrap().running = None, "must run for p0");
    bad(&b, &|q| q.data.clock.as_mut().unwrap().running.as_mut().unwrap().due_ms += 1, "clock: p0's turn is due");
    bad(&skipped, &|q| q.data.skips.clear(), "turn 1 and round 1");
    bad(&skipped, &|q| q.data.skips[0].seat = Side::P1, "p1 skipped a turn after shot 0 but it was p0's turn");
    bad(&skipped, &|q| q.data.skips[0].shots = 3, "out of order or after the last shot");
    bad(
        &skipped,
        &|q| q.config.clock.as_mut().unwrap().battle.as_mut().unwrap().policy = TimeoutPolicy::Forfeit,
        "without a battle clock with the skip policy",
    );
    bad(
        &skipped,
        &|q| {
            q.data.skips.push(SkippedTurn { seat: Side::P1, shots: 0 });
            q.flow = juegoland_sdk::Flow::single("battle", 2, 2, "p0", "fire");
        },
        "two turns in a row timed out but the match is active",
    );
    // Placement: the deadline must run for no seat, exactly `timeoutMs` long.
    let (p, _) = start_at(config.clone(), 0);
    bad(&p, &|q| q.data.clock.as_mut().unwrap().running = None, "the placement deadline must run");
    bad(&p, &|q| q.data.clock.as_mut().unwrap().running.as_mut().unwrap().due_ms -= 1, "60000 ms long");
    bad(
        &p,
        &|q| {
            q.result = Some(MatchResult::completed(REASON_TIMEOUT, [("p0", Outcome::Loss), ("p1", Outcome::Win)]));
            q.flow.actors.clear();
            q.data.clock.as_mut().unwrap().running = None;
        },
        "exactly one unready seat",
    );
    bad(
        &b,
        &|q| {
            q.config.clock.as_mut().unwrap().battle.as_mut().unwrap().policy = TimeoutPolicy::Forfeit;
            q.result = Some(MatchResult::completed(REASON_TIMEOUT, [("p1", Outcome::Loss), ("p0", Outcome::Win)]));
            q.flow.actors.clear();
            q.data.clock.as_mut().unwrap().running = None;
        },
        "p0 (the shooter) loses",
    );
    bad(
        &b,
        &|q| {
            q.result = Some(MatchResult::cancelled(REASON_ABANDONED));
            q.flow.actors.clear();
        },
        "abandoned exactly when two turns in a row timed out",
    );
}

/// A whole clocked match where nobody ever acts: the placement deadline auto-places both
/// fleets, then every battle turn is fired by the rules. Run twice with the same entropy, it
/// reaches the same end (the auto-placement's draws are the only randomness).
#[test]
fn an_idle_match_plays_itself_to_the_end_deterministically() {
    let run = || {
        let config = Config {
            clock: Some(clocks(
                Some(TimeoutPolicy::DefaultMove),
                Some((ClockMode::PerPlayer { budget_ms: 5_000, increment_ms: 0 }, TimeoutPolicy::DefaultMove)),
            )),
            ..Config::default()
        };
        let (mut p, t) = start_at(config, 0);
        let (mut due, mut payload) = schedule(&t);
        let mut steps = 0;
        while p.result.is_none() {
            let t = fire_deadline(&p, due, &payload).unwrap();
            p = commit(&p, &t);
            steps += 1;
            if p.result.is_none() {
                (due, payload) = schedule(&t);
            }
        }
        (p, steps)
    };
    let (a, steps) = run();
    assert!(steps > 20, "{steps}");
    assert_eq!(run().0, a);
    assert!(
        matches!(a.result, Some(MatchResult::Completed { ref reason_code, .. }) if reason_code == "fleet-destroyed")
    );
}
