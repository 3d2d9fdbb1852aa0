//! `clocked`: a two-seat test game whose only substance is a turn clock, for the deadline
//! scheduler's tests in process. Unlike Conecta 4's clock (which the cross-process tests
//! use), its clock runs in milliseconds and a withdrawal leaves it pending.
//!
//! The seat to move may `pass` (the turn goes to the other seat with a fresh clock: a new
//! generation of the `turn` deadline replaces the previous one) or `resign` (the match ends;
//! the clock is cancelled). When the clock runs out, the seat to move times out: the turn
//! passes with a fresh clock, and after `timeouts` time-outs the seat to move loses. A
//! withdrawal ends the match WITHOUT cancelling the clock (as Conecta 4's does today), so a
//! finished match may keep a pending deadline that must never fire.

#![allow(dead_code)]

use juegoland_sdk::{
    ActionSpec, ConflictPolicy, Corrupt, DeadlineOp, Descriptor, Flow, Game, Lifecycle, MatchResult, Offer, Outcome,
    Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Seat, Services, Setup, StageSpec, Trans,
    Transition,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub struct Clocked;

/// The game key of [`Clocked`].
pub const GAME_ID: &str = "clocked";
pub const RULES_VERSION: &str = "1.0.0";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// How long a seat has to move, in milliseconds.
    #[schemars(range(min = 1))]
    pub turn_ms: i64,
    /// The first turn's clock, when it differs (benchmarks spread the first due instants).
    #[serde(default)]
    pub first_turn_ms: Option<i64>,
    /// Time-outs before the seat to move loses (the last one ends the match).
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub timeouts: u32,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Data {
    pub passes: u32,
    pub timeouts: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "camelCase")]
pub enum Action {
    Pass(Empty),
    Resign(Empty),
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Event {
    Passed { seat: Seat },
    TimedOut { seat: Seat },
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data")]
pub enum Visible {
    #[serde(rename = "turn.passed")]
    Passed { seat: Seat },
    #[serde(rename = "turn.timedOut")]
    TimedOut { seat: Seat },
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct View {
    pub to_move: Option<Seat>,
    pub passes: u32,
    pub timeouts: u32,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Context {
    pub seat: Option<Seat>,
}

/// (Re)schedules the turn clock of `seat`, due `ms` from now.
fn clock(services: &Services<'_>, seat: &str, ms: i64) -> DeadlineOp {
    DeadlineOp::Schedule {
        id: "turn".into(),
        due_ms: services.now_ms() + ms,
        payload: serde_json::json!({ "seat": seat }),
    }
}

fn other(p: &Pos<Clocked>, seat: &str) -> Seat {
    p.participants.keys().find(|s| s.as_str() != seat).cloned().unwrap_or_else(|| seat.to_owned())
}

fn to_move(p: &Pos<Clocked>) -> Result<Seat, RuleError> {
    p.flow.actors.keys().next().cloned().ok_or_else(|| RuleError::illegal("no-turn"))
}

fn lost_by(p: &Pos<Clocked>, loser: &str, reason: &str) -> MatchResult {
    let winner = other(p, loser);
    MatchResult::completed(reason, [(loser, Outcome::Loss), (winner.as_str(), Outcome::Win)])
}

impl Game for Clocked {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = Visible;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            id: GAME_ID.into(),
            version: "1.0.0".into(),
            rules_version: RULES_VERSION.into(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: 2,
            max_seats: 2,
            phases: vec![PhaseSpec {
                id: "play".into(),
                participation: Participation::Single,
                stages: vec![StageSpec { id: "act".into(), actions: vec!["pass".into(), "resign".into()] }],
            }],
            actions: vec![
                ActionSpec::of::<Empty>("pass", ConflictPolicy::Match),
                ActionSpec::of::<Empty>("resign", ConflictPolicy::Match),
            ],
            bots: vec![],
            agents: None,
        }
    }

    fn setup(&self, input: &Setup<Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        if input.config.turn_ms < 1 || input.config.timeouts < 1 {
            return Err(RuleError::illegal("config"));
        }
        let first = input.participants.keys().next().cloned().ok_or_else(|| RuleError::illegal("no-seats"))?;
        let first_ms = input.config.first_turn_ms.unwrap_or(input.config.turn_ms);
        Ok(Transition {
            data: Data { passes: 0, timeouts: 0 },
            flow: Flow::single("play", 1, 1, &first, "act"),
            result: None,
            events: vec![],
            deadlines: vec![clock(services, &first, first_ms)],
        })
    }

    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        if p.result.is_some() != p.flow.actors.is_empty() {
            return Err(Corrupt("result and actors disagree".into()));
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
        Ok(match action {
            Action::Pass(_) => {
                data.passes += 1;
                let next = other(p, actor);
                Transition {
                    data,
                    flow: Flow::single("play", p.flow.round, p.flow.turn + 1, &next, "act"),
                    result: None,
                    events: vec![Event::Passed { seat: actor.into() }],
                    deadlines: vec![clock(s, &next, p.config.turn_ms)],
                }
            }
            Action::Resign(_) => Transition {
                data,
                flow: p.flow.terminal(),
                result: Some(lost_by(p, actor, "resigned")),
                events: vec![],
                deadlines: vec![DeadlineOp::Cancel { id: "turn".into() }],
            },
        })
    }

    fn available_actions(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        match recipient.seat().and_then(|s| p.flow.stage_of(s)) {
            Some("act") => vec![Offer::Concrete(Action::Pass(Empty {})), Offer::Concrete(Action::Resign(Empty {}))],
            _ => vec![],
        }
    }

    fn project(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        Projection {
            view: View {
                to_move: p.flow.actors.keys().next().cloned(),
                passes: p.data.passes,
                timeouts: p.data.timeouts,
            },
            context: Context { seat: recipient.seat().map(str::to_owned) },
            result: p.result.clone(),
        }
    }

    fn project_event(&self, _: &Pos<Self>, _: &Pos<Self>, e: &Event, _: Recipient<'_>) -> Vec<Visible> {
        vec![match e {
            Event::Passed { seat } => Visible::Passed { seat: seat.clone() },
            Event::TimedOut { seat } => Visible::TimedOut { seat: seat.clone() },
        }]
    }

    fn on_lifecycle(&self, p: &Pos<Self>, event: &Lifecycle, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        let mut data = p.data.clone();
        match event {
            Lifecycle::DeadlineExpired { id, .. } if id == "turn" => {
                let late = to_move(p)?;
                data.timeouts += 1;
                let events = vec![Event::TimedOut { seat: late.clone() }];
                if data.timeouts >= p.config.timeouts {
                    return Ok(Transition {
                        data,
                        flow: p.flow.terminal(),
                        result: Some(lost_by(p, &late, "timeout")),
                        events,
                        deadlines: vec![],
                    });
                }
                let next = other(p, &late);
                Ok(Transition {
                    data,
                    flow: Flow::single("play", p.flow.round, p.flow.turn + 1, &next, "act"),
                    result: None,
                    events,
                    deadlines: vec![clock(s, &next, p.config.turn_ms)],
                })
            }
            Lifecycle::DeadlineExpired { .. } => Err(RuleError::illegal("unknown-deadline")),
            // The clock is deliberately left running (see the module docs).
            Lifecycle::Withdrawal { seat } => Ok(Transition {
                data,
                flow: p.flow.terminal(),
                result: Some(lost_by(p, seat, "withdrawal")),
                events: vec![],
                deadlines: vec![],
            }),
        }
    }
}
