//! The streaming output check agrees with `jsonschema` on every input: on the schemas of the
//! real games and of a probe type that uses every keyword schemars emits for plain data, on
//! valid values and on random mutations of them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use juegoland_core::OutputSchema;
use juegoland_sdk::{ErasedGame, Participant, Randomness, Recipient, Seat, Services, SplitMix64, seat_ids};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum Disc {
    P0,
    P1,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Inner {
    #[schemars(range(max = 9))]
    row: u8,
    label: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
enum Tagged {
    Moved { to: u8 },
    Passed,
}

/// Adjacently tagged, as the SDK asks of actions and visible events.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "type", content = "data", rename_all = "camelCase", deny_unknown_fields)]
enum Adjacent {
    Dropped {
        #[schemars(range(max = 6))]
        column: u8,
    },
    Won(Inner),
    Quiet,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Probe {
    #[schemars(range(min = 1, max = 9))]
    small: u8,
    #[schemars(length(min = 1, max = 3))]
    name: String,
    #[schemars(length(max = 4))]
    cells: Vec<Option<Disc>>,
    last: Option<Inner>,
    inners: Vec<Inner>,
    map: BTreeMap<String, i64>,
    pair: (u8, String),
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    code: String,
    event: Tagged,
    adjacent: Vec<Adjacent>,
    flag: bool,
    ratio: f64,
    set: BTreeSet<u8>,
    fixed: [i8; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra: Option<u32>,
}

fn probes() -> Vec<Value> {
    let mut quiet = probe();
    quiet["event"] = serde_json::to_value(Tagged::Passed).unwrap();
    quiet["last"] = Value::Null;
    vec![probe(), quiet]
}

fn probe() -> Value {
    serde_json::to_value(Probe {
        small: 3,
        name: "ab".into(),
        cells: vec![Some(Disc::P0), None, Some(Disc::P1)],
        last: Some(Inner { row: 2, label: None }),
        inners: vec![Inner { row: 1, label: Some("x".into()) }],
        map: BTreeMap::from([("a".into(), -4)]),
        pair: (7, "q".into()),
        code: "abc".into(),
        event: Tagged::Moved { to: 4 },
        adjacent: vec![Adjacent::Dropped { column: 2 }, Adjacent::Won(Inner { row: 3, label: None }), Adjacent::Quiet],
        flag: true,
        ratio: 0.5,
        set: BTreeSet::from([1, 2]),
        fixed: [-1, 1],
        extra: Some(5),
    })
    .unwrap()
}

/// Every schema a game of the catalog generates for its outputs, and the probe's.
fn schemas() -> Vec<(String, Value)> {
    let mut out = vec![("probe".to_owned(), schemars::schema_for!(Probe).to_value())];
    for game in [
        juegoland_sdk::erase(juegoland_conecta4::Conecta4),
        juegoland_sdk::erase(juegoland_hundido::Hundido),
        juegoland_sdk::erase(juegoland_solitario::Solitario),
    ] {
        let s = game.schemas();
        let id = &game.descriptor().id;
        for (what, schema) in
            [("data", &s.data), ("view", &s.view), ("context", &s.context), ("visibleEvent", &s.visible_event)]
        {
            out.push((format!("{id} {what}"), schema.clone()));
        }
    }
    out
}

/// A schema under test: its name, its text, both compiled forms and valid samples.
struct Case {
    name: String,
    compiled: OutputSchema,
    oracle: jsonschema::Validator,
    samples: Vec<Value>,
}

/// Built once: replaying the games for samples is most of the test's time.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        schemas()
            .into_iter()
            .map(|(name, schema)| Case {
                compiled: OutputSchema::compile(&schema).unwrap_or_else(|e| panic!("{name}: {e}")),
                oracle: jsonschema::validator_for(&schema).unwrap(),
                samples: samples(&name),
                name,
            })
            .collect()
    })
}

/// Whether `instance` is valid; fails unless both checks say the same, on the text with its
/// keys sorted (a tagged enum's tag after its content: the fallback's path) and with the tags
/// `type` and `kind` first, as serde writes them (the tag picks the branch).
fn agree(case: &Case, instance: &Value) -> bool {
    let expected = case.oracle.is_valid(instance);
    for text in [serde_json::to_string(instance).unwrap(), tags_first(instance)] {
        let got = case.compiled.check(&text);
        assert_eq!(got.is_ok(), expected, "{}: {text}: streaming says {got:?}, jsonschema says {expected}", case.name);
    }
    expected
}

/// The text of `value` with the keys `type` and `kind` first in every object.
fn tags_first(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let first = ["type", "kind"].into_iter().filter(|k| map.contains_key(*k));
            let rest = map.keys().map(String::as_str).filter(|k| *k != "type" && *k != "kind");
            let entries: Vec<String> = first
                .chain(rest)
                .map(|k| format!("{}:{}", serde_json::to_string(k).unwrap(), tags_first(&map[k])))
                .collect();
            format!("{{{}}}", entries.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(tags_first).collect::<Vec<_>>().join(",")),
        other => serde_json::to_string(other).unwrap(),
    }
}

/// Replaces, removes or adds something at a pseudo-random place of `value`.
fn mutate(value: &mut Value, pick: u64, replacement: &Value) {
    let (choice, rest) = (pick % 4, pick / 4);
    match value {
        Value::Object(map) if !map.is_empty() && choice != 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = keys[(rest % keys.len() as u64) as usize].clone();
            let rest = rest / (keys.len() as u64 + 1);
            match choice {
                1 if rest == 0 => drop(map.insert(key, replacement.clone())),
                1 => mutate(map.get_mut(&key).unwrap(), rest, replacement),
                2 => drop(map.remove(&key)),
                _ => drop(map.insert(format!("{key}x"), replacement.clone())),
            }
        }
        Value::Array(items) if !items.is_empty() && choice != 0 => {
            let i = (rest % items.len() as u64) as usize;
            let rest = rest / (items.len() as u64 + 1);
            match choice {
                1 if rest == 0 => items[i] = replacement.clone(),
                1 => mutate(&mut items[i], rest, replacement),
                2 => drop(items.remove(i)),
                _ => items.push(replacement.clone()),
            }
        }
        _ => *value = replacement.clone(),
    }
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..15).prop_map(Value::from),
        (-2.5f64..12.5).prop_map(Value::from),
        Just(json!(1.0)),
        Just(json!(u64::MAX)),
        "[a-zA-Z0-9 ]{0,5}".prop_map(Value::from),
        prop_oneof![Just("p0"), Just("p1"), Just("hit"), Just("miss"), Just("moved"), Just("passed"), Just("")]
            .prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Valid samples of each schema: the probe, and the outputs of real matches.
fn samples(name: &str) -> Vec<Value> {
    if name == "probe" {
        return probes();
    }
    let (id, what) = name.split_once(' ').unwrap();
    let game = match id {
        "conecta4" => juegoland_sdk::erase(juegoland_conecta4::Conecta4),
        "hundido" => juegoland_sdk::erase(juegoland_hundido::Hundido),
        _ => juegoland_sdk::erase(juegoland_solitario::Solitario),
    };
    outputs(game.as_ref(), what)
}

/// The `what` outputs (data, view, context, visibleEvent) of one match its bots play, for
/// every seat and a spectator, at every revision.
fn outputs(game: &dyn ErasedGame, what: &str) -> Vec<Value> {
    let d = game.descriptor().clone();
    let seats = seat_ids(d.min_seats.max(2).min(d.max_seats) as usize);
    let participants: BTreeMap<Seat, Participant> = seats.iter().map(|s| (s.clone(), Participant::active())).collect();
    let mut entropy = SplitMix64(7);
    let mut services = Services::new(0, Randomness::live(&mut entropy));
    let mut t = game.setup(&json!({}), &participants, &mut services).unwrap();
    drop(services);
    let mut before = None;
    let mut out = Vec::new();
    for _ in 0..80 {
        let position = &t.next;
        let recipients = seats.iter().map(|s| Recipient::Seat(s)).chain([Recipient::Spectator]);
        for recipient in recipients {
            let p = game.project(position, recipient).unwrap();
            match what {
                "view" => out.push(serde_json::to_value(&p.view).unwrap()),
                "context" => out.push(serde_json::to_value(&p.context).unwrap()),
                "visibleEvent" => {
                    if let Some(before) = &before {
                        for e in game.project_events(before, position, &t.events, recipient).unwrap() {
                            out.push(json!({"type": e.event_type, "data": e.data.to_value()}));
                        }
                    }
                }
                _ => {}
            }
        }
        if what == "data" {
            out.push(game.encode_position(position).unwrap().data.to_value());
        }
        let Some(seat) = t.flow.actors.keys().next().cloned() else { break };
        let Some((action_type, payload)) = game.bot_action(position, &seat, &d.bots[0], &mut entropy) else { break };
        let action = game.decode_action(&action_type, &payload).unwrap();
        let mut services = Services::new(0, Randomness::live(&mut entropy));
        let next = game.apply(position, &seat, &action, &mut services).unwrap();
        drop(services);
        before = Some(std::mem::replace(&mut t, next).next);
    }
    out
}

#[test]
fn every_game_output_schema_compiles_and_accepts_what_the_games_produce() {
    for case in cases() {
        assert!(!case.samples.is_empty(), "{}: no samples", case.name);
        for sample in &case.samples {
            assert!(agree(case, sample), "{}: a game's own output fails: {sample}", case.name);
        }
    }
}

#[test]
fn mutated_outputs_are_judged_as_jsonschema_judges_them_both_ways() {
    let replacements = [json!(null), json!(12), json!(-1), json!(2.5), json!("p0"), json!("zz"), json!([]), json!({})];
    let mut rng = SplitMix64(11);
    let (mut valid, mut invalid) = (0, 0);
    for case in cases() {
        for n in 0..60 {
            let mut value = case.samples[n % case.samples.len()].clone();
            let replacement = &replacements[n % replacements.len()];
            mutate(&mut value, juegoland_sdk::EntropySource::next_u64(&mut rng), replacement);
            if agree(case, &value) { valid += 1 } else { invalid += 1 }
        }
    }
    // Mutations land both inside and outside the schemas: the comparison is not vacuous.
    assert!(valid > 50 && invalid > 50, "{valid} valid, {invalid} invalid");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_streaming_check_agrees_with_jsonschema_on_mutated_outputs(
        which in any::<prop::sample::Index>(),
        sample in any::<prop::sample::Index>(),
        picks in prop::collection::vec(any::<u64>(), 1..3),
        replacement in json_value(),
    ) {
        let case = which.get(cases());
        let mut value = sample.get(&case.samples).clone();
        for pick in picks {
            mutate(&mut value, pick, &replacement);
        }
        agree(case, &value);
    }

    #[test]
    fn the_streaming_check_agrees_with_jsonschema_on_random_json(
        which in any::<prop::sample::Index>(),
        value in json_value(),
    ) {
        agree(which.get(cases()), &value);
    }
}

#[test]
fn a_text_with_trailing_input_or_too_deep_fails() {
    let schema = json!({"type": "array", "items": {"type": "integer"}});
    let compiled = OutputSchema::compile(&schema).unwrap();
    assert!(compiled.check("[1,2]").is_ok());
    assert!(compiled.check("[1,2] 3").is_err());
    assert!(compiled.check("[1,2.5]").is_err());
    assert!(compiled.check("[1,2.0]").is_ok(), "2.0 is an integer to JSON Schema");
}
