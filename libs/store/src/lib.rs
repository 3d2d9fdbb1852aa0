//! Durable state behind one trait: matches, receipts, the per-match log and the outbox.
//!
//! Owns: the [`Store`] contract every backend honours — a [`Commit`] is written in ONE
//! atomic step, fenced by a revision compare-and-set so a stale writer can never commit
//! over a newer revision — and the in-memory backend used by tests and until the durable
//! backends land. Must not use: any service, the bus, or rules.

use std::collections::BTreeMap;

use juegoland_core::{Commit, LogEntry, MatchState, Publication, Receipt, ReceiptKey};
use tokio::sync::Mutex;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The compare-and-set failed: another writer committed first. The caller's view of the
    /// match is stale; reload it.
    #[error("match {match_id} is not at revision {expected:?}")]
    Conflict { match_id: Uuid, expected: Option<u64> },
    /// The store cannot be reached or is restarting; retry the same command later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data does not decode.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
}

/// An outbox row not yet dispatched to the bus.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxRow {
    pub publication: Publication,
}

/// What the engine persists. Every method is one atomic operation.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// Writes state, receipt, log entry and outbox rows atomically, if the stored revision is
    /// still `commit.expected_revision` (or the match does not exist, for `None`).
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError>;
    async fn load(&self, match_id: Uuid) -> Result<Option<MatchState>, StoreError>;
    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError>;
    /// The whole log of a match, in revision order.
    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError>;
    /// Every stored match id (for replay and audits).
    async fn match_ids(&self) -> Result<Vec<Uuid>, StoreError>;
    /// Up to `limit` undispatched outbox rows, oldest first, in revision order per match.
    async fn undispatched(&self, limit: usize) -> Result<Vec<OutboxRow>, StoreError>;
    /// Marks every outbox row of `match_id` up to `revision` as dispatched.
    async fn mark_dispatched(&self, match_id: Uuid, revision: u64) -> Result<(), StoreError>;
}

#[derive(Default)]
struct Inner {
    matches: BTreeMap<Uuid, std::sync::Arc<MatchState>>,
    receipts: BTreeMap<ReceiptKey, Receipt>,
    logs: BTreeMap<Uuid, Vec<LogEntry>>,
    /// (match, revision) → publications and whether they were dispatched.
    outbox: BTreeMap<(Uuid, u64), (Vec<Publication>, bool)>,
}

/// An in-memory store: atomic (one lock per commit), not durable.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        let current = inner.matches.get(&commit.match_id).map(|m| m.revision);
        if current != commit.expected_revision {
            return Err(StoreError::Conflict { match_id: commit.match_id, expected: commit.expected_revision });
        }
        if let Some(r) = &commit.receipt
            && inner.receipts.contains_key(&r.key)
        {
            // The receipt was written by another writer; our judgement is stale.
            return Err(StoreError::Conflict { match_id: commit.match_id, expected: commit.expected_revision });
        }
        if let Some(state) = &commit.state {
            inner.matches.insert(commit.match_id, state.clone());
        }
        if let Some(r) = &commit.receipt {
            inner.receipts.insert(r.key.clone(), r.clone());
        }
        if let Some(log) = &commit.log {
            inner.logs.entry(commit.match_id).or_default().push(log.clone());
        }
        if let (Some(rev), false) = (commit.revision_after(), commit.publications.is_empty()) {
            inner.outbox.insert((commit.match_id, rev), (commit.publications.clone(), false));
        }
        Ok(())
    }

    async fn load(&self, match_id: Uuid) -> Result<Option<MatchState>, StoreError> {
        Ok(self.inner.lock().await.matches.get(&match_id).map(|s| MatchState::clone(s)))
    }

    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        Ok(self.inner.lock().await.receipts.get(key).cloned())
    }

    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError> {
        Ok(self.inner.lock().await.logs.get(&match_id).cloned().unwrap_or_default())
    }

    async fn match_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        Ok(self.inner.lock().await.matches.keys().copied().collect())
    }

    async fn undispatched(&self, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let inner = self.inner.lock().await;
        Ok(inner
            .outbox
            .values()
            .filter(|(_, dispatched)| !dispatched)
            .flat_map(|(pubs, _)| pubs.iter().cloned())
            .take(limit)
            .map(|publication| OutboxRow { publication })
            .collect())
    }

    async fn mark_dispatched(&self, match_id: Uuid, revision: u64) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        for (_, (_, dispatched)) in inner.outbox.range_mut((match_id, 0)..=(match_id, revision)) {
            *dispatched = true;
        }
        Ok(())
    }
}
