//! Scenario tests of the rules: wins, draws, rejections, withdrawal and the validator.

use std::collections::BTreeMap;

use juegoland_sdk::{
    Game, Lifecycle, MatchResult, Offer, Outcome, Participant, ParticipantStatus, Position, Randomness, Recipient,
    RuleError, Services, Setup, SplitMix64,
};
use serde_json::json;

use super::*;

pub(crate) fn with_services<T>(f: impl FnOnce(&mut Services<'_>) -> T) -> T {
    let mut entropy = SplitMix64(0);
    let mut services = Services::new(0, Randomness::live(&mut entropy));
    f(&mut services)
}

pub(crate) fn start(config: Config) -> Pos<Conecta4> {
    let participants: BTreeMap<_, _> =
        [("p0".to_owned(), Participant::active()), ("p1".to_owned(), Participant::active())].into();
    let t = with_services(|s| Conecta4.setup(&Setup { config, participants: participants.clone() }, s)).unwrap();
    let p = Position { config, participants, data: t.data, flow: t.flow, result: t.result };
    Conecta4.validate_position(&p).unwrap();
    p
}

pub(crate) fn commit(p: &Pos<Conecta4>, t: Trans<Conecta4>) -> Pos<Conecta4> {
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() };
    Conecta4.validate_position(&next).unwrap();
    next
}

fn apply(p: &Pos<Conecta4>, actor: &str, column: u8) -> Result<Trans<Conecta4>, RuleError> {
    with_services(|s| Conecta4.apply(p, actor, &Action::drop(column), s))
}

/// Plays `columns` in order, each by the seat whose turn it is.
fn play(mut p: Pos<Conecta4>, columns: &[u8]) -> Pos<Conecta4> {
    for &c in columns {
        let actor = Disc::to_move_after(p.data.move_count).seat();
        let t = apply(&p, actor, c).unwrap_or_else(|e| panic!("drop {c} by {actor}: {e}"));
        p = commit(&p, t);
    }
    p
}

fn win_for(seat: &str) -> Option<MatchResult> {
    let other = if seat == "p0" { "p1" } else { "p0" };
    Some(MatchResult::completed(REASON_CONNECT, [(seat, Outcome::Win), (other, Outcome::Loss)]))
}

fn cells(list: &[(u8, u8)]) -> Option<Vec<Cell>> {
    let mut v: Vec<Cell> = list.iter().map(|&(row, column)| Cell { row, column }).collect();
    v.sort();
    Some(v)
}

fn assert_illegal(r: Result<Trans<Conecta4>, RuleError>, reason: &str) {
    assert_eq!(r.err(), Some(RuleError::illegal(reason)));
}

#[test]
fn setup_gives_an_empty_board_with_p0_to_move() {
    let p = start(Config::default());
    assert_eq!(p.data.grid.len(), 6);
    assert!(p.data.grid.iter().all(|row| row.len() == 7 && row.iter().all(Option::is_none)));
    assert_eq!((p.flow.phase.as_str(), p.flow.round, p.flow.turn), (PHASE, 0, 0));
    assert_eq!(p.flow.actors, BTreeMap::from([("p0".to_owned(), STAGE.to_owned())]));
    assert_eq!(p.result, None);
}

#[test]
fn setup_rejects_bad_configs_and_seats() {
    let participants: BTreeMap<_, _> =
        [("p0".to_owned(), Participant::active()), ("p1".to_owned(), Participant::active())].into();
    for (rows, columns, connect) in [(3, 7, 3), (6, 11, 4), (6, 7, 2), (5, 7, 6), (0, 0, 0), (10, 4, 5)] {
        let config = Config { rows, columns, connect, clock: None };
        let r = with_services(|s| Conecta4.setup(&Setup { config, participants: participants.clone() }, s));
        // The refusal names the field, the value and the constraint.
        let reason = match r.err() {
            Some(RuleError::Illegal { reason }) => reason,
            other => panic!("{config:?}: {other:?}"),
        };
        let (field, value) = if !(4..=10).contains(&rows) {
            ("rows", rows)
        } else if !(4..=10).contains(&columns) {
            ("columns", columns)
        } else {
            ("connect", connect)
        };
        assert!(reason.starts_with(&format!("config.{field}: {value} is not between ")), "{config:?}: {reason}");
    }
    for seats in [&["p0"][..], &["p0", "p1", "p2"], &["p0", "p2"], &["a", "b"]] {
        let participants = seats.iter().map(|s| (s.to_string(), Participant::active())).collect();
        let r = with_services(|s| Conecta4.setup(&Setup { config: Config::default(), participants }, s));
        assert_eq!(r.err(), Some(RuleError::illegal("invalid-participants")), "{seats:?}");
    }
    // Variants at the limits are accepted.
    start(Config { rows: 4, columns: 10, connect: 3, clock: None });
    start(Config { rows: 10, columns: 10, connect: 10, clock: None });
}

#[test]
fn config_defaults_and_strictness() {
    assert_eq!(serde_json::from_value::<Config>(json!({})).unwrap(), Config::default());
    assert_eq!(
        serde_json::from_value::<Config>(json!({"columns": 9})).unwrap(),
        Config { columns: 9, ..Config::default() }
    );
    assert!(serde_json::from_value::<Config>(json!({"width": 9})).is_err());
}

#[test]
fn a_disc_lands_on_the_lowest_free_row_and_passes_the_turn() {
    let p = start(Config::default());
    let t = apply(&p, "p0", 3).unwrap();
    assert_eq!(t.events, vec![Event::DiscDropped { row: 0, column: 3, seat: Disc::P0, line: None }]);
    let p = commit(&p, t);
    assert_eq!(p.data.last_move, Some(Move { row: 0, column: 3, seat: Disc::P0 }));
    assert_eq!((p.flow.turn, p.flow.round), (1, 0));
    assert_eq!(p.flow.stage_of("p1"), Some(STAGE));
    let t = apply(&p, "p1", 3).unwrap();
    assert_eq!(t.events, vec![Event::DiscDropped { row: 1, column: 3, seat: Disc::P1, line: None }]);
    let p = commit(&p, t);
    assert_eq!((p.flow.turn, p.flow.round), (2, 1));
    assert_eq!(p.data.grid[1][3], Some(Disc::P1));
}

#[test]
fn horizontal_win() {
    // p0 fills row 0 columns 0..=3; p1 stacks on top.
    let p = play(start(Config::default()), &[0, 0, 1, 1, 2, 2]);
    let t = apply(&p, "p0", 3).unwrap();
    let line = cells(&[(0, 0), (0, 1), (0, 2), (0, 3)]);
    assert_eq!(t.events, vec![Event::DiscDropped { row: 0, column: 3, seat: Disc::P0, line: line.clone() }]);
    let p = commit(&p, t);
    assert_eq!(p.result, win_for("p0"));
    assert!(p.flow.actors.is_empty());
    assert_eq!((p.flow.turn, p.flow.round), (7, 3));
    assert_eq!(p.data.line, line);
}

#[test]
fn vertical_win() {
    let p = play(start(Config::default()), &[0, 1, 0, 1, 0, 1, 6, 1]);
    assert_eq!(p.result, win_for("p1"));
    assert_eq!(p.data.line, cells(&[(0, 1), (1, 1), (2, 1), (3, 1)]));
}

#[test]
fn rising_diagonal_win() {
    // p0: (0,0) (1,1) (2,2) (3,3).
    let p = play(start(Config::default()), &[0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3]);
    assert_eq!(p.result, win_for("p0"));
    assert_eq!(p.data.line, cells(&[(0, 0), (1, 1), (2, 2), (3, 3)]));
}

#[test]
fn falling_diagonal_win() {
    // Mirror of the rising one: p0 at (0,6) (1,5) (2,4) (3,3).
    let p = play(start(Config::default()), &[6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3]);
    assert_eq!(p.result, win_for("p0"));
    assert_eq!(p.data.line, cells(&[(0, 6), (1, 5), (2, 4), (3, 3)]));
}

#[test]
fn the_line_holds_every_cell_of_a_long_or_crossing_run() {
    // p0 gets (0,0) (0,1) (0,2) and (0,4), then fills the gap at (0,3): a run of five.
    let p = play(start(Config::default()), &[0, 0, 1, 1, 2, 2, 4, 4, 3]);
    assert_eq!(p.data.line, cells(&[(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]));
}

#[test]
fn variant_connect_three_on_a_small_board() {
    let p = play(start(Config { rows: 4, columns: 5, connect: 3, clock: None }), &[0, 0, 1, 1, 2]);
    assert_eq!(p.result, win_for("p0"));
    assert_eq!(p.data.line, cells(&[(0, 0), (0, 1), (0, 2)]));
}

/// A full 6 × 7 board with no line (found by a depth-first search).
const DRAW: [u8; 42] = [
    0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 4, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 6, 6,
    6, 6, 6, 6,
];

#[test]
fn a_full_board_without_a_line_is_a_draw() {
    let p = play(start(Config::default()), &DRAW[..41]);
    assert_eq!(p.result, None);
    let p = play(p, &DRAW[41..]);
    assert_eq!(
        p.result,
        Some(MatchResult::completed(REASON_BOARD_FULL, [("p0", Outcome::Draw), ("p1", Outcome::Draw)]))
    );
    assert!(p.flow.actors.is_empty());
    assert_eq!((p.flow.turn, p.flow.round), (42, 21));
    assert_eq!(p.data.line, None);
    assert!(Conecta4.available_actions(&p, Recipient::Seat("p0")).is_empty());
    assert!(Conecta4.available_actions(&p, Recipient::Seat("p1")).is_empty());
}

#[test]
fn illegal_moves_are_rejected() {
    let p = play(start(Config::default()), &[0, 0, 0, 0, 0, 0]);
    assert_illegal(apply(&p, "p0", 0), "column-full");
    assert_illegal(apply(&p, "p0", 7), "column-out-of-range");
    assert_illegal(apply(&p, "p0", 255), "column-out-of-range");
    assert_illegal(apply(&p, "p1", 3), "not-your-turn");
    assert_illegal(apply(&p, "p2", 3), "not-your-turn");
    assert_illegal(apply(&p, "", 3), "not-your-turn");
    let won = play(start(Config::default()), &[0, 1, 0, 1, 0, 1, 0]);
    assert_illegal(apply(&won, "p1", 3), "match-finished");
    assert_illegal(apply(&won, "p0", 3), "match-finished");
}

#[test]
fn a_corrupt_grid_is_a_fault_not_a_panic() {
    let mut p = start(Config::default());
    p.data.grid.pop();
    assert!(matches!(apply(&p, "p0", 3), Err(RuleError::Fault { .. })));
    assert!(Conecta4.available_actions(&p, Recipient::Seat("p0")).is_empty());
    assert_eq!(Conecta4.bot_action(&p, "p0", BOT_DEFAULT, &mut SplitMix64(1)), None);
}

#[test]
fn offers_one_drop_per_free_column_to_the_enabled_seat_only() {
    let p = play(start(Config::default()), &[2, 2, 2, 2, 2, 2]);
    let offers = Conecta4.available_actions(&p, Recipient::Seat("p0"));
    let expected: Vec<_> = [0, 1, 3, 4, 5, 6].into_iter().map(|c| Offer::Concrete(Action::drop(c))).collect();
    assert_eq!(offers, expected);
    assert!(Conecta4.available_actions(&p, Recipient::Seat("p1")).is_empty());
    assert!(Conecta4.available_actions(&p, Recipient::Spectator).is_empty());
}

#[test]
fn everyone_sees_the_same_view_and_events() {
    let before = play(start(Config::default()), &[3]);
    let t = apply(&before, "p1", 4).unwrap();
    let event = t.events[0].clone();
    let after = commit(&before, t);
    let seat0 = Conecta4.project(&after, Recipient::Seat("p0"));
    let seat1 = Conecta4.project(&after, Recipient::Seat("p1"));
    let spectator = Conecta4.project(&after, Recipient::Spectator);
    assert_eq!(seat0.view, seat1.view);
    assert_eq!(seat0.view, spectator.view);
    assert_eq!(seat0.context, Context { seat: Some(Disc::P0), your_turn: true });
    assert_eq!(seat1.context, Context { seat: Some(Disc::P1), your_turn: false });
    assert_eq!(spectator.context, Context { seat: None, your_turn: false });
    assert_eq!(
        serde_json::to_value(&seat0.view).unwrap(),
        json!({
            "rows": 6, "columns": 7, "connect": 4,
            "grid": [
                [null, null, null, "p0", "p1", null, null],
                [null, null, null, null, null, null, null],
                [null, null, null, null, null, null, null],
                [null, null, null, null, null, null, null],
                [null, null, null, null, null, null, null],
                [null, null, null, null, null, null, null],
            ],
            "moveCount": 2,
            "lastMove": {"row": 0, "column": 4, "seat": "p1"},
        })
    );
    for recipient in [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator] {
        let visible = Conecta4.project_event(&before, &after, &event, recipient);
        assert_eq!(
            serde_json::to_value(&visible).unwrap(),
            json!([{"type": "disc.dropped", "data": {"row": 0, "column": 4, "seat": "p1"}}])
        );
    }
}

#[test]
fn a_winning_event_carries_the_line() {
    let p = play(start(Config::default()), &[0, 1, 0, 1, 0, 1]);
    let t = apply(&p, "p0", 0).unwrap();
    let after = commit(&p, t.clone());
    let visible = Conecta4.project_event(&p, &after, &t.events[0], Recipient::Spectator);
    assert_eq!(
        serde_json::to_value(&visible).unwrap(),
        json!([{"type": "disc.dropped", "data": {"row": 3, "column": 0, "seat": "p0", "line": [
            {"row": 0, "column": 0}, {"row": 1, "column": 0}, {"row": 2, "column": 0}, {"row": 3, "column": 0}
        ]}}])
    );
    assert_eq!(Conecta4.project(&after, Recipient::Seat("p0")).result, after.result);
    assert!(!Conecta4.project(&after, Recipient::Seat("p1")).context.your_turn);
}

fn withdraw(p: &Pos<Conecta4>, seat: &str) -> Result<Pos<Conecta4>, RuleError> {
    // The engine marks the seat withdrawn before it calls the rules.
    let mut marked = p.clone();
    if let Some(x) = marked.participants.get_mut(seat) {
        x.status = ParticipantStatus::Withdrawn;
    }
    let t = with_services(|s| Conecta4.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: seat.to_owned() }, s))?;
    Ok(commit(&marked, t))
}

#[test]
fn the_leaver_loses_and_the_rival_wins() {
    let p = play(start(Config::default()), &[3, 3, 4]);
    for (leaver, rival) in [("p0", "p1"), ("p1", "p0")] {
        let after = withdraw(&p, leaver).unwrap();
        assert_eq!(
            after.result,
            Some(MatchResult::completed(REASON_WITHDRAWAL, [(leaver, Outcome::Loss), (rival, Outcome::Win)]))
        );
        assert!(after.flow.actors.is_empty());
        assert_eq!((after.flow.turn, after.flow.round), (p.flow.turn, p.flow.round));
        assert_eq!(after.data, p.data);
        assert!(Conecta4.available_actions(&after, Recipient::Seat(rival)).is_empty());
        assert_illegal(apply(&after, rival, 0), "match-finished");
        assert_eq!(withdraw(&after, rival).err(), Some(RuleError::illegal("match-finished")));
    }
    assert_eq!(withdraw(&p, "p9").err(), Some(RuleError::illegal("unknown-seat")));
}

#[test]
fn deadlines_are_not_this_games() {
    let p = start(Config::default());
    let event = Lifecycle::DeadlineExpired { id: "x".into(), payload: json!({}) };
    let r = with_services(|s| Conecta4.on_lifecycle(&p, &event, s));
    assert_eq!(r.err(), Some(RuleError::illegal("no-deadlines")));
}

fn corrupt_after(p: &Pos<Conecta4>, f: impl FnOnce(&mut Pos<Conecta4>), needle: &str) {
    let mut bad = p.clone();
    f(&mut bad);
    let err = Conecta4.validate_position(&bad).expect_err(needle);
    assert!(err.0.contains(needle), "{needle:?} not in {err}");
}

#[test]
fn the_validator_catches_corruption() {
    let p = play(start(Config::default()), &[3, 3, 4]);
    corrupt_after(&p, |p| p.data.grid[2][0] = Some(Disc::P0), "floating disc at row 2, column 0");
    corrupt_after(
        &p,
        |p| {
            p.data.grid[0][0] = Some(Disc::P1);
            p.data.grid[0][1] = Some(Disc::P1);
            p.data.move_count = 5;
        },
        "p0 has 2 discs and p1 3",
    );
    corrupt_after(&p, |p| p.data.move_count = 4, "moveCount is 4");
    corrupt_after(&p, |p| p.data.grid.push(vec![None; 7]), "grid has 7 rows");
    corrupt_after(
        &p,
        |p| {
            p.data.grid[5].pop();
        },
        "grid row 5 has 6 cells",
    );
    corrupt_after(&p, |p| p.data.last_move = None, "lastMove is null");
    corrupt_after(&p, |p| p.data.last_move = Some(Move { row: 0, column: 3, seat: Disc::P0 }), "top disc");
    corrupt_after(&p, |p| p.data.last_move = Some(Move { row: 1, column: 3, seat: Disc::P1 }), "other seat's");
    corrupt_after(&p, |p| p.flow.turn = 2, "turn 2");
    corrupt_after(&p, |p| p.flow.round = 0, "round 0");
    corrupt_after(&p, |p| p.flow.phase = "setup".into(), "unknown phase");
    corrupt_after(&p, |p| p.flow.actors = BTreeMap::from([("p0".into(), STAGE.into())]), "exactly one actor, p1");
    corrupt_after(&p, |p| p.flow.actors.clear(), "exactly one actor");
    corrupt_after(
        &p,
        |p| {
            p.flow.actors.insert("p0".into(), STAGE.into());
        },
        "exactly one actor",
    );
    corrupt_after(&p, |p| p.result = win_for("p1"), "a finished match has no actors");
    corrupt_after(
        &p,
        |p| {
            p.result = win_for("p1");
            p.flow.actors.clear();
        },
        "without a line",
    );
    corrupt_after(
        &p,
        |p| {
            p.result = Some(MatchResult::completed(REASON_BOARD_FULL, [("p0", Outcome::Draw), ("p1", Outcome::Draw)]));
            p.flow.actors.clear();
        },
        "board-full needs a full board",
    );
    corrupt_after(&p, |p| p.participants.get_mut("p1").unwrap().status = ParticipantStatus::Withdrawn, "p1 withdrew");
    corrupt_after(
        &p,
        |p| {
            p.participants.remove("p1");
        },
        "exactly p0 and p1",
    );
    corrupt_after(&p, |p| p.config.connect = 9, "config");
    corrupt_after(&p, |p| p.data.line = cells(&[(0, 3)]), "data.line");
}

#[test]
fn the_validator_catches_result_incoherence() {
    let won = play(start(Config::default()), &[0, 1, 0, 1, 0, 1, 0]);
    corrupt_after(
        &won,
        |p| {
            p.result = None;
            p.flow = flow_after(7, false);
        },
        "p0 has a line but the match is active",
    );
    corrupt_after(&won, |p| p.flow = flow_after(7, false), "a finished match has no actors");
    corrupt_after(&won, |p| p.result = win_for("p1"), "not the sole winner");
    corrupt_after(&won, |p| p.data.line = None, "data.line");
    corrupt_after(
        &won,
        |p| p.result = Some(MatchResult::completed("resign", [("p0", Outcome::Win), ("p1", Outcome::Loss)])),
        "unknown result reason",
    );
    let withdrawn = withdraw(&play(start(Config::default()), &[3]), "p1").unwrap();
    corrupt_after(
        &withdrawn,
        |p| p.participants.get_mut("p1").unwrap().status = ParticipantStatus::Active,
        "only the loser",
    );
    corrupt_after(&withdrawn, |p| p.flow = flow_after(1, false), "a finished match has no actors");

    // A cancelled match (the engine's decision, never this game's) is accepted when terminal.
    let mut cancelled = play(start(Config::default()), &[3]);
    cancelled.result = Some(MatchResult::cancelled("admin"));
    cancelled.flow.actors.clear();
    Conecta4.validate_position(&cancelled).unwrap();
}

#[test]
fn a_line_before_the_last_move_is_corruption() {
    // p0 has a vertical line in column 0, and then p1 moved elsewhere.
    let mut p = play(start(Config::default()), &[0, 1, 0, 1, 0, 2]);
    p.data.grid[3][0] = Some(Disc::P0);
    p.data.grid[0][6] = Some(Disc::P1);
    p.data.move_count = 8;
    p.data.last_move = Some(Move { row: 0, column: 6, seat: Disc::P1 });
    p.flow = flow_after(8, false);
    let err = Conecta4.validate_position(&p).unwrap_err();
    assert!(err.0.contains("a line existed before the last move"), "{err}");
}

#[test]
fn descriptor_matches_the_contract() {
    let d = Conecta4.descriptor();
    assert_eq!((d.id.as_str(), d.version.as_str(), d.rules_version.as_str()), ("conecta4", "1.0.0", "1.0.0"));
    assert_eq!((d.state_schema_version, d.view_schema_version, d.event_schema_version), (1, 1, 1));
    assert_eq!((d.min_seats, d.max_seats), (2, 2));
    assert!(d.stage_allows(PHASE, STAGE, ACTION_DROP));
    assert_eq!(d.bots, vec!["default".to_owned()]);
    let schema = &d.action(ACTION_DROP).unwrap().payload_schema;
    assert_eq!(schema["properties"]["column"]["maximum"], json!(9));
    assert_eq!(schema["additionalProperties"], json!(false));
}

#[test]
fn actions_are_adjacently_tagged_and_strict() {
    let a: Action = serde_json::from_value(json!({"type": "drop", "payload": {"column": 4}})).unwrap();
    assert_eq!(a, Action::drop(4));
    assert_eq!(serde_json::to_value(a).unwrap(), json!({"type": "drop", "payload": {"column": 4}}));
    for bad in [
        json!({"type": "drop", "payload": {"column": 4, "row": 0}}),
        json!({"type": "drop", "payload": {"column": -1}}),
        json!({"type": "drop", "payload": {"column": 256}}),
        json!({"type": "drop", "payload": {}}),
        json!({"type": "pop", "payload": {"column": 1}}),
    ] {
        assert!(serde_json::from_value::<Action>(bad.clone()).is_err(), "{bad}");
    }
}

#[test]
fn bot_waits_for_its_turn_and_knows_one_profile() {
    let p = start(Config::default());
    let mut e = SplitMix64(5);
    assert_eq!(Conecta4.bot_action(&p, "p1", BOT_DEFAULT, &mut e), None);
    assert_eq!(Conecta4.bot_action(&p, "p0", "grandmaster", &mut e), None);
    assert!(Conecta4.bot_action(&p, "p0", BOT_DEFAULT, &mut e).is_some());
    let won = play(start(Config::default()), &[0, 1, 0, 1, 0, 1, 0]);
    assert_eq!(Conecta4.bot_action(&won, "p1", BOT_DEFAULT, &mut e), None);
}
