//! `prep`: a small cooperative fixture game that exercises what Conecta 4 does not — a
//! preparation phase with `multiple` participation and `actor` actions, a barrier into a
//! `single` phase, labelled randomness, private events, and results where everyone wins or
//! everyone loses.

use std::collections::{BTreeMap, BTreeSet};

use juegoland_sdk::{
    ActionSpec, ConflictPolicy, Corrupt, DeadlineOp, Descriptor, Flow, Game, Lifecycle, MatchResult, Offer, Outcome,
    Participation, PhaseSpec, Pos, Projection, Recipient, RuleError, Seat, Services, Setup, StageSpec, Trans,
    Transition,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub struct Prep;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The team wins when the sum of rolls reaches it.
    #[serde(default = "default_target")]
    pub target: i64,
}

fn default_target() -> i64 {
    12
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Data {
    pub marks: BTreeMap<Seat, Vec<u8>>,
    pub ready: BTreeSet<Seat>,
    pub rolls: Vec<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkPayload {
    #[schemars(range(max = 9))]
    pub value: u8,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "camelCase")]
pub enum Action {
    Mark(MarkPayload),
    Ready(Empty),
    Roll(Empty),
    GiveUp(Empty),
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Event {
    Marked { seat: Seat, value: u8 },
    Rolled { seat: Seat, value: i64 },
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "type", content = "data")]
pub enum Visible {
    #[serde(rename = "mark.placed")]
    Marked { seat: Seat, value: Option<u8> },
    #[serde(rename = "die.rolled")]
    Rolled { seat: Seat, value: i64 },
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct View {
    pub own_marks: Vec<u8>,
    pub mark_counts: BTreeMap<Seat, usize>,
    pub ready: Vec<Seat>,
    pub rolls: Vec<i64>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Context {
    pub seat: Option<Seat>,
}

/// How long a seat has to act in `play` before its turn is skipped.
pub const TURN_MS: i64 = 30_000;

/// (Re)schedules the turn clock: a new generation replaces the previous one.
fn turn_clock(services: &Services<'_>, seat: &str) -> DeadlineOp {
    DeadlineOp::Schedule {
        id: "turn".into(),
        due_ms: services.now_ms() + TURN_MS,
        payload: serde_json::json!({ "seat": seat }),
    }
}

fn active(p: &Pos<Prep>) -> Vec<Seat> {
    p.active_seats().map(str::to_owned).collect()
}

impl Game for Prep {
    type Config = Config;
    type Data = Data;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Context = Context;
    type VisibleEvent = Visible;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            id: "prep".into(),
            version: "1.0.0".into(),
            rules_version: "1.0.0".into(),
            state_schema_version: 1,
            view_schema_version: 1,
            event_schema_version: 1,
            min_seats: 2,
            max_seats: 4,
            phases: vec![
                PhaseSpec {
                    id: "prepare".into(),
                    participation: Participation::Multiple,
                    stages: vec![
                        StageSpec { id: "arrange".into(), actions: vec!["mark".into(), "ready".into()] },
                        StageSpec { id: "waiting".into(), actions: vec![] },
                    ],
                },
                PhaseSpec {
                    id: "play".into(),
                    participation: Participation::Single,
                    stages: vec![StageSpec { id: "act".into(), actions: vec!["roll".into(), "giveUp".into()] }],
                },
            ],
            actions: vec![
                ActionSpec::of::<MarkPayload>("mark", ConflictPolicy::Actor),
                ActionSpec::of::<Empty>("ready", ConflictPolicy::Actor),
                ActionSpec::of::<Empty>("roll", ConflictPolicy::Match),
                ActionSpec::of::<Empty>("giveUp", ConflictPolicy::Match),
            ],
            bots: vec![],
            agents: None,
        }
    }

    fn setup(&self, input: &Setup<Config>, _: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        if input.config.target < 1 {
            return Err(RuleError::illegal("target"));
        }
        let seats: Vec<Seat> = input.participants.keys().cloned().collect();
        Ok(Transition {
            data: Data {
                marks: seats.iter().map(|s| (s.clone(), vec![])).collect(),
                ready: BTreeSet::new(),
                rolls: vec![],
            },
            flow: Flow {
                phase: "prepare".into(),
                round: 0,
                turn: 0,
                actors: seats.iter().map(|s| (s.clone(), "arrange".into())).collect(),
            },
            result: None,
            events: vec![],
            deadlines: vec![],
        })
    }

    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        if p.data.marks.keys().ne(p.participants.keys()) {
            return Err(Corrupt("marks per participant".into()));
        }
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
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let mut data = p.data.clone();
        let mut flow = p.flow.clone();
        let mut events = vec![];
        let mut result = None;
        let mut deadlines = vec![];
        match action {
            Action::Mark(m) => {
                data.marks.get_mut(actor).ok_or_else(|| RuleError::illegal("seat"))?.push(m.value);
                events.push(Event::Marked { seat: actor.into(), value: m.value });
            }
            Action::Ready(_) => {
                if data.marks[actor].is_empty() {
                    return Err(RuleError::illegal("mark-first"));
                }
                data.ready.insert(actor.into());
                if active(p).iter().all(|s| data.ready.contains(s)) {
                    let first = active(p).into_iter().next().expect("an active seat");
                    deadlines.push(turn_clock(services, &first));
                    flow = Flow::single("play", 1, 1, &first, "act");
                } else {
                    flow.actors.insert(actor.into(), "waiting".into());
                }
            }
            Action::Roll(_) => {
                let value = services.random.uniform("roll", 1, 6)?;
                data.rolls.push(value);
                events.push(Event::Rolled { seat: actor.into(), value });
                if data.rolls.iter().sum::<i64>() >= p.config.target {
                    result = Some(everyone(p, Outcome::Win, "target"));
                    flow = flow.terminal();
                    deadlines.push(DeadlineOp::Cancel { id: "turn".into() });
                } else {
                    let seat = next(p, actor);
                    deadlines.push(turn_clock(services, &seat));
                    flow = Flow::single("play", flow.round, flow.turn + 1, &seat, "act");
                }
            }
            Action::GiveUp(_) => {
                result = Some(everyone(p, Outcome::Loss, "gave-up"));
                flow = flow.terminal();
                deadlines.push(DeadlineOp::Cancel { id: "turn".into() });
            }
        }
        Ok(Transition { data, flow, result, events, deadlines })
    }

    fn available_actions(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Action>> {
        let Some(stage) = recipient.seat().and_then(|s| p.flow.stage_of(s)) else { return vec![] };
        match stage {
            "arrange" => vec![
                Offer::Parametrized { action_type: "mark".into(), constraints: serde_json::json!({"max": 9}) },
                Offer::Concrete(Action::Ready(Empty {})),
            ],
            "act" => vec![Offer::Concrete(Action::Roll(Empty {})), Offer::Concrete(Action::GiveUp(Empty {}))],
            _ => vec![],
        }
    }

    fn project(&self, p: &Pos<Self>, recipient: Recipient<'_>) -> Projection<View, Context> {
        let seat = recipient.seat();
        Projection {
            view: View {
                own_marks: seat.and_then(|s| p.data.marks.get(s)).cloned().unwrap_or_default(),
                mark_counts: p.data.marks.iter().map(|(s, m)| (s.clone(), m.len())).collect(),
                ready: p.data.ready.iter().cloned().collect(),
                rolls: p.data.rolls.clone(),
            },
            context: Context { seat: seat.map(str::to_owned) },
            result: p.result.clone(),
        }
    }

    fn project_event(&self, _: &Pos<Self>, _: &Pos<Self>, e: &Event, recipient: Recipient<'_>) -> Vec<Visible> {
        match e {
            Event::Marked { seat, value } => {
                let own = recipient.seat() == Some(seat.as_str());
                vec![Visible::Marked { seat: seat.clone(), value: own.then_some(*value) }]
            }
            Event::Rolled { seat, value } => vec![Visible::Rolled { seat: seat.clone(), value: *value }],
        }
    }

    fn on_lifecycle(
        &self,
        p: &Pos<Self>,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError> {
        let seat = match event {
            Lifecycle::Withdrawal { seat } => seat,
            Lifecycle::DeadlineExpired { id, .. } if id == "turn" && p.flow.phase == "play" => {
                // The turn clock ran out: the turn passes, with a fresh clock.
                let current = p.flow.actors.keys().next().ok_or_else(|| RuleError::illegal("no-turn"))?;
                let seat = next(p, current);
                return Ok(Transition {
                    data: p.data.clone(),
                    flow: Flow::single("play", p.flow.round, p.flow.turn + 1, &seat, "act"),
                    result: None,
                    events: vec![],
                    deadlines: vec![turn_clock(services, &seat)],
                });
            }
            Lifecycle::DeadlineExpired { .. } => return Err(RuleError::illegal("unknown-deadline")),
        };
        let data = p.data.clone();
        if p.flow.phase == "prepare" {
            // Withdrawal in setup cancels: nobody wins.
            return Ok(Transition {
                data,
                flow: p.flow.terminal(),
                result: Some(MatchResult::cancelled("withdrawal-in-setup")),
                events: vec![],
                deadlines: vec![],
            });
        }
        let remaining = active(p);
        if remaining.is_empty() {
            return Ok(Transition {
                data,
                flow: p.flow.terminal(),
                result: Some(everyone(p, Outcome::Loss, "abandoned")),
                events: vec![],
                deadlines: vec![],
            });
        }
        // The team plays on without the leaver; no one is declared winner for staying.
        let (flow, deadlines) = if p.flow.actors.contains_key(seat) {
            let seat = next(p, seat);
            (Flow::single("play", p.flow.round, p.flow.turn + 1, &seat, "act"), vec![turn_clock(services, &seat)])
        } else {
            (p.flow.clone(), vec![])
        };
        Ok(Transition { data, flow, result: None, events: vec![], deadlines })
    }
}

fn next(p: &Pos<Prep>, after: &str) -> Seat {
    let seats = active(p);
    seats.iter().find(|s| s.as_str() > after).or(seats.first()).cloned().expect("an active seat")
}

fn everyone(p: &Pos<Prep>, outcome: Outcome, reason: &str) -> MatchResult {
    MatchResult::completed(reason, p.participants.keys().map(|s| (s.as_str(), outcome)))
}

/// Another rules version of any game: the same rules under another `rulesVersion`, to prove
/// several versions live side by side in one registry.
pub struct Versioned<G>(pub G, pub &'static str);

impl<G: Game> Game for Versioned<G> {
    type Config = G::Config;
    type Data = G::Data;
    type Action = G::Action;
    type Event = G::Event;
    type View = G::View;
    type Context = G::Context;
    type VisibleEvent = G::VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Descriptor { rules_version: self.1.into(), ..self.0.descriptor() }
    }
    fn setup(&self, input: &Setup<G::Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        self.0.setup(input, services)
    }
    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        self.0.validate_position(p)
    }
    fn apply(&self, p: &Pos<Self>, a: &str, x: &G::Action, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        self.0.apply(p, a, x, s)
    }
    fn available_actions(&self, p: &Pos<Self>, r: Recipient<'_>) -> Vec<Offer<G::Action>> {
        self.0.available_actions(p, r)
    }
    fn project(&self, p: &Pos<Self>, r: Recipient<'_>) -> Projection<G::View, G::Context> {
        self.0.project(p, r)
    }
    fn project_event(&self, b: &Pos<Self>, a: &Pos<Self>, e: &G::Event, r: Recipient<'_>) -> Vec<G::VisibleEvent> {
        self.0.project_event(b, a, e, r)
    }
    fn on_lifecycle(&self, p: &Pos<Self>, e: &Lifecycle, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        self.0.on_lifecycle(p, e, s)
    }
}

/// Another rules version of any game that a match must not migrate to unchanged: its
/// invariants also refuse what `refuses` returns (as the corruption's message), and it may
/// declare another state schema version.
pub struct Stricter<G: Game> {
    pub game: G,
    pub rules_version: &'static str,
    pub state_schema_version: u32,
    pub refuses: fn(&Pos<G>) -> Option<&'static str>,
}

impl<G: Game> Game for Stricter<G> {
    type Config = G::Config;
    type Data = G::Data;
    type Action = G::Action;
    type Event = G::Event;
    type View = G::View;
    type Context = G::Context;
    type VisibleEvent = G::VisibleEvent;

    fn descriptor(&self) -> Descriptor {
        Descriptor {
            rules_version: self.rules_version.into(),
            state_schema_version: self.state_schema_version,
            ..self.game.descriptor()
        }
    }
    fn setup(&self, input: &Setup<G::Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        self.game.setup(input, services)
    }
    fn validate_position(&self, p: &Pos<Self>) -> Result<(), Corrupt> {
        match (self.refuses)(p) {
            Some(why) => Err(Corrupt(why.into())),
            None => self.game.validate_position(p),
        }
    }
    fn apply(&self, p: &Pos<Self>, a: &str, x: &G::Action, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        self.game.apply(p, a, x, s)
    }
    fn available_actions(&self, p: &Pos<Self>, r: Recipient<'_>) -> Vec<Offer<G::Action>> {
        self.game.available_actions(p, r)
    }
    fn project(&self, p: &Pos<Self>, r: Recipient<'_>) -> Projection<G::View, G::Context> {
        self.game.project(p, r)
    }
    fn project_event(&self, b: &Pos<Self>, a: &Pos<Self>, e: &G::Event, r: Recipient<'_>) -> Vec<G::VisibleEvent> {
        self.game.project_event(b, a, e, r)
    }
    fn on_lifecycle(&self, p: &Pos<Self>, e: &Lifecycle, s: &mut Services<'_>) -> Result<Trans<Self>, RuleError> {
        self.game.on_lifecycle(p, e, s)
    }
}
