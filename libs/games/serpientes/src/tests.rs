//! Unit tests of the rules: setup, turns, the finish, withdrawal.

use std::collections::BTreeMap;

use juegoland_sdk::{
    Game, Lifecycle, Participant, ParticipantStatus, Pos, Position, Randomness, Recipient, RuleError, ScriptedEntropy,
    Services, Setup, seat_ids,
};

use super::*;

fn participants(n: usize) -> BTreeMap<String, Participant> {
    seat_ids(n).into_iter().map(|s| (s, Participant::active())).collect()
}

fn start(n: usize, config: Config) -> Pos<Serpientes> {
    let mut e = ScriptedEntropy::new(vec![0]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Serpientes.setup(&Setup { config, participants: participants(n) }, &mut s).unwrap();
    Position { config, participants: participants(n), data: t.data, flow: t.flow, result: t.result }
}

/// Rolls `die` (1–6) for `seat`: the scripted word `die - 1` picks that face.
fn roll(p: &Pos<Serpientes>, seat: &str, die: u64) -> Result<(Pos<Serpientes>, Vec<Event>), RuleError> {
    let mut e = ScriptedEntropy::new(vec![die - 1]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Serpientes.apply(p, seat, &Action::roll(), &mut s)?;
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() };
    Serpientes.validate_position(&next).unwrap();
    Ok((next, t.events))
}

#[test]
fn setup_puts_every_piece_off_the_board_and_p0_first() {
    let p = start(3, Config::default());
    assert_eq!(p.data.positions, BTreeMap::from([("p0".into(), 0), ("p1".into(), 0), ("p2".into(), 0)]));
    assert_eq!(actor(&p), Some("p0"));
    Serpientes.validate_position(&p).unwrap();
    let mut e = ScriptedEntropy::new(vec![0]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    for bad in [participants(0), participants(7)] {
        let err = Serpientes.setup(&Setup { config: Config::default(), participants: bad }, &mut s).unwrap_err();
        assert_eq!(err, RuleError::illegal("invalid-participants"));
    }
}

#[test]
fn turns_pass_in_seat_order_and_only_the_actor_rolls() {
    let p = start(2, Config::default());
    assert_eq!(roll(&p, "p1", 3).unwrap_err(), RuleError::illegal("not-your-turn"));
    let (p, events) = roll(&p, "p0", 3).unwrap();
    assert_eq!(
        events,
        [Event::PieceMoved { seat: "p0".into(), roll: vec![3], path: vec![PathStep { square: 3, via: Via::Step }] }]
    );
    assert_eq!(actor(&p), Some("p1"));
    assert_eq!((p.flow.turn, p.flow.round), (1, 0));
    let (p, _) = roll(&p, "p1", 1).unwrap();
    assert_eq!(p.data.positions["p1"], 38, "the ladder from 1");
    assert_eq!((actor(&p), p.flow.turn, p.flow.round), (Some("p0"), 2, 1));
    assert_eq!(Serpientes.available_actions(&p, Recipient::Seat("p0")), [Offer::Concrete(Action::roll())]);
    assert!(Serpientes.available_actions(&p, Recipient::Seat("p1")).is_empty());
}

#[test]
fn win_draw_loss_reaching_100_wins_and_an_exact_overshoot_does_not_move() {
    let mut p = start(2, Config::default());
    p.data.positions.insert("p0".into(), 97);
    let (q, events) = roll(&p, "p0", 5).unwrap();
    assert_eq!(q.data.positions["p0"], 97);
    assert_eq!(events, [Event::PieceMoved { seat: "p0".into(), roll: vec![5], path: vec![] }]);
    let (q, _) = roll(&p, "p0", 3).unwrap();
    let json = serde_json::to_value(&q.result).unwrap();
    assert_eq!(json["reasonCode"], REASON_FINISHED);
    assert_eq!(json["participants"]["p0"]["outcome"], "win");
    assert_eq!(json["participants"]["p1"]["outcome"], "loss");
    assert!(q.flow.actors.is_empty());
    assert_eq!(roll(&q, "p0", 1).unwrap_err(), RuleError::illegal("match-finished"));
}

fn withdraw(p: &Pos<Serpientes>, seat: &str) -> Pos<Serpientes> {
    let mut p = p.clone();
    p.participants.get_mut(seat).unwrap().status = ParticipantStatus::Withdrawn;
    let mut e = ScriptedEntropy::new(vec![0]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Serpientes.on_lifecycle(&p, &Lifecycle::Withdrawal { seat: seat.into() }, &mut s).unwrap();
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p };
    Serpientes.validate_position(&next).unwrap();
    next
}

#[test]
fn withdrawal_in_a_turn_policy_the_leaver_loses_the_race_goes_on_the_last_one_wins() {
    let p = start(3, Config::default());
    let p = withdraw(&p, "p0");
    assert!(p.result.is_none());
    assert_eq!(actor(&p), Some("p1"), "the turn passes on from the leaver");
    let p = withdraw(&p, "p2");
    let json = serde_json::to_value(&p.result).unwrap();
    assert_eq!(json["reasonCode"], REASON_WITHDRAWAL);
    assert_eq!(json["participants"]["p1"]["outcome"], "win");
    assert_eq!(json["participants"]["p0"]["outcome"], "loss");
    assert_eq!(json["participants"]["p2"]["outcome"], "loss");
    let solo = withdraw(&start(1, Config::default()), "p0");
    let json = serde_json::to_value(&solo.result).unwrap();
    assert_eq!(json["participants"]["p0"]["outcome"], "loss");
}

#[test]
fn the_view_is_the_same_for_everyone_and_carries_the_destination() {
    let p = start(2, Config { finish: Finish::Bounce, ..Config::default() });
    let (p, _) = roll(&p, "p0", 4).unwrap();
    let a = Serpientes.project(&p, Recipient::Seat("p0"));
    let b = Serpientes.project(&p, Recipient::Spectator);
    assert_eq!(a.view, b.view);
    assert_eq!(a.view.positions["p0"], 14);
    assert_eq!(a.view.last_roll, Some(LastRoll { seat: "p0".into(), roll: vec![4] }));
    assert!(!a.context.your_turn);
    assert!(Serpientes.project(&p, Recipient::Seat("p1")).context.your_turn);
}
