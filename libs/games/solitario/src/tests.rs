//! Scenario tests of the rules: each kind of move, legal and illegal, the draw/recycle
//! cycle, the auto-flip, winning, giving up, withdrawal, the validator, and the "two copies
//! of a deck" acceptance fixture.

use std::collections::{BTreeMap, BTreeSet};

use juegoland_sdk::components::SUPPLY;
use juegoland_sdk::{
    ComponentDeclaration, ComponentDefinition, ComponentSet, CustomRegistry, Game, InstanceId, Lifecycle, MatchResult,
    Outcome, Participant, ParticipantStatus, Position, Randomness, Recipient, RuleError, Services, Setup, SplitMix64,
    Zone, Zones, check_conservation, poker52,
};
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::table::{Table, zone_specs};

fn with_services<T>(seed: u64, f: impl FnOnce(&mut Services<'_>) -> T) -> T {
    let mut entropy = SplitMix64(seed);
    let mut services = Services::new(0, Randomness::live(&mut entropy));
    f(&mut services)
}

fn participants() -> BTreeMap<String, Participant> {
    [(SEAT.to_owned(), Participant::active())].into()
}

fn start(seed: u64) -> Pos<Solitario> {
    let t = with_services(seed, |s| Solitario.setup(&Setup { config: Config {}, participants: participants() }, s))
        .unwrap();
    let p = Position { config: Config {}, participants: participants(), data: t.data, flow: t.flow, result: t.result };
    Solitario.validate_position(&p).unwrap();
    p
}

fn commit(p: &Pos<Solitario>, t: Trans<Solitario>) -> Pos<Solitario> {
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() };
    Solitario.validate_position(&next).unwrap_or_else(|e| panic!("{e}"));
    next
}

fn apply(p: &Pos<Solitario>, action: Action) -> Result<Trans<Solitario>, RuleError> {
    with_services(0, |s| Solitario.apply(p, SEAT, &action, s))
}

fn play(p: &Pos<Solitario>, action: Action) -> Pos<Solitario> {
    let t = apply(p, action.clone()).unwrap_or_else(|e| panic!("{action:?}: {e}"));
    commit(p, t)
}

fn assert_illegal(p: &Pos<Solitario>, action: Action, reason: &str) {
    assert_eq!(apply(p, action.clone()).err(), Some(RuleError::illegal(reason)), "{action:?}");
}

fn id(card: &str) -> InstanceId {
    InstanceId::card(MAIN_DECK, 0, card)
}

fn ids(cards: &[&str]) -> Vec<InstanceId> {
    cards.iter().map(|c| id(c)).collect()
}

/// A column: face-down cards (bottom first), then face-up ones.
type Column<'a> = (&'a [&'a str], &'a [&'a str]);

/// An active position with these piles; every card not named lies in the stock, face down,
/// in deck order.
fn layout(waste: &[&str], tableau: [Column<'_>; 7], foundations: [&[&str]; 4]) -> Pos<Solitario> {
    let set = main_deck();
    let mut zones = Zones::setup(set.instances());
    for (pile, visibility) in zone_specs() {
        zones = zones.with_zone(&pile.name(), Zone::new(None, true, visibility)).unwrap();
    }
    let mut up = Vec::new();
    zones = zones.move_cards(SUPPLY, "waste", &ids(waste)).unwrap();
    up.extend(ids(waste));
    for (c, (down, face_up)) in tableau.iter().enumerate() {
        let all: Vec<&str> = down.iter().chain(face_up.iter()).copied().collect();
        zones = zones.move_cards(SUPPLY, &format!("tableau{c}"), &ids(&all)).unwrap();
        up.extend(ids(face_up));
    }
    for (f, cards) in foundations.iter().enumerate() {
        zones = zones.move_cards(SUPPLY, &format!("foundation{f}"), &ids(cards)).unwrap();
        up.extend(ids(cards));
    }
    zones = zones.move_all(SUPPLY, "stock").unwrap();
    let face_up: BTreeSet<InstanceId> = up.into_iter().collect();
    let data = Data {
        zones,
        known: face_up.clone(),
        face_up,
        moves: 0,
        recycles: 0,
        progress_this_pass: false,
        idle_passes: 0,
    };
    let p = Position {
        config: Config {},
        participants: participants(),
        flow: flow_after(&data, false),
        data,
        result: None,
    };
    Solitario.validate_position(&p).unwrap_or_else(|e| panic!("layout: {e}"));
    p
}

const EMPTY: Column<'static> = (&[], &[]);

fn cards_of(p: &Pos<Solitario>, zone: &str) -> Vec<InstanceId> {
    p.data.zones.zone(zone).unwrap().cards.clone()
}

fn card(suit: &str, rank: u8) -> Card {
    Card { suit: suit.into(), rank, colour: Colour::of_suit(suit).unwrap() }
}

#[test]
fn setup_deals_one_to_seven_with_only_the_tops_face_up() {
    let p = start(1);
    for c in 0..7 {
        let column = cards_of(&p, &format!("tableau{c}"));
        assert_eq!(column.len(), c + 1);
        for (i, card) in column.iter().enumerate() {
            assert_eq!(p.data.face_up.contains(card), i == c, "tableau{c}[{i}]");
        }
    }
    assert_eq!(p.data.zones.count("stock"), 24);
    assert_eq!(p.data.zones.count(SUPPLY), 0);
    assert_eq!(p.data.face_up.len(), 7);
    assert_eq!(p.data.known, p.data.face_up);
    assert_eq!((p.flow.phase.as_str(), p.flow.round, p.flow.turn), (PHASE, 0, 0));
    assert_eq!(p.flow.actors, BTreeMap::from([(SEAT.to_owned(), STAGE.to_owned())]));
    // The deal is random: another entropy deals another table.
    assert_ne!(start(2).data.zones, p.data.zones);
    assert_eq!(start(1).data, p.data);
}

#[test]
fn setup_rejects_other_seats() {
    for seats in [vec!["p0", "p1"], vec!["p1"], vec![]] {
        let participants = seats.iter().map(|s| (s.to_string(), Participant::active())).collect();
        let r = with_services(0, |s| Solitario.setup(&Setup { config: Config {}, participants }, s));
        assert_eq!(r.err(), Some(RuleError::illegal("invalid-participants")), "{seats:?}");
    }
    assert!(serde_json::from_value::<Config>(json!({"drawThree": true})).is_err());
    assert_eq!(serde_json::from_value::<Config>(json!({})).unwrap(), Config {});
}

#[test]
fn the_view_shows_faces_counts_and_bare_face_down_markers() {
    let p = start(3);
    let projection = Solitario.project(&p, Recipient::Seat(SEAT));
    let view = serde_json::to_value(&projection.view).unwrap();
    assert_eq!(view["stock"], json!({"count": 24}));
    assert_eq!(view["waste"], json!([]));
    assert_eq!(view["tableau"][6].as_array().unwrap().len(), 7);
    for i in 0..6 {
        assert_eq!(view["tableau"][6][i], json!({"faceDown": true}));
    }
    let top = &view["tableau"][6][6];
    assert_eq!(top.as_object().unwrap().len(), 3, "{top}");
    assert!(top["suit"].is_string() && top["rank"].is_u64() && top["colour"].is_string());
    assert_eq!(
        view["foundations"],
        json!([{"top": null, "count": 0}, {"top": null, "count": 0}, {"top": null, "count": 0}, {"top": null, "count": 0}])
    );
    let context = serde_json::to_value(&projection.context).unwrap();
    assert_eq!(context, json!({"seat": "p0", "moves": 0, "recycles": 0}));
    let spectator = Solitario.project(&p, Recipient::Spectator);
    assert_eq!(spectator.view, projection.view);
    assert_eq!(spectator.context.seat, None);
    let text = view.to_string();
    assert!(!text.contains(MAIN_DECK), "{text}");
}

#[test]
fn tableau_moves_need_descending_alternating_colours() {
    let p = layout(
        &["QH", "QS"],
        [(&["2C"], &["KS"]), (&[], &["QD", "JC"]), (&["3C"], &["JS"]), (&["4D"], &["10H"]), EMPTY, EMPTY, EMPTY],
        [&[], &[], &[], &[]],
    );
    // Same colour (QS on KS), wrong rank (JS on KS), a waste source asking for two cards.
    assert_illegal(&p, Action::move_stack(Pile::Waste, Pile::Tableau(0), 1), "does-not-fit");
    assert_illegal(&p, Action::move_stack(Pile::Tableau(2), Pile::Tableau(0), 1), "does-not-fit");
    assert_illegal(&p, Action::move_stack(Pile::Waste, Pile::Tableau(0), 2), "count-must-be-one");
    assert_illegal(&p, Action::move_stack(Pile::Tableau(1), Pile::Tableau(1), 1), "same-zone");
    assert_illegal(&p, Action::move_stack(Pile::Tableau(1), Pile::Waste, 1), "target-not-a-column");
    assert_illegal(&p, Action::move_stack(Pile::Stock, Pile::Tableau(1), 1), "cannot-move-from-stock");
    assert_illegal(&p, Action::move_stack(Pile::Tableau(1), Pile::Tableau(0), 0), "count-out-of-range");
    assert_illegal(&p, Action::move_stack(Pile::Tableau(1), Pile::Tableau(0), 3), "not-enough-cards");
    let bad = Action::MoveStack(MoveStackPayload { from: "tableau9".into(), to: "tableau0".into(), count: 1 });
    assert_illegal(&p, bad, "unknown-zone");
    // A face-down card cannot be part of the moved sequence.
    assert_illegal(&p, Action::move_stack(Pile::Tableau(0), Pile::Tableau(4), 2), "face-down-card");
    // Empty columns take kings only.
    assert_illegal(&p, Action::move_stack(Pile::Tableau(1), Pile::Tableau(4), 2), "only-kings-on-empty-columns");
    // Only the top card of the run (JC) does not fit on KS.
    assert_illegal(&p, Action::move_stack(Pile::Tableau(1), Pile::Tableau(0), 1), "does-not-fit");

    // The run QD-JC onto KS (red on black, then black on red).
    let t = apply(&p, Action::move_stack(Pile::Tableau(1), Pile::Tableau(0), 2)).unwrap();
    assert_eq!(
        t.events,
        vec![Event::CardsMoved {
            from: "tableau1".into(),
            to: "tableau0".into(),
            count: 2,
            cards: vec![card("diamonds", 12), card("clubs", 11)]
        }]
    );
    let q = commit(&p, t);
    assert_eq!(cards_of(&q, "tableau0"), ids(&["2C", "KS", "QD", "JC"]));
    assert!(cards_of(&q, "tableau1").is_empty());
    assert!(!q.data.progress_this_pass, "a move that reveals nothing is no progress");
    // 10H onto JC reveals 4D in the same transition.
    let t = apply(&q, Action::move_stack(Pile::Tableau(3), Pile::Tableau(0), 1)).unwrap();
    assert_eq!(
        t.events,
        vec![
            Event::CardsMoved {
                from: "tableau3".into(),
                to: "tableau0".into(),
                count: 1,
                cards: vec![card("hearts", 10)]
            },
            Event::CardRevealed { zone: "tableau3".into(), card: card("diamonds", 4) },
        ]
    );
    let r = commit(&q, t);
    assert!(r.data.face_up.contains(&id("4D")) && r.data.known.contains(&id("4D")));
    assert!(r.data.progress_this_pass);
    assert_eq!((r.data.moves, r.flow.turn), (2, 2));
}

#[test]
fn a_king_run_moves_to_an_empty_column_and_the_card_below_turns_up() {
    let p = layout(
        &[],
        [(&["2C", "5D"], &["KH", "QS", "JD"]), (&[], &["9C"]), EMPTY, EMPTY, EMPTY, EMPTY, EMPTY],
        [&[], &[], &[], &[]],
    );
    assert_illegal(&p, Action::move_stack(Pile::Tableau(0), Pile::Tableau(2), 2), "only-kings-on-empty-columns");
    assert_illegal(&p, Action::move_stack(Pile::Tableau(0), Pile::Tableau(2), 4), "face-down-card");
    let t = apply(&p, Action::move_stack(Pile::Tableau(0), Pile::Tableau(4), 3)).unwrap();
    assert_eq!(t.events.len(), 2);
    let q = commit(&p, t);
    assert_eq!(cards_of(&q, "tableau4"), ids(&["KH", "QS", "JD"]));
    assert_eq!(cards_of(&q, "tableau0"), ids(&["2C", "5D"]));
    assert!(q.data.face_up.contains(&id("5D")));
    assert!(!q.data.face_up.contains(&id("2C")));
    assert!(q.data.progress_this_pass);
}

#[test]
fn foundations_build_from_the_ace_by_suit() {
    let p = layout(
        &["2H", "AS"],
        [(&[], &["AH"]), (&["4C"], &["3H"]), (&[], &["2S"]), EMPTY, EMPTY, EMPTY, EMPTY],
        [&[], &[], &[], &[]],
    );
    assert_illegal(&p, Action::move_to_foundation(Pile::Tableau(1)), "not-next-on-foundation");
    assert_illegal(&p, Action::move_to_foundation(Pile::Tableau(3)), "empty-source");
    assert_illegal(&p, Action::move_to_foundation(Pile::Stock), "source-not-allowed");
    let bad = Action::MoveToFoundation(MoveToFoundationPayload { from: "foundation0".into() });
    assert_illegal(&p, bad, "source-not-allowed");
    // The ace of spades from the waste takes the first empty foundation.
    let q = play(&p, Action::move_to_foundation(Pile::Waste));
    assert_eq!(cards_of(&q, "foundation0"), ids(&["AS"]));
    // The ace of hearts takes the next empty one; 2H then finds the hearts foundation.
    let q = play(&q, Action::move_to_foundation(Pile::Tableau(0)));
    assert_eq!(cards_of(&q, "foundation1"), ids(&["AH"]));
    assert_illegal(&q, Action::move_to_foundation(Pile::Tableau(1)), "not-next-on-foundation");
    let q = play(&q, Action::move_to_foundation(Pile::Waste));
    let t = apply(&q, Action::move_to_foundation(Pile::Tableau(1))).unwrap();
    assert_eq!(t.events[1], Event::CardRevealed { zone: "tableau1".into(), card: card("clubs", 4) });
    let q = commit(&q, t);
    assert_eq!(cards_of(&q, "foundation1"), ids(&["AH", "2H", "3H"]));
    let q = play(&q, Action::move_to_foundation(Pile::Tableau(2)));
    assert_eq!(cards_of(&q, "foundation0"), ids(&["AS", "2S"]));
    // A card comes back from a foundation one at a time: 3H onto 4C.
    assert_illegal(&q, Action::move_stack(Pile::Foundation(1), Pile::Tableau(1), 2), "count-must-be-one");
    let q = play(&q, Action::move_stack(Pile::Foundation(1), Pile::Tableau(1), 1));
    assert_eq!(cards_of(&q, "tableau1"), ids(&["4C", "3H"]));
    assert_eq!(cards_of(&q, "foundation1"), ids(&["AH", "2H"]));
}

#[test]
fn draw_and_recycle_cycle_without_limit() {
    let mut p = start(5);
    let original = cards_of(&p, "stock");
    assert_illegal(&p, Action::recycle(), "stock-not-empty");
    for pass in 1..=4u32 {
        for i in 0..24 {
            let top = cards_of(&p, "stock").last().cloned().unwrap();
            let t = apply(&p, Action::draw()).unwrap();
            assert_eq!(t.events, vec![Event::CardDrawn { card: Table::new(main_deck()).card(&top).unwrap() }]);
            p = commit(&p, t);
            assert_eq!(cards_of(&p, "waste").last(), Some(&top), "draw {i}");
            assert!(p.data.face_up.contains(&top) && p.data.known.contains(&top));
        }
        assert_illegal(&p, Action::draw(), "stock-empty");
        let t = apply(&p, Action::recycle()).unwrap();
        assert_eq!(t.events, vec![Event::StockRecycled { count: 24 }]);
        p = commit(&p, t);
        // The same stock, in the same order, face down again but still known.
        assert_eq!(cards_of(&p, "stock"), original);
        assert!(original.iter().all(|c| !p.data.face_up.contains(c) && p.data.known.contains(c)));
        assert_eq!((p.data.recycles, p.flow.round), (pass, pass));
        assert_eq!(p.data.idle_passes, pass);
    }
    assert_eq!(p.data.moves, 4 * 25);
    // An empty waste cannot be recycled.
    let q = layout(&[], [EMPTY; 7], [&[], &[], &[], &[]]);
    let mut q = q;
    for _ in 0..52 {
        q = play(&q, Action::draw());
    }
    let q = play(&q, Action::recycle());
    assert_eq!(q.data.zones.count("stock"), 52);
    let empty = layout(&[], [EMPTY; 7], [&[], &[], &[], &[]]);
    let mut all_out = empty.clone();
    all_out.data.zones = all_out.data.zones.move_all("stock", "waste").unwrap();
    all_out.data.face_up.extend(cards_of(&all_out, "waste"));
    all_out.data.known = all_out.data.face_up.clone();
    Solitario.validate_position(&all_out).unwrap();
    let mut nothing = all_out.clone();
    nothing.data.zones = nothing.data.zones.move_all("waste", "tableau0").unwrap();
    // (An arrangement of a whole deck in one column is not a valid tableau; only the rule
    // under test matters here.)
    assert_eq!(apply(&nothing, Action::recycle()).err(), Some(RuleError::illegal("waste-empty")));
}

fn near_won() -> Pos<Solitario> {
    let suit_to_queen = |s: char| -> Vec<String> {
        ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q"].iter().map(|r| format!("{r}{s}")).collect()
    };
    let [c, d, h, s] = ['C', 'D', 'H', 'S'].map(suit_to_queen);
    fn refs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let (c, d, h, s) = (refs(&c), refs(&d), refs(&h), refs(&s));
    layout(&["KH"], [(&[], &["KS"]), (&[], &["KD"]), EMPTY, (&[], &["KC"]), EMPTY, EMPTY, EMPTY], [&c, &d, &h, &s])
}

#[test]
fn the_last_king_wins_with_all_52_on_the_foundations() {
    let mut p = near_won();
    assert_eq!(p.data.zones.count("stock"), 0);
    for from in [Pile::Waste, Pile::Tableau(0), Pile::Tableau(1)] {
        p = play(&p, Action::move_to_foundation(from));
        assert_eq!(p.result, None);
    }
    let t = apply(&p, Action::move_to_foundation(Pile::Tableau(3))).unwrap();
    assert_eq!(t.events.last(), Some(&Event::MatchWon {}));
    let won = commit(&p, t);
    assert_eq!(won.result, Some(MatchResult::completed(REASON_ALL_FOUNDATIONS, [(SEAT, Outcome::Win)])));
    assert!(won.flow.actors.is_empty());
    assert!(Solitario.available_actions(&won, Recipient::Seat(SEAT)).is_empty());
    assert_illegal(&won, Action::draw(), "match-finished");
    let view = serde_json::to_value(Solitario.project(&won, Recipient::Seat(SEAT)).view).unwrap();
    assert_eq!(view["foundations"][0], json!({"top": {"suit": "clubs", "rank": 13, "colour": "black"}, "count": 13}));
}

#[test]
fn giving_up_is_a_loss_with_no_winner() {
    let p = start(7);
    assert_eq!(
        with_services(0, |s| Solitario.apply(&p, "p1", &Action::give_up(), s)).err(),
        Some(RuleError::illegal("not-your-turn"))
    );
    let t = apply(&p, Action::give_up()).unwrap();
    assert_eq!(t.events, vec![Event::MatchLost { reason: REASON_GAVE_UP.into() }]);
    let q = commit(&p, t);
    assert_eq!(
        serde_json::to_value(&q.result).unwrap(),
        json!({"kind": "completed", "reasonCode": "gave-up", "participants": {"p0": {"outcome": "loss"}}})
    );
    assert!(q.flow.actors.is_empty());
    assert_eq!(q.data, p.data);
    assert_illegal(&q, Action::give_up(), "match-finished");
    assert_eq!(Solitario.bot_action(&q, SEAT, BOT_DEFAULT, &mut SplitMix64(0)), None);
}

#[test]
fn withdrawal_is_a_loss() {
    let p = start(8);
    let mut marked = p.clone();
    marked.participants.get_mut(SEAT).unwrap().status = ParticipantStatus::Withdrawn;
    let t =
        with_services(0, |s| Solitario.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: SEAT.into() }, s)).unwrap();
    assert_eq!(t.result, Some(MatchResult::completed(REASON_WITHDRAWAL, [(SEAT, Outcome::Loss)])));
    let q = commit(&marked, t);
    assert!(q.flow.actors.is_empty());
    let again = with_services(0, |s| Solitario.on_lifecycle(&q, &Lifecycle::Withdrawal { seat: SEAT.into() }, s));
    assert_eq!(again.err(), Some(RuleError::illegal("match-finished")));
    let other = with_services(0, |s| Solitario.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p1".into() }, s));
    assert_eq!(other.err(), Some(RuleError::illegal("unknown-seat")));
    let deadline = Lifecycle::DeadlineExpired { id: "x".into(), payload: json!({}) };
    let r = with_services(0, |s| Solitario.on_lifecycle(&p, &deadline, s));
    assert_eq!(r.err(), Some(RuleError::illegal("no-deadlines")));
}

#[test]
fn validate_position_catches_corruption() {
    let p = near_won();
    type Mutation = Box<dyn Fn(&mut Pos<Solitario>)>;
    let tamper_zones = |f: fn(&mut serde_json::Value)| -> Mutation {
        Box::new(move |p: &mut Pos<Solitario>| {
            let mut v = serde_json::to_value(&p.data.zones).unwrap();
            f(&mut v);
            p.data.zones = serde_json::from_value(v).unwrap();
        })
    };
    let cases: Vec<(&str, Mutation)> = vec![
        ("lost card", tamper_zones(|v| drop(v["waste"]["cards"].as_array_mut().unwrap().pop()))),
        ("duplicated card", tamper_zones(|v| v["tableau5"]["cards"] = json!(["mainDeck/0/KH"]))),
        ("created card", tamper_zones(|v| v["tableau5"]["cards"] = json!(["mainDeck/1/KH"]))),
        ("extra zone", tamper_zones(|v| v["hand"] = json!({"ordered": true, "visibility": "public", "cards": []}))),
        ("stock made public", tamper_zones(|v| v["stock"]["visibility"] = json!("public"))),
        (
            "face-down waste card",
            Box::new(|p| {
                p.data.face_up.remove(&id("KH"));
            }),
        ),
        (
            "face-down foundation card",
            Box::new(|p| {
                p.data.face_up.remove(&id("AC"));
            }),
        ),
        (
            "face-down top of a column",
            Box::new(|p| {
                p.data.face_up.remove(&id("KS"));
            }),
        ),
        (
            "face up but unknown",
            Box::new(|p| {
                p.data.known.remove(&id("KS"));
            }),
        ),
        ("foundation out of order", tamper_zones(|v| v["foundation0"]["cards"].as_array_mut().unwrap().swap(1, 2))),
        ("turn mismatch", Box::new(|p| p.flow.turn = 9)),
        ("round mismatch", Box::new(|p| p.data.recycles = 1)),
        ("wrong phase", Box::new(|p| p.flow.phase = "dealing".into())),
        ("no actor", Box::new(|p| p.flow.actors.clear())),
        ("second seat", Box::new(|p| drop(p.participants.insert("p1".into(), Participant::active())))),
        (
            "win without the cards",
            Box::new(|p| {
                p.result = Some(MatchResult::completed(REASON_ALL_FOUNDATIONS, [(SEAT, Outcome::Win)]));
                p.flow.actors.clear();
            }),
        ),
        (
            "withdrawal without withdrawing",
            Box::new(|p| {
                p.result = Some(MatchResult::completed(REASON_WITHDRAWAL, [(SEAT, Outcome::Loss)]));
                p.flow.actors.clear();
            }),
        ),
        (
            "gave up but won",
            Box::new(|p| {
                p.result = Some(MatchResult::completed(REASON_GAVE_UP, [(SEAT, Outcome::Win)]));
                p.flow.actors.clear();
            }),
        ),
        (
            "finished with an actor",
            Box::new(|p| p.result = Some(MatchResult::completed(REASON_GAVE_UP, [(SEAT, Outcome::Loss)]))),
        ),
    ];
    for (what, mutate) in cases {
        let mut q = p.clone();
        mutate(&mut q);
        assert!(Solitario.validate_position(&q).is_err(), "{what} was not caught");
    }

    // A face-up stock card, a known face-down tableau card, a card up under a face-down one,
    // a broken face-up sequence.
    let base = layout(&[], [(&["2C"], &["KS"]), EMPTY, EMPTY, EMPTY, EMPTY, EMPTY, EMPTY], [&[], &[], &[], &[]]);
    let mut q = base.clone();
    let stock_top = cards_of(&q, "stock").last().cloned().unwrap();
    q.data.face_up.insert(stock_top.clone());
    q.data.known.insert(stock_top);
    assert!(Solitario.validate_position(&q).is_err());
    let mut q = base.clone();
    q.data.known.insert(id("2C"));
    assert!(Solitario.validate_position(&q).is_err());
    let mut q = base.clone();
    q.data.face_up.insert(id("2C"));
    q.data.face_up.remove(&id("KS"));
    assert!(Solitario.validate_position(&q).is_err());
    let mut q = base.clone();
    q.data.face_up.insert(id("2C"));
    assert!(Solitario.validate_position(&q).is_err(), "2C under KS is not a sequence");

    // Active with all 52 on the foundations.
    let mut won = near_won();
    for from in [Pile::Waste, Pile::Tableau(0), Pile::Tableau(1), Pile::Tableau(3)] {
        won = play(&won, Action::move_to_foundation(from));
    }
    let mut active = won.clone();
    active.result = None;
    active.flow = flow_after(&active.data, false);
    assert!(Solitario.validate_position(&active).is_err());
}

#[test]
fn offers_are_parametrized_and_name_only_visible_sources() {
    let p =
        layout(&["QH"], [(&["2C"], &["KS"]), (&[], &["AH"]), EMPTY, EMPTY, EMPTY, EMPTY, EMPTY], [&[], &[], &[], &[]]);
    let offers = Solitario.available_actions(&p, Recipient::Seat(SEAT));
    let mut kinds = Vec::new();
    for offer in &offers {
        match offer {
            Offer::Concrete(a) => kinds.push((a.action_type().to_owned(), serde_json::to_value(a).unwrap())),
            Offer::Parametrized { action_type, constraints } => kinds.push((action_type.clone(), constraints.clone())),
        }
    }
    assert_eq!(
        kinds,
        vec![
            ("draw".to_owned(), json!({"type": "draw", "payload": {}})),
            (
                "moveStack".to_owned(),
                json!({"sources": [{"zone": "waste", "maxCount": 1}, {"zone": "tableau0", "maxCount": 1}],
                       "targets": ["tableau0", "tableau2", "tableau3", "tableau4", "tableau5", "tableau6"]})
            ),
            ("moveToFoundation".to_owned(), json!({"sources": ["tableau1"]})),
            ("giveUp".to_owned(), json!({"type": "giveUp", "payload": {}})),
        ]
    );
    assert!(Solitario.available_actions(&p, Recipient::Spectator).is_empty());
    assert!(Solitario.available_actions(&p, Recipient::Seat("p1")).is_empty());
}

fn two_decks() -> ComponentSet {
    let decl = ComponentDeclaration {
        component_id: MAIN_DECK.into(),
        definition: ComponentDefinition::Deck(poker52()),
        copies: 2,
    };
    ComponentSet::load(vec![decl], &CustomRegistry::new()).unwrap()
}

/// A random card action: a kind and zone indices (some naming no zone at all).
fn random_action() -> impl Strategy<Value = Action> {
    let zone = prop::sample::select(vec![
        "stock",
        "waste",
        "tableau0",
        "tableau1",
        "tableau2",
        "tableau3",
        "tableau4",
        "tableau5",
        "tableau6",
        "foundation0",
        "foundation1",
        "foundation2",
        "foundation3",
        "supply",
        "nowhere",
    ]);
    prop_oneof![
        3 => Just(Action::draw()),
        1 => Just(Action::recycle()),
        4 => (zone.clone(), zone.clone(), 0u8..15).prop_map(|(from, to, count)| Action::MoveStack(MoveStackPayload {
            from: from.into(),
            to: to.into(),
            count
        })),
        3 => zone.prop_map(|from| Action::MoveToFoundation(MoveToFoundationPayload { from: from.into() })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The spec's acceptance fixture: two copies of poker52 are 104 distinct instances of 52
    /// definitions, and every one stays in exactly one zone whatever moves are tried.
    #[test]
    fn two_copies_of_a_deck_keep_104_instances_in_one_zone_each(
        seed in any::<u64>(),
        actions in prop::collection::vec(random_action(), 0..200),
    ) {
        let set = two_decks();
        let instances = set.instances();
        prop_assert_eq!(instances.len(), 104);
        prop_assert_eq!(instances.iter().map(|i| &i.id).collect::<BTreeSet<_>>().len(), 104);
        prop_assert_eq!(instances.iter().map(|i| i.definition_id.as_str()).collect::<BTreeSet<_>>().len(), 52);
        let table = Table::new(&set);
        let mut entropy = SplitMix64(seed);
        let mut data = table.deal(&mut Randomness::live(&mut entropy)).unwrap();
        prop_assert_eq!(data.zones.count("stock"), 104 - 28);
        prop_assert_eq!(check_conservation(&data.zones, instances), Ok(()));
        let mut accepted = 0;
        for action in &actions {
            let before = data.clone();
            match table.apply(&data, action) {
                Ok(step) => {
                    prop_assert_eq!(check_conservation(&step.data.zones, instances), Ok(()));
                    let pos = Position {
                        config: Config {},
                        participants: participants(),
                        flow: flow_after(&step.data, false),
                        data: step.data.clone(),
                        result: None,
                    };
                    if let Err(e) = validate::cards(&pos, &set) {
                        return Err(TestCaseError::fail(format!("{e} after {action:?}")));
                    }
                    data = step.data;
                    accepted += 1;
                }
                Err(RuleError::Illegal { .. }) => prop_assert_eq!(&data, &before),
                Err(e) => return Err(TestCaseError::fail(format!("{action:?}: {e}"))),
            }
            // Let the legal moves play too, so the piles get deep.
            if let Some(legal) = table.legal_moves(&data).first() {
                data = table.apply(&data, legal).unwrap().data;
                prop_assert_eq!(check_conservation(&data.zones, instances), Ok(()));
            }
        }
        prop_assert!(accepted <= actions.len());
    }
}
