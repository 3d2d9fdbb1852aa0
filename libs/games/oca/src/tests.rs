//! Unit tests of the rules: turns, lost turns, the well, rolling again, the finish and
//! withdrawal.

use std::collections::BTreeMap;

use juegoland_sdk::{
    Game, Lifecycle, Participant, ParticipantStatus, Pos, Position, Randomness, Recipient, RuleError, ScriptedEntropy,
    Services, Setup, seat_ids,
};

use super::*;

fn participants(n: usize) -> BTreeMap<String, Participant> {
    seat_ids(n).into_iter().map(|s| (s, Participant::active())).collect()
}

fn start(n: usize, config: Config) -> Pos<Oca> {
    let mut e = ScriptedEntropy::new(vec![0]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Oca.setup(&Setup { config, participants: participants(n) }, &mut s).unwrap();
    Position { config, participants: participants(n), data: t.data, flow: t.flow, result: t.result }
}

/// Rolls `dice` (each 1–6) for `seat`: the scripted word `d - 1` picks face `d`.
fn roll(p: &Pos<Oca>, seat: &str, dice: &[u64]) -> Result<(Pos<Oca>, Vec<Event>), RuleError> {
    let mut e = ScriptedEntropy::new(dice.iter().map(|d| d - 1).collect());
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Oca.apply(p, seat, &Action::roll(), &mut s)?;
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() };
    Oca.validate_position(&next).unwrap_or_else(|e| panic!("{e}"));
    Ok((next, t.events))
}

#[test]
fn setup_validates_seats_and_dice() {
    let p = start(2, Config::default());
    assert_eq!(actor(&p), Some("p0"));
    Oca.validate_position(&p).unwrap();
    let mut e = ScriptedEntropy::new(vec![0]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    for (config, n) in [
        (Config::default(), 1),
        (Config::default(), 5),
        (Config { dice: 3, ..Config::default() }, 2),
        (Config { dice: 0, ..Config::default() }, 2),
    ] {
        assert!(Oca.setup(&Setup { config, participants: participants(n) }, &mut s).is_err(), "{config:?} {n}");
    }
}

#[test]
fn a_goose_rolls_again_and_a_plain_square_passes_the_turn() {
    let p = start(2, Config::default());
    assert_eq!(roll(&p, "p1", &[1]).unwrap_err(), RuleError::illegal("not-your-turn"));
    let (p, events) = roll(&p, "p0", &[5]).unwrap();
    assert_eq!(
        events,
        [Event::PieceMoved {
            seat: "p0".into(),
            roll: vec![5],
            path: vec![PathStep { square: 5, via: Via::Step }, PathStep { square: 9, via: Via::Goose }]
        }]
    );
    assert_eq!(actor(&p), Some("p0"), "de oca a oca y tiro porque me toca");
    let (p, _) = roll(&p, "p0", &[1]).unwrap();
    assert_eq!((p.data.positions["p0"], actor(&p)), (10, Some("p1")));
}

#[test]
fn the_inn_and_the_prison_lose_turns_counted_down_in_the_view() {
    let mut p = start(2, Config::default());
    p.data.positions.insert("p0".into(), 50);
    let (p, _) = roll(&p, "p0", &[2]).unwrap();
    assert_eq!(p.data.turns_lost["p0"], 2);
    assert_eq!(Oca.project(&p, Recipient::Seat("p1")).view.turns_lost["p0"], 2);
    let (p, _) = roll(&p, "p1", &[1]).unwrap();
    assert_eq!((actor(&p), p.data.turns_lost["p0"]), (Some("p1"), 1), "p0 loses its first turn");
    let (p, _) = roll(&p, "p1", &[1]).unwrap();
    assert_eq!((actor(&p), p.data.turns_lost["p0"]), (Some("p1"), 0), "and its second");
    let (p, _) = roll(&p, "p1", &[1]).unwrap();
    assert_eq!(actor(&p), Some("p0"));
}

#[test]
fn the_well_holds_a_piece_until_another_falls_in() {
    let mut p = start(3, Config::default());
    p.data.positions.insert("p0".into(), 30);
    p.data.positions.insert("p1".into(), 29);
    let (p, events) = roll(&p, "p0", &[1]).unwrap();
    let Event::PieceMoved { path, .. } = &events[0] else { panic!("a move first") };
    assert_eq!(path, &[PathStep { square: 31, via: Via::Step }, PathStep { square: 31, via: Via::Well }]);
    assert_eq!(p.data.well.as_deref(), Some("p0"));
    let (p, _) = roll(&p, "p1", &[1]).unwrap(); // 30
    let (p, _) = roll(&p, "p2", &[1]).unwrap();
    assert_eq!(actor(&p), Some("p1"), "p0's turn is skipped while it is held");
    let (p, _) = roll(&p, "p1", &[1]).unwrap(); // 31: p1 takes p0's place
    assert_eq!(p.data.well.as_deref(), Some("p1"));
    assert_eq!(actor(&p), Some("p2"));
    let (p, _) = roll(&p, "p2", &[1]).unwrap();
    assert_eq!(actor(&p), Some("p0"), "p0 is free again");
}

#[test]
fn win_draw_loss_exactly_63_wins_and_the_excess_counts_back() {
    let mut p = start(2, Config::default());
    p.data.positions.insert("p0".into(), 60);
    let (q, _) = roll(&p, "p0", &[5]).unwrap();
    assert_eq!(q.data.positions["p0"], 61);
    assert!(q.result.is_none());
    let (q, _) = roll(&p, "p0", &[3]).unwrap();
    let json = serde_json::to_value(&q.result).unwrap();
    assert_eq!(json["reasonCode"], REASON_FINISHED);
    assert_eq!(json["participants"]["p0"]["outcome"], "win");
    assert_eq!(json["participants"]["p1"]["outcome"], "loss");
    assert_eq!(roll(&q, "p0", &[1]).unwrap_err(), RuleError::illegal("match-finished"));
}

fn withdraw(p: &Pos<Oca>, seat: &str) -> Pos<Oca> {
    let mut p = p.clone();
    p.participants.get_mut(seat).unwrap().status = ParticipantStatus::Withdrawn;
    let mut e = ScriptedEntropy::new(vec![0]);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Oca.on_lifecycle(&p, &Lifecycle::Withdrawal { seat: seat.into() }, &mut s).unwrap();
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p };
    Oca.validate_position(&next).unwrap();
    next
}

#[test]
fn withdrawal_in_a_turn_policy_the_leaver_loses_and_the_last_one_wins() {
    let mut p = start(3, Config::default());
    p.data.positions.insert("p1".into(), WELL_SQUARE);
    p.data.well = Some("p1".into());
    let p = withdraw(&p, "p1");
    assert_eq!(p.data.well, None, "the leaver leaves the well");
    assert!(p.result.is_none());
    let p = withdraw(&p, "p0");
    assert!(p.flow.actors.is_empty());
    let json = serde_json::to_value(&p.result).unwrap();
    assert_eq!(json["reasonCode"], REASON_WITHDRAWAL);
    assert_eq!(json["participants"]["p2"]["outcome"], "win");
    assert_eq!(json["participants"]["p0"]["outcome"], "loss");
    assert_eq!(json["participants"]["p1"]["outcome"], "loss");
}

const WELL_SQUARE: u32 = board::WELL;
