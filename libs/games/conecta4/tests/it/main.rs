//! Integration tests of Conecta 4 through its public API: properties of random play, the
//! bot, the erased (JSON-level) form with its generated schemas, and the turn clock.

mod clock;

use std::collections::BTreeMap;

use juegoland_conecta4::{Action, BOT_DEFAULT, Conecta4, Config, Disc, STAGE};
use juegoland_sdk::{
    EntropySource, Game, Lifecycle, Offer, Participant, Pos, Position, Randomness, Recipient, RuleError, Services,
    Setup, SplitMix64, Trans, erase,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn with_services<T>(f: impl FnOnce(&mut Services<'_>) -> T) -> T {
    let mut entropy = SplitMix64(0);
    let mut services = Services::new(0, Randomness::live(&mut entropy));
    f(&mut services)
}

fn participants() -> BTreeMap<String, Participant> {
    [("p0".to_owned(), Participant::active()), ("p1".to_owned(), Participant::active())].into()
}

fn start(config: Config) -> Pos<Conecta4> {
    let t = with_services(|s| Conecta4.setup(&Setup { config, participants: participants() }, s)).unwrap();
    Position { config, participants: participants(), data: t.data, flow: t.flow, result: t.result }
}

fn commit(p: &Pos<Conecta4>, t: Trans<Conecta4>) -> Pos<Conecta4> {
    Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() }
}

/// The one enabled actor of an active position.
fn actor(p: &Pos<Conecta4>) -> String {
    assert_eq!(p.flow.actors.len(), 1, "exactly one actor while active: {:?}", p.flow);
    p.flow.actors.keys().next().unwrap().clone()
}

fn offers(p: &Pos<Conecta4>, seat: &str) -> Vec<Action> {
    Conecta4
        .available_actions(p, Recipient::Seat(seat))
        .into_iter()
        .map(|o| match o {
            Offer::Concrete(a) => a,
            Offer::Parametrized { .. } => panic!("conecta4 offers only concrete drops"),
        })
        .collect()
}

fn drop_by(p: &Pos<Conecta4>, seat: &str, action: Action) -> Result<Pos<Conecta4>, RuleError> {
    Ok(commit(p, with_services(|s| Conecta4.apply(p, seat, &action, s))?))
}

/// Plays the offer picked by each choice (modulo the number of offers) until the choices or
/// the match run out.
fn play_choices(config: Config, choices: &[usize]) -> Pos<Conecta4> {
    let mut p = start(config);
    for choice in choices {
        if p.result.is_some() {
            break;
        }
        let seat = actor(&p);
        let offered = offers(&p, &seat);
        p = drop_by(&p, &seat, offered[choice % offered.len()]).unwrap();
    }
    p
}

fn config_strategy() -> impl Strategy<Value = Config> {
    prop_oneof![
        Just(Config::default()),
        (4u8..=10, 4u8..=10)
            .prop_flat_map(|(rows, columns)| (Just(rows), Just(columns), 3u8..=rows.min(columns)))
            .prop_map(|(rows, columns, connect)| Config { rows, columns, connect, clock: None }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_legal_play_keeps_every_invariant(
        config in config_strategy(),
        choices in prop::collection::vec(any::<usize>(), 0..110),
    ) {
        let mut p = start(config);
        Conecta4.validate_position(&p).unwrap();
        for choice in choices {
            if p.result.is_some() {
                break;
            }
            let seat = actor(&p);
            let other = Disc::from_seat(&seat).unwrap().other().seat();
            prop_assert!(offers(&p, other).is_empty());
            prop_assert!(Conecta4.available_actions(&p, Recipient::Spectator).is_empty());
            let offered = offers(&p, &seat);
            prop_assert!(!offered.is_empty());
            let t = with_services(|s| Conecta4.apply(&p, &seat, &offered[choice % offered.len()], s)).unwrap();
            prop_assert_eq!(t.events.len(), 1);
            let next = commit(&p, t);
            if let Err(e) = Conecta4.validate_position(&next) {
                return Err(TestCaseError::fail(format!("{e} after {:?}", next.data)));
            }
            prop_assert_eq!(next.flow.turn, p.flow.turn + 1);
            prop_assert!(next.flow.round >= p.flow.round);
            prop_assert_eq!(next.flow.actors.is_empty(), next.result.is_some());
            p = next;
        }
        if p.result.is_some() {
            prop_assert!(offers(&p, "p0").is_empty() && offers(&p, "p1").is_empty());
        }
    }

    #[test]
    fn a_random_action_is_legal_exactly_when_offered(
        config in config_strategy(),
        choices in prop::collection::vec(any::<usize>(), 0..110),
        seat in prop::sample::select(vec!["p0", "p1", "p2", "", "P0"]),
        column in any::<u8>(),
    ) {
        let p = play_choices(config, &choices);
        let before = p.clone();
        let action = Action::drop(column);
        let offered = offers(&p, seat).contains(&action);
        match with_services(|s| Conecta4.apply(&p, seat, &action, s)) {
            Ok(t) => {
                prop_assert!(offered, "accepted an action that was not offered");
                Conecta4.validate_position(&commit(&p, t)).unwrap();
            }
            Err(RuleError::Illegal { .. }) => prop_assert!(!offered, "rejected an offered action"),
            Err(e) => return Err(TestCaseError::fail(format!("not an illegal-action rejection: {e}"))),
        }
        prop_assert_eq!(&p, &before);
        // Withdrawal is accepted exactly while the match is active.
        let mut marked = p.clone();
        if let Some(x) = marked.participants.get_mut("p1") {
            x.status = juegoland_sdk::ParticipantStatus::Withdrawn;
        }
        let withdrawal = Lifecycle::Withdrawal { seat: "p1".into() };
        match with_services(|s| Conecta4.on_lifecycle(&marked, &withdrawal, s)) {
            Ok(t) => {
                prop_assert!(p.result.is_none());
                Conecta4.validate_position(&commit(&marked, t)).unwrap();
            }
            Err(e) => {
                prop_assert!(p.result.is_some());
                prop_assert_eq!(e, RuleError::illegal("match-finished"));
            }
        }
    }
}

proptest! {
    // The bot searches several plies; keep the case count modest for debug builds.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_bot_always_offers_a_legal_move(
        config in config_strategy(),
        choices in prop::collection::vec(any::<usize>(), 0..60),
        seed in any::<u64>(),
    ) {
        let p = play_choices(config, &choices);
        for seat in ["p0", "p1"] {
            let choice = Conecta4.bot_action(&p, seat, BOT_DEFAULT, &mut SplitMix64(seed));
            let offered = offers(&p, seat);
            match choice {
                Some(a) => prop_assert!(offered.contains(&a), "{a:?} not in {offered:?}"),
                None => prop_assert!(offered.is_empty()),
            }
        }
    }
}

fn play(config: Config, columns: &[u8]) -> Pos<Conecta4> {
    let mut p = start(config);
    for &c in columns {
        let seat = actor(&p);
        p = drop_by(&p, &seat, Action::drop(c)).unwrap();
    }
    p
}

fn bot(p: &Pos<Conecta4>, seed: u64) -> Option<Action> {
    Conecta4.bot_action(p, &actor(p), BOT_DEFAULT, &mut SplitMix64(seed))
}

#[test]
fn the_bot_takes_an_immediate_win() {
    // p0 to move with three on the bottom row; p1 would also win at (1,3) later.
    let p = play(Config::default(), &[0, 0, 1, 1, 2, 2]);
    // p1 to move with three stacked in column 5.
    let q = play(Config::default(), &[0, 5, 1, 5, 0, 5, 6]);
    for seed in 0..8 {
        assert_eq!(bot(&p, seed), Some(Action::drop(3)));
        assert_eq!(bot(&q, seed), Some(Action::drop(5)));
    }
}

#[test]
fn the_bot_blocks_an_immediate_loss() {
    // p0 threatens (0,3) on the bottom row; p1 must block.
    let p = play(Config::default(), &[0, 6, 1, 6, 2]);
    // p1 threatens the top of column 4; p0 must block.
    let q = play(Config::default(), &[0, 4, 6, 4, 0, 4]);
    // p0 threatens the rising diagonal at (3,3).
    let r = play(Config::default(), &[0, 1, 1, 2, 2, 3, 2, 3, 6, 3]);
    for seed in 0..8 {
        assert_eq!(bot(&p, seed), Some(Action::drop(3)));
        assert_eq!(bot(&q, seed), Some(Action::drop(4)));
        assert_eq!(bot(&r, seed), Some(Action::drop(3)));
    }
}

#[test]
fn the_bot_is_deterministic_given_its_entropy() {
    let p = play(Config::default(), &[3, 3, 2]);
    for seed in 0..4 {
        assert_eq!(bot(&p, seed), bot(&p, seed));
    }
    // The first move is symmetric only around the centre, which the bot prefers.
    assert_eq!(bot(&start(Config::default()), 9), Some(Action::drop(3)));
}

fn random_move(p: &Pos<Conecta4>, entropy: &mut SplitMix64) -> Action {
    let offered = offers(p, &actor(p));
    offered[(entropy.next_u64() % offered.len() as u64) as usize]
}

#[test]
fn the_bot_beats_a_random_player_every_time() {
    let mut wins = 0;
    for game in 0..20u64 {
        let bot_seat = if game % 2 == 0 { "p0" } else { "p1" };
        let mut rng = SplitMix64(1000 + game);
        let mut p = start(Config::default());
        while p.result.is_none() {
            let seat = actor(&p);
            let action = if seat == bot_seat {
                Conecta4.bot_action(&p, &seat, BOT_DEFAULT, &mut rng).unwrap()
            } else {
                random_move(&p, &mut rng)
            };
            p = drop_by(&p, &seat, action).unwrap();
            Conecta4.validate_position(&p).unwrap();
        }
        let result = serde_json::to_value(&p.result).unwrap();
        if result["participants"][bot_seat]["outcome"] == "win" {
            wins += 1;
        }
    }
    assert_eq!(wins, 20);
}

#[test]
fn the_bot_plays_other_board_sizes() {
    for config in [
        Config { rows: 10, columns: 10, connect: 5, clock: None },
        Config { rows: 4, columns: 4, connect: 3, clock: None },
    ] {
        let mut rng = SplitMix64(7);
        let mut p = start(config);
        while p.result.is_none() {
            let seat = actor(&p);
            let action = Conecta4.bot_action(&p, &seat, BOT_DEFAULT, &mut rng).unwrap();
            p = drop_by(&p, &seat, action).unwrap();
            Conecta4.validate_position(&p).unwrap();
        }
    }
}

fn assert_valid(schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema).expect("a generated schema compiles");
    let errors: Vec<String> = validator.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{instance} does not match its schema: {errors:?}");
}

fn assert_invalid(schema: &Value, instance: &Value) {
    assert!(!jsonschema::is_valid(schema, instance), "{instance} should not match its schema");
}

#[test]
fn the_erased_form_round_trips_and_matches_its_schemas() {
    let game = erase(Conecta4);
    let d = game.descriptor();
    assert_eq!(d.id, "conecta4");
    let schemas = game.schemas().clone();
    let payload_schema = d.action("drop").unwrap().payload_schema.clone();

    assert_eq!(game.decode_config(&json!({})).unwrap(), json!({"rows": 6, "columns": 7, "connect": 4}));
    assert_valid(&schemas.config, &json!({}));
    assert_invalid(&schemas.config, &json!({"rows": 11}));
    assert_invalid(&schemas.config, &json!({"rows": 6, "width": 7}));

    let mut e = SplitMix64(3);
    let mut services = Services::new(0, Randomness::live(&mut e));
    let mut position = game.setup(&json!({}), &participants(), &mut services).unwrap().next;
    assert!(matches!(game.setup(&json!({"rows": 3}), &participants(), &mut services), Err(RuleError::Illegal { .. })));
    // Play a whole game through the erased interface: the bot against the first offer.
    let mut turn = 0;
    loop {
        game.validate_position(&position).unwrap();
        let json = game.encode_position(&position).unwrap();
        assert_valid(&schemas.config, &json.config.to_value());
        assert_valid(&schemas.data, &json.data.to_value());
        let decoded = game.decode_position(&json).unwrap();
        assert_eq!(game.encode_position(&decoded).unwrap(), json);
        let round_tripped: juegoland_sdk::JsonPosition =
            serde_json::from_value(serde_json::to_value(&json).unwrap()).unwrap();
        assert_eq!(round_tripped, json);

        for recipient in [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator] {
            let projection = game.project(&position, recipient).unwrap();
            assert_valid(&schemas.view, &projection.view.to_value());
            assert_valid(&schemas.context, &projection.context.to_value());
        }
        if json.result.is_some() {
            break;
        }
        let seat = json.flow.actors.keys().next().unwrap().clone();
        let offers = game.available_actions(&position, Recipient::Seat(&seat)).unwrap();
        assert!(!offers.is_empty());
        for offer in &offers {
            assert_eq!(offer.action_type, "drop");
            assert_valid(&payload_schema, &offer.payload.as_ref().unwrap().to_value());
        }
        let (action_type, payload) = if turn % 2 == 0 {
            game.bot_action(&position, &seat, BOT_DEFAULT, &mut SplitMix64(turn)).unwrap()
        } else {
            (offers[0].action_type.clone(), offers[0].payload.as_ref().unwrap().to_value())
        };
        let action = game.decode_action(&action_type, &payload).unwrap();
        let mut e = SplitMix64(0);
        let mut services = Services::new(0, Randomness::live(&mut e));
        let t = game.apply(&position, &seat, &action, &mut services).unwrap();
        for event in game.encode_events(&t.events).unwrap() {
            assert_valid(&schemas.event, &event);
        }
        let events = game.decode_events(&game.encode_events(&t.events).unwrap()).unwrap();
        for recipient in [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator] {
            let visible = game.project_events(&position, &t.next, &events, recipient).unwrap();
            assert_eq!(visible.len(), 1);
            assert_eq!(visible[0].event_type, "disc.dropped");
            assert_valid(
                &schemas.visible_event,
                &json!({"type": visible[0].event_type, "data": visible[0].data.to_value()}),
            );
        }
        position = t.next;
        turn += 1;
    }
    let result = game.project(&position, Recipient::Spectator).unwrap().result.unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["kind"], "completed");
    assert_eq!(result["participants"]["p0"]["outcome"], "win", "the bot moved first and beat the first-offer player");

    assert_invalid(&payload_schema, &json!({"column": 10}));
    assert_invalid(&payload_schema, &json!({"column": 1, "row": 0}));
    assert!(game.decode_action("drop", &json!({"column": 1, "extra": true})).is_err());
    assert!(game.decode_action("pop", &json!({"column": 1})).is_err());
    assert!(
        game.decode_position(&juegoland_sdk::JsonPosition {
            data: (&json!({"grid": []})).into(),
            ..game.encode_position(&position).unwrap()
        })
        .is_err()
    );
}

#[test]
fn erased_withdrawal_ends_the_match() {
    let game = erase(Conecta4);
    let mut e = SplitMix64(3);
    let mut services = Services::new(0, Randomness::live(&mut e));
    let position =
        game.setup(&json!({"rows": 5, "columns": 5, "connect": 4}), &participants(), &mut services).unwrap().next;
    let marked = game.with_withdrawn(&position, "p0");
    let t = game.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p0".into() }, &mut services).unwrap();
    assert!(t.flow.actors.is_empty());
    game.validate_position(&t.next).unwrap();
    let result = serde_json::to_value(t.result.unwrap()).unwrap();
    assert_eq!(
        result,
        json!({"kind": "completed", "reasonCode": "withdrawal", "participants": {"p0": {"outcome": "loss"}, "p1": {"outcome": "win"}}})
    );
    assert!(game.available_actions(&t.next, Recipient::Seat("p1")).unwrap().is_empty());
    assert_eq!(game.bot_action(&t.next, "p1", BOT_DEFAULT, &mut e), None);
    let stage = game.encode_position(&position).unwrap().flow.actors["p0"].clone();
    assert_eq!(stage, STAGE);
}
