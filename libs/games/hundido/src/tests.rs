//! Scenario tests of the rules: placement, readiness, firing, turn policy, results,
//! withdrawal, offers, projections and the validator.

use std::collections::BTreeMap;

use juegoland_sdk::{
    Game, Lifecycle, MatchResult, Offer, Outcome, Participant, ParticipantStatus, Position, Randomness, Recipient,
    RuleError, Services, Setup, SplitMix64,
};
use serde_json::json;

use super::*;
use crate::model::Orientation::{Horizontal as H, Vertical as V};

fn with_services<T>(f: impl FnOnce(&mut Services<'_>) -> T) -> T {
    let mut entropy = SplitMix64(0);
    let mut services = Services::new(0, Randomness::live(&mut entropy));
    f(&mut services)
}

fn participants() -> BTreeMap<String, Participant> {
    [("p0".to_owned(), Participant::active()), ("p1".to_owned(), Participant::active())].into()
}

fn start(config: Config) -> Pos<Hundido> {
    let t =
        with_services(|s| Hundido.setup(&Setup { config: config.clone(), participants: participants() }, s)).unwrap();
    let p = Position { config, participants: participants(), data: t.data, flow: t.flow, result: t.result };
    Hundido.validate_position(&p).unwrap();
    p
}

fn commit(p: &Pos<Hundido>, t: Trans<Hundido>) -> Pos<Hundido> {
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() };
    Hundido.validate_position(&next).unwrap();
    next
}

fn apply(p: &Pos<Hundido>, actor: &str, action: Action) -> Result<Trans<Hundido>, RuleError> {
    with_services(|s| Hundido.apply(p, actor, &action, s))
}

fn act(p: &Pos<Hundido>, actor: &str, action: Action) -> Pos<Hundido> {
    let t = apply(p, actor, action.clone()).unwrap_or_else(|e| panic!("{action:?} by {actor}: {e}"));
    commit(p, t)
}

fn assert_illegal(r: Result<Trans<Hundido>, RuleError>, reason: &str) {
    assert_eq!(r.err(), Some(RuleError::illegal(reason)));
}

/// A small game: 6 × 6, a `long` ship of 3 and a `short` one of 2.
fn small(keep_turn_on_hit: bool) -> Config {
    Config {
        rows: 6,
        columns: 6,
        fleet: vec![ShipSpec::new("long", 3), ShipSpec::new("short", 2)],
        adjacency: Adjacency::Touch,
        keep_turn_on_hit,
        clock: None,
    }
}

/// Both seats place the same small fleet (long at row 0 from column 0, short at row 2
/// column 0, both horizontal) and get ready.
fn battle(keep_turn_on_hit: bool) -> Pos<Hundido> {
    let mut p = start(small(keep_turn_on_hit));
    for seat in ["p0", "p1"] {
        p = act(&p, seat, Action::place("long", 0, 0, H));
        p = act(&p, seat, Action::place("short", 2, 0, H));
    }
    p = act(&p, "p0", Action::ready());
    act(&p, "p1", Action::ready())
}

fn classic_fleet_for(p: Pos<Hundido>, seat: &str) -> Pos<Hundido> {
    let mut p = p;
    for (i, ship) in ["carrier", "battleship", "cruiser", "submarine", "destroyer"].into_iter().enumerate() {
        p = act(&p, seat, Action::place(ship, 2 * i as u8, 0, H));
    }
    p
}

fn stage(p: &Pos<Hundido>, seat: &str) -> Option<String> {
    p.flow.stage_of(seat).map(str::to_owned)
}

#[test]
fn setup_starts_placement_with_both_seats_arranging() {
    let p = start(Config::default());
    assert_eq!((p.flow.phase.as_str(), p.flow.round, p.flow.turn), (PHASE_PLACEMENT, 0, 0));
    assert_eq!(stage(&p, "p0").as_deref(), Some(STAGE_ARRANGE));
    assert_eq!(stage(&p, "p1").as_deref(), Some(STAGE_ARRANGE));
    assert!(p.data.players.iter().all(|x| x.fleet.is_empty() && !x.ready));
    assert!(p.data.shots.is_empty());
}

#[test]
fn config_defaults_and_strictness() {
    let c: Config = serde_json::from_value(json!({})).unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        json!({
            "rows": 10, "columns": 10,
            "fleet": [
                {"ship": "carrier", "size": 5}, {"ship": "battleship", "size": 4}, {"ship": "cruiser", "size": 3},
                {"ship": "submarine", "size": 3}, {"ship": "destroyer", "size": 2}
            ],
            "adjacency": "touch", "keepTurnOnHit": false
        })
    );
    let c: Config = serde_json::from_value(json!({"adjacency": "no-touch", "keepTurnOnHit": true})).unwrap();
    assert_eq!((c.adjacency, c.keep_turn_on_hit), (Adjacency::NoTouch, true));
    assert!(serde_json::from_value::<Config>(json!({"width": 10})).is_err());
    assert!(serde_json::from_value::<Config>(json!({"adjacency": "corner"})).is_err());
    assert!(serde_json::from_value::<Config>(json!({"fleet": [{"ship": "a", "size": 2, "x": 1}]})).is_err());
}

#[test]
fn setup_rejects_bad_configs_and_seats() {
    let ships = |list: &[(&str, u8)]| list.iter().map(|(s, n)| ShipSpec::new(s, *n)).collect::<Vec<_>>();
    let bad = [
        Config { rows: 5, ..Config::default() },
        Config { columns: 13, ..Config::default() },
        Config { fleet: vec![], ..Config::default() },
        Config { fleet: ships(&[("a", 2), ("a", 3)]), ..Config::default() },
        Config { fleet: ships(&[("a", 0)]), ..Config::default() },
        Config { fleet: ships(&[("a", 7)]), ..Config::default() },
        Config { fleet: ships(&[("bad name", 2)]), ..Config::default() },
        Config { fleet: ships(&[("", 2)]), ..Config::default() },
        Config { fleet: (0..11).map(|i| ShipSpec::new(&format!("s{i}"), 1)).collect(), ..Config::default() },
        // 8 ships of 6 on 6 × 6 cover 48 cells of 36.
        Config {
            rows: 6,
            columns: 6,
            fleet: (0..8).map(|i| ShipSpec::new(&format!("s{i}"), 6)).collect(),
            ..small(false)
        },
        // Six ships of 6 fill a 6 × 6 board exactly when they may touch, but not otherwise.
        Config {
            adjacency: Adjacency::NoTouch,
            fleet: (0..6).map(|i| ShipSpec::new(&format!("s{i}"), 6)).collect(),
            ..small(false)
        },
    ];
    for config in bad {
        let r = with_services(|s| Hundido.setup(&Setup { config: config.clone(), participants: participants() }, s));
        let reason = match r.err() {
            Some(RuleError::Illegal { reason }) => reason,
            other => panic!("{config:?}: {other:?}"),
        };
        assert!(
            reason.starts_with("config.rows: ")
                || reason.starts_with("config.columns: ")
                || reason.starts_with("config.fleet"),
            "{config:?}: {reason}"
        );
    }
    let full = Config { fleet: (0..6).map(|i| ShipSpec::new(&format!("s{i}"), 6)).collect(), ..small(false) };
    start(full);
    let mut three = participants();
    three.insert("p2".into(), Participant::active());
    let r = with_services(|s| Hundido.setup(&Setup { config: Config::default(), participants: three }, s));
    assert_eq!(r.err(), Some(RuleError::illegal("invalid-participants")));
}

#[test]
fn placing_checks_bounds_overlap_and_unknown_ships() {
    let p = start(Config::default());
    let p = act(&p, "p0", Action::place("carrier", 0, 0, H));
    assert_illegal(apply(&p, "p0", Action::place("battleship", 0, 7, H)), "out-of-bounds");
    assert_illegal(apply(&p, "p0", Action::place("battleship", 7, 0, V)), "out-of-bounds");
    assert_illegal(apply(&p, "p0", Action::place("battleship", 11, 0, H)), "out-of-bounds");
    assert_illegal(apply(&p, "p0", Action::place("battleship", 0, 4, V)), "overlap");
    assert_illegal(apply(&p, "p0", Action::place("canoe", 5, 5, H)), "unknown-ship");
    // Touching is allowed by default, edge or corner.
    let q = act(&p, "p0", Action::place("battleship", 1, 0, H));
    act(&q, "p0", Action::place("cruiser", 1, 5, V));
    // The rival's fleet is independent: p1 may use the same cells.
    act(&p, "p1", Action::place("battleship", 0, 0, V));
}

#[test]
fn no_touch_forbids_edges_and_corners() {
    let p = start(Config { adjacency: Adjacency::NoTouch, ..Config::default() });
    let p = act(&p, "p0", Action::place("carrier", 0, 0, H));
    assert_illegal(apply(&p, "p0", Action::place("battleship", 1, 0, H)), "adjacent");
    assert_illegal(apply(&p, "p0", Action::place("battleship", 1, 5, V)), "adjacent");
    assert_illegal(apply(&p, "p0", Action::place("battleship", 0, 5, H)), "adjacent");
    act(&p, "p0", Action::place("battleship", 2, 0, H));
    act(&p, "p0", Action::place("battleship", 0, 6, H));
}

#[test]
fn placing_a_placed_ship_moves_it() {
    let p = start(Config::default());
    let p = act(&p, "p0", Action::place("carrier", 0, 0, H));
    let p = act(&p, "p0", Action::place("carrier", 0, 1, H));
    assert_eq!(p.data.players[0].fleet.len(), 1);
    assert_eq!(p.data.players[0].fleet["carrier"], Placement::new(0, 1, H));
    let t = apply(&p, "p0", Action::place("carrier", 5, 5, V)).unwrap();
    assert_eq!(
        t.events,
        vec![Event::ShipPositioned {
            seat: Side::P0,
            ship: "carrier".into(),
            placement: Placement::new(5, 5, V),
            placed: 1
        }]
    );
    // A placement never changes the flow.
    assert_eq!(t.flow, p.flow);
}

#[test]
fn ready_needs_the_whole_fleet_and_ends_own_arranging() {
    let p = start(Config::default());
    assert_illegal(apply(&p, "p0", Action::ready()), "fleet-incomplete");
    let p = act(&p, "p0", Action::place("carrier", 0, 0, H));
    assert_illegal(apply(&p, "p0", Action::ready()), "fleet-incomplete");
    let p = classic_fleet_for(p, "p0");
    let p = act(&p, "p0", Action::ready());
    assert_eq!(stage(&p, "p0").as_deref(), Some(STAGE_WAITING));
    assert_eq!(stage(&p, "p1").as_deref(), Some(STAGE_ARRANGE));
    assert_eq!(p.flow.phase, PHASE_PLACEMENT);
    assert_illegal(apply(&p, "p0", Action::place("carrier", 9, 0, H)), "already-ready");
    assert_illegal(apply(&p, "p0", Action::ready()), "already-ready");
    // p1 still arranges; its own ready starts the battle.
    let p = classic_fleet_for(p, "p1");
    let t = apply(&p, "p1", Action::ready()).unwrap();
    assert_eq!(t.events, vec![Event::SeatReady { seat: Side::P1 }, Event::BattleBegan { shooter: Side::P0 }]);
    let p = commit(&p, t);
    assert_eq!(p.flow, juegoland_sdk::Flow::single(PHASE_BATTLE, 0, 0, "p0", STAGE_FIRE));
    assert_illegal(apply(&p, "p0", Action::place("carrier", 9, 0, H)), "not-in-placement");
    assert_illegal(apply(&p, "p1", Action::ready()), "not-in-placement");
    assert_illegal(apply(&start(Config::default()), "p0", Action::fire(0, 0)), "not-in-battle");
}

fn shot_event(t: &Trans<Hundido>) -> (ShotOutcome, Option<String>, Option<Vec<Cell>>) {
    match &t.events[..] {
        [Event::ShotResolved { outcome, ship, cells, .. }] => (*outcome, ship.clone(), cells.clone()),
        other => panic!("expected one shot event, got {other:?}"),
    }
}

#[test]
fn fire_reports_water_hit_and_sunk_and_passes_the_turn() {
    let p = battle(false);
    let t = apply(&p, "p0", Action::fire(5, 5)).unwrap();
    assert_eq!(shot_event(&t), (ShotOutcome::Water, None, None));
    let p = commit(&p, t);
    assert_eq!((stage(&p, "p1").as_deref(), p.flow.turn, p.flow.round), (Some(STAGE_FIRE), 1, 1));
    let p = act(&p, "p1", Action::fire(4, 4));
    let t = apply(&p, "p0", Action::fire(2, 0)).unwrap();
    assert_eq!(shot_event(&t), (ShotOutcome::Hit, None, None));
    let p = commit(&p, t);
    // A hit passes the turn too by default.
    assert_eq!(stage(&p, "p1").as_deref(), Some(STAGE_FIRE));
    let p = act(&p, "p1", Action::fire(4, 5));
    let t = apply(&p, "p0", Action::fire(2, 1)).unwrap();
    assert_eq!(shot_event(&t), (ShotOutcome::Sunk, Some("short".into()), Some(vec![Cell::new(2, 0), Cell::new(2, 1)])));
    let p = commit(&p, t);
    assert_eq!((p.flow.turn, p.flow.round), (5, 5));
    assert!(p.result.is_none());
}

#[test]
fn fire_checks_turn_bounds_and_repeats() {
    let p = battle(false);
    assert_illegal(apply(&p, "p1", Action::fire(0, 0)), "not-your-turn");
    assert_illegal(apply(&p, "p0", Action::fire(6, 0)), "out-of-bounds");
    assert_illegal(apply(&p, "p0", Action::fire(0, 11)), "out-of-bounds");
    let p = act(&p, "p0", Action::fire(3, 3));
    // p1 may fire at the same coordinates of the other board.
    let p = act(&p, "p1", Action::fire(3, 3));
    assert_illegal(apply(&p, "p0", Action::fire(3, 3)), "already-fired");
    assert_illegal(apply(&p, "p2", Action::fire(1, 1)), "unknown-seat");
}

#[test]
fn keep_turn_on_hit_lets_the_shooter_fire_again() {
    let p = battle(true);
    let p = act(&p, "p0", Action::fire(0, 0));
    assert_eq!((stage(&p, "p0").as_deref(), p.flow.turn, p.flow.round), (Some(STAGE_FIRE), 1, 0));
    let p = act(&p, "p0", Action::fire(0, 1));
    let p = act(&p, "p0", Action::fire(0, 2));
    assert_eq!(p.data.shots.last().unwrap().outcome, ShotOutcome::Sunk);
    assert_eq!(stage(&p, "p0").as_deref(), Some(STAGE_FIRE), "a sinking keeps the turn too");
    let p = act(&p, "p0", Action::fire(5, 5));
    assert_eq!((stage(&p, "p1").as_deref(), p.flow.turn, p.flow.round), (Some(STAGE_FIRE), 4, 1));
}

#[test]
fn sinking_the_last_ship_wins() {
    let mut p = battle(false);
    let targets = [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1)];
    for (i, (r, c)) in targets.into_iter().enumerate() {
        assert!(p.result.is_none());
        p = act(&p, "p0", Action::fire(r, c));
        if i + 1 < targets.len() {
            p = act(&p, "p1", Action::fire(5, i as u8));
        }
    }
    assert_eq!(
        p.result,
        Some(MatchResult::completed(REASON_FLEET_DESTROYED, [("p0", Outcome::Win), ("p1", Outcome::Loss)]))
    );
    assert!(p.flow.actors.is_empty());
    assert_eq!(p.flow.turn, 9);
    assert_illegal(apply(&p, "p1", Action::fire(5, 5)), "match-finished");
    assert!(Hundido.available_actions(&p, Recipient::Seat("p1")).is_empty());
    assert_eq!(Hundido.bot_action(&p, "p1", BOT_DEFAULT, &mut SplitMix64(1)), None);
}

fn withdraw(p: &Pos<Hundido>, seat: &str) -> Result<Pos<Hundido>, RuleError> {
    let mut marked = p.clone();
    marked.participants.get_mut(seat).unwrap().status = ParticipantStatus::Withdrawn;
    let t = with_services(|s| Hundido.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: seat.into() }, s))?;
    assert_eq!(t.events, vec![Event::SeatWithdrew { seat: Side::from_seat(seat).unwrap() }]);
    Ok(commit(&marked, t))
}

#[test]
fn withdrawal_in_placement_cancels_with_no_winner() {
    let p = act(&start(Config::default()), "p0", Action::place("carrier", 0, 0, H));
    for seat in ["p0", "p1"] {
        let q = withdraw(&p, seat).unwrap();
        assert_eq!(q.result, Some(MatchResult::cancelled(REASON_WITHDRAWAL_IN_PLACEMENT)));
        assert!(q.flow.actors.is_empty());
    }
    // Also after one seat is ready.
    let ready = act(&classic_fleet_for(start(Config::default()), "p1"), "p1", Action::ready());
    let q = withdraw(&ready, "p0").unwrap();
    assert_eq!(q.result, Some(MatchResult::cancelled(REASON_WITHDRAWAL_IN_PLACEMENT)));
}

#[test]
fn withdrawal_in_battle_makes_the_leaver_lose() {
    let p = act(&battle(false), "p0", Action::fire(0, 0));
    for (leaver, rival) in [("p0", "p1"), ("p1", "p0")] {
        let q = withdraw(&p, leaver).unwrap();
        assert_eq!(
            q.result,
            Some(MatchResult::completed(REASON_WITHDRAWAL, [(leaver, Outcome::Loss), (rival, Outcome::Win)]))
        );
        assert!(q.flow.actors.is_empty());
        assert_eq!(withdraw(&q, rival).err(), Some(RuleError::illegal("match-finished")));
    }
    let r = with_services(|s| Hundido.on_lifecycle(&p, &Lifecycle::Withdrawal { seat: "p7".into() }, s));
    assert_eq!(r.err(), Some(RuleError::illegal("unknown-seat")));
    let d = Lifecycle::DeadlineExpired { id: "x".into(), payload: json!({}) };
    assert_eq!(with_services(|s| Hundido.on_lifecycle(&p, &d, s)).err(), Some(RuleError::illegal("no-deadlines")));
}

#[test]
fn offers_are_parametrized_and_personal() {
    let p = start(Config::default());
    let offers = Hundido.available_actions(&p, Recipient::Seat("p0"));
    assert_eq!(
        offers,
        vec![Offer::Parametrized {
            action_type: ACTION_PLACE_SHIP.into(),
            constraints: json!({
                "rows": 10, "columns": 10, "adjacency": "touch",
                "fleet": serde_json::to_value(classic_fleet()).unwrap(),
            }),
        }]
    );
    assert!(Hundido.available_actions(&p, Recipient::Spectator).is_empty());
    let p = classic_fleet_for(p, "p0");
    let offers = Hundido.available_actions(&p, Recipient::Seat("p0"));
    assert_eq!(offers.len(), 2);
    assert_eq!(offers[1], Offer::Concrete(Action::ready()));
    assert_eq!(Hundido.available_actions(&p, Recipient::Seat("p1")).len(), 1);
    let p = act(&p, "p0", Action::ready());
    assert!(Hundido.available_actions(&p, Recipient::Seat("p0")).is_empty());

    let p = battle(false);
    assert_eq!(
        Hundido.available_actions(&p, Recipient::Seat("p0")),
        vec![Offer::Parametrized { action_type: ACTION_FIRE.into(), constraints: json!({"rows": 6, "columns": 6}) }]
    );
    assert!(Hundido.available_actions(&p, Recipient::Seat("p1")).is_empty());
}

#[test]
fn projections_show_own_fleet_and_only_public_facts_of_the_rival() {
    let p = battle(false);
    let p = act(&p, "p0", Action::fire(0, 0)); // hit p1's long ship
    let p = act(&p, "p1", Action::fire(2, 0)); // hit p0's short ship
    let p = act(&p, "p0", Action::fire(5, 5)); // water
    let p = act(&p, "p1", Action::fire(2, 1)); // sink p0's short ship

    let pr = Hundido.project(&p, Recipient::Seat("p0"));
    let own = pr.view.own.as_ref().unwrap();
    assert_eq!(own.seat, Side::P0);
    assert_eq!(own.ships.len(), 2);
    assert_eq!(own.ships[1].ship, "short");
    assert_eq!(own.ships[1].hits, vec![Cell::new(2, 0), Cell::new(2, 1)]);
    assert!(own.ships[1].sunk && !own.ships[0].sunk);
    assert_eq!(pr.view.seats[0].shots.len(), 2);
    assert_eq!(
        pr.view.seats[0].sunk,
        vec![SunkShip { ship: "short".into(), size: 2, cells: vec![Cell::new(2, 0), Cell::new(2, 1)] }]
    );
    assert_eq!((pr.view.seats[0].afloat, pr.view.seats[1].afloat), (1, 2));
    assert_eq!(pr.view.seats[1].shots[1].ship.as_deref(), Some("short"));
    assert_eq!(pr.view.seats[0].shots[0], PublicShot { row: 0, column: 0, outcome: ShotOutcome::Hit, ship: None });
    assert_eq!(
        pr.context,
        Context {
            seat: Some(Side::P0),
            phase: PHASE_BATTLE.into(),
            shooter: Some(Side::P0),
            your_turn: true,
            can_act: true
        }
    );

    // The rival's undiscovered ships never appear: no cell of p1's long ship but the one hit
    // (both fleets share a layout here, so look outside the recipient's own board).
    let text = serde_json::to_string(&pr.view.seats).unwrap();
    for c in [1, 2] {
        assert!(!text.contains(&format!("{{\"row\":0,\"column\":{c}}}")), "{text}");
    }
    // A spectator sees the public part only, identical to what the seats see of it.
    let spectator = Hundido.project(&p, Recipient::Spectator);
    assert_eq!(spectator.view.own, None);
    assert_eq!(spectator.view.seats, pr.view.seats);
    assert_eq!(spectator.context.seat, None);
    assert!(!spectator.context.your_turn && !spectator.context.can_act);
    let p1 = Hundido.project(&p, Recipient::Seat("p1"));
    assert_eq!(p1.view.seats, pr.view.seats);
    assert!(!p1.context.your_turn);
}

#[test]
fn visible_events_carry_no_placement_coordinates() {
    let p = start(Config::default());
    let t = apply(&p, "p0", Action::place("carrier", 3, 4, V)).unwrap();
    let next = commit(&p, t.clone());
    for recipient in [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator] {
        let visible = Hundido.project_event(&p, &next, &t.events[0], recipient);
        assert_eq!(
            serde_json::to_value(&visible).unwrap(),
            json!([{"type": "fleet.changed", "data": {"seat": "p0", "placed": 1}}])
        );
    }
    let p = battle(false);
    let t = apply(&p, "p0", Action::fire(0, 0)).unwrap();
    let next = commit(&p, t.clone());
    let visible = Hundido.project_event(&p, &next, &t.events[0], Recipient::Seat("p1"));
    assert_eq!(
        serde_json::to_value(&visible).unwrap(),
        json!([{"type": "shot.fired", "data": {"seat": "p0", "row": 0, "column": 0, "outcome": "hit"}}])
    );
}

fn corrupt_after(p: &Pos<Hundido>, f: impl FnOnce(&mut Pos<Hundido>), needle: &str) {
    let mut q = p.clone();
    f(&mut q);
    match Hundido.validate_position(&q) {
        Err(e) => assert!(e.0.contains(needle), "expected {needle:?} in {:?}", e.0),
        Ok(()) => panic!("corruption not caught, expected {needle:?}"),
    }
}

#[test]
fn the_validator_catches_corruption() {
    let placing = act(&start(Config::default()), "p0", Action::place("carrier", 0, 0, H));
    corrupt_after(&placing, |q| q.config.rows = 20, "config");
    corrupt_after(&placing, |q| q.data.players.pop().map(|_| ()).unwrap(), "entries");
    corrupt_after(
        &placing,
        |q| {
            q.data.players[0].fleet.insert("battleship".into(), Placement::new(0, 2, V));
        },
        "overlap",
    );
    corrupt_after(
        &placing,
        |q| {
            q.data.players[1].fleet.insert("yacht".into(), Placement::new(0, 2, V));
        },
        "unknown-ship",
    );
    corrupt_after(
        &placing,
        |q| {
            q.data.players[1].fleet.insert("carrier".into(), Placement::new(0, 8, H));
        },
        "out-of-bounds",
    );
    corrupt_after(&placing, |q| q.data.players[0].ready = true, "incomplete");
    corrupt_after(
        &placing,
        |q| {
            q.flow.actors.insert("p0".into(), STAGE_WAITING.into());
        },
        "arrange until ready",
    );
    corrupt_after(
        &placing,
        |q| {
            q.flow.actors.remove("p1");
        },
        "every seat is an actor",
    );
    corrupt_after(&placing, |q| q.flow.turn = 1, "round and turn");
    corrupt_after(&placing, |q| q.flow.phase = "setup".into(), "unknown phase");
    corrupt_after(
        &placing,
        |q| {
            q.data.shots.push(Shot { seat: Side::P0, row: 0, column: 0, outcome: ShotOutcome::Water, ship: None });
        },
        "during placement",
    );
    corrupt_after(
        &placing,
        |q| {
            q.result = Some(MatchResult::completed(REASON_WITHDRAWAL, [("p0", Outcome::Loss), ("p1", Outcome::Win)]));
            q.flow.actors.clear();
        },
        "completed during placement",
    );
    corrupt_after(
        &placing,
        |q| {
            q.result = Some(MatchResult::cancelled(REASON_WITHDRAWAL_IN_PLACEMENT));
            q.flow.actors.clear();
        },
        "nobody withdrew",
    );
    corrupt_after(
        &placing,
        |q| q.participants.get_mut("p1").unwrap().status = ParticipantStatus::Withdrawn,
        "withdrew",
    );

    let fighting = act(&act(&battle(false), "p0", Action::fire(0, 0)), "p1", Action::fire(5, 5));
    corrupt_after(&fighting, |q| q.data.shots[0].outcome = ShotOutcome::Water, "the fleets say");
    corrupt_after(&fighting, |q| q.data.shots[1].ship = Some("long".into()), "the fleets say");
    corrupt_after(&fighting, |q| q.data.shots[1].seat = Side::P0, "turn");
    corrupt_after(
        &fighting,
        |q| {
            q.data.shots[1] = Shot { seat: Side::P1, row: 9, column: 0, outcome: ShotOutcome::Water, ship: None };
        },
        "off the board",
    );
    corrupt_after(
        &fighting,
        |q| {
            let s = q.data.shots[0].clone();
            q.data.shots.push(Shot { seat: Side::P1, row: 4, column: 4, outcome: ShotOutcome::Water, ship: None });
            q.data.shots.push(s);
            q.flow.turn = 4;
            q.flow.round = 3;
        },
        "turn",
    );
    corrupt_after(
        &fighting,
        |q| {
            q.data.shots.push(Shot { seat: Side::P0, row: 0, column: 0, outcome: ShotOutcome::Hit, ship: None });
            q.flow = juegoland_sdk::Flow::single(PHASE_BATTLE, 3, 3, "p1", STAGE_FIRE);
        },
        "repeats",
    );
    corrupt_after(&fighting, |q| q.flow.turn = 7, "turn 7");
    corrupt_after(
        &fighting,
        |q| q.flow = juegoland_sdk::Flow::single(PHASE_BATTLE, 2, 2, "p1", STAGE_FIRE),
        "exactly one actor",
    );
    corrupt_after(
        &fighting,
        |q| {
            q.flow.actors.insert("p1".into(), STAGE_FIRE.into());
        },
        "exactly one actor",
    );
    corrupt_after(&fighting, |q| q.data.players[1].ready = false, "not ready");
    corrupt_after(
        &fighting,
        |q| {
            q.result =
                Some(MatchResult::completed(REASON_FLEET_DESTROYED, [("p0", Outcome::Win), ("p1", Outcome::Loss)]));
            q.flow.actors.clear();
        },
        "without a destroyed fleet",
    );
    corrupt_after(
        &fighting,
        |q| {
            q.result = Some(MatchResult::completed(REASON_WITHDRAWAL, [("p0", Outcome::Win), ("p1", Outcome::Loss)]));
            q.flow.actors.clear();
        },
        "only the loser",
    );
    corrupt_after(
        &fighting,
        |q| {
            q.result = Some(MatchResult::cancelled(REASON_WITHDRAWAL_IN_PLACEMENT));
            q.flow.actors.clear();
        },
        "not a cancellation",
    );
    corrupt_after(
        &fighting,
        |q| {
            q.result = Some(MatchResult::completed("boredom", [("p0", Outcome::Win), ("p1", Outcome::Loss)]));
            q.flow.actors.clear();
        },
        "unknown result reason",
    );
    corrupt_after(&fighting, |q| q.result = Some(MatchResult::cancelled("admin")), "no actors");

    // Both ready but still in placement.
    let mut p = start(small(false));
    for seat in ["p0", "p1"] {
        p = act(&p, seat, Action::place("long", 0, 0, H));
        p = act(&p, seat, Action::place("short", 2, 0, H));
    }
    let p = act(&p, "p0", Action::ready());
    corrupt_after(&p, |q| q.data.players[1].ready = true, "battle has not started");
}

#[test]
fn a_match_that_went_on_after_a_destroyed_fleet_is_corrupt() {
    let mut p = battle(true);
    for (r, c) in [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1)] {
        p = act(&p, "p0", Action::fire(r, c));
    }
    assert!(p.result.is_some());
    corrupt_after(
        &p,
        |q| {
            q.result = None;
            q.flow = juegoland_sdk::Flow::single(PHASE_BATTLE, 0, 5, "p0", STAGE_FIRE);
        },
        "destroyed its rival's fleet",
    );
    corrupt_after(
        &p,
        |q| {
            q.data.shots.push(Shot { seat: Side::P0, row: 5, column: 5, outcome: ShotOutcome::Water, ship: None });
            q.flow.turn = 6;
        },
        "after a fleet was destroyed",
    );
    corrupt_after(
        &p,
        |q| {
            q.result =
                Some(MatchResult::completed(REASON_FLEET_DESTROYED, [("p0", Outcome::Loss), ("p1", Outcome::Win)]));
        },
        "sole winner",
    );
}

#[test]
fn descriptor_matches_the_contract() {
    let d = Hundido.descriptor();
    assert_eq!((d.id.as_str(), d.version.as_str(), d.rules_version.as_str()), ("hundido", "1.0.0", "1.0.0"));
    assert_eq!((d.state_schema_version, d.view_schema_version, d.event_schema_version), (1, 1, 1));
    assert_eq!((d.min_seats, d.max_seats), (2, 2));
    assert_eq!(d.bots, vec![BOT_DEFAULT.to_owned()]);
    let policy = |a: &str| d.action(a).unwrap().policy;
    assert_eq!(policy(ACTION_PLACE_SHIP), juegoland_sdk::ConflictPolicy::Actor);
    assert_eq!(policy(ACTION_READY), juegoland_sdk::ConflictPolicy::Actor);
    assert_eq!(policy(ACTION_FIRE), juegoland_sdk::ConflictPolicy::Match);
    assert_eq!(d.phase(PHASE_PLACEMENT).unwrap().participation, juegoland_sdk::Participation::Multiple);
    assert_eq!(d.phase(PHASE_BATTLE).unwrap().participation, juegoland_sdk::Participation::Single);
    assert!(d.stage_allows(PHASE_PLACEMENT, STAGE_ARRANGE, ACTION_PLACE_SHIP));
    assert!(d.stage_allows(PHASE_PLACEMENT, STAGE_ARRANGE, ACTION_READY));
    assert!(!d.stage_allows(PHASE_PLACEMENT, STAGE_WAITING, ACTION_READY));
    assert!(d.stage_allows(PHASE_BATTLE, STAGE_FIRE, ACTION_FIRE));
}

#[test]
fn actions_match_the_wire_contract() {
    let place: Action =
        serde_json::from_value(json!({"type": "placeShip", "payload": {"ship": "cruiser", "row": 0, "column": 0, "orientation": "horizontal"}}))
            .unwrap();
    assert_eq!(place, Action::place("cruiser", 0, 0, H));
    assert_eq!(serde_json::to_value(Action::ready()).unwrap(), json!({"type": "ready", "payload": {}}));
    assert_eq!(
        serde_json::to_value(Action::fire(3, 4)).unwrap(),
        json!({"type": "fire", "payload": {"row": 3, "column": 4}})
    );
    assert!(serde_json::from_value::<Action>(json!({"type": "ready", "payload": {"now": true}})).is_err());
    assert!(
        serde_json::from_value::<Action>(json!({"type": "fire", "payload": {"row": 1, "column": 1, "x": 0}})).is_err()
    );
    assert!(
        serde_json::from_value::<Action>(
            json!({"type": "placeShip", "payload": {"ship": "a", "row": 0, "column": 0, "orientation": "diagonal"}})
        )
        .is_err()
    );
}

#[test]
fn the_bot_places_one_ship_per_call_then_readies_then_fires() {
    let mut p = start(Config { adjacency: Adjacency::NoTouch, ..Config::default() });
    let mut e = SplitMix64(11);
    for n in 1..=5 {
        let a = Hundido.bot_action(&p, "p0", BOT_DEFAULT, &mut e).unwrap();
        assert!(matches!(a, Action::PlaceShip(_)), "{a:?}");
        p = act(&p, "p0", a);
        assert_eq!(p.data.players[0].fleet.len(), n);
    }
    assert_eq!(Hundido.bot_action(&p, "p0", BOT_DEFAULT, &mut e), Some(Action::ready()));
    p = act(&p, "p0", Action::ready());
    assert_eq!(Hundido.bot_action(&p, "p0", BOT_DEFAULT, &mut e), None, "a waiting seat has nothing to do");
    assert_eq!(Hundido.bot_action(&p, "p1", "expert", &mut e), None);
}

#[test]
fn the_bot_follows_a_line_of_hits() {
    // p0 hit (0,0) and (0,1) of p1's long ship; both ends: (0,2) only (the left is the edge).
    let mut p = battle(false);
    p = act(&p, "p0", Action::fire(0, 0));
    p = act(&p, "p1", Action::fire(5, 5));
    p = act(&p, "p0", Action::fire(0, 1));
    p = act(&p, "p1", Action::fire(5, 4));
    for seed in 0..16 {
        assert_eq!(Hundido.bot_action(&p, "p0", BOT_DEFAULT, &mut SplitMix64(seed)), Some(Action::fire(0, 2)));
    }
    // After a single hit it tries a neighbour.
    let mut q = battle(false);
    q = act(&q, "p0", Action::fire(2, 1));
    q = act(&q, "p1", Action::fire(5, 5));
    for seed in 0..16 {
        let a = Hundido.bot_action(&q, "p0", BOT_DEFAULT, &mut SplitMix64(seed)).unwrap();
        assert!([Action::fire(1, 1), Action::fire(3, 1), Action::fire(2, 0), Action::fire(2, 2)].contains(&a), "{a:?}");
    }
}
