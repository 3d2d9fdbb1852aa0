//! Durable state behind one trait: matches, participants, receipts, the per-match log,
//! deadlines and the outbox.
//!
//! Owns: the [`Store`] contract every backend honours — a [`Commit`] is written in ONE
//! atomic step, fenced by a revision compare-and-set so a stale writer can never commit
//! over a newer revision — the SQL schema's use (the migrations themselves live in the
//! workspace's `migrations/`, PostgreSQL at the top, SQLite in `migrations/sqlite/`), and
//! three backends. Must not use: any service, the bus, or rules (the store persists what
//! the engine decided; it never re-judges it).
//!
//! # Which backend
//!
//! | backend | durable | processes | for |
//! |---|---|---|---|
//! | [`MemoryStore`] | no | one | unit and actor tests |
//! | [`SqliteStore`] | yes, one file | ONE process only | `juegoland dev`, quick starts |
//! | [`PgStore`] | yes | many nodes | production |
//!
//! All three pass the same behaviour suite (`tests/it/suite.rs`), so code that works
//! against one works against the others. Both SQL backends run their migrations when they
//! open; nobody runs them by hand.
//!
//! # Ownership fencing
//!
//! In a cluster a match is owned by one node process at a time. Every store handle has a
//! fixed owner identity: none (unowned mode: the all-in-one process and most tests; no owner
//! checks at all) or the node's incarnation, set with `owned_by` on the backend
//! ([`PgStore::owned_by`], [`SqliteStore::owned_by`], [`MemoryStore::owned_by`]). An owned
//! handle creates matches as their owner at owner epoch 1, and its commits (updates and
//! rejection-only commits alike) pass only while the match is still its own, in the same
//! atomic step as the revision compare-and-set; otherwise they are [`StoreError::Conflict`],
//! exactly like a lost revision fence. [`Store::claim`] takes a match over unconditionally
//! (the last claim wins: liveness is the router's job, safety is this fence) and bumps its
//! owner epoch; [`Store::release`] gives it up. Clones of a handle share its data, so
//! `store.clone().owned_by(other)` is a second owner over the same data.
//!
//! # Deadline claims
//!
//! Pending deadlines are fired by scheduler replicas, any number of them at once. A replica
//! takes a batch with [`Store::claim_deadlines`]: due pending rows nobody holds a live claim
//! on become its own for a lease (PostgreSQL: one `UPDATE` over a `SELECT … FOR UPDATE SKIP
//! LOCKED`, so two replicas never claim the same row; the lease runs on the database clock).
//! It fires each through its match; the match's commit turns the row `fired` (or, for a
//! generation replaced meanwhile, the match refuses it as stale). A replica that dies leaves
//! its claims behind; they expire and are claimed again. Claims only share the work: safety
//! rests on the match's generation check and its commit, never on a lease.
//! SQLite and memory claims are the same contract for one process.
//!
//! # Webhook cursors
//!
//! Each configured webhook endpoint has a durable cursor into the platform feed and a lease
//! (migration 0015). A deliverer takes the endpoint with [`Store::claim_webhook`] (the row is
//! created at the feed's start by the first claim; the holder renews with the same call),
//! reads the feed after the claim's cursor, and once the endpoint answered 2xx moves the
//! cursor with [`Store::advance_webhook`] — a compare-and-set on the holder, its epoch and the
//! cursor it read from, so a holder that lost the endpoint (it stalled past its lease and
//! another deliverer took over) moves nothing. Unlike a deadline claim, the lease is what
//! keeps deliveries of one endpoint in order; a stalled holder can still send one batch the
//! new holder sends again, which at-least-once delivery allows (receivers dedupe by event id).
//!
//! # Errors
//!
//! [`StoreError::Conflict`] means the caller's view is stale (reload); [`StoreError::Unavailable`]
//! means nothing was written and the same commit may be retried later;
//! [`StoreError::Corrupt`] means a human must look.

use std::time::Duration;

use juegoland_core::{Commit, LogEntry, MatchState, Publication, Receipt, ReceiptKey, StoredMatch};
use uuid::Uuid;

#[macro_use]
mod crash;
pub mod audit;
mod dir_lock;
pub mod listing;
mod memory;
mod pg;
mod pg_batch;
mod rows;
mod sqlite;
mod sqlite_batch;
mod webhook_endpoints;

pub use dir_lock::LOCK_FILE;
pub use memory::MemoryStore;
pub use pg::{PgDirectory, PgStore};
pub use sqlite::{SQLITE_FILE, SqliteStore};
pub use webhook_endpoints::{WebhookCursor, WebhookEndpoint, WebhookEndpoints, WebhookOrigin};

#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The compare-and-set failed: another writer committed first (or already stored this
    /// receipt, or already created this match), or the match is owned by another node than
    /// the committing store's owner. The caller's view of the match is stale; reload it (or,
    /// when ownership moved, stop serving it). Nothing of the commit was written.
    #[error("match {match_id} is not at revision {expected:?} or is owned by another node")]
    Conflict { match_id: Uuid, expected: Option<u64> },
    /// The store cannot be reached or is restarting, or the transaction lost a
    /// serialization race; nothing was written. Retry the same command later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data does not decode, or the store refused data for a reason no retry fixes.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
}

impl From<StoreError> for juegoland_api::MatchError {
    /// A store failure as the match API tells it: a lost fence means the match moved (retry
    /// the same request), corrupt data is internal.
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(m) => Self::Unavailable(m),
            StoreError::Conflict { .. } => Self::Unavailable(e.to_string()),
            StoreError::Corrupt(m) => Self::Internal(m),
        }
    }
}

/// Why a store could not be opened (before any match is read or written).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The caller asked for existing data and there is none: a missing data directory or
    /// database file, or a database without the schema. Nothing was created.
    #[error("no Juegoland store at {location}: {why}")]
    NoStore { location: String, why: &'static str },
    /// Another process serves this data directory (it holds the directory's lock).
    #[error("the data directory {} is in use by another process: {holder} holds {}", dir.display(), lock.display())]
    Locked { dir: std::path::PathBuf, lock: std::path::PathBuf, holder: String },
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An outbox row not yet dispatched to the bus.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxRow {
    pub publication: Publication,
}

/// The outbox rows still waiting for dispatch: how many, and how long the oldest has waited
/// (the node's sweeper reports both as metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutboxBacklog {
    /// Undispatched rows: one per publication (a recipient of a revision).
    pub rows: u64,
    /// How long ago the oldest undispatched row was written, on the store's clock; `None`
    /// when nothing waits.
    pub oldest_age: Option<Duration>,
}

/// A pending deadline that is due: what the scheduler fires, with its generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueDeadline {
    pub match_id: Uuid,
    pub deadline_id: String,
    pub generation: u64,
    pub due_ms: i64,
}

/// A deliverer's hold on a webhook endpoint ([`Store::claim_webhook`]): delivery resumes after
/// `cursor`, and only this claimant at this epoch may move it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookClaim {
    pub endpoint: String,
    pub claimant: String,
    /// Grows each time the endpoint passes to a claimant that did not hold it.
    pub epoch: u64,
    /// The feed cursor after the last event the endpoint acknowledged (the default: none).
    pub cursor: juegoland_api::FeedCursor,
}

/// What the engine persists. Every method is one atomic operation.
#[async_trait::async_trait]
pub trait Store: WebhookEndpoints + Send + Sync + 'static {
    /// Writes the revision (its log entry, receipt and publications), participants,
    /// deadlines and, at least at its snapshot points (`MatchState::is_snapshot_point`), the
    /// state atomically, if the stored revision is still `commit.expected_revision` (or the
    /// match does not exist, for `None`). A commit without a new state (a final rejection) is fenced the
    /// same way. A commit with neither a state nor an expected revision names no match to
    /// fence against and is refused as a conflict.
    ///
    /// An owned store (see the crate docs) also requires the match to be owned by its owner
    /// for every commit but a creation, in the same atomic step, and creates matches owned by
    /// itself at owner epoch 1; a match owned by another node (or by none) is a conflict.
    ///
    /// The match's pending deadlines become exactly `state.deadlines`: a generation no
    /// longer there was consumed (when the commit's log fired it) or cancelled.
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError>;
    /// The match as stored: the last state written (a snapshot) and the log entries after
    /// it (`Engine::restore` recovers them). The revision that finishes a match is always a
    /// snapshot, so a finished match has no tail.
    async fn load(&self, match_id: Uuid) -> Result<Option<StoredMatch>, StoreError>;
    /// Writes `state` as its match's snapshot (the state [`Store::load`] answers, with no
    /// tail) when it is the match's newest revision and newer than the stored snapshot; an
    /// owned store writes it only for a match it owns. Anything else changes nothing and is
    /// no error: a match passivating between snapshot points leaves its state so that its
    /// next activation redoes nothing, and a newer commit or owner makes that moot. True when
    /// it wrote.
    async fn snapshot(&self, state: &MatchState) -> Result<bool, StoreError>;
    /// Replaces a match's state at the same revision (the state-migration admin operation
    /// and its restore, `juegoland_core::migration`): writes `state` — its state and the
    /// pinned rules and package columns — only while the stored match is at
    /// `expected.revision` with no revision after it, pinned to `expected.game`; else
    /// [`StoreError::Conflict`]. An owned store writes only a match it owns. Run it on a match
    /// no actor serves (`juegoland migrate-match` opens the store alone).
    async fn replace_snapshot(&self, expected: &MatchState, state: &MatchState) -> Result<(), StoreError>;
    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError>;
    /// Every receipt of a match (applied and rejected commands alike), in no particular
    /// order: what a match actor loads when it activates, so that judging a command needs
    /// no store read (`libs/actors`, "receipts live in the actor").
    async fn receipts(&self, match_id: Uuid) -> Result<Vec<Receipt>, StoreError>;
    /// The whole log of a match, in revision order.
    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError>;
    /// Every stored match id, in id order (for replay and audits).
    async fn match_ids(&self) -> Result<Vec<Uuid>, StoreError>;
    /// The ids of the matches pinned at creation to the published package whose lock has
    /// `lock_digest` (`MatchState::package`), in id order: what still needs that publication.
    async fn pinned_to(&self, lock_digest: &str) -> Result<Vec<Uuid>, StoreError>;
    /// Up to `query.limit` matches that fit `query`, newest first (creation time, then id,
    /// both descending), after `query.after` ([`listing`]).
    async fn list_matches(
        &self,
        query: &juegoland_api::MatchQuery,
    ) -> Result<Vec<juegoland_api::MatchListing>, StoreError>;
    /// Up to `limit` events of the platform feed after `after`, oldest first: every event
    /// written before it is returned before it ([`listing`], migration 0014).
    async fn feed(
        &self,
        after: juegoland_api::FeedCursor,
        limit: u32,
    ) -> Result<Vec<juegoland_api::FeedEvent>, StoreError>;
    /// Up to `limit` undispatched outbox rows written at least `min_age` ago, oldest first:
    /// ordered by match, then revision, then the order the publications of one revision were
    /// decided in. Each publication is as committed, its `trace_context` included, so a
    /// re-dispatch continues the trace of the command that produced it. `min_age` lets a
    /// sweeper pass over what was dispatched a moment ago and not marked yet (marks are
    /// written in groups, on whichever node dispatched them).
    async fn undispatched(&self, limit: usize, min_age: Duration) -> Result<Vec<OutboxRow>, StoreError>;
    /// Marks, for each `(match_id, revision)`, every outbox row of the match up to that
    /// revision as dispatched. A mark lost in a crash only means a harmless re-dispatch, so
    /// backends may make marks durable lazily (PostgreSQL commits them asynchronously).
    async fn mark_dispatched(&self, marks: &[(Uuid, u64)]) -> Result<(), StoreError>;
    /// How many outbox rows written at least `min_age` ago are undispatched, and the age of
    /// the oldest, in one cheap read (the rows themselves stay where they are); for the outbox
    /// backlog metrics, which count what the sweeper would send again ([`Store::undispatched`]).
    async fn outbox_backlog(&self, min_age: Duration) -> Result<OutboxBacklog, StoreError>;
    /// Up to `limit` pending deadlines due at `now_ms` (`due_ms <= now_ms`), earliest first,
    /// then by match, id and generation. Reading does not consume them: firing goes through
    /// the match (its generation check and commit).
    async fn due_deadlines(&self, now_ms: i64, limit: usize) -> Result<Vec<DueDeadline>, StoreError>;
    /// Claims for `claimant` (a scheduler replica) up to `limit` pending deadlines due at
    /// `now_ms` that no one holds a live claim on, earliest first, for `lease`: until it
    /// passes, no other claimant gets them (see "Deadline claims" in the crate docs).
    /// Fired and cancelled deadlines are never returned; an expired claim is claimable again
    /// by anyone. The result is sorted like [`Store::due_deadlines`].
    async fn claim_deadlines(
        &self,
        claimant: &str,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<DueDeadline>, StoreError>;
    /// Gives back `claimant`'s claims on `deadlines` (those still pending): anyone may claim
    /// them again at once. Claims held by another claimant are left alone.
    async fn release_deadlines(&self, claimant: &str, deadlines: &[DueDeadline]) -> Result<(), StoreError>;
    /// Marks `cancelled` those of `deadlines` that are still pending in a FINISHED match (a
    /// finished match fires nothing: its rules kept a deadline they did not cancel). Pending
    /// deadlines of active matches are left alone, so a wrong caller cannot cancel a live
    /// deadline.
    async fn cancel_finished_deadlines(&self, deadlines: &[DueDeadline]) -> Result<(), StoreError>;
    /// How many deadlines are pending (claimed or not, due or not); for the scheduler's gauge.
    async fn pending_deadlines(&self) -> Result<u64, StoreError>;
    /// The earliest due instant of the pending deadlines due strictly after `after_ms`, so a
    /// scheduler can wake for it.
    async fn next_deadline_due(&self, after_ms: i64) -> Result<Option<i64>, StoreError>;
    /// Takes or renews `endpoint` for `claimant` for `lease` (on the store's clock), creating
    /// its row with the cursor at the feed's start when it has none: granted when nobody
    /// holds a live claim on it or `claimant` already does (a renewal keeps the epoch; any
    /// other grant increments it). `None` while another claimant's claim is live. Two
    /// claimants racing never both get it.
    async fn claim_webhook(
        &self,
        endpoint: &str,
        claimant: &str,
        lease: Duration,
    ) -> Result<Option<WebhookClaim>, StoreError>;
    /// Moves `claim`'s endpoint's cursor to `to`, only while the endpoint is still held by
    /// `claim.claimant` at `claim.epoch` (its claim may have lapsed, as long as nobody took it
    /// since) and its cursor is still `claim.cursor`. True when it moved; false when the
    /// claim was lost, and nothing changed.
    async fn advance_webhook(&self, claim: &WebhookClaim, to: juegoland_api::FeedCursor) -> Result<bool, StoreError>;
    /// Gives `claim`'s endpoint up (anyone may claim it at once), if `claim.claimant` still
    /// holds it at `claim.epoch`; the cursor stays.
    async fn release_webhook(&self, claim: &WebhookClaim) -> Result<(), StoreError>;
    /// Makes this store's owner the owner of `match_id`, whoever owned it before (the last
    /// claim wins), increments its owner epoch and returns the new epoch; `None` when the
    /// match does not exist. From then on the commits of the previous owner are conflicts.
    /// An unowned store changes nothing and returns the current epoch.
    async fn claim(&self, match_id: Uuid) -> Result<Option<u64>, StoreError>;
    /// Clears the owner of `match_id` if it is this store's owner (the epoch stays); a no-op
    /// when another node owns it, when the match does not exist, and for an unowned store.
    async fn release(&self, match_id: Uuid) -> Result<(), StoreError>;
    /// The owner of `match_id` (`None` when unowned or released) and its owner epoch, or
    /// `None` when the match does not exist; for tests, audits and metrics.
    async fn owner(&self, match_id: Uuid) -> Result<Option<(Option<String>, u64)>, StoreError>;
}

/// The conflict error for `commit`.
fn conflict(commit: &Commit) -> StoreError {
    StoreError::Conflict { match_id: commit.match_id, expected: commit.expected_revision }
}
