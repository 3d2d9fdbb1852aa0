//! The engine core: the command pipeline as pure code.
//!
//! Owns: the registry of pinned rules modules with their compiled schemas; turning (stored
//! match, command or lifecycle event, services) into a [`Commit`] value — new state and
//! counters (revision, phase epoch, actor revisions), receipt, internal events, randomness
//! trace, deadlines with generations, and per-recipient publications (snapshots with visible
//! events and offers); validation of every rules output; replay of a match from its log; the published package a
//! match pins and the check that it is still published (through a trait: no IO here).
//!
//! Must not use: tokio, IO, storage, the network, clocks or OS randomness (the caller passes
//! the captured instant and an entropy source), nor know any game by name.

pub mod check;
pub mod migration;
pub mod packages;
pub mod pipeline;
pub mod project;
pub mod registry;
pub mod replay;
pub mod state;

pub use check::OutputSchema;
pub use migration::{Migration, MigrationError, MigrationMark};
pub use packages::{ChoiceError, GameChoice, PinError, PublishedGame, PublishedPackages};
pub use pipeline::{
    CreateError, CreateOptions, Decision, Engine, Fault, LifecycleError, LifecycleRequest, Limits, LiveMatch,
    MAX_PRINCIPAL_CHARS, Pending, check_principal, is_reserved_principal, principal_shape, valid_reason_code,
};
pub use registry::{LoadedGame, Registry, RegistryError, rules_digest};
pub use replay::{ReplayError, replay};
pub use state::{
    Commit, ControllerKind, Deadline, EXPIRED_ABANDONED, EXPIRED_UNJOINED, EXPIRY_DEADLINE, Expiry, GameKey, LogEntry,
    LoggedOp, MatchState, PackagePin, Publication, Receipt, ReceiptKey, ReceiptOutcome, ReplayOf, SNAPSHOT_EVERY,
    SeatHolder, SeatMoves, StoredMatch,
};
