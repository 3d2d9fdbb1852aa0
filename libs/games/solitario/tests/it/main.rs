//! Integration tests of Solitario through its public API: properties of random play, the
//! bot playing whole games, the erased (JSON-level) form with its generated schemas, and
//! privacy through the real engine ([`privacy`]).

mod privacy;

use std::collections::BTreeMap;

use juegoland_sdk::{
    Game, Lifecycle, Offer, Participant, Pos, Position, Randomness, Recipient, RuleError, Services, Setup, SplitMix64,
    Trans, check_conservation, erase,
};
use juegoland_solitario::{
    Action, BOT_DEFAULT, Config, MoveStackPayload, MoveToFoundationPayload, SEAT, STAGE, Solitario, main_deck,
};
use proptest::prelude::*;
use serde_json::{Value, json};

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
    Position { config: Config {}, participants: participants(), data: t.data, flow: t.flow, result: t.result }
}

fn commit(p: &Pos<Solitario>, t: Trans<Solitario>) -> Pos<Solitario> {
    Position { data: t.data, flow: t.flow, result: t.result, ..p.clone() }
}

/// Whether `action` is covered by p0's current offers (a parametrized offer covers a move
/// whose source and target it names).
fn offered(p: &Pos<Solitario>, action: &Action) -> bool {
    Solitario.available_actions(p, Recipient::Seat(SEAT)).iter().any(|o| match (o, action) {
        (Offer::Concrete(a), _) => a == action,
        (Offer::Parametrized { action_type, constraints }, Action::MoveStack(m)) if action_type == "moveStack" => {
            let sources = constraints["sources"].as_array().unwrap();
            let source = sources.iter().find(|s| s["zone"] == m.from.as_str());
            source.is_some_and(|s| s["maxCount"].as_u64().unwrap() >= u64::from(m.count))
                && constraints["targets"].as_array().unwrap().iter().any(|t| t == m.to.as_str())
        }
        (Offer::Parametrized { action_type, constraints }, Action::MoveToFoundation(m))
            if action_type == "moveToFoundation" =>
        {
            constraints["sources"].as_array().unwrap().iter().any(|s| s == m.from.as_str())
        }
        _ => false,
    })
}

const ZONES: [&str; 15] = [
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
    "tableau7",
];

fn random_action() -> impl Strategy<Value = Action> {
    let zone = prop::sample::select(ZONES.to_vec());
    prop_oneof![
        3 => Just(Action::draw()),
        1 => Just(Action::recycle()),
        5 => (zone.clone(), zone.clone(), 0u8..15)
            .prop_map(|(from, to, count)| Action::MoveStack(MoveStackPayload { from: from.into(), to: to.into(), count })),
        3 => zone.prop_map(|from| Action::MoveToFoundation(MoveToFoundationPayload { from: from.into() })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random actions, interleaved with the bot's, never lose, duplicate or create a card;
    /// an illegal one is an `Illegal` rejection (never a fault) and changes nothing; an
    /// accepted one was offered.
    #[test]
    fn random_actions_conserve_every_card(
        seed in any::<u64>(),
        actions in prop::collection::vec((random_action(), any::<bool>()), 0..150),
    ) {
        let mut p = start(seed);
        let mut bot_entropy = SplitMix64(seed ^ 0x55);
        for (action, bot_first) in actions {
            if p.result.is_some() {
                break;
            }
            if bot_first {
                let bot = Solitario.bot_action(&p, SEAT, BOT_DEFAULT, &mut bot_entropy).unwrap();
                if bot != Action::give_up() {
                    prop_assert!(offered(&p, &bot), "the bot chose {:?}, which is not offered", bot);
                    let t = with_services(0, |s| Solitario.apply(&p, SEAT, &bot, s)).unwrap();
                    p = commit(&p, t);
                }
            }
            let before = p.clone();
            match with_services(0, |s| Solitario.apply(&p, SEAT, &action, s)) {
                Ok(t) => {
                    prop_assert!(offered(&p, &action), "accepted {:?}, which was not offered", action);
                    let next = commit(&p, t);
                    if let Err(e) = Solitario.validate_position(&next) {
                        return Err(TestCaseError::fail(format!("{e} after {action:?}")));
                    }
                    prop_assert_eq!(check_conservation(&next.data.zones, main_deck().instances()), Ok(()));
                    prop_assert!(next.flow.turn >= p.flow.turn && next.flow.round >= p.flow.round);
                    p = next;
                }
                Err(RuleError::Illegal { .. }) => {
                    prop_assert!(!offered(&p, &action) || matches!(action, Action::MoveStack(_)),
                        "rejected the offered {:?}", action);
                    prop_assert_eq!(&p, &before);
                }
                Err(e) => return Err(TestCaseError::fail(format!("{action:?} is a fault: {e}"))),
            }
        }
    }
}

/// Plays the bot until the match ends; returns the final position and the moves made.
fn bot_game(seed: u64) -> (Pos<Solitario>, u32) {
    let mut p = start(seed);
    let mut entropy = SplitMix64(seed.wrapping_mul(31));
    let mut steps = 0;
    while p.result.is_none() {
        let action = Solitario.bot_action(&p, SEAT, BOT_DEFAULT, &mut entropy).expect("an active match has a bot move");
        let t = with_services(0, |s| Solitario.apply(&p, SEAT, &action, s))
            .unwrap_or_else(|e| panic!("seed {seed}: the bot chose the illegal {action:?}: {e}"));
        p = commit(&p, t);
        Solitario.validate_position(&p).unwrap();
        steps += 1;
        assert!(steps < 5_000, "seed {seed}: the bot does not end the match");
    }
    (p, steps)
}

#[test]
fn the_bot_plays_whole_games_to_a_result() {
    let mut wins = 0;
    for seed in 0..30 {
        let (p, _) = bot_game(seed);
        let result = serde_json::to_value(&p.result).unwrap();
        assert_eq!(result["kind"], "completed");
        match result["reasonCode"].as_str().unwrap() {
            "all-foundations" => {
                assert_eq!(result["participants"]["p0"]["outcome"], "win");
                wins += 1;
            }
            "gave-up" => assert_eq!(result["participants"]["p0"]["outcome"], "loss"),
            other => panic!("unexpected reason {other}"),
        }
    }
    assert!(wins > 0, "the bot never won in 30 deals");
}

#[test]
fn the_bot_is_deterministic_given_position_and_entropy() {
    let p = start(11);
    for seed in 0..4 {
        let a = Solitario.bot_action(&p, SEAT, BOT_DEFAULT, &mut SplitMix64(seed));
        assert_eq!(a, Solitario.bot_action(&p, SEAT, BOT_DEFAULT, &mut SplitMix64(seed)));
    }
    assert_eq!(Solitario.bot_action(&p, "p1", BOT_DEFAULT, &mut SplitMix64(0)), None);
    assert_eq!(Solitario.bot_action(&p, SEAT, "expert", &mut SplitMix64(0)), None);
    assert_eq!(bot_game(3), bot_game(3));
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
    let game = erase(Solitario);
    let d = game.descriptor().clone();
    assert_eq!((d.id.as_str(), d.rules_version.as_str(), d.min_seats, d.max_seats), ("solitario", "1.0.0", 1, 1));
    let schemas = game.schemas().clone();
    let payload = |t: &str| d.action(t).unwrap().payload_schema.clone();

    assert_eq!(game.decode_config(&json!({})).unwrap(), json!({}));
    assert_valid(&schemas.config, &json!({}));
    assert_invalid(&schemas.config, &json!({"draw": 3}));
    assert!(game.decode_config(&json!({"passes": 3})).is_err());

    let mut e = SplitMix64(3);
    let mut services = Services::new(0, Randomness::live(&mut e));
    let mut position = game.setup(&json!({}), &participants(), &mut services).unwrap().next;
    let trace = services.finish().unwrap();
    assert_eq!(trace.len(), 1);
    assert_eq!(trace[0].label, "deal");
    let mut seen_types = std::collections::BTreeSet::new();
    let mut turn = 0u64;
    loop {
        game.validate_position(&position).unwrap();
        let json = game.encode_position(&position).unwrap();
        assert_valid(&schemas.config, &json.config.to_value());
        assert_valid(&schemas.data, &json.data.to_value());
        let decoded = game.decode_position(&json).unwrap();
        assert_eq!(game.encode_position(&decoded).unwrap(), json);
        for recipient in [Recipient::Seat("p0"), Recipient::Spectator] {
            let projection = game.project(&position, recipient).unwrap();
            assert_valid(&schemas.view, &projection.view.to_value());
            assert_valid(&schemas.context, &projection.context.to_value());
            assert!(!projection.view.get().contains("mainDeck"));
        }
        if json.result.is_some() {
            break;
        }
        let offers = game.available_actions(&position, Recipient::Seat("p0")).unwrap();
        for offer in &offers {
            if let Some(p) = &offer.payload {
                assert_valid(&payload(&offer.action_type), &p.to_value());
            }
            assert!(offer.payload.is_some() != offer.constraints.is_some());
        }
        let (action_type, payload_json) = game.bot_action(&position, "p0", BOT_DEFAULT, &mut SplitMix64(turn)).unwrap();
        assert_valid(&payload(&action_type), &payload_json);
        let action = game.decode_action(&action_type, &payload_json).unwrap();
        let mut e = SplitMix64(0);
        let mut services = Services::new(0, Randomness::live(&mut e));
        let t = game.apply(&position, "p0", &action, &mut services).unwrap();
        let encoded = game.encode_events(&t.events).unwrap();
        for event in &encoded {
            assert_valid(&schemas.event, event);
        }
        let events = game.decode_events(&encoded).unwrap();
        for recipient in [Recipient::Seat("p0"), Recipient::Spectator] {
            for v in game.project_events(&position, &t.next, &events, recipient).unwrap() {
                assert!(!v.data.get().contains("mainDeck"));
                seen_types.insert(v.event_type.clone());
                assert_valid(&schemas.visible_event, &json!({"type": v.event_type, "data": v.data.to_value()}));
            }
        }
        position = t.next;
        turn += 1;
    }
    assert!(seen_types.contains("card.drawn") && seen_types.contains("cards.moved"), "{seen_types:?}");
    assert!(seen_types.contains("match.won") || seen_types.contains("match.lost"), "{seen_types:?}");

    assert_invalid(&payload("moveStack"), &json!({"from": "stock", "to": "tableau1", "count": 1}));
    assert_invalid(&payload("moveStack"), &json!({"from": "waste", "to": "foundation1", "count": 1}));
    assert_invalid(&payload("moveStack"), &json!({"from": "waste", "to": "tableau1", "count": 0}));
    assert_invalid(&payload("moveStack"), &json!({"from": "waste", "to": "tableau7", "count": 1}));
    assert_valid(&payload("moveStack"), &json!({"from": "foundation3", "to": "tableau6", "count": 1}));
    assert_invalid(&payload("moveToFoundation"), &json!({"from": "foundation0"}));
    assert_valid(&payload("moveToFoundation"), &json!({"from": "tableau0"}));
    assert_invalid(&payload("draw"), &json!({"n": 1}));
    assert_valid(&payload("giveUp"), &json!({}));
    assert!(game.decode_action("draw", &json!({"extra": true})).is_err());
    assert!(game.decode_action("moveStack", &json!({"from": "waste", "to": "tableau0"})).is_err());
    assert!(game.decode_action("shuffle", &json!({})).is_err());
    let view_face_down = json!({"stock": {"count": 0}, "waste": [], "tableau": [[{"faceDown": true, "suit": "hearts", "rank": 1}], [], [], [], [], [], []], "foundations": [{"top": null, "count": 0}, {"top": null, "count": 0}, {"top": null, "count": 0}, {"top": null, "count": 0}]});
    assert_invalid(&schemas.view, &view_face_down);
}

#[test]
fn erased_withdrawal_is_a_loss_for_p0() {
    let game = erase(Solitario);
    let mut e = SplitMix64(3);
    let mut services = Services::new(0, Randomness::live(&mut e));
    let position = game.setup(&json!({}), &participants(), &mut services).unwrap().next;
    let stage = game.encode_position(&position).unwrap().flow.actors["p0"].clone();
    assert_eq!(stage, STAGE);
    let marked = game.with_withdrawn(&position, "p0");
    let mut services = Services::new(0, Randomness::live(&mut e));
    let t = game.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p0".into() }, &mut services).unwrap();
    assert!(t.flow.actors.is_empty());
    game.validate_position(&t.next).unwrap();
    assert_eq!(
        serde_json::to_value(t.result.unwrap()).unwrap(),
        json!({"kind": "completed", "reasonCode": "withdrawal", "participants": {"p0": {"outcome": "loss"}}})
    );
    assert!(game.available_actions(&t.next, Recipient::Seat("p0")).unwrap().is_empty());
}
