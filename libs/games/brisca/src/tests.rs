//! Unit tests of the rules over crafted deals: the deal, tricks, the 60–60 draw, the trump
//! exchange variants, `mustFollow`, withdrawal and privacy of the view.

use std::collections::BTreeMap;

use juegoland_sdk::components::SUPPLY;
use juegoland_sdk::{
    Game, InstanceId, Lifecycle, Participant, ParticipantStatus, Pos, Position, Randomness, Recipient, RuleError,
    Services, Setup, SplitMix64, Visibility, Zone, Zones, seat_ids,
};

use super::*;
use crate::model::Suit::*;

fn participants(n: usize) -> BTreeMap<String, Participant> {
    seat_ids(n).into_iter().map(|s| (s, Participant::active())).collect()
}

fn id(card: &str) -> InstanceId {
    InstanceId::card(MAIN_DECK, 0, card)
}

fn f(suit: Suit, rank: u8) -> Face {
    Face { suit, rank }
}

fn start(config: Config, seed: u64) -> Pos<Brisca> {
    let mut e = SplitMix64(seed);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let n = usize::from(config.players);
    let t = Brisca.setup(&Setup { config, participants: participants(n) }, &mut s).unwrap();
    Position { config, participants: participants(n), data: t.data, flow: t.flow, result: t.result }
}

/// A crafted position: the named cards in their zones, every other card in `rest`.
struct Craft<'a> {
    hands: &'a [&'a [&'a str]],
    trump: Option<&'a str>,
    stock: &'a [&'a str],
    won: [&'a [&'a str]; 2],
    rest: &'a str,
    trump_suit: Suit,
    leader: &'a str,
    last_winner: Option<&'a str>,
    tricks: u32,
}

fn craft(config: Config, c: Craft<'_>) -> Pos<Brisca> {
    let n = usize::from(config.players);
    let mut zones = Zones::setup(main_deck().instances());
    let mut specs = vec![
        (table::STOCK.to_owned(), None, Visibility::Hidden),
        (table::TRUMP.to_owned(), None, Visibility::Public),
        (table::TABLE.to_owned(), None, Visibility::Public),
        (won_zone(0), None, Visibility::Public),
        (won_zone(1), None, Visibility::Public),
    ];
    specs.extend(seat_ids(n).into_iter().map(|s| (hand_zone(&s), Some(s), Visibility::Owner)));
    for (z, owner, v) in specs {
        let ordered = owner.is_none();
        zones = zones.with_zone(&z, Zone::new(owner, ordered, v)).unwrap();
    }
    let mut put = |zone: &str, cards: &[&str]| {
        let ids: Vec<InstanceId> = cards.iter().map(|c| id(c)).collect();
        zones = zones.move_cards(SUPPLY, zone, &ids).unwrap();
    };
    for (i, hand) in c.hands.iter().enumerate() {
        put(&hand_zone(&format!("p{i}")), hand);
    }
    put(table::STOCK, c.stock);
    if let Some(t) = c.trump {
        put(table::TRUMP, &[t]);
    }
    put(&won_zone(0), c.won[0]);
    put(&won_zone(1), c.won[1]);
    zones = zones.move_all(SUPPLY, c.rest).unwrap();
    let last_trick = c.last_winner.map(|w| LastTrick { winner: w.into(), seats: vec![], cards: vec![] });
    let data =
        Data { zones, table: vec![], leader: c.leader.into(), trump_suit: c.trump_suit, tricks: c.tricks, last_trick };
    let flow = juegoland_sdk::Flow::single(PHASE, c.tricks, 0, c.leader, STAGE_LEAD);
    Position { config, participants: participants(n), data, flow, result: None }
}

fn apply(p: &Pos<Brisca>, seat: &str, action: Action) -> Result<(Pos<Brisca>, Vec<Event>), RuleError> {
    let mut e = SplitMix64(0);
    let mut s = Services::new(0, Randomness::live(&mut e));
    let t = Brisca.apply(p, seat, &action, &mut s)?;
    let next = Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() };
    Brisca.validate_position(&next).unwrap_or_else(|e| panic!("{e}"));
    Ok((next, t.events))
}

#[test]
fn the_deal_gives_three_cards_each_and_turns_the_trump_under_the_stock() {
    for (players, stock) in [(2u8, 33u32), (4, 27)] {
        let p = start(Config { players, ..Config::default() }, 7);
        Brisca.validate_position(&p).unwrap();
        let v = Brisca.project(&p, Recipient::Seat("p0")).view;
        assert_eq!(v.hand.len(), 3);
        assert_eq!(v.stock, stock);
        assert_eq!(v.trump.map(|t| t.suit), Some(v.trump_suit));
        assert_eq!(v.hands.len(), usize::from(players) - 1);
        assert!(v.hands.values().all(|n| *n == 3));
        assert!(!v.hands.contains_key("p0"));
        assert_eq!(actor(&p), Some("p0"));
    }
}

#[test]
fn invalid_configs_are_typed_refusals() {
    let mut e = SplitMix64(0);
    let mut s = Services::new(0, Randomness::live(&mut e));
    for config in [Config { players: 3, ..Config::default() }, Config { two_takes_low: true, ..Config::default() }] {
        let err = Brisca.setup(&Setup { config, participants: participants(usize::from(config.players)) }, &mut s);
        assert!(
            matches!(err, Err(RuleError::Illegal { ref reason })
                if reason.starts_with("config.players: 3 is not 2 or 4") || reason.starts_with("config.twoTakesLow: ")),
            "{err:?}"
        );
    }
    assert_eq!(Config { players: 3, ..Config::default() }.check(), Err(ConfigError::Players(3)));
    let wrong_seats = Brisca.setup(&Setup { config: Config::default(), participants: participants(4) }, &mut s);
    assert_eq!(
        wrong_seats.unwrap_err(),
        RuleError::illegal("config.players: 2 does not match the 4 seats given; give \"players\": 4 for 4 seats")
    );
}

/// Side 0 has the four ases and the four reyes (60 points); the last trick is 2O and 4O.
fn last_trick_at_60_60() -> Pos<Brisca> {
    craft(
        Config::default(),
        Craft {
            hands: &[&["2O"], &["4O"]],
            trump: None,
            stock: &[],
            won: [&["1O", "1C", "1E", "1B", "12O", "12C", "12E", "12B"], &[]],
            rest: &won_zone(1),
            trump_suit: Bastos,
            leader: "p0",
            last_winner: Some("p1"),
            tricks: 19,
        },
    )
}

#[test]
fn win_draw_loss_a_60_60_hand_is_a_draw_for_everyone() {
    let p = last_trick_at_60_60();
    Brisca.validate_position(&p).unwrap();
    let (p, _) = apply(&p, "p0", Action::play(f(Oros, 2))).unwrap();
    let (p, events) = apply(&p, "p1", Action::play(f(Oros, 4))).unwrap();
    assert!(matches!(&events[1], Event::TrickWon { seat, .. } if seat == "p1"));
    let json = serde_json::to_value(&p.result).unwrap();
    assert_eq!(json["reasonCode"], REASON_POINTS);
    for seat in ["p0", "p1"] {
        assert_eq!(json["participants"][seat]["outcome"], "draw");
        assert_eq!(json["participants"][seat]["score"], 60);
    }
    let v = Brisca.project(&p, Recipient::Seat("p0")).view;
    assert_eq!(v.points, BTreeMap::from([("p0".into(), 60), ("p1".into(), 60)]), "every side's points at the end");
}

#[test]
fn win_draw_loss_more_than_60_points_wins_and_the_rival_loses() {
    // As `last_trick_at_60_60`, but p0 holds the tres: it takes the trick and ten points.
    let mut p = last_trick_at_60_60();
    p.data.zones = p.data.zones.move_cards(&hand_zone("p0"), &won_zone(1), &[id("2O")]).unwrap();
    p.data.zones = p.data.zones.move_cards(&won_zone(1), &hand_zone("p0"), &[id("3O")]).unwrap();
    let (p, _) = apply(&p, "p0", Action::play(f(Oros, 3))).unwrap();
    let (p, _) = apply(&p, "p1", Action::play(f(Oros, 4))).unwrap();
    let json = serde_json::to_value(&p.result).unwrap();
    assert_eq!(json["participants"]["p0"]["outcome"], "win");
    assert_eq!(json["participants"]["p1"]["outcome"], "loss");
    assert_eq!(json["participants"]["p0"]["score"], 70);
    assert_eq!(json["participants"]["p1"]["score"], 50);
}

fn exchange_position(
    config: Config,
    held: &str,
    shown: &str,
    last_winner: Option<&str>,
    stock: &[&str],
) -> Pos<Brisca> {
    craft(
        config,
        Craft {
            hands: &[&[held, "4O", "5O"], &["4C", "5C", "6C"]],
            trump: Some(shown),
            stock,
            won: [&[], &[]],
            rest: &won_zone(1),
            trump_suit: Bastos,
            leader: "p0",
            last_winner,
            tricks: 0,
        },
    )
}

#[test]
fn trump_exchange_variants() {
    let seven = Config { trump_exchange: TrumpExchange::Seven, ..Config::default() };
    let low = Config { two_takes_low: true, ..seven };
    // The positions are crafted: fix the won cards and tricks so the invariants hold.
    let fix = |mut p: Pos<Brisca>| {
        let won = p.data.zones.count(&won_zone(1)) as u32;
        p.data.zones = p.data.zones.move_top(&won_zone(1), table::STOCK, (won % 2) as usize).unwrap();
        p.data.tricks = p.data.zones.count(&won_zone(1)) as u32 / 2;
        p.flow.round = p.data.tricks;
        p
    };
    let p = fix(exchange_position(seven, "7B", "1B", Some("p0"), &["2C"]));
    Brisca.validate_position(&p).unwrap();
    assert!(Brisca.available_actions(&p, Recipient::Seat("p0")).contains(&Offer::Concrete(Action::exchange_trump())));
    let (q, events) = apply(&p, "p0", Action::exchange_trump()).unwrap();
    assert_eq!(events, [Event::TrumpExchanged { seat: "p0".into(), gave: f(Bastos, 7), took: f(Bastos, 1) }]);
    assert_eq!(Brisca.project(&q, Recipient::Seat("p1")).view.trump, Some(f(Bastos, 7)));
    assert!(Brisca.project(&q, Recipient::Seat("p0")).view.hand.contains(&f(Bastos, 1)));
    let to_p1 = Brisca.project_event(&p, &q, &events[0], Recipient::Seat("p1"));
    assert_eq!(
        to_p1,
        [VisibleEvent::TrumpExchanged(TrumpExchanged { seat: "p0".into(), card: f(Bastos, 7), took: None })]
    );

    let refused = |p: &Pos<Brisca>| apply(p, "p0", Action::exchange_trump()).unwrap_err();
    // No exchange under `none`, before any trick is won, or with no face-down card left.
    assert_eq!(
        refused(&fix(exchange_position(Config::default(), "7B", "1B", Some("p0"), &["2C"]))),
        RuleError::illegal("no-exchange")
    );
    assert_eq!(refused(&fix(exchange_position(seven, "7B", "1B", None, &["2C"]))), RuleError::illegal("no-exchange"));
    let mut empty = fix(exchange_position(seven, "7B", "1B", Some("p0"), &[]));
    empty.data.zones = empty.data.zones.move_all(table::STOCK, &won_zone(1)).unwrap();
    empty.data.tricks = empty.data.zones.count(&won_zone(1)) as u32 / 2;
    empty.flow.round = empty.data.tricks;
    if empty.data.zones.count(&won_zone(1)) % 2 == 1 {
        empty.data.zones = empty.data.zones.move_top(&won_zone(1), &won_zone(0), 1).unwrap();
    }
    assert_eq!(refused(&empty), RuleError::illegal("no-exchange"));
    // The 2 takes a face-up 7 or lower only with twoTakesLow.
    assert_eq!(
        refused(&fix(exchange_position(seven, "2B", "6B", Some("p0"), &["2C"]))),
        RuleError::illegal("no-exchange")
    );
    let (q, _) =
        apply(&fix(exchange_position(low, "2B", "6B", Some("p0"), &["2C"])), "p0", Action::exchange_trump()).unwrap();
    assert_eq!(Brisca.project(&q, Recipient::Seat("p1")).view.trump, Some(f(Bastos, 2)));
    assert_eq!(
        refused(&fix(exchange_position(low, "2B", "12B", Some("p0"), &["2C"]))),
        RuleError::illegal("no-exchange")
    );
}

#[test]
fn must_follow_suit_else_trump_if_able() {
    let hands: [&[&str]; 2] = [&["1O", "4C", "5C"], &["2O", "3C", "6B"]];
    let p = |config: Config, hands: [&[&str]; 2]| {
        let mut p = craft(
            config,
            Craft {
                hands: &hands,
                trump: Some("7B"),
                stock: &["2C", "7C"],
                won: [&[], &[]],
                rest: table::STOCK,
                trump_suit: Bastos,
                leader: "p0",
                last_winner: None,
                tricks: 0,
            },
        );
        // The crafted stock holds every other card; no trick is won yet.
        p.flow.round = 0;
        p
    };
    let strict = Config { must_follow: true, ..Config::default() };
    let (q, _) = apply(&p(strict, hands), "p0", Action::play(f(Oros, 1))).unwrap();
    assert_eq!(apply(&q, "p1", Action::play(f(Copas, 3))).unwrap_err(), RuleError::illegal("must-follow"));
    assert_eq!(Brisca.available_actions(&q, Recipient::Seat("p1")), [Offer::Concrete(Action::play(f(Oros, 2)))]);
    // Without a card of the suit led, a trump is due.
    let (q, _) = apply(&p(strict, hands), "p0", Action::play(f(Copas, 4))).unwrap();
    assert_eq!(Brisca.available_actions(&q, Recipient::Seat("p1")), [Offer::Concrete(Action::play(f(Copas, 3)))]);
    let (q, _) =
        apply(&p(strict, [&["1O", "4E", "5C"], &["2O", "3C", "6B"]]), "p0", Action::play(f(Espadas, 4))).unwrap();
    assert_eq!(Brisca.available_actions(&q, Recipient::Seat("p1")), [Offer::Concrete(Action::play(f(Bastos, 6)))]);
    // The basic variant obliges nothing.
    let (q, _) = apply(&p(Config::default(), hands), "p0", Action::play(f(Oros, 1))).unwrap();
    assert_eq!(Brisca.available_actions(&q, Recipient::Seat("p1")).len(), 3);
    apply(&q, "p1", Action::play(f(Copas, 3))).unwrap();
    assert_eq!(apply(&q, "p1", Action::play(f(Espadas, 3))).unwrap_err(), RuleError::illegal("not-in-hand"));
}

#[test]
fn a_private_draw_shows_its_face_only_to_the_drawer() {
    let p = start(Config::default(), 3);
    let hand0 = Brisca.project(&p, Recipient::Seat("p0")).view.hand;
    let (p1, _) = apply(&p, "p0", Action::play(hand0[0])).unwrap();
    let hand1 = Brisca.project(&p1, Recipient::Seat("p1")).view.hand;
    let (p2, events) = apply(&p1, "p1", Action::play(hand1[0])).unwrap();
    let drawn: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::CardDrawn { .. })).collect();
    assert_eq!(drawn.len(), 2);
    for e in drawn {
        let Event::CardDrawn { seat, card } = e else { unreachable!() };
        for recipient in ["p0", "p1"] {
            let seen = Brisca.project_event(&p1, &p2, e, Recipient::Seat(recipient));
            let expected = (recipient == seat).then_some(*card);
            assert_eq!(seen, [VisibleEvent::CardDrawn(CardDrawn { seat: seat.clone(), card: expected })]);
        }
    }
    // Each side sees only its own points while the match runs.
    assert_eq!(Brisca.project(&p2, Recipient::Seat("p1")).view.points.len(), 1);
    assert!(Brisca.project(&p2, Recipient::Spectator).view.points.is_empty());
}

#[test]
fn withdrawal_in_a_turn_the_leaver_or_its_team_loses() {
    let withdraw = |config: Config, seat: &str| {
        let mut p = start(config, 1);
        p.participants.get_mut(seat).unwrap().status = ParticipantStatus::Withdrawn;
        let mut e = SplitMix64(0);
        let mut s = Services::new(0, Randomness::live(&mut e));
        let t = Brisca.on_lifecycle(&p, &Lifecycle::Withdrawal { seat: seat.into() }, &mut s).unwrap();
        serde_json::to_value(&t.result).unwrap()
    };
    let two = withdraw(Config::default(), "p1");
    assert_eq!(
        (two["participants"]["p1"]["outcome"].as_str(), two["participants"]["p0"]["outcome"].as_str()),
        (Some("loss"), Some("win"))
    );
    let four = withdraw(Config { players: 4, ..Config::default() }, "p2");
    assert_eq!(four["reasonCode"], REASON_WITHDRAWAL);
    for (seat, outcome, team) in
        [("p0", "loss", "team0"), ("p2", "loss", "team0"), ("p1", "win", "team1"), ("p3", "win", "team1")]
    {
        assert_eq!(four["participants"][seat]["outcome"], outcome, "{seat}");
        assert_eq!(four["participants"][seat]["team"], team, "{seat}");
    }
}

#[test]
fn a_partner_does_not_see_your_hand() {
    let p = start(Config { players: 4, ..Config::default() }, 5);
    let t = table(&p.config);
    let v = Brisca.project(&p, Recipient::Seat("p2")).view;
    let theirs = t.hand(&p.data, "p0");
    assert!(theirs.iter().all(|c| !v.hand.contains(c)));
    assert_eq!(v.hands["p0"], 3);
    let text = serde_json::to_string(&v).unwrap();
    for c in theirs {
        let face = serde_json::to_string(&c).unwrap();
        assert!(!text.contains(&face) || v.trump == Some(c) || v.hand.contains(&c), "{face} leaked to the partner");
    }
    assert_eq!(Brisca.project(&p, Recipient::Seat("p2")).context.partner.as_deref(), Some("p0"));
}

/// A two-player hand where p0 has led `lead` (from `[lead, 5E, 6E]`) and the bot at p1
/// holds `hand`; the trump is bastos (the caballo face up). Returns the bot's card.
fn bot_follows(lead: &str, hand: [&str; 3]) -> Action {
    let p = craft(
        Config::default(),
        Craft {
            hands: &[&[lead, "5E", "6E"], &hand],
            trump: Some("11B"),
            stock: &[],
            won: [&[], &[]],
            rest: table::STOCK,
            trump_suit: Bastos,
            leader: "p0",
            last_winner: None,
            tricks: 0,
        },
    );
    let lead = face(&id(lead)).unwrap();
    let (p, _) = apply(&p, "p0", Action::play(lead)).unwrap();
    Brisca.bot_action(&p, "p1", BOT_DEFAULT, &mut SplitMix64(0)).unwrap()
}

#[test]
fn the_bot_wins_tricks_cheaply_keeps_trumps_and_gives_no_points_to_the_rival() {
    // Wins cheaply: the tres takes the rey, the as stays home, the trump is not spent.
    assert_eq!(bot_follows("12O", ["1O", "3O", "2B"]), Action::play(f(Oros, 3)));
    assert_eq!(bot_follows("4C", ["2B", "5O", "7C"]), Action::play(f(Copas, 7)));
    // Keeps trumps: no trump on a trick worth nothing, the cheapest card instead.
    assert_eq!(bot_follows("4C", ["2B", "5O", "6O"]), Action::play(f(Oros, 5)));
    // Gives no points away: unable to win the as, it throws a blank, not its tres.
    assert_eq!(bot_follows("1C", ["3O", "12O", "4O"]), Action::play(f(Oros, 4)));
    // A rich trick is worth its lowest trump.
    assert_eq!(bot_follows("1C", ["2B", "3O", "4O"]), Action::play(f(Bastos, 2)));
    // Leading, it keeps its trumps and its points.
    let p = craft(
        Config::default(),
        Craft {
            hands: &[&["1O", "2B", "4C"], &["5E", "6E", "7E"]],
            trump: Some("11B"),
            stock: &[],
            won: [&[], &[]],
            rest: table::STOCK,
            trump_suit: Bastos,
            leader: "p0",
            last_winner: None,
            tricks: 0,
        },
    );
    assert_eq!(Brisca.bot_action(&p, "p0", BOT_DEFAULT, &mut SplitMix64(0)), Some(Action::play(f(Copas, 4))));
    assert_eq!(Brisca.bot_action(&p, "p1", BOT_DEFAULT, &mut SplitMix64(0)), None, "only the actor moves");
}

fn face(id: &InstanceId) -> Option<Face> {
    crate::cards::face(id)
}
