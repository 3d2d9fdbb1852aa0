//! The optional turn clock: config validation, arming and replacing the clock deadline, both
//! timeout policies through `on_lifecycle`, stale firings, the end of the match cancelling
//! the clock, per-player budgets, the view, and replay determinism.

use juegoland_conecta4::{
    Action, BOT_DEFAULT, Conecta4, Config, Disc, Event, REASON_CONNECT, REASON_TIMEOUT, View, VisibleEvent,
    default_column,
};
use juegoland_sdk::{
    CLOCK_DEADLINE, ClockMode, DeadlineOp, Game, Lifecycle, MatchResult, Outcome, ParticipantStatus, Pos, Position,
    Randomness, Recipient, RuleError, Services, Setup, SplitMix64, TimeoutPolicy, Trans, TurnClock, erase,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::participants;

const TURN_MS: u32 = 30_000;

fn per_turn(policy: TimeoutPolicy) -> Config {
    Config { clock: Some(TurnClock { mode: ClockMode::PerTurn { turn_ms: TURN_MS }, policy }), ..Config::default() }
}

fn per_player(budget_ms: u32, increment_ms: u32, policy: TimeoutPolicy) -> Config {
    Config {
        clock: Some(TurnClock { mode: ClockMode::PerPlayer { budget_ms, increment_ms }, policy }),
        ..Config::default()
    }
}

/// Runs `f` with services whose captured instant is `now_ms`.
fn at<T>(now_ms: i64, f: impl FnOnce(&mut Services<'_>) -> T) -> T {
    let mut entropy = SplitMix64(0);
    let mut services = Services::new(now_ms, Randomness::live(&mut entropy));
    f(&mut services)
}

fn start_at(config: Config, now_ms: i64) -> (Pos<Conecta4>, Trans<Conecta4>) {
    let t = at(now_ms, |s| Conecta4.setup(&Setup { config, participants: participants() }, s)).unwrap();
    let p = Position {
        config,
        participants: participants(),
        data: t.data.clone(),
        flow: t.flow.clone(),
        result: t.result.clone(),
    };
    Conecta4.validate_position(&p).unwrap();
    (p, t)
}

fn commit(p: &Pos<Conecta4>, t: &Trans<Conecta4>) -> Pos<Conecta4> {
    let next = Position { data: t.data.clone(), flow: t.flow.clone(), result: t.result.clone(), ..p.clone() };
    Conecta4.validate_position(&next).unwrap_or_else(|e| panic!("{e}"));
    next
}

fn drop_at(p: &Pos<Conecta4>, now_ms: i64, column: u8) -> Result<Trans<Conecta4>, RuleError> {
    let seat = p.flow.actors.keys().next().expect("an active match").clone();
    at(now_ms, |s| Conecta4.apply(p, &seat, &Action::drop(column), s))
}

fn fire(p: &Pos<Conecta4>, now_ms: i64, id: &str, payload: &Value) -> Result<Trans<Conecta4>, RuleError> {
    at(now_ms, |s| Conecta4.on_lifecycle(p, &Lifecycle::DeadlineExpired { id: id.into(), payload: payload.clone() }, s))
}

/// The single clock `Schedule` of a transition: (due, payload).
fn schedule(t: &Trans<Conecta4>) -> (i64, Value) {
    match &t.deadlines[..] {
        [DeadlineOp::Schedule { id, due_ms, payload }] if id == CLOCK_DEADLINE => (*due_ms, payload.clone()),
        other => panic!("expected one clock schedule, got {other:?}"),
    }
}

fn cancels(t: &Trans<Conecta4>) {
    assert_eq!(t.deadlines, vec![DeadlineOp::Cancel { id: CLOCK_DEADLINE.into() }]);
}

fn view(p: &Pos<Conecta4>) -> View {
    Conecta4.project(p, Recipient::Spectator).view
}

#[test]
fn the_clock_config_is_optional_strict_and_checked_per_game() {
    let game = erase(Conecta4);
    let clock =
        json!({"mode": {"kind": "perPlayer", "budgetMs": 300000, "incrementMs": 2000}, "policy": "defaultMove"});
    let decoded = game.decode_config(&json!({"clock": clock})).unwrap();
    assert_eq!(decoded, json!({"rows": 6, "columns": 7, "connect": 4, "clock": clock}));
    // Absent stays absent: untimed configs keep their exact shape.
    assert_eq!(game.decode_config(&json!({})).unwrap(), json!({"rows": 6, "columns": 7, "connect": 4}));
    let schema = &game.schemas().config;
    assert!(jsonschema::is_valid(schema, &json!({"clock": clock})));
    for bad in [
        json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 500}, "policy": "forfeit"}}),
        json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "resign"}}),
        json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "forfeit", "grace": 1}}),
    ] {
        assert!(!jsonschema::is_valid(schema, &bad), "{bad}");
    }

    // `skip` is a valid clock in general, but not in Conecta 4: setup says why.
    let setup = |config: Config| at(0, |s| Conecta4.setup(&Setup { config, participants: participants() }, s));
    assert_eq!(
        setup(per_turn(TimeoutPolicy::Skip)).err(),
        Some(RuleError::illegal(
            "invalid-clock: timeout policy \"skip\" is not supported here (supported: forfeit, defaultMove)"
        ))
    );
    assert_eq!(
        setup(per_player(999, 0, TimeoutPolicy::Forfeit)).err(),
        Some(RuleError::illegal("invalid-clock: budgetMs must be between 1000 and 604800000 ms, got 999"))
    );
    // The board is still checked first.
    let bad_board = Config { rows: 3, ..per_turn(TimeoutPolicy::Skip) };
    assert_eq!(setup(bad_board).err(), Some(RuleError::illegal("config.rows: 3 is not between 4 and 10")));
    assert!(per_turn(TimeoutPolicy::Skip).check().unwrap_err().starts_with("clock: timeout policy"));

    // No clock: no deadlines, no clock data, no clock in the view, and deadlines refused.
    let (p, t) = start_at(Config::default(), 5);
    assert!(t.deadlines.is_empty());
    assert_eq!(p.data.clock, None);
    assert!(serde_json::to_value(view(&p)).unwrap().get("clock").is_none());
    let t = drop_at(&p, 10, 3).unwrap();
    assert!(t.deadlines.is_empty());
    assert_eq!(fire(&p, 10, CLOCK_DEADLINE, &json!({"serial": 1})).err(), Some(RuleError::illegal("no-deadlines")));
}

#[test]
fn setup_arms_p0_and_each_move_replaces_the_clock() {
    let (p, t) = start_at(per_turn(TimeoutPolicy::Forfeit), 1_000);
    assert_eq!(schedule(&t), (31_000, json!({"serial": 1, "seat": "p0"})));

    // A drop in time replaces the deadline (same id: the engine bumps its generation).
    let t = drop_at(&p, 4_000, 3).unwrap();
    assert_eq!(schedule(&t), (34_000, json!({"serial": 2, "seat": "p1"})));
    let p = commit(&p, &t);
    let v = serde_json::to_value(view(&p)).unwrap();
    assert_eq!(
        v["clock"],
        json!({
            "settings": {"mode": {"kind": "perTurn", "turnMs": 30000}, "policy": "forfeit"},
            "running": {"seat": "p1", "startedMs": 4000, "dueMs": 34000},
        })
    );

    // A drop at or after the due instant is refused and changes nothing.
    assert_eq!(drop_at(&p, 34_000, 3).err(), Some(RuleError::illegal("out-of-time")));
    assert_eq!(drop_at(&p, 33_999, 9).err(), Some(RuleError::illegal("column-out-of-range")));
    assert!(drop_at(&p, 33_999, 3).is_ok());
}

#[test]
fn forfeit_makes_the_seat_to_move_lose() {
    let (p, _) = start_at(per_turn(TimeoutPolicy::Forfeit), 0);
    let p = commit(&p, &drop_at(&p, 1_000, 3).unwrap());
    let t = drop_at(&p, 1_000, 3).unwrap();
    let (due, payload) = schedule(&t);
    let p2 = commit(&p, &t);
    assert_eq!(due, 31_000);

    let t = fire(&p2, due, CLOCK_DEADLINE, &payload).unwrap();
    assert_eq!(t.result, Some(MatchResult::completed(REASON_TIMEOUT, [("p0", Outcome::Loss), ("p1", Outcome::Win)])));
    assert!(t.flow.actors.is_empty());
    assert_eq!(t.flow.turn, p2.flow.turn);
    assert_eq!(t.events, vec![Event::SeatTimedOut { seat: Disc::P0 }]);
    cancels(&t);
    let after = commit(&p2, &t);
    assert_eq!(after.data.grid, p2.data.grid);
    assert_eq!(view(&after).clock.unwrap().running, None);
    let visible = Conecta4.project_event(&p2, &after, &t.events[0], Recipient::Seat("p1"));
    assert_eq!(serde_json::to_value(&visible).unwrap(), json!([{"type": "clock.expired", "data": {"seat": "p0"}}]));

    // Finished: further firings and moves are refused.
    assert_eq!(fire(&after, due, CLOCK_DEADLINE, &payload).err(), Some(RuleError::illegal("match-finished")));
    assert_eq!(drop_at(&p2, due, 0).err(), Some(RuleError::illegal("out-of-time")));
}

#[test]
fn default_move_drops_in_the_centre_most_free_column_and_rearms() {
    let (mut p, t) = start_at(per_turn(TimeoutPolicy::DefaultMove), 0);
    let (mut due, mut payload) = schedule(&t);
    // Nobody ever moves: the rules fill the centre column, then 2, 4, 1, ...
    let mut columns = Vec::new();
    while p.result.is_none() {
        let now = due + 7;
        let t = fire(&p, now, CLOCK_DEADLINE, &payload).unwrap();
        let seat = Disc::to_move_after(p.data.move_count);
        assert_eq!(t.events[0], Event::SeatTimedOut { seat });
        let Event::DiscDropped { column, seat: dropped, .. } = t.events[1] else { panic!("{:?}", t.events) };
        assert_eq!(dropped, seat);
        columns.push(column);
        p = commit(&p, &t);
        if p.result.is_none() {
            (due, payload) = schedule(&t);
            assert_eq!(due, now + i64::from(TURN_MS), "the next turn starts when the deadline fired");
        } else {
            cancels(&t);
        }
    }
    // Column 3 fills first (alternating discs: no vertical four), then column 2, then 4, ...
    // until a horizontal run ends the match.
    assert_eq!(&columns[..6], &[3, 3, 3, 3, 3, 3]);
    assert_eq!(&columns[6..8], &[2, 2]);
    assert!(matches!(&p.result, Some(MatchResult::Completed { .. })));
}

#[test]
fn the_default_column_is_central_then_leftmost() {
    let config = Config::default();
    let mut grid = vec![vec![None; 7]; 6];
    assert_eq!(default_column(&config, &grid), Some(3));
    for row in grid.iter_mut() {
        row[3] = Some(Disc::P0);
    }
    assert_eq!(default_column(&config, &grid), Some(2));
    for row in grid.iter_mut() {
        row[2] = Some(Disc::P1);
    }
    assert_eq!(default_column(&config, &grid), Some(4));
    let even = Config { columns: 8, ..Config::default() };
    assert_eq!(default_column(&even, &vec![vec![None; 8]; 6]), Some(3));
    assert_eq!(default_column(&config, &vec![vec![Some(Disc::P0); 7]; 6]), None);
}

#[test]
fn a_default_move_can_win() {
    // p0 holds row 0, columns 0 to 2 (p1 sits on top of each), and is to move: its default
    // disc goes to the centre column and completes the line.
    let (mut p, mut t) = start_at(per_turn(TimeoutPolicy::DefaultMove), 0);
    for (i, c) in [0u8, 0, 1, 1, 2, 2].into_iter().enumerate() {
        t = drop_at(&p, 100 * i as i64, c).unwrap();
        p = commit(&p, &t);
    }
    let (due, payload) = schedule(&t);
    let t = fire(&p, due, CLOCK_DEADLINE, &payload).unwrap();
    assert_eq!(t.events[1], Event::DiscDropped { row: 0, column: 3, seat: Disc::P0, line: t.data.line.clone() });
    assert_eq!(t.result, Some(MatchResult::completed(REASON_CONNECT, [("p0", Outcome::Win), ("p1", Outcome::Loss)])));
    cancels(&t);
    commit(&p, &t);
}

#[test]
fn stale_and_foreign_firings_are_refused() {
    let (p, t) = start_at(per_turn(TimeoutPolicy::Forfeit), 0);
    let (_, old) = schedule(&t);
    let t = drop_at(&p, 1_000, 3).unwrap();
    let p = commit(&p, &t);
    let (due, current) = schedule(&t);
    // The payload of p0's finished turn is stale even if it arrives.
    assert_eq!(fire(&p, due, CLOCK_DEADLINE, &old).err(), Some(RuleError::illegal("stale-clock")));
    // A payload naming the wrong seat for the current serial is stale too.
    let forged = json!({"serial": current["serial"], "seat": "p0"});
    assert_eq!(fire(&p, due, CLOCK_DEADLINE, &forged).err(), Some(RuleError::illegal("stale-clock")));
    assert_eq!(fire(&p, due, "turn", &current).err(), Some(RuleError::illegal("unknown-deadline")));
    assert_eq!(
        fire(&p, due, CLOCK_DEADLINE, &json!({"serial": 2, "extra": 1})).err(),
        Some(RuleError::illegal("invalid-clock-payload"))
    );
    assert!(fire(&p, due, CLOCK_DEADLINE, &current).is_ok());
}

#[test]
fn finishing_the_match_cancels_the_clock() {
    // A winning drop.
    let (mut p, _) = start_at(per_turn(TimeoutPolicy::Forfeit), 0);
    for c in [0, 1, 0, 1, 0, 1] {
        p = commit(&p, &drop_at(&p, 10, c).unwrap());
    }
    let t = drop_at(&p, 20, 0).unwrap();
    assert!(t.result.is_some());
    cancels(&t);
    let won = commit(&p, &t);
    assert_eq!(won.data.clock.as_ref().unwrap().running, None);

    // A withdrawal.
    let mut marked = p.clone();
    marked.participants.get_mut("p1").unwrap().status = ParticipantStatus::Withdrawn;
    let t = at(30, |s| Conecta4.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p1".into() }, s)).unwrap();
    cancels(&t);
    commit(&marked, &t);

    // A full board (a draw).
    const DRAW: [u8; 42] = [
        0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 4, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 6,
        6, 6, 6, 6, 6,
    ];
    let (mut p, _) = start_at(per_turn(TimeoutPolicy::Forfeit), 0);
    for c in DRAW {
        let t = drop_at(&p, 10, c).unwrap();
        if t.result.is_some() {
            let draw = MatchResult::completed("board-full", [("p0", Outcome::Draw), ("p1", Outcome::Draw)]);
            assert_eq!(t.result, Some(draw));
            cancels(&t);
        } else {
            schedule(&t);
        }
        p = commit(&p, &t);
    }
    assert!(p.result.is_some());
}

#[test]
fn per_player_budgets_are_charged_shown_and_run_out() {
    let (p, t) = start_at(per_player(60_000, 5_000, TimeoutPolicy::DefaultMove), 0);
    assert_eq!(schedule(&t).0, 60_000);
    // p0 thinks 20 s: 60 - 20 + 5 = 45 s left.
    let t = drop_at(&p, 20_000, 3).unwrap();
    assert_eq!(schedule(&t).0, 80_000, "p1 has its whole budget");
    let p = commit(&p, &t);
    let v = serde_json::to_value(view(&p)).unwrap();
    assert_eq!(v["clock"]["remainingMs"], json!({"p0": 45_000, "p1": 60_000}));
    assert_eq!(v["clock"]["running"], json!({"seat": "p1", "startedMs": 20_000, "dueMs": 80_000}));
    // p1 lets its budget run out: a default disc, and its budget is empty.
    let (due, payload) = schedule(&t);
    let t = fire(&p, due, CLOCK_DEADLINE, &payload).unwrap();
    assert_eq!(schedule(&t).0, due + 45_000, "p0's turn gets p0's remaining budget");
    let p = commit(&p, &t);
    assert_eq!(p.data.clock.as_ref().unwrap().remaining_ms["p1"], 0);
    // p0 moves in time, and p1, out of budget, is due at once.
    let t = drop_at(&p, due + 1_000, 3).unwrap();
    assert_eq!(schedule(&t).0, due + 1_000);
    let p = commit(&p, &t);
    assert_eq!(p.data.clock.as_ref().unwrap().remaining_ms["p0"], 45_000 - 1_000 + 5_000);
    assert_eq!(drop_at(&p, due + 1_000, 0).err(), Some(RuleError::illegal("out-of-time")));
}

#[test]
fn the_validator_checks_the_clock() {
    let (p, _) = start_at(per_turn(TimeoutPolicy::Forfeit), 0);
    let p = commit(&p, &drop_at(&p, 10, 3).unwrap());
    let bad = |f: &dyn Fn(&mut Pos<Conecta4>), needle: &str| {
        let mut q = p.clone();
        f(&mut q);
        let e = Conecta4.validate_position(&q).expect_err(needle);
        assert!(e.0.contains(needle), "{needle:?} not in {e}");
    };
    bad(&|q| q.data.clock = None, "data.clock is missing");
    bad(&|q| q.config.clock = None, "the config has no clock");
    bad(&|q| q.data.clock.as_mut().unwrap().running = None, "must run for p1");
    bad(&|q| q.data.clock.as_mut().unwrap().running.as_mut().unwrap().seat = Some("p0".into()), "must run for p1");
    bad(&|q| q.data.clock.as_mut().unwrap().running.as_mut().unwrap().due_ms += 1, "clock: p1's turn is due");
    bad(
        &|q| {
            q.result = Some(MatchResult::completed(REASON_TIMEOUT, [("p1", Outcome::Loss), ("p0", Outcome::Win)]));
            q.flow.actors.clear();
        },
        "still runs",
    );
    bad(
        &|q| {
            q.result = Some(MatchResult::completed(REASON_TIMEOUT, [("p0", Outcome::Loss), ("p1", Outcome::Win)]));
            q.flow.actors.clear();
            q.data.clock.as_mut().unwrap().running = None;
        },
        "p1 (to move) loses",
    );
    bad(
        &|q| {
            q.config.clock.as_mut().unwrap().policy = TimeoutPolicy::DefaultMove;
            q.result = Some(MatchResult::completed(REASON_TIMEOUT, [("p1", Outcome::Loss), ("p0", Outcome::Win)]));
            q.flow.actors.clear();
            q.data.clock.as_mut().unwrap().running = None;
        },
        "forfeit policy",
    );
    // An engine cancellation keeps the running clock in the data; the view hides it.
    let mut cancelled = p.clone();
    cancelled.result = Some(MatchResult::cancelled("admin"));
    cancelled.flow.actors.clear();
    Conecta4.validate_position(&cancelled).unwrap();
    assert_eq!(view(&cancelled).clock.unwrap().running, None);
}

/// One scripted step: a drop (by whoever is to move) `think` ms after the turn started, or
/// letting the deadline fire `late` ms after it was due.
#[derive(Clone, Debug)]
enum Step {
    Drop { think: i64, choice: usize },
    Timeout { late: i64 },
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0i64..40_000, 0usize..7).prop_map(|(think, choice)| Step::Drop { think, choice }),
            1 => (0i64..3_000).prop_map(|late| Step::Timeout { late }),
        ],
        1..60,
    )
}

fn configs() -> impl Strategy<Value = Config> {
    let policy = prop_oneof![Just(TimeoutPolicy::Forfeit), Just(TimeoutPolicy::DefaultMove)];
    (policy, any::<bool>(), 1_000u32..50_000, 0u32..5_000).prop_map(|(policy, per_turn_mode, ms, inc)| {
        let mode = if per_turn_mode {
            ClockMode::PerTurn { turn_ms: ms }
        } else {
            ClockMode::PerPlayer { budget_ms: ms, increment_ms: inc }
        };
        Config { clock: Some(TurnClock { mode, policy }), ..Config::default() }
    })
}

/// Plays `steps`: every position is validated, and the outputs (transitions and refusals)
/// are returned for comparison.
fn run(config: Config, steps: &[Step]) -> (Pos<Conecta4>, Vec<String>) {
    let (mut p, t) = start_at(config, 1_000);
    let mut log = vec![format!("{:?}", t.deadlines)];
    let (mut due, mut payload) = schedule(&t);
    for step in steps {
        if p.result.is_some() {
            break;
        }
        let started = p.data.clock.as_ref().unwrap().running.as_ref().unwrap().started_ms;
        let r = match *step {
            Step::Drop { think, choice } => {
                let free: Vec<u8> = (0..7).filter(|c| p.data.grid[5][usize::from(*c)].is_none()).collect();
                let column = free[choice % free.len()];
                let now = started + think;
                let r = drop_at(&p, now, column);
                if now >= due {
                    assert_eq!(r.as_ref().err(), Some(&RuleError::illegal("out-of-time")));
                }
                r
            }
            Step::Timeout { late } => fire(&p, due + late, CLOCK_DEADLINE, &payload),
        };
        match r {
            Ok(t) => {
                log.push(format!("{:?} {:?} {:?}", t.events, t.deadlines, t.result));
                p = commit(&p, &t);
                if p.result.is_none() {
                    (due, payload) = schedule(&t);
                } else {
                    cancels(&t);
                }
            }
            Err(e) => log.push(format!("{e}")),
        }
    }
    (p, log)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random timed play keeps every invariant (checked at each commit), and the same inputs
    /// at the same instants replay to the same transitions and the same final position.
    #[test]
    fn timed_play_keeps_every_invariant_and_replays(config in configs(), steps in steps()) {
        let (a, log_a) = run(config, &steps);
        let (b, log_b) = run(config, &steps);
        prop_assert_eq!(a, b);
        prop_assert_eq!(log_a, log_b);
    }
}

#[test]
fn the_erased_form_carries_the_clock_in_schemas_and_views() {
    let game = erase(Conecta4);
    let schemas = game.schemas().clone();
    let config = json!({"clock": {"mode": {"kind": "perPlayer", "budgetMs": 10000}, "policy": "defaultMove"}});
    let mut e = SplitMix64(1);
    let mut services = Services::new(500, Randomness::live(&mut e));
    let t = game.setup(&game.decode_config(&config).unwrap(), &participants(), &mut services).unwrap();
    let mut position = t.next;
    let (mut due, mut payload) = match &t.deadlines[..] {
        [DeadlineOp::Schedule { due_ms, payload, .. }] => (*due_ms, payload.clone()),
        other => panic!("{other:?}"),
    };
    // p0's bot moves 100 ms before its time is up; p1 always lets its time run out (its
    // budget is empty after the first timeout, so its later turns end at once). Every output
    // matches its schema.
    let mut now = 500;
    for turn in 0..12u64 {
        let json = game.encode_position(&position).unwrap();
        assert!(jsonschema::is_valid(&schemas.data, &json.data.to_value()), "{}", json.data.get());
        for recipient in [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator] {
            let view = game.project(&position, recipient).unwrap().view.to_value();
            assert!(jsonschema::is_valid(&schemas.view, &view), "{view}");
            let running_due = if json.result.is_some() { Value::Null } else { json!(due) };
            assert_eq!(view["clock"]["running"]["dueMs"], running_due);
        }
        if json.result.is_some() {
            break;
        }
        now = if turn % 2 == 0 { (due - 100).max(now) } else { due.max(now) };
        let mut services = Services::new(now, Randomness::live(&mut e));
        let t = if turn % 2 == 0 {
            let seat = json.flow.actors.keys().next().unwrap().clone();
            let (action_type, action_payload) =
                game.bot_action(&position, &seat, BOT_DEFAULT, &mut SplitMix64(turn)).unwrap();
            let action = game.decode_action(&action_type, &action_payload).unwrap();
            game.apply(&position, &seat, &action, &mut services).unwrap()
        } else {
            let event = Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload: payload.clone() };
            let t = game.on_lifecycle(&position, &event, &mut services).unwrap();
            let events = game.encode_events(&t.events).unwrap();
            assert_eq!(events[0], json!({"type": "seatTimedOut", "seat": json.flow.actors.keys().next().unwrap()}));
            let decoded = game.decode_events(&events).unwrap();
            let visible = game.project_events(&position, &t.next, &decoded, Recipient::Spectator).unwrap();
            assert_eq!(visible[0].event_type, "clock.expired");
            for v in &visible {
                let tagged = json!({"type": v.event_type, "data": v.data.to_value()});
                assert!(jsonschema::is_valid(&schemas.visible_event, &tagged), "{tagged}");
            }
            t
        };
        game.validate_position(&t.next).unwrap();
        if let [DeadlineOp::Schedule { due_ms, payload: p, .. }] = &t.deadlines[..] {
            (due, payload) = (*due_ms, p.clone());
        }
        position = t.next;
    }
    // Deadline payloads never reach a view.
    let view = game.project(&position, Recipient::Seat("p0")).unwrap().view.to_value();
    assert!(view["clock"].get("serial").is_none());
    let _: VisibleEvent = serde_json::from_value(json!({"type": "clock.expired", "data": {"seat": "p1"}})).unwrap();
}

/// Rules 1.1.0's default move keeps the centre opening rule: a timed-out opening lands beside
/// the centre (column 2), where 1.0.0's lands in it (column 3); later ones are 1.0.0's.
#[test]
fn default_move_under_rules_1_1_opens_beside_the_centre() {
    use juegoland_conecta4::Conecta4V11;
    let (p, t) = start_at(per_turn(TimeoutPolicy::DefaultMove), 0);
    let (due, payload) = schedule(&t);
    let event = Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload };
    let dropped = |t: Trans<Conecta4>| match t.events[..] {
        [Event::SeatTimedOut { .. }, Event::DiscDropped { column, .. }] => column,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(dropped(at(due, |s| Conecta4.on_lifecycle(&p, &event, s)).unwrap()), 3);
    let t = at(due, |s| Conecta4V11.on_lifecycle(&p, &event, s)).unwrap();
    let p = commit(&p, &t);
    assert_eq!(dropped(t.clone()), 2);
    let (due, payload) = schedule(&t);
    let event = Lifecycle::DeadlineExpired { id: CLOCK_DEADLINE.into(), payload };
    assert_eq!(dropped(at(due, |s| Conecta4V11.on_lifecycle(&p, &event, s)).unwrap()), 3, "then the centre is free");
}
