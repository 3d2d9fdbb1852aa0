//! Presentation plans: an acyclic graph of registered effects, and its server-side validator
//! (cycles, unknown effects and markers, duplicate ids, limits).

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Kind, Rejection};

/// At most this many steps in one plan.
pub const MAX_STEPS: usize = 128;
/// At most this long for one step, and for the blocking steps of a plan in sequence.
pub const MAX_STEP_MS: u32 = 12_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PlanFormat {
    #[serde(rename = "juegoland.presentation-plan")]
    PresentationPlan,
}

/// A transition's presentation: steps, each a registered effect with validated params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PresentationPlan {
    pub format: PlanFormat,
    #[schemars(extend("const" = 1))]
    pub format_version: u32,
    pub id: String,
    pub steps: Vec<PlanStep>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanStep {
    pub id: String,
    /// A registered effect.
    pub effect: String,
    #[serde(default)]
    pub params: Value,
    pub trigger: Trigger,
    /// Markers this step may emit while it plays.
    #[serde(default)]
    pub markers: Vec<String>,
    /// Whether the transition waits for this step.
    pub blocking: bool,
    pub timeout_ms: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<Audio>,
}

/// When a step starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Trigger {
    /// When every listed step has ended (`[]`: at once).
    After(Vec<String>),
    /// When `step` emits `marker`; skipped if the step ends without emitting it.
    Marker { step: String, marker: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Audio {
    pub channel: String,
    pub policy: AudioPolicy,
    /// The longest start delay tolerated; later, the sound is skipped.
    pub max_delay_ms: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AudioPolicy {
    Mix,
    Replace,
    SkipIfBusy,
}

/// Checks an effect's params; the error says what is wrong.
pub type ParamsValidator = fn(&Value) -> Result<(), String>;

/// The effects a client coordinator implements, with their params' validators.
#[derive(Clone, Debug, Default)]
pub struct EffectRegistry {
    effects: BTreeMap<String, ParamsValidator>,
}

impl EffectRegistry {
    pub fn register(&mut self, effect: &str, validator: ParamsValidator) {
        self.effects.insert(effect.to_owned(), validator);
    }

    /// The effects the web client's game modules implement (`clients/web/src/games`), each
    /// with the params its module builds: a package's plans may use exactly these, and
    /// `clients/web/test/package-plans.test.ts` keeps every catalog package's plans equal to
    /// what its module builds.
    pub fn standard() -> Self {
        let mut r = Self::default();
        // Shared: a sound resource of the package.
        r.register("sound.play", |p| object_with(p, &[("resource", Value::is_string)], &[]));
        // Conecta 4.
        r.register("piece.drop", |p| {
            object_with(
                p,
                &[("column", is_index), ("row", is_index)],
                &[("seat", Value::is_string), ("rows", is_index)],
            )
        });
        r.register("cells.highlight", |p| object_with(p, &[("cells", is_cells)], &[]));
        // Hundido.
        r.register("shot.mark", |p| {
            object_with(
                p,
                &[("column", is_index), ("row", is_index)],
                &[("seat", Value::is_string), ("outcome", |v| one_of(v, &["water", "hit", "sunk"]))],
            )
        });
        r.register("ship.sunk", |p| object_with(p, &[("seat", Value::is_string), ("cells", is_cells)], &[]));
        // Solitario.
        r.register("card.move", |p| {
            object_with(p, &[("from", Value::is_string), ("to", Value::is_string)], &[("count", is_index)])
        });
        r.register("card.flip", |p| object_with(p, &[("zone", Value::is_string)], &[]));
        // Brisca.
        r.register("card.play", |p| object_with(p, &[("seat", Value::is_string), ("card", is_spanish_face)], &[]));
        r.register("trick.collect", |p| {
            object_with(p, &[("seat", Value::is_string), ("cards", |v| list_of(v, is_played_card, true))], &[])
        });
        r.register("card.draw", |p| object_with(p, &[("seat", Value::is_string)], &[]));
        r.register("trump.exchange", |p| object_with(p, &[("seat", Value::is_string), ("card", is_spanish_face)], &[]));
        // La Oca and Serpientes y escaleras.
        r.register("dice.roll", |p| {
            object_with(
                p,
                &[
                    ("seat", Value::is_string),
                    ("roll", |v| list_of(v, |d| d.as_u64().is_some_and(|d| (1..=6).contains(&d)), false)),
                ],
                &[],
            )
        });
        r.register("pause.read", |p| {
            object_with(p, &[("ms", |v| v.as_u64().is_some_and(|ms| ms <= u64::from(MAX_STEP_MS)))], &[])
        });
        r.register("piece.path", |p| {
            object_with(p, &[("seat", Value::is_string), ("squares", |v| list_of(v, is_index, false))], &[])
        });
        r.register("square.effect", |p| {
            object_with(
                p,
                &[
                    ("seat", Value::is_string),
                    ("from", is_index),
                    ("to", is_index),
                    ("via", |v| {
                        one_of(
                            v,
                            &[
                                "goose", "bridge", "dice", "maze", "death", "bounce", "well", "inn", "prison",
                                "ladder", "snake",
                            ],
                        )
                    }),
                ],
                &[],
            )
        });
        // Laberinto.
        r.register("maze.step", |p| {
            object_with(p, &[("seat", Value::is_string), ("from", is_index), ("to", is_index)], &[])
        });
        r.register("maze.flash", |p| {
            object_with(p, &[("kind", |v| one_of(v, &["key", "drop", "meet", "exit"])), ("cell", is_index)], &[])
        });
        r.register("maze.cue", |p| object_with(p, &[("cue", |v| one_of(v, &["go", "finish"]))], &[]));
        r
    }

    /// The registered effects' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.effects.keys().map(String::as_str)
    }
}

fn is_index(v: &Value) -> bool {
    v.as_u64().is_some()
}

fn one_of(v: &Value, allowed: &[&str]) -> bool {
    v.as_str().is_some_and(|s| allowed.contains(&s))
}

/// A list whose items all pass `item`; non-empty unless `empty` allows it.
fn list_of(v: &Value, item: fn(&Value) -> bool, empty: bool) -> bool {
    v.as_array().is_some_and(|a| (empty || !a.is_empty()) && a.iter().all(item))
}

/// A non-empty list of `[row, column]` pairs.
fn is_cells(v: &Value) -> bool {
    list_of(v, |c| c.as_array().is_some_and(|rc| rc.len() == 2 && rc.iter().all(is_index)), false)
}

/// A Spanish deck face as the views carry it: `{"suit": "oros"|…, "rank": 1–7|10|11|12}`.
fn is_spanish_face(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 2
            && o.get("suit").is_some_and(|s| one_of(s, &["oros", "copas", "espadas", "bastos"]))
            && o.get("rank").and_then(Value::as_u64).is_some_and(|r| matches!(r, 1..=7 | 10..=12))
    })
}

/// A card on the table: `{"seat", "card": face}`.
fn is_played_card(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 2 && o.get("seat").is_some_and(Value::is_string) && o.get("card").is_some_and(is_spanish_face)
    })
}

/// A parameter's name and type check.
type Field = (&'static str, fn(&Value) -> bool);

/// `params` is an object with every `required` field, any of the `optional` ones, and nothing
/// else, each of its type.
fn object_with(params: &Value, required: &[Field], optional: &[Field]) -> Result<(), String> {
    let object = params.as_object().ok_or("params must be an object")?;
    for (name, check) in required {
        match object.get(*name) {
            Some(v) if check(v) => {}
            Some(_) => return Err(format!("params.{name} has the wrong type")),
            None => return Err(format!("params.{name} is missing")),
        }
    }
    for (name, check) in optional {
        if object.get(*name).is_some_and(|v| !check(v)) {
            return Err(format!("params.{name} has the wrong type"));
        }
    }
    let known = |k: &String| required.iter().chain(optional).any(|(name, _)| name == k);
    if let Some(extra) = object.keys().find(|k| !known(k)) {
        return Err(format!("params.{extra} is not a parameter of this effect"));
    }
    Ok(())
}

impl PresentationPlan {
    /// The server-side validator. `label` names the file in rejections.
    pub fn validate(&self, label: &str, effects: &EffectRegistry) -> Result<(), Rejection> {
        let err = |pointer: String, kind: Kind| Rejection::new(label, pointer, kind);
        crate::package::check_format_version(label, self.format_version)?;
        if self.steps.len() > MAX_STEPS {
            return Err(err("/steps".into(), Kind::TooManySteps(self.steps.len())));
        }
        let mut index = BTreeMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            if index.insert(step.id.as_str(), i).is_some() {
                return Err(err(format!("/steps/{i}/id"), Kind::Duplicate { what: "step", id: step.id.clone() }));
            }
        }
        for (i, step) in self.steps.iter().enumerate() {
            let validator = effects
                .effects
                .get(&step.effect)
                .ok_or_else(|| err(format!("/steps/{i}/effect"), Kind::UnknownEffect(step.effect.clone())))?;
            validator(&step.params).map_err(|reason| {
                err(format!("/steps/{i}/params"), Kind::EffectParams { effect: step.effect.clone(), reason })
            })?;
            if step.timeout_ms > MAX_STEP_MS {
                return Err(err(
                    format!("/steps/{i}/timeoutMs"),
                    Kind::StepTooLong { step: step.id.clone(), timeout_ms: step.timeout_ms },
                ));
            }
            match &step.trigger {
                Trigger::After(ids) => {
                    for (j, id) in ids.iter().enumerate() {
                        if !index.contains_key(id.as_str()) {
                            return Err(err(
                                format!("/steps/{i}/trigger/after/{j}"),
                                Kind::Unknown { what: "step", id: id.clone() },
                            ));
                        }
                    }
                }
                Trigger::Marker { step: producer, marker } => {
                    let declared = index.get(producer.as_str()).map(|&p| &self.steps[p].markers);
                    if !declared.is_some_and(|markers| markers.contains(marker)) {
                        return Err(err(
                            format!("/steps/{i}/trigger/marker"),
                            Kind::UnknownMarker { step: producer.clone(), marker: marker.clone() },
                        ));
                    }
                }
            }
        }
        let order = self
            .topological(&index)
            .map_err(|i| err(format!("/steps/{i}/trigger"), Kind::PlanCycle(self.steps[i].id.clone())))?;
        let longest = self.longest_blocking(&index, &order);
        if longest > u64::from(MAX_STEP_MS) {
            return Err(err("/steps".into(), Kind::BlockingTooLong(longest)));
        }
        Ok(())
    }

    fn predecessors<'a>(&'a self, step: &'a PlanStep) -> Vec<&'a str> {
        match &step.trigger {
            Trigger::After(ids) => ids.iter().map(String::as_str).collect(),
            Trigger::Marker { step, .. } => vec![step.as_str()],
        }
    }

    /// Steps in dependency order, or the index of a step on a cycle.
    fn topological(&self, index: &BTreeMap<&str, usize>) -> Result<Vec<usize>, usize> {
        let mut indegree: Vec<usize> = self.steps.iter().map(|s| self.predecessors(s).len()).collect();
        let mut ready: Vec<usize> = (0..self.steps.len()).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(self.steps.len());
        while let Some(i) = ready.pop() {
            order.push(i);
            for (j, step) in self.steps.iter().enumerate() {
                let hits = self.predecessors(step).iter().filter(|p| index.get(*p) == Some(&i)).count();
                if hits > 0 {
                    indegree[j] -= hits;
                    if indegree[j] == 0 {
                        ready.push(j);
                    }
                }
            }
        }
        if order.len() == self.steps.len() {
            Ok(order)
        } else {
            let done: BTreeSet<usize> = order.into_iter().collect();
            Err((0..self.steps.len()).find(|i| !done.contains(i)).expect("some step is on a cycle"))
        }
    }

    /// The longest chain of blocking timeouts, in milliseconds (a non-blocking step adds 0).
    fn longest_blocking(&self, index: &BTreeMap<&str, usize>, order: &[usize]) -> u64 {
        let mut end = vec![0u64; self.steps.len()];
        for &i in order {
            let step = &self.steps[i];
            let start = self.predecessors(step).iter().filter_map(|p| index.get(p)).map(|&p| end[p]).max().unwrap_or(0);
            end[i] = start + if step.blocking { u64::from(step.timeout_ms) } else { 0 };
        }
        end.into_iter().max().unwrap_or(0)
    }

    /// The resources the plan's sound steps play.
    pub fn sounds(&self) -> impl Iterator<Item = (usize, &str)> {
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.effect == "sound.play")
            .filter_map(|(i, s)| s.params["resource"].as_str().map(|r| (i, r)))
    }
}
