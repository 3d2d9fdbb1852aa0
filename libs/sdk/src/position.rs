//! The position: what a match *is* at one revision, as finite JSON.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A seat id such as `p0`. Seats are seats; binding one to an account is the platform's job.
pub type Seat = String;

/// The seat ids `p0..p{n-1}`.
pub fn seat_ids(n: usize) -> Vec<Seat> {
    (0..n).map(|i| format!("p{i}")).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParticipantStatus {
    Active,
    Withdrawn,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Participant {
    pub status: ParticipantStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

impl Participant {
    pub fn active() -> Self {
        Self { status: ParticipantStatus::Active, team: None }
    }

    pub fn is_active(&self) -> bool {
        self.status == ParticipantStatus::Active
    }
}

/// Phase, round, turn and the enabled actors (seat → stage). There is no `currentSeat`:
/// who may act is exactly the key set of `actors`. A terminal position has no actors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flow {
    pub phase: String,
    pub round: u32,
    pub turn: u32,
    pub actors: BTreeMap<Seat, String>,
}

impl Flow {
    /// A flow with exactly one enabled actor in `stage`.
    pub fn single(phase: &str, round: u32, turn: u32, seat: &str, stage: &str) -> Self {
        Self { phase: phase.to_owned(), round, turn, actors: BTreeMap::from([(seat.to_owned(), stage.to_owned())]) }
    }

    /// The same phase, round and turn with no actors (a terminal flow).
    pub fn terminal(&self) -> Self {
        Self { actors: BTreeMap::new(), ..self.clone() }
    }

    /// The stage of `seat`, if it is an enabled actor.
    pub fn stage_of(&self, seat: &str) -> Option<&str> {
        self.actors.get(seat).map(String::as_str)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Win,
    Loss,
    Draw,
    Neutral,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParticipantResult {
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<BTreeMap<String, i64>>,
}

impl ParticipantResult {
    pub fn outcome(outcome: Outcome) -> Self {
        Self { outcome, score: None, rank: None, team: None, metrics: None }
    }
}

/// The result of a finished match. The private result lists every participant, withdrawn
/// ones included; a cancelled match has no winners.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum MatchResult {
    Completed { reason_code: String, participants: BTreeMap<Seat, ParticipantResult> },
    Cancelled { reason_code: String },
}

impl MatchResult {
    /// A completed result from `(seat, outcome)` pairs.
    pub fn completed<'a>(reason: &str, outcomes: impl IntoIterator<Item = (&'a str, Outcome)>) -> Self {
        Self::Completed {
            reason_code: reason.to_owned(),
            participants: outcomes
                .into_iter()
                .map(|(seat, o)| (seat.to_owned(), ParticipantResult::outcome(o)))
                .collect(),
        }
    }

    pub fn cancelled(reason: &str) -> Self {
        Self::Cancelled { reason_code: reason.to_owned() }
    }
}

/// A match position. `C` and `D` are the game's typed config and data, or
/// `serde_json::Value` in the erased, persisted form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Position<C, D> {
    pub config: C,
    pub participants: BTreeMap<Seat, Participant>,
    pub data: D,
    pub flow: Flow,
    pub result: Option<MatchResult>,
}

impl<C, D> Position<C, D> {
    pub fn is_finished(&self) -> bool {
        self.result.is_some()
    }

    /// Seats whose participant is active, in seat order.
    pub fn active_seats(&self) -> impl Iterator<Item = &str> {
        self.participants.iter().filter(|(_, p)| p.is_active()).map(|(s, _)| s.as_str())
    }
}

/// The JSON (persisted) form of a position: config and data as JSON text.
pub type JsonPosition = Position<RawJson, RawJson>;

/// A JSON value kept as its text. A live match holds its persisted position in this form: a
/// fraction of the memory of a `serde_json::Value` tree (whose every object is a B-tree
/// node), and written to the store verbatim. Equality is JSON equality (key order and
/// whitespace do not count), since a store may hand the text back reformatted.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawJson(Box<serde_json::value::RawValue>);

impl RawJson {
    /// The compact text of `value`.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(Self)
    }

    /// Decodes the text into `T`.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// The value as a `serde_json::Value` tree.
    pub fn to_value(&self) -> serde_json::Value {
        self.decode().expect("a RawJson holds valid JSON")
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl From<Box<serde_json::value::RawValue>> for RawJson {
    fn from(raw: Box<serde_json::value::RawValue>) -> Self {
        Self(raw)
    }
}

impl From<&serde_json::Value> for RawJson {
    fn from(value: &serde_json::Value) -> Self {
        Self::encode(value).expect("a Value always serializes")
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get() || self.to_value() == other.to_value()
    }
}

impl JsonSchema for RawJson {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RawJson".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        serde_json::Value::json_schema(generator)
    }
}
