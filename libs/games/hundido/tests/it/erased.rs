//! The erased (JSON-level) form: a whole match through it, every output checked against the
//! generated schemas, and the wire contract of the payloads.

use juegoland_hundido::{BOT_DEFAULT, Hundido};
use juegoland_sdk::{Lifecycle, Randomness, Recipient, RuleError, Services, SplitMix64, erase};
use serde_json::{Value, json};

use crate::participants;

fn assert_valid(schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema).expect("a generated schema compiles");
    let errors: Vec<String> = validator.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{instance} does not match its schema: {errors:?}");
}

fn assert_invalid(schema: &Value, instance: &Value) {
    assert!(!jsonschema::is_valid(schema, instance), "{instance} should not match its schema");
}

const RECIPIENTS: [Recipient<'static>; 3] = [Recipient::Seat("p0"), Recipient::Seat("p1"), Recipient::Spectator];

#[test]
fn the_erased_form_round_trips_and_matches_its_schemas() {
    let game = erase(Hundido);
    let d = game.descriptor();
    assert_eq!(d.id, "hundido");
    let schemas = game.schemas().clone();
    let payload = |a: &str| d.action(a).unwrap().payload_schema.clone();

    let config = game.decode_config(&json!({})).unwrap();
    assert_eq!(config["rows"], 10);
    assert_eq!(config["fleet"].as_array().unwrap().len(), 5);
    assert_eq!(config["adjacency"], "touch");
    assert_eq!(config["keepTurnOnHit"], false);
    assert_valid(&schemas.config, &json!({}));
    assert_valid(&schemas.config, &json!({"adjacency": "no-touch", "keepTurnOnHit": true, "rows": 12, "columns": 6}));
    assert_invalid(&schemas.config, &json!({"rows": 13}));
    assert_invalid(&schemas.config, &json!({"rows": 5}));
    assert_invalid(&schemas.config, &json!({"adjacency": "diagonal"}));
    assert_invalid(&schemas.config, &json!({"fleet": []}));
    assert_invalid(&schemas.config, &json!({"fleet": [{"ship": "a b", "size": 2}]}));
    assert_invalid(&schemas.config, &json!({"fleet": [{"ship": "a", "size": 7}]}));
    assert_invalid(&schemas.config, &json!({"width": 10}));

    let mut e = SplitMix64(3);
    let mut services = Services::new(0, Randomness::live(&mut e));
    let mut position = game.setup(&json!({"adjacency": "no-touch"}), &participants(), &mut services).unwrap().next;
    assert!(matches!(
        game.setup(
            &json!({"fleet": [{"ship": "a", "size": 2}, {"ship": "a", "size": 3}]}),
            &participants(),
            &mut services
        ),
        Err(RuleError::Illegal { .. })
    ));
    let mut seen = std::collections::BTreeSet::new();
    let mut step = 0u64;
    loop {
        game.validate_position(&position).unwrap();
        let json = game.encode_position(&position).unwrap();
        assert_valid(&schemas.config, &json.config.to_value());
        assert_valid(&schemas.data, &json.data.to_value());
        let decoded = game.decode_position(&json).unwrap();
        assert_eq!(game.encode_position(&decoded).unwrap(), json);
        for recipient in RECIPIENTS {
            let projection = game.project(&position, recipient).unwrap();
            assert_valid(&schemas.view, &projection.view.to_value());
            assert_valid(&schemas.context, &projection.context.to_value());
        }
        if json.result.is_some() {
            break;
        }
        let seat = json.flow.actors.iter().find(|(_, stage)| stage.as_str() != "waiting").unwrap().0.clone();
        let offers = game.available_actions(&position, Recipient::Seat(&seat)).unwrap();
        assert!(!offers.is_empty());
        for offer in &offers {
            match offer.action_type.as_str() {
                "placeShip" => {
                    let c = offer.constraints.as_ref().unwrap();
                    assert_eq!(c["rows"], 10);
                    assert_eq!(c["adjacency"], "no-touch");
                    assert_eq!(c["fleet"], json.config.to_value()["fleet"]);
                }
                "ready" => assert_valid(&payload("ready"), &offer.payload.as_ref().unwrap().to_value()),
                "fire" => assert_eq!(offer.constraints, Some(json!({"rows": 10, "columns": 10}))),
                other => panic!("unexpected offer {other}"),
            }
        }
        let (action_type, payload_json) =
            game.bot_action(&position, &seat, BOT_DEFAULT, &mut SplitMix64(step)).unwrap();
        assert_valid(&payload(&action_type), &payload_json);
        let action = game.decode_action(&action_type, &payload_json).unwrap();
        let mut e = SplitMix64(0);
        let mut services = Services::new(0, Randomness::live(&mut e));
        let t = game.apply(&position, &seat, &action, &mut services).unwrap();
        for event in game.encode_events(&t.events).unwrap() {
            assert_valid(&schemas.event, &event);
        }
        let events = game.decode_events(&game.encode_events(&t.events).unwrap()).unwrap();
        let mut per_recipient = Vec::new();
        for recipient in RECIPIENTS {
            let visible = game.project_events(&position, &t.next, &events, recipient).unwrap();
            for v in &visible {
                seen.insert(v.event_type.clone());
                assert_valid(&schemas.visible_event, &json!({"type": v.event_type, "data": v.data.to_value()}));
                if v.event_type == "fleet.changed" {
                    assert_eq!(v.data.to_value().as_object().unwrap().keys().collect::<Vec<_>>(), ["placed", "seat"]);
                }
            }
            per_recipient.push(visible);
        }
        assert!(per_recipient.windows(2).all(|w| w[0] == w[1]), "visible events are public");
        position = t.next;
        step += 1;
    }
    for t in ["fleet.changed", "player.ready", "battle.started", "shot.fired"] {
        assert!(seen.contains(t), "{t} never seen");
    }
    let result = game.project(&position, Recipient::Spectator).unwrap().result.unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["kind"], "completed");
    assert_eq!(result["reasonCode"], "fleet-destroyed");

    // The payloads' wire contract.
    assert_valid(
        &payload("placeShip"),
        &json!({"ship": "cruiser", "row": 0, "column": 0, "orientation": "horizontal"}),
    );
    assert_valid(
        &payload("placeShip"),
        &json!({"ship": "cruiser", "row": 11, "column": 11, "orientation": "vertical"}),
    );
    assert_invalid(&payload("placeShip"), &json!({"ship": "cruiser", "row": 0, "column": 0}));
    assert_invalid(
        &payload("placeShip"),
        &json!({"ship": "cruiser", "row": 12, "column": 0, "orientation": "vertical"}),
    );
    assert_invalid(&payload("placeShip"), &json!({"ship": "cruiser", "row": 0, "column": 0, "orientation": "up"}));
    assert_valid(&payload("ready"), &json!({}));
    assert_invalid(&payload("ready"), &json!({"now": true}));
    assert_valid(&payload("fire"), &json!({"row": 3, "column": 4}));
    assert_invalid(&payload("fire"), &json!({"row": 3}));
    assert_invalid(&payload("fire"), &json!({"row": 3, "column": 4, "ship": "carrier"}));
    assert!(game.decode_action("fire", &json!({"row": 1, "column": 1, "extra": true})).is_err());
    assert!(game.decode_action("bomb", &json!({"row": 1, "column": 1})).is_err());
}

#[test]
fn erased_withdrawal_in_battle_makes_the_leaver_lose() {
    let game = erase(Hundido);
    let mut e = SplitMix64(5);
    let mut services = Services::new(0, Randomness::live(&mut e));
    let mut position = game.setup(&json!({}), &participants(), &mut services).unwrap().next;
    // Both bots place and get ready.
    let mut bot = SplitMix64(8);
    while game.encode_position(&position).unwrap().flow.phase == "placement" {
        for seat in ["p0", "p1"] {
            if let Some((t, p)) = game.bot_action(&position, seat, BOT_DEFAULT, &mut bot) {
                let a = game.decode_action(&t, &p).unwrap();
                position = game.apply(&position, seat, &a, &mut services).unwrap().next;
            }
        }
    }
    let marked = game.with_withdrawn(&position, "p1");
    let t = game.on_lifecycle(&marked, &Lifecycle::Withdrawal { seat: "p1".into() }, &mut services).unwrap();
    game.validate_position(&t.next).unwrap();
    assert_eq!(
        serde_json::to_value(t.result.unwrap()).unwrap(),
        json!({"kind": "completed", "reasonCode": "withdrawal", "participants": {"p0": {"outcome": "win"}, "p1": {"outcome": "loss"}}})
    );
    let events = game.project_events(&marked, &t.next, &t.events, Recipient::Seat("p0")).unwrap();
    assert_eq!(events[0].event_type, "player.withdrew");
    assert_eq!(events[0].data.to_value(), json!({"seat": "p1"}));
}
