//! The in-memory backend: atomic (one lock per commit), not durable.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{Commit, LogEntry, MatchState, Publication, Receipt, ReceiptKey};
use tokio::sync::Mutex;
use uuid::Uuid;

use crate::{DueDeadline, OutboxRow, Store, StoreError, conflict};

#[derive(Default)]
struct Inner {
    matches: BTreeMap<Uuid, Arc<MatchState>>,
    receipts: BTreeMap<ReceiptKey, Receipt>,
    logs: BTreeMap<Uuid, Vec<LogEntry>>,
    /// (match, revision) → publications and whether they were dispatched.
    outbox: BTreeMap<(Uuid, u64), (Vec<Publication>, bool)>,
}

/// An in-memory store: atomic (one lock per commit), not durable. Its pending deadlines
/// are those of each match's current state.
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
        if current != commit.expected_revision || (current.is_none() && commit.state.is_none()) {
            return Err(conflict(commit));
        }
        if let Some(r) = &commit.receipt
            && inner.receipts.contains_key(&r.key)
        {
            // The receipt was written by another writer; our judgement is stale.
            return Err(conflict(commit));
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

    async fn due_deadlines(&self, now_ms: i64, limit: usize) -> Result<Vec<DueDeadline>, StoreError> {
        let inner = self.inner.lock().await;
        let mut due: Vec<DueDeadline> = inner
            .matches
            .values()
            .flat_map(|state| {
                state.deadlines.iter().filter(|(_, d)| d.due_ms <= now_ms).map(|(id, d)| DueDeadline {
                    match_id: state.match_id,
                    deadline_id: id.clone(),
                    generation: d.generation,
                    due_ms: d.due_ms,
                })
            })
            .collect();
        due.sort_by(|a, b| {
            (a.due_ms, a.match_id, &a.deadline_id, a.generation).cmp(&(
                b.due_ms,
                b.match_id,
                &b.deadline_id,
                b.generation,
            ))
        });
        due.truncate(limit);
        Ok(due)
    }
}
