//! The in-memory backend: atomic (one lock per commit), not durable.
//!
//! Dispatched publications are dropped at once (nothing reads them again), and a store made
//! with [`MemoryStore::keeping_finished`] forgets whole finished matches — state, receipts,
//! log — beyond the newest `n`, so a long-running `juegoland dev --in-memory` holds the active
//! matches and a bounded tail, not every move ever made. A match is only ever forgotten
//! whole: receipts never go while the match's data stays.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_core::{Commit, LogEntry, MatchState, Publication, Receipt, ReceiptKey, StoredMatch};
use tokio::sync::Mutex;
use uuid::Uuid;

use crate::{
    DueDeadline, OutboxBacklog, OutboxRow, Store, StoreError, WebhookClaim, WebhookCursor, WebhookEndpoint,
    WebhookEndpoints, conflict,
};

/// A stored match: its state and who owns it.
struct Stored {
    state: Arc<MatchState>,
    owner: Option<Arc<str>>,
    owner_epoch: u64,
}

#[derive(Default)]
struct Inner {
    matches: BTreeMap<Uuid, Stored>,
    /// The platform feed, oldest first: (seq, row), the newest [`FEED_KEPT`].
    feed: std::collections::VecDeque<crate::listing::FeedRow>,
    /// The last feed `seq` handed out.
    feed_seq: i64,
    receipts: BTreeMap<ReceiptKey, Receipt>,
    logs: BTreeMap<Uuid, Vec<LogEntry>>,
    /// (match, revision) → publications not yet dispatched, and when they were written.
    outbox: BTreeMap<(Uuid, u64), (Vec<Publication>, Instant)>,
    /// Deadline claims: (match, id, generation) → claimant and when the claim expires.
    claims: BTreeMap<DeadlineKey, (String, Instant)>,
    /// Deadlines of finished matches that were cancelled (the state still lists them).
    cancelled: BTreeSet<DeadlineKey>,
    /// How many finished matches are kept (`None`: all), and the kept ones, oldest first.
    finished_limit: Option<usize>,
    finished: VecDeque<Uuid>,
    /// Webhook endpoints' cursors and claims.
    webhooks: BTreeMap<String, Webhook>,
    /// The webhook endpoints themselves.
    endpoints: BTreeMap<String, WebhookEndpoint>,
}

/// A webhook endpoint's cursor and its claim (`claimed_by` until `until`).
#[derive(Default)]
struct Webhook {
    cursor: juegoland_api::FeedCursor,
    claim: Option<(String, Instant)>,
    epoch: u64,
}

impl Webhook {
    /// Whether `claim` still holds this endpoint, lapsed or not.
    fn held_by(&self, claim: &WebhookClaim) -> bool {
        self.epoch == claim.epoch && self.claim.as_ref().is_some_and(|(by, _)| *by == claim.claimant)
    }
}

type DeadlineKey = (Uuid, String, u64);

fn key(d: &DueDeadline) -> DeadlineKey {
    (d.match_id, d.deadline_id.clone(), d.generation)
}

impl Inner {
    /// Notes that `match_id` just finished; forgets the oldest finished matches beyond the
    /// limit.
    fn finished(&mut self, match_id: Uuid) {
        let Some(limit) = self.finished_limit else { return };
        self.finished.push_back(match_id);
        while self.finished.len() > limit {
            let Some(old) = self.finished.pop_front() else { break };
            self.forget(old);
        }
    }

    /// Removes everything stored of `match_id`.
    fn forget(&mut self, match_id: Uuid) {
        self.matches.remove(&match_id);
        self.logs.remove(&match_id);
        let first = ReceiptKey { match_id, principal: String::new(), command_id: Uuid::nil() };
        let keys: Vec<ReceiptKey> =
            self.receipts.range(first..).map(|(k, _)| k).take_while(|k| k.match_id == match_id).cloned().collect();
        for k in keys {
            self.receipts.remove(&k);
        }
        self.outbox.retain(|(m, _), _| *m != match_id);
        self.claims.retain(|(m, _, _), _| *m != match_id);
        self.cancelled.retain(|(m, _, _)| *m != match_id);
    }

    /// The pending deadlines of every match: those of its current state, but the cancelled.
    fn pending(&self) -> impl Iterator<Item = DueDeadline> + '_ {
        self.matches
            .values()
            .flat_map(|stored| {
                let state = &stored.state;
                state.deadlines.iter().map(|(id, d)| DueDeadline {
                    match_id: state.match_id,
                    deadline_id: id.clone(),
                    generation: d.generation,
                    due_ms: d.due_ms,
                })
            })
            .filter(|d| !self.cancelled.contains(&key(d)))
    }
}

/// An in-memory store: atomic (one lock per commit), not durable. Its pending deadlines
/// are those of each match's current state (but those of finished matches it was asked to
/// cancel); deadline claims expire on this process's monotonic clock.
///
/// A handle: clones share the same data, so `store.clone().owned_by(node)` is a second
/// owner over the same matches (as two nodes over one database).
#[derive(Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    /// This handle's owner identity; `None` is unowned mode (no owner checks).
    owner: Option<Arc<str>>,
}

impl MemoryStore {
    /// An empty, unowned store that keeps every match.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty, unowned store that keeps only the newest `n` finished matches (and every
    /// active one); older finished matches are forgotten whole, as if never created.
    pub fn keeping_finished(n: usize) -> Self {
        let inner = Inner { finished_limit: Some(n), ..Inner::default() };
        Self { inner: Arc::new(Mutex::new(inner)), owner: None }
    }

    /// This handle in cluster mode: it creates matches as `owner` and commits only to the
    /// matches `owner` owns (see the crate docs). Other clones keep their own owner.
    pub fn owned_by(self, owner: impl Into<String>) -> Self {
        Self { owner: Some(owner.into().into()), ..self }
    }

    /// The owner identity this handle commits as; `None` in unowned mode.
    pub fn identity(&self) -> Option<&str> {
        self.owner.as_deref()
    }
}

#[async_trait::async_trait]
impl WebhookEndpoints for MemoryStore {
    async fn webhook_endpoints(&self) -> Result<Vec<WebhookEndpoint>, StoreError> {
        Ok(self.inner.lock().await.endpoints.values().cloned().collect())
    }

    async fn webhook_endpoint(&self, id: &str) -> Result<Option<WebhookEndpoint>, StoreError> {
        Ok(self.inner.lock().await.endpoints.get(id).cloned())
    }

    async fn create_webhook(
        &self,
        endpoint: &WebhookEndpoint,
        start: Option<juegoland_api::FeedCursor>,
    ) -> Result<bool, StoreError> {
        let mut inner = self.inner.lock().await;
        if inner.endpoints.contains_key(&endpoint.id) {
            return Ok(false);
        }
        inner.endpoints.insert(endpoint.id.clone(), endpoint.clone());
        if let Some(start) = start {
            let hook = inner.webhooks.entry(endpoint.id.clone()).or_default();
            hook.cursor = start;
            hook.epoch += 1;
        }
        Ok(true)
    }

    async fn update_webhook(&self, endpoint: &WebhookEndpoint, expected_version: u64) -> Result<bool, StoreError> {
        let mut inner = self.inner.lock().await;
        match inner.endpoints.get_mut(&endpoint.id) {
            Some(stored) if stored.version == expected_version => {
                *stored = WebhookEndpoint { created_ms: stored.created_ms, ..endpoint.clone() };
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn remove_webhook(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.inner.lock().await.endpoints.remove(id).is_some())
    }

    async fn move_webhook_cursor(&self, id: &str, to: juegoland_api::FeedCursor) -> Result<bool, StoreError> {
        let mut inner = self.inner.lock().await;
        if !inner.endpoints.contains_key(id) {
            return Ok(false);
        }
        let hook = inner.webhooks.entry(id.to_owned()).or_default();
        hook.cursor = to;
        hook.epoch += 1;
        Ok(true)
    }

    async fn webhook_cursor(&self, endpoint: &str) -> Result<Option<WebhookCursor>, StoreError> {
        let inner = self.inner.lock().await;
        let now = Instant::now();
        Ok(inner.webhooks.get(endpoint).map(|hook| WebhookCursor {
            cursor: hook.cursor,
            claimed_by: hook.claim.as_ref().filter(|(_, until)| *until >= now).map(|(by, _)| by.clone()),
            epoch: hook.epoch,
        }))
    }

    async fn feed_end(&self) -> Result<juegoland_api::FeedCursor, StoreError> {
        let seq = self.inner.lock().await.feed_seq;
        Ok(juegoland_api::FeedCursor { txid: 0, seq: crate::rows::to_u64(seq, "feed cursor")? })
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        let stored = inner.matches.get(&commit.match_id);
        let current = stored.map(|m| m.state.revision);
        if current != commit.expected_revision || (current.is_none() && commit.state.is_none()) {
            return Err(conflict(commit));
        }
        if let (Some(me), Some(stored)) = (&self.owner, stored)
            && stored.owner.as_ref() != Some(me)
        {
            // The match is another node's (or nobody's): this handle must not write it.
            return Err(conflict(commit));
        }
        if let Some(r) = &commit.receipt
            && inner.receipts.contains_key(&r.key)
        {
            // The receipt was written by another writer; our judgement is stale.
            return Err(conflict(commit));
        }
        if let Some(state) = &commit.state {
            let was_finished = inner.matches.get(&commit.match_id).is_some_and(|m| m.state.is_finished());
            if state.is_finished() && !was_finished {
                inner.finished(commit.match_id);
            }
            match inner.matches.get_mut(&commit.match_id) {
                Some(stored) => stored.state = state.clone(),
                None => {
                    let owner_epoch = u64::from(self.owner.is_some());
                    let stored = Stored { state: state.clone(), owner: self.owner.clone(), owner_epoch };
                    inner.matches.insert(commit.match_id, stored);
                }
            }
        }
        if let Some((kind, body)) = crate::rows::feed_event(commit)? {
            inner.feed_seq += 1;
            let revision = crate::rows::to_i64(commit.revision_after().unwrap_or(0), "revision")?;
            let row = (
                0,
                inner.feed_seq,
                commit.match_id,
                revision,
                kind.to_owned(),
                created_at(crate::rows::now_ms()),
                body,
            );
            inner.feed.push_back(row);
            if inner.feed.len() > FEED_KEPT {
                inner.feed.pop_front();
            }
        }
        if let Some(r) = &commit.receipt {
            inner.receipts.insert(r.key.clone(), r.clone());
        }
        if let Some(log) = &commit.log {
            inner.logs.entry(commit.match_id).or_default().push(log.clone());
        }
        if let (Some(rev), false) = (commit.revision_after(), commit.publications.is_empty()) {
            inner.outbox.insert((commit.match_id, rev), (commit.publications.clone(), Instant::now()));
        }
        Ok(())
    }

    async fn load(&self, match_id: Uuid) -> Result<Option<StoredMatch>, StoreError> {
        // Every state is kept: the snapshot is the current state.
        Ok(self.inner.lock().await.matches.get(&match_id).map(|s| StoredMatch::current(MatchState::clone(&s.state))))
    }

    async fn snapshot(&self, _: &MatchState) -> Result<bool, StoreError> {
        // Every state is kept whole: the newest is already the snapshot.
        Ok(false)
    }

    async fn replace_snapshot(&self, expected: &MatchState, state: &MatchState) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        let conflict = StoreError::Conflict { match_id: expected.match_id, expected: Some(expected.revision) };
        let Some(stored) = inner.matches.get_mut(&expected.match_id) else { return Err(conflict) };
        let owned = self.owner.is_none() || stored.owner == self.owner;
        let same = stored.state.revision == expected.revision && stored.state.game == expected.game;
        if !owned || !same || state.match_id != expected.match_id || state.revision != expected.revision {
            return Err(conflict);
        }
        stored.state = Arc::new(state.clone());
        Ok(())
    }

    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        Ok(self.inner.lock().await.receipts.get(key).cloned())
    }

    async fn receipts(&self, match_id: Uuid) -> Result<Vec<Receipt>, StoreError> {
        let inner = self.inner.lock().await;
        // Keys sort by match first, so one match's receipts are one range.
        let from = ReceiptKey { match_id, principal: String::new(), command_id: Uuid::nil() };
        Ok(inner.receipts.range(from..).take_while(|(k, _)| k.match_id == match_id).map(|(_, r)| r.clone()).collect())
    }

    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError> {
        Ok(self.inner.lock().await.logs.get(&match_id).cloned().unwrap_or_default())
    }

    async fn match_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        Ok(self.inner.lock().await.matches.keys().copied().collect())
    }

    async fn list_matches(
        &self,
        query: &juegoland_api::MatchQuery,
    ) -> Result<Vec<juegoland_api::MatchListing>, StoreError> {
        use crate::listing::{MatchRow, SeatRow, listings};
        let inner = self.inner.lock().await;
        // The rows the SQL stores would read: creation time from the state's captured instant.
        let mut rows: Vec<(MatchRow, Vec<SeatRow>)> = inner
            .matches
            .values()
            .map(|s| {
                let state = &s.state;
                let id = state.match_id;
                let status = match &state.position.result {
                    Some(juegoland_sdk::MatchResult::Cancelled { .. }) => "cancelled".to_owned(),
                    _ => crate::rows::match_status(state).to_owned(),
                };
                let created = created_at(state.created_ms);
                let row = (
                    id,
                    state.game.id.clone(),
                    state.game.rules_version.clone(),
                    state.game_version.clone(),
                    status,
                    created,
                );
                let seats: Vec<SeatRow> = crate::rows::participants(state)
                    .into_iter()
                    .map(|p| {
                        (
                            id,
                            p.seat.to_owned(),
                            p.principal.map(str::to_owned),
                            p.bot_profile.map(std::borrow::Cow::into_owned),
                            p.status.to_owned(),
                        )
                    })
                    .collect();
                (row, seats)
            })
            .filter(|(row, seats)| {
                query.principal.as_ref().is_none_or(|p| seats.iter().any(|s| s.2.as_ref() == Some(p)))
                    && query.game.as_ref().is_none_or(|g| row.1 == *g)
                    && query.status.is_none_or(|st| row.4 == st.as_str())
                    && query
                        .after
                        .as_ref()
                        .is_none_or(|c| (row.5.as_str(), row.0) < (c.created_at.as_str(), c.match_id))
            })
            .collect();
        rows.sort_by(|a, b| (&b.0.5, b.0.0).cmp(&(&a.0.5, a.0.0)));
        rows.truncate(query.limit as usize);
        let (rows, seats): (Vec<MatchRow>, Vec<Vec<SeatRow>>) = rows.into_iter().unzip();
        listings(rows, seats.into_iter().flatten().collect())
    }

    async fn feed(
        &self,
        after: juegoland_api::FeedCursor,
        limit: u32,
    ) -> Result<Vec<juegoland_api::FeedEvent>, StoreError> {
        let inner = self.inner.lock().await;
        let after = crate::rows::to_i64(after.seq, "feed cursor")?;
        let rows = inner.feed.iter().filter(|row| row.1 > after).take(limit as usize).cloned().collect();
        crate::listing::feed_events(rows)
    }

    async fn pinned_to(&self, lock_digest: &str) -> Result<Vec<Uuid>, StoreError> {
        let inner = self.inner.lock().await;
        let pinned = |s: &Stored| s.state.package.as_ref().is_some_and(|p| p.lock_digest == lock_digest);
        Ok(inner.matches.iter().filter(|(_, s)| pinned(s)).map(|(id, _)| *id).collect())
    }

    async fn undispatched(&self, limit: usize, min_age: Duration) -> Result<Vec<OutboxRow>, StoreError> {
        let inner = self.inner.lock().await;
        Ok(inner
            .outbox
            .values()
            .filter(|(_, written)| written.elapsed() >= min_age)
            .flat_map(|(pubs, _)| pubs.iter().cloned())
            .take(limit)
            .map(|publication| OutboxRow { publication })
            .collect())
    }

    async fn mark_dispatched(&self, marks: &[(Uuid, u64)]) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        for (match_id, revision) in marks {
            let done: Vec<(Uuid, u64)> =
                inner.outbox.range((*match_id, 0)..=(*match_id, *revision)).map(|(k, _)| *k).collect();
            for k in done {
                inner.outbox.remove(&k);
            }
        }
        Ok(())
    }

    async fn outbox_backlog(&self, min_age: Duration) -> Result<OutboxBacklog, StoreError> {
        let inner = self.inner.lock().await;
        let waiting = inner.outbox.values().filter(|(_, written)| written.elapsed() >= min_age);
        let (rows, oldest) = waiting.fold((0u64, None::<Instant>), |(rows, oldest), (pubs, at)| {
            (rows + pubs.len() as u64, Some(oldest.map_or(*at, |o| o.min(*at))))
        });
        Ok(OutboxBacklog { rows, oldest_age: oldest.map(|at| at.elapsed()) })
    }

    async fn due_deadlines(&self, now_ms: i64, limit: usize) -> Result<Vec<DueDeadline>, StoreError> {
        let inner = self.inner.lock().await;
        let mut due: Vec<DueDeadline> = inner.pending().filter(|d| d.due_ms <= now_ms).collect();
        crate::rows::sort_due(&mut due);
        due.truncate(limit);
        Ok(due)
    }

    async fn claim_deadlines(
        &self,
        claimant: &str,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<DueDeadline>, StoreError> {
        let mut inner = self.inner.lock().await;
        let now = Instant::now();
        let mut due: Vec<DueDeadline> = inner
            .pending()
            .filter(|d| d.due_ms <= now_ms)
            .filter(|d| inner.claims.get(&key(d)).is_none_or(|(_, until)| *until < now))
            .collect();
        crate::rows::sort_due(&mut due);
        due.truncate(limit);
        // Claims of deadlines no longer pending are forgotten on the way.
        let pending: BTreeSet<DeadlineKey> = inner.pending().map(|d| key(&d)).collect();
        inner.claims.retain(|k, _| pending.contains(k));
        for d in &due {
            inner.claims.insert(key(d), (claimant.to_owned(), now + lease));
        }
        Ok(due)
    }

    async fn release_deadlines(&self, claimant: &str, deadlines: &[DueDeadline]) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        for d in deadlines {
            if inner.claims.get(&key(d)).is_some_and(|(by, _)| by == claimant) {
                inner.claims.remove(&key(d));
            }
        }
        Ok(())
    }

    async fn cancel_finished_deadlines(&self, deadlines: &[DueDeadline]) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        for d in deadlines {
            let finished_holds_it = inner.matches.get(&d.match_id).is_some_and(|m| {
                m.state.is_finished()
                    && m.state.deadlines.get(&d.deadline_id).is_some_and(|x| x.generation == d.generation)
            });
            if finished_holds_it {
                inner.cancelled.insert(key(d));
            }
        }
        Ok(())
    }

    async fn pending_deadlines(&self) -> Result<u64, StoreError> {
        Ok(self.inner.lock().await.pending().count() as u64)
    }

    async fn next_deadline_due(&self, after_ms: i64) -> Result<Option<i64>, StoreError> {
        Ok(self.inner.lock().await.pending().map(|d| d.due_ms).filter(|due| *due > after_ms).min())
    }

    async fn claim_webhook(
        &self,
        endpoint: &str,
        claimant: &str,
        lease: Duration,
    ) -> Result<Option<WebhookClaim>, StoreError> {
        let mut inner = self.inner.lock().await;
        let now = Instant::now();
        let hook = inner.webhooks.entry(endpoint.to_owned()).or_default();
        let mine = match &hook.claim {
            Some((by, _)) if by == claimant => true,
            Some((_, until)) if *until >= now => return Ok(None),
            _ => false,
        };
        if !mine {
            hook.epoch += 1;
        }
        hook.claim = Some((claimant.to_owned(), now + lease));
        Ok(Some(WebhookClaim {
            endpoint: endpoint.to_owned(),
            claimant: claimant.to_owned(),
            epoch: hook.epoch,
            cursor: hook.cursor,
        }))
    }

    async fn advance_webhook(&self, claim: &WebhookClaim, to: juegoland_api::FeedCursor) -> Result<bool, StoreError> {
        let mut inner = self.inner.lock().await;
        match inner.webhooks.get_mut(&claim.endpoint) {
            Some(hook) if hook.held_by(claim) && hook.cursor == claim.cursor => {
                hook.cursor = to;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release_webhook(&self, claim: &WebhookClaim) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        if let Some(hook) = inner.webhooks.get_mut(&claim.endpoint)
            && hook.held_by(claim)
        {
            hook.claim = None;
        }
        Ok(())
    }

    async fn claim(&self, match_id: Uuid) -> Result<Option<u64>, StoreError> {
        let mut inner = self.inner.lock().await;
        let Some(stored) = inner.matches.get_mut(&match_id) else { return Ok(None) };
        if let Some(me) = &self.owner {
            stored.owner = Some(me.clone());
            stored.owner_epoch += 1;
        }
        Ok(Some(stored.owner_epoch))
    }

    async fn release(&self, match_id: Uuid) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().await;
        if let (Some(me), Some(stored)) = (&self.owner, inner.matches.get_mut(&match_id))
            && stored.owner.as_ref() == Some(me)
        {
            stored.owner = None;
        }
        Ok(())
    }

    async fn owner(&self, match_id: Uuid) -> Result<Option<(Option<String>, u64)>, StoreError> {
        let inner = self.inner.lock().await;
        Ok(inner.matches.get(&match_id).map(|s| (s.owner.as_deref().map(str::to_owned), s.owner_epoch)))
    }
}

/// How many feed events the memory store keeps: it serves tests and benchmarks, and forgets
/// old finished matches too (`MemoryStore::keeping_finished`).
const FEED_KEPT: usize = 100_000;

/// A creation instant as the SQLite store writes `created_at` (fixed width, so text order is
/// time order).
fn created_at(ms: i64) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}
