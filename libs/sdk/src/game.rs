//! The typed rules contract a game implements, and the static description of a game.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::agents::VirtualPlayers;
use crate::position::{Flow, MatchResult, Participant, Position, Seat};
use crate::random::{EntropySource, Services};

/// How concurrent commands on an action are serialized (see the engine spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConflictPolicy {
    /// Depends on shared state: the precondition is the global revision.
    Match,
    /// Independent preparation of the actor's own private state: the precondition is the
    /// phase epoch and the actor's revision. A game must prove confluence to use it.
    Actor,
    /// Real-time input (engine spec § Real-time commands): no revision; the match's
    /// serialization point orders commands by arrival in a bounded FIFO, gives each a
    /// command sequence, and the rules judge each against the state it meets, rejecting what
    /// no longer makes sense (a wall, a cooldown) with a final rejection.
    Queue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Participation {
    /// Exactly one actor while the phase is active.
    Single,
    /// Any set of enabled actors.
    Multiple,
    /// No actors: the phase advances by a durable deadline.
    Automatic,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageSpec {
    pub id: String,
    /// Action types allowed in this stage.
    pub actions: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseSpec {
    pub id: String,
    pub participation: Participation,
    pub stages: Vec<StageSpec>,
}

/// One action type: its conflict policy and payload schema (generated, never hand-written).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionSpec {
    pub action_type: String,
    pub policy: ConflictPolicy,
    pub payload_schema: Value,
}

impl ActionSpec {
    /// An action spec whose payload schema is generated from `P`.
    pub fn of<P: JsonSchema>(action_type: &str, policy: ConflictPolicy) -> Self {
        Self { action_type: action_type.to_owned(), policy, payload_schema: schemars::schema_for!(P).to_value() }
    }
}

/// A game's identity and static shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub id: String,
    /// The package version.
    pub version: String,
    pub rules_version: String,
    pub state_schema_version: u32,
    pub view_schema_version: u32,
    pub event_schema_version: u32,
    pub min_seats: u32,
    pub max_seats: u32,
    pub phases: Vec<PhaseSpec>,
    pub actions: Vec<ActionSpec>,
    /// Built-in bot profiles a seat may be given to.
    pub bots: Vec<String>,
    /// The seats AI agents may play ([`VirtualPlayers`]); `None`: no agent seats, never
    /// inferred. A declaration about who may answer a seat, not part of the rules contract:
    /// the contract digest leaves it out (docs/decisions.md, "agent seats").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<VirtualPlayers>,
}

impl Descriptor {
    pub fn action(&self, action_type: &str) -> Option<&ActionSpec> {
        self.actions.iter().find(|a| a.action_type == action_type)
    }

    pub fn phase(&self, id: &str) -> Option<&PhaseSpec> {
        self.phases.iter().find(|p| p.id == id)
    }

    /// Whether `action_type` is allowed in `stage` of `phase`.
    pub fn stage_allows(&self, phase: &str, stage: &str, action_type: &str) -> bool {
        self.phase(phase)
            .and_then(|p| p.stages.iter().find(|s| s.id == stage))
            .is_some_and(|s| s.actions.iter().any(|a| a == action_type))
    }

    /// The URN of an action's payload schema, as named in parametrized offers.
    pub fn action_schema_id(&self, action_type: &str) -> String {
        format!("urn:juegoland:game:{}:action:{}:{}", self.id, action_type, self.view_schema_version)
    }
}

/// The hand-over policy of a match (engine spec § Seats): who answers "your move?" for a
/// seat whose human is away. A disconnect alone is never a withdrawal, under any policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum Handover {
    /// Nobody: the seat waits for its human (or its turn clock, if the game has one).
    Off,
    /// The built-in bot `profile` plays the seat once its human has been away `afterMs`, and
    /// hands it back when the human syncs again: same seat, no new invitation.
    #[serde(rename_all = "camelCase")]
    Bot {
        #[schemars(range(min = 1000, max = 3_600_000))]
        after_ms: u64,
        #[schemars(length(min = 1, max = 64))]
        profile: String,
    },
    /// The game's turn clock decides (its default move or timeout); the engine hands nothing
    /// over.
    Clock,
    /// Nobody plays for an away human: once it has been away `afterMs`, its seat is withdrawn
    /// (a forfeit), and the game's withdrawal policy decides what follows (in a game of two,
    /// the other seat wins).
    #[serde(rename_all = "camelCase")]
    Forfeit {
        #[schemars(range(min = 1000, max = 3_600_000))]
        after_ms: u64,
    },
    /// Nobody plays for an away human: once it has been away `afterMs`, the whole match is
    /// cancelled (no winners), so that no result counts.
    #[serde(rename_all = "camelCase")]
    Cancel {
        #[schemars(range(min = 1000, max = 3_600_000))]
        after_ms: u64,
    },
}

impl Handover {
    /// The longest grace a policy may give (one hour) and the shortest (one second).
    pub const AFTER_MS: std::ops::RangeInclusive<u64> = 1_000..=3_600_000;

    /// How long an away human keeps its seat before the policy acts; `None` for the
    /// policies that never act (`off`, `clock`).
    pub fn after_ms(&self) -> Option<u64> {
        match self {
            Handover::Bot { after_ms, .. } | Handover::Forfeit { after_ms } | Handover::Cancel { after_ms } => {
                Some(*after_ms)
            }
            Handover::Off | Handover::Clock => None,
        }
    }
}

/// Who a projection or offer list is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipient<'a> {
    Seat(&'a str),
    /// An authorized spectator (only when the game defines its projection).
    Spectator,
}

impl Recipient<'_> {
    pub fn seat(&self) -> Option<&str> {
        match self {
            Recipient::Seat(s) => Some(s),
            Recipient::Spectator => None,
        }
    }
}

/// An available action for a recipient. The engine adds the precondition.
#[derive(Clone, Debug, PartialEq)]
pub enum Offer<A> {
    /// A complete action the recipient may send as is.
    Concrete(A),
    /// An action type whose payload the client builds, with the visible constraints (never
    /// millions of coordinates).
    Parametrized { action_type: String, constraints: Value },
}

/// What a recipient is authorized to see.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection<V, C> {
    pub view: V,
    pub context: C,
    pub result: Option<MatchResult>,
}

/// A change to the match's persisted deadlines. The engine assigns generations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum DeadlineOp {
    /// Schedule (or replace) the deadline `id`; earlier generations stop counting.
    Schedule {
        id: String,
        due_ms: i64,
        payload: Value,
    },
    Cancel {
        id: String,
    },
}

/// A lifecycle event given to `on_lifecycle`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum Lifecycle {
    /// The platform withdrew `seat`; the engine already marked it `withdrawn`.
    Withdrawal { seat: Seat },
    /// The deadline `id` fired with its current generation.
    DeadlineExpired { id: String, payload: Value },
}

/// The complete next transition returned by rules. Config and participants are not in it:
/// they are the engine's.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition<D, E> {
    pub data: D,
    pub flow: Flow,
    pub result: Option<MatchResult>,
    /// Internal events, in order; `project_event` derives what each recipient sees.
    pub events: Vec<E>,
    pub deadlines: Vec<DeadlineOp>,
}

/// Why rules refused to produce a transition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// An illegal move: a final business rejection (`ILLEGAL_ACTION`). `reason` is a short
    /// machine key safe to show to the actor (never hidden state).
    #[error("illegal action: {reason}")]
    Illegal { reason: String },
    /// A bug or corrupted input in rules: an internal failure that commits nothing.
    #[error("rules fault: {message}")]
    Fault { message: String },
}

impl RuleError {
    pub fn illegal(reason: impl Into<String>) -> Self {
        Self::Illegal { reason: reason.into() }
    }

    pub fn fault(message: impl Into<String>) -> Self {
        Self::Fault { message: message.into() }
    }
}

impl From<crate::random::RandomError> for RuleError {
    fn from(e: crate::random::RandomError) -> Self {
        Self::Fault { message: e.to_string() }
    }
}

/// A violated position invariant: corruption, never a user error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid position: {0}")]
pub struct Corrupt(pub String);

/// The input of `setup`.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup<C> {
    pub config: C,
    pub participants: BTreeMap<Seat, Participant>,
}

/// The typed position of game `G`.
pub type Pos<G> = Position<<G as Game>::Config, <G as Game>::Data>;
/// The typed transition of game `G`.
pub type Trans<G> = Transition<<G as Game>::Data, <G as Game>::Event>;

/// The rules of one game version. Every function is synchronous and deterministic: time and
/// randomness come only through [`Services`]; `project`, `project_event`,
/// `available_actions` and `validate_position` get no randomness at all.
pub trait Game: Send + Sync + 'static {
    type Config: Serialize + DeserializeOwned + JsonSchema + Clone + PartialEq + Send + Sync + 'static;
    type Data: Serialize + DeserializeOwned + JsonSchema + Clone + PartialEq + Send + Sync + 'static;
    /// The action set, serialized adjacently tagged: `{"type": "...", "payload": {...}}`.
    type Action: Serialize + DeserializeOwned + Clone + Send + Sync + 'static;
    type Event: Serialize + DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static;
    type View: Serialize + JsonSchema + 'static;
    type Context: Serialize + JsonSchema + 'static;
    /// Visible events, serialized adjacently tagged: `{"type": "...", "data": {...}}`.
    type VisibleEvent: Serialize + JsonSchema + 'static;

    fn descriptor(&self) -> Descriptor;

    /// The initial transition.
    fn setup(&self, input: &Setup<Self::Config>, services: &mut Services<'_>) -> Result<Trans<Self>, RuleError>;

    /// Global invariants; an error means corruption.
    fn validate_position(&self, position: &Pos<Self>) -> Result<(), Corrupt>;

    /// `Err(Illegal)` for an illegal move, else the complete next transition. The engine has
    /// already checked the actor is enabled in a stage that allows the action type.
    fn apply(
        &self,
        position: &Pos<Self>,
        actor: &str,
        action: &Self::Action,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError>;

    fn available_actions(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Vec<Offer<Self::Action>>;

    fn project(&self, position: &Pos<Self>, recipient: Recipient<'_>) -> Projection<Self::View, Self::Context>;

    fn project_event(
        &self,
        before: &Pos<Self>,
        after: &Pos<Self>,
        event: &Self::Event,
        recipient: Recipient<'_>,
    ) -> Vec<Self::VisibleEvent>;

    fn on_lifecycle(
        &self,
        position: &Pos<Self>,
        event: &Lifecycle,
        services: &mut Services<'_>,
    ) -> Result<Trans<Self>, RuleError>;

    /// Whether the game defines a spectator projection: what `project`, `project_event` and
    /// `available_actions` give [`Recipient::Spectator`] is meant for anyone the platform lets
    /// watch (public facts only, never an offer). Without it (the default) the engine
    /// publishes nothing for spectators and refuses to sync one, whatever a grant says. It is
    /// a declaration about who may receive the projection, not a change of its schemas, so it
    /// is not part of the contract digest (docs/decisions.md, "spectators").
    fn spectators(&self) -> bool {
        false
    }

    /// Who plays a seat whose human is away ([`Handover`]): this game's default, which a
    /// match's creation may override. Like [`Game::spectators`], a declaration about the
    /// seats, not the rules' contract: not part of the contract digest.
    fn handover(&self) -> Handover {
        Handover::Off
    }

    /// A built-in bot's move for `seat`, decided outside any transaction and submitted like
    /// any seat's command. `None` when the seat has nothing to do.
    fn bot_action(
        &self,
        _position: &Pos<Self>,
        _seat: &str,
        _profile: &str,
        _entropy: &mut dyn EntropySource,
    ) -> Option<Self::Action> {
        None
    }
}
