//! `tap`: a tiny real-time fixture game for the `queue` policy. Both seats tap (`queue`)
//! as fast as a 100 ms cooldown per seat allows; the first to five taps wins. `poke` is a
//! `match` action beside it, so the tests can send each policy the other's precondition.

use std::collections::BTreeMap;

use juegoland_sdk::{
    ActionSpec, ConflictPolicy, Corrupt, Descriptor, Flow, Game, Lifecycle, MatchResult, Offer, Outcome, Participation,
    PhaseSpec, Pos, Projection, Recipient, RuleError, Seat, Services, Setup, StageSpec, Trans, Transition,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub struct Tap;

/// The cooldown between two taps of one seat, on the captured instant.
pub const COOLDOWN_MS: i64 = 100;
pub const TAPS_TO_WIN: u32 = 5;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Data {
    pub taps: BTreeMap<Seat, u32>,
    /// Each seat's last accepted tap instant.
    pub last_ms: BTreeMap<Seat, i64>,
    pub pokes: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "camelCase")]
pub enum Action {
    Tap(Empty),
    Poke(Empty),
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    pub seat: Seat,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data")]
pub enum Visible {
    #[serde(rename = "tapped")]
    Tapped { seat: Seat },
}

impl Game for Tap {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = Data;
    type Context = ();
    type VisibleEvent = Visible;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            id: "tap".into(),
            version: "1.0.0".into(),
            rules_version: "1.0.0".into(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: 2,
            max_seats: 2,
            phases: vec![PhaseSpec {
                id: "racing".into(),
                participation: Participation::Multiple,
                stages: vec![StageSpec { id: "race".into(), actions: vec!["tap".into(), "poke".into()] }],
            }],
            actions: vec![
                ActionSpec::of::<Empty>("tap", ConflictPolicy::Queue),
                ActionSpec::of::<Empty>("poke", ConflictPolicy::Match),
            ],
            bots: vec![],
            agents: None,
        }
    }

    fn setup(&self, input: &Setup<Config>, _: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let seats: Vec<Seat> = input.participants.keys().cloned().collect();
        Ok(Transition {
            data: Data { taps: seats.iter().map(|s| (s.clone(), 0)).collect(), last_ms: BTreeMap::new(), pokes: 0 },
            flow: Flow {
                phase: "racing".into(),
                round: 0,
                turn: 0,
                actors: seats.iter().map(|s| (s.clone(), "race".into())).collect(),
            },
            result: None,
            events: vec![],
            deadlines: vec![],
        })
    }

    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        if p.data.taps.values().any(|n| *n > TAPS_TO_WIN) {
            return Err(Corrupt("too many taps".into()));
        }
        Ok(())
    }

    fn apply(
        &self,
        p: &Pos<Self>,
        actor: &str,
        action: &Action,
        s: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let mut data = p.data.clone();
        let mut flow = p.flow.clone();
        let mut result = None;
        let mut events = vec![];
        match action {
            Action::Poke(_) => data.pokes += 1,
            Action::Tap(_) => {
                if data.last_ms.get(actor).is_some_and(|last| s.now_ms() < last + COOLDOWN_MS) {
                    return Err(RuleError::illegal("cooldown"));
                }
                data.last_ms.insert(actor.into(), s.now_ms());
                let n = data.taps.entry(actor.into()).or_default();
                *n += 1;
                events.push(Event { seat: actor.into() });
                if *n == TAPS_TO_WIN {
                    let outcome = |seat: &str| if seat == actor { Outcome::Win } else { Outcome::Loss };
                    result =
                        Some(MatchResult::completed("taps", p.participants.keys().map(|k| (k.as_str(), outcome(k)))));
                    flow = flow.terminal();
                }
            }
        }
        Ok(Transition { data, flow, result, events, deadlines: vec![] })
    }

    fn available_actions(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        match recipient.seat().and_then(|s| p.flow.stage_of(s)) {
            Some(_) => vec![Offer::Concrete(Action::Tap(Empty {})), Offer::Concrete(Action::Poke(Empty {}))],
            None => vec![],
        }
    }

    fn project(&self, p: &Pos<Self>, _: Recipient<'_>) -> Projection<Data, ()> {
        Projection { view: p.data.clone(), context: (), result: p.result.clone() }
    }

    fn project_event(&self, _: &Pos<Self>, _: &Pos<Self>, e: &Event, _: Recipient<'_>) -> Vec<Visible> {
        vec![Visible::Tapped { seat: e.seat.clone() }]
    }

    fn on_lifecycle(&self, p: &Pos<Self>, event: &Lifecycle, _: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        match event {
            Lifecycle::Withdrawal { .. } => Ok(Transition {
                data: p.data.clone(),
                flow: p.flow.terminal(),
                result: Some(MatchResult::cancelled("withdrawal")),
                events: vec![],
                deadlines: vec![],
            }),
            Lifecycle::DeadlineExpired { .. } => Err(RuleError::illegal("no-deadlines")),
        }
    }
}
