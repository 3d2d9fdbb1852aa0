//! The rules contract of the Juegoland engine.
//!
//! Owns: positions (config, participants, data, flow, result), the typed [`Game`] trait
//! authors implement and its erased JSON-level form ([`ErasedGame`]) that the engine and
//! the registry use, the deterministic services rules receive (captured instant, labelled
//! randomness with a private trace and a replay mode), turn clocks built on deadlines
//! ([`clock`]), the declaration of the seats AI agents may play ([`agents`]) and the
//! component library (decks, dice, wheels, boards, pieces, custom kinds; instances and
//! zones).
//!
//! Must not use: tokio, IO of any kind, clocks, OS randomness, the network, storage, or any
//! one game's rules. Everything here is synchronous and deterministic.

pub mod agents;
pub mod clock;
pub mod components;
pub mod erased;
pub mod game;
pub mod position;
pub mod random;
mod tagged;

pub use agents::{AgentLimits, AgentMode, AgentProfile, Difficulty, VirtualPlayers};
pub use clock::{
    CLOCK_DEADLINE, ClockError, ClockMode, ClockPayload, ClockState, PhaseClock, RunningTurn, TimeoutPolicy, TurnClock,
};
pub use components::{
    CardFace, ComponentDeclaration, ComponentDefinition, ComponentError, ComponentSet, CustomRegistry, Instance,
    InstanceId, Visibility, Zone, ZoneError, Zones, check_conservation, poker52, spanish40,
};
pub use erased::{ErasedGame, ErasedOffer, ErasedProjection, ErasedTransition, LoadedPosition, Schemas, erase};
pub use game::{
    ActionSpec, ConflictPolicy, Corrupt, DeadlineOp, Descriptor, Game, Handover, Lifecycle, Offer, Participation,
    PhaseSpec, Pos, Projection, Recipient, RuleError, Setup, StageSpec, Trans, Transition,
};
pub use position::{
    Flow, JsonPosition, MatchResult, Outcome, Participant, ParticipantResult, ParticipantStatus, Position, RawJson,
    Seat, seat_ids,
};
pub use random::{
    EntropySource, RandomError, Randomness, ScriptedEntropy, Services, SplitMix64, Trace, TraceEntry, below,
};
