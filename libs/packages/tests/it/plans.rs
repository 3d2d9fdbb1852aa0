//! The presentation-plan validator's rejections: cycles, unknown effects, unknown markers,
//! duplicate ids, over-limit plans and invalid params, each at its field.

use juegoland_packages::Kind;
use juegoland_packages::plan::{EffectRegistry, PresentationPlan};
use serde_json::{Value, json};

fn step(id: &str, trigger: Value) -> Value {
    json!({"id": id, "effect": "piece.drop", "params": {"column": 0, "row": 0}, "trigger": trigger,
           "markers": ["impact"], "blocking": true, "timeoutMs": 500})
}

fn plan(steps: Vec<Value>) -> Value {
    json!({"format": "juegoland.presentation-plan", "formatVersion": 1, "id": "test", "steps": steps})
}

fn check(plan: Value) -> Result<(), juegoland_packages::Rejection> {
    let plan: PresentationPlan = juegoland_packages::validate::parse_text("plan.json", &plan.to_string())?;
    plan.validate("plan.json", &EffectRegistry::standard())
}

fn rejected(plan: Value) -> juegoland_packages::Rejection {
    check(plan).expect_err("the bad plan must be rejected")
}

#[test]
fn a_valid_plan_passes() {
    check(plan(vec![
        step("a", json!({"after": []})),
        step("b", json!({"marker": {"step": "a", "marker": "impact"}})),
        step("c", json!({"after": ["a", "b"]})),
    ]))
    .unwrap();
}

#[test]
fn cycles() {
    let r = rejected(plan(vec![step("a", json!({"after": ["b"]})), step("b", json!({"after": ["a"]}))]));
    assert!(matches!(*r.kind, Kind::PlanCycle(_)), "{r}");
    assert_eq!(r.pointer, "/steps/0/trigger");
}

#[test]
fn unknown_effects_and_invalid_params() {
    let mut bad = step("a", json!({"after": []}));
    bad["effect"] = json!("confetti");
    let r = rejected(plan(vec![bad]));
    assert!(matches!(*r.kind, Kind::UnknownEffect(_)), "{r}");
    assert_eq!(r.pointer, "/steps/0/effect");
    let mut bad = step("a", json!({"after": []}));
    bad["params"] = json!({"column": "three", "row": 0});
    let r = rejected(plan(vec![bad]));
    assert!(matches!(*r.kind, Kind::EffectParams { .. }) && r.to_string().contains("params.column"), "{r}");
    assert_eq!(r.pointer, "/steps/0/params");
}

#[test]
fn unknown_markers_and_steps() {
    let r = rejected(plan(vec![
        step("a", json!({"after": []})),
        step("b", json!({"marker": {"step": "a", "marker": "bounce"}})),
    ]));
    assert!(matches!(*r.kind, Kind::UnknownMarker { .. }), "{r}");
    assert_eq!(r.pointer, "/steps/1/trigger/marker");
    let r = rejected(plan(vec![step("a", json!({"after": ["z"]}))]));
    assert!(matches!(*r.kind, Kind::Unknown { what: "step", .. }), "{r}");
    assert_eq!(r.pointer, "/steps/0/trigger/after/0");
}

#[test]
fn duplicate_ids() {
    let r = rejected(plan(vec![step("a", json!({"after": []})), step("a", json!({"after": []}))]));
    assert!(matches!(*r.kind, Kind::Duplicate { what: "step", .. }), "{r}");
    assert_eq!(r.pointer, "/steps/1/id");
}

#[test]
fn over_limit_plans() {
    let many = (0..129).map(|i| step(&format!("s{i}"), json!({"after": []}))).collect();
    assert!(matches!(*rejected(plan(many)).kind, Kind::TooManySteps(129)));
    let mut long = step("a", json!({"after": []}));
    long["timeoutMs"] = json!(12_001);
    let r = rejected(plan(vec![long]));
    assert!(matches!(*r.kind, Kind::StepTooLong { .. }), "{r}");
    assert_eq!(r.pointer, "/steps/0/timeoutMs");
    let chain: Vec<Value> = (0..5)
        .map(|i| {
            let mut s =
                step(&format!("s{i}"), json!({"after": if i == 0 { vec![] } else { vec![format!("s{}", i - 1)] }}));
            s["timeoutMs"] = json!(3000);
            s
        })
        .collect();
    assert!(matches!(*rejected(plan(chain.clone())).kind, Kind::BlockingTooLong(15_000)));
    // The same chain passes when its steps do not block.
    let relaxed = chain.into_iter().map(|mut s| {
        s["blocking"] = json!(false);
        s
    });
    check(plan(relaxed.collect())).unwrap();
}

/// The params of the web client's effects: required and optional fields, their types, and
/// nothing else.
#[test]
fn the_client_effects_params() {
    let one = |effect: &str, params: Value| {
        check(plan(vec![json!({"id": "a", "effect": effect, "params": params, "trigger": {"after": []},
                                "blocking": false, "timeoutMs": 500})]))
    };
    let reason = |effect: &str, params: Value| one(effect, params).expect_err("refused").to_string();
    // Optional fields may be absent, but not of another type.
    one("piece.drop", json!({"column": 3, "row": 0})).unwrap();
    one("piece.drop", json!({"column": 3, "row": 0, "seat": "p0", "rows": 6})).unwrap();
    assert!(
        reason("piece.drop", json!({"column": 3, "row": 0, "rows": "six"})).contains("params.rows has the wrong type")
    );
    assert!(
        reason("card.move", json!({"from": "waste", "to": "tableau1", "count": 1, "cards": []}))
            .contains("params.cards is not a parameter")
    );
    // Brisca's faces are Spanish ones.
    one("card.play", json!({"seat": "p1", "card": {"suit": "copas", "rank": 12}})).unwrap();
    assert!(reason("card.play", json!({"seat": "p1", "card": {"suit": "hearts", "rank": 12}})).contains("params.card"));
    assert!(reason("card.play", json!({"seat": "p1", "card": {"suit": "copas", "rank": 8}})).contains("params.card"));
    one("trick.collect", json!({"seat": "p0", "cards": [{"seat": "p1", "card": {"suit": "oros", "rank": 1}}]}))
        .unwrap();
    assert!(reason("trick.collect", json!({"seat": "p0", "cards": [{"seat": "p1"}]})).contains("params.cards"));
    // Dice of 1–6; a resting effect the boards name.
    one("dice.roll", json!({"seat": "p0", "roll": [6, 3]})).unwrap();
    assert!(reason("dice.roll", json!({"seat": "p0", "roll": [7]})).contains("params.roll"));
    assert!(reason("dice.roll", json!({"seat": "p0", "roll": []})).contains("params.roll"));
    one("square.effect", json!({"seat": "p0", "from": 19, "to": 19, "via": "inn"})).unwrap();
    assert!(
        reason("square.effect", json!({"seat": "p0", "from": 1, "to": 2, "via": "teleport"})).contains("params.via")
    );
    assert!(reason("pause.read", json!({"ms": 60_000})).contains("params.ms"));
    // Laberinto's.
    one("maze.step", json!({"seat": "p1", "from": 10, "to": 11})).unwrap();
    assert!(reason("maze.flash", json!({"kind": "confetti", "cell": 3})).contains("params.kind"));
    assert!(reason("maze.cue", json!({})).contains("params.cue is missing"));
}
