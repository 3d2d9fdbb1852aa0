//! Group commit for PostgreSQL: the commits of different matches that arrive while a
//! transaction is in flight share the next one, written with multi-row statements. Up to
//! [`COMMITTERS`] transactions are in flight at once, the second only once its batch is worth
//! it ([`OVERLAP_AT`]).
//!
//! Each match's commit stays atomic and isolated. One statement ([`WRITE`]) carries the
//! whole batch: its data-modifying `WITH` clauses check the fences (creation `INSERT … ON
//! CONFLICT DO NOTHING RETURNING`, the revision compare-and-set as one `UPDATE … FROM UNNEST
//! … RETURNING`, `SELECT … FOR UPDATE` for rejection-only commits; for an owned store both
//! also require `owner = $40`, the store's owner, and a creation stores it at owner epoch 1)
//! and write the receipts, log entries, participants, deadlines and outbox rows of the
//! matches that passed. It runs alone (autocommit): a batch is one round trip. A transaction
//! carries the commits of one owner (clones of a store with different owners share the
//! committer; their commits take separate rounds). If any commit lost its fence (or its
//! receipt or log entry already existed), the statement aborts itself; a second run inside
//! `BEGIN … ROLLBACK` names the commits that lost, they get [`StoreError::Conflict`], and the
//! rest are retried at once in a new transaction: a fenced match never fails the others, it
//! costs them one retry. A transient failure fails the whole batch with
//! [`StoreError::Unavailable`]: nothing of it is committed, and every caller retries its own
//! command. Figures: `docs/benchmarks.md`.
//!
//! Tracing: each transaction runs in a `store.batch` span of its own (fields `commits`,
//! `outcome`), linked to the span every commit was sent from (an actor's `store.commit`) and
//! each of those linked back to it with the attribute `store.batch.commits`: the commits of
//! one transaction belong to different commands, hence to different traces.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use juegoland_core::{Commit, ReceiptOutcome};
use sqlx::postgres::PgPool;
use sqlx::{PgConnection, Row};
use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use tracing::Instrument;
use uuid::Uuid;

use crate::StoreError;
use crate::rows::{self, Dialect, store_error};

const PG: Dialect = Dialect::Postgres;

/// The most commits one transaction carries.
pub(crate) const MAX_BATCH: usize = 128;

/// Transactions in flight at once (each takes a pooled connection).
pub(crate) const COMMITTERS: usize = 2;

/// The batch size from which a transaction starts while another is in flight. A smaller batch
/// waits for that one to finish, taking what arrives meanwhile: on a node short of CPU, two
/// small transactions cost PostgreSQL more per commit than one twice their size (2026-12-01:
/// one committer gave the cluster load test 10–15% more moves per CPU-second), while with
/// commits pouring in, two transactions of this size overlap their round trips (the
/// `pg_commit` benchmark at 64 matches loses a fifth of its throughput with one).
const OVERLAP_AT: usize = 16;

pub(crate) struct Job {
    pub commit: Commit,
    /// The owner of the committing store; `None` is unowned (no owner fence).
    pub owner: Option<Arc<str>>,
    pub reply: oneshot::Sender<Result<(), StoreError>>,
    /// The committer's span (the caller's `store.commit`): linked with the transaction's
    /// `store.batch` span both ways.
    pub span: tracing::Span,
}

/// Starts the committer tasks; commits sent on the returned channel are grouped.
pub(crate) fn start(pool: PgPool) -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>(MAX_BATCH * COMMITTERS * 4);
    let rx = Arc::new(Mutex::new(rx));
    // Transactions in flight, and a signal each time one ends.
    let in_flight = Arc::new(AtomicUsize::new(0));
    let ended = Arc::new(Notify::new());
    for _ in 0..COMMITTERS {
        let (pool, rx, in_flight, ended) = (pool.clone(), rx.clone(), in_flight.clone(), ended.clone());
        // Each committer ends when every sender (every clone of the store) is dropped.
        tokio::spawn(async move {
            loop {
                let (batch, _in_flight) = {
                    let mut rx = rx.lock().await;
                    let Some(first) = rx.recv().await else { return };
                    let mut batch = vec![first];
                    take_queued(&mut rx, &mut batch);
                    while batch.len() < OVERLAP_AT {
                        // Registered before the check, so an end between the two is not missed.
                        let end = ended.notified();
                        tokio::pin!(end);
                        end.as_mut().enable();
                        if in_flight.load(Ordering::SeqCst) == 0 {
                            break;
                        }
                        tokio::select! {
                            () = &mut end => break,
                            job = rx.recv() => match job {
                                Some(job) => {
                                    batch.push(job);
                                    take_queued(&mut rx, &mut batch);
                                }
                                None => break,
                            },
                        }
                    }
                    // Counted before the queue is released, so the next committer sees it.
                    (batch, InFlight::start(&in_flight, &ended))
                };
                run(&pool, batch).await;
            }
        });
    }
    tx
}

/// One transaction counted in flight until dropped (even by a panic), which signals its end.
struct InFlight {
    count: Arc<AtomicUsize>,
    ended: Arc<Notify>,
}

impl InFlight {
    fn start(count: &Arc<AtomicUsize>, ended: &Arc<Notify>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self { count: count.clone(), ended: ended.clone() }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        self.ended.notify_waiters();
    }
}

/// Moves the jobs already queued into `batch`, up to [`MAX_BATCH`].
fn take_queued(rx: &mut mpsc::Receiver<Job>, batch: &mut Vec<Job>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(job) => batch.push(job),
            Err(_) => break,
        }
    }
}

fn conflict(c: &Commit) -> StoreError {
    StoreError::Conflict { match_id: c.match_id, expected: c.expected_revision }
}

/// Commits a batch, answering every job.
async fn run(pool: &PgPool, mut jobs: Vec<Job>) {
    while !jobs.is_empty() {
        // One owner and one commit per match per transaction: a second one for the same match
        // (only a split brain sends it) and the commits of another owner (another clone of
        // the store) wait for the next round.
        let owner = jobs[0].owner.clone();
        let mut seen = BTreeSet::new();
        let (now, later): (Vec<Job>, Vec<Job>) =
            jobs.into_iter().partition(|j| j.owner == owner && seen.insert(j.commit.match_id));
        let mut retry = Vec::new();
        let batch = batch_span(&now);
        let result = attempt(pool, &now, owner.as_deref()).instrument(batch.clone()).await;
        batch.record("outcome", outcome(&result));
        match result {
            Ok(()) => {
                for job in now {
                    let _ = job.reply.send(Ok(()));
                }
            }
            Err(Attempt::Fenced(lost)) => {
                for (i, job) in now.into_iter().enumerate() {
                    if lost.contains(&i) {
                        let _ = job.reply.send(Err(conflict(&job.commit)));
                    } else {
                        retry.push(job);
                    }
                }
            }
            Err(Attempt::Failed(e)) => {
                for job in now {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
        jobs = retry.into_iter().chain(later).collect();
    }
}

/// The span of one transaction, a root of its own: linked to the span of every commit it
/// carries (they belong to different traces), and each of those to it, with the number of
/// commits that shared the transaction on each.
fn batch_span(jobs: &[Job]) -> tracing::Span {
    let batch = tracing::info_span!(parent: None, "store.batch", commits = jobs.len(), outcome = tracing::field::Empty);
    let commits = i64::try_from(jobs.len()).unwrap_or(i64::MAX);
    for job in jobs {
        juegoland_telemetry::link(&batch, &job.span);
    }
    for job in jobs {
        juegoland_telemetry::link(&job.span, &batch);
        juegoland_telemetry::set_attribute(&job.span, "store.batch.commits", commits);
    }
    batch
}

fn outcome(result: &Result<(), Attempt>) -> &'static str {
    match result {
        Ok(()) => "committed",
        Err(Attempt::Fenced(_)) => "fenced",
        Err(Attempt::Failed(_)) => "failed",
    }
}

enum Attempt {
    /// These commits (indexes into the batch) lost their fence; nothing was committed.
    Fenced(BTreeSet<usize>),
    Failed(StoreError),
}

impl From<StoreError> for Attempt {
    fn from(e: StoreError) -> Self {
        Attempt::Failed(e)
    }
}

fn db(e: sqlx::Error) -> Attempt {
    Attempt::Failed(store_error(PG, "group commit", e))
}

/// One transaction for the batch of the store owned by `owner`: everything, or nothing and
/// the fenced commits named.
///
/// The common case is ONE round trip: [`WRITE`] runs on its own (autocommit, so the
/// statement is the transaction): its data-modifying `WITH` clauses write every table and,
/// when a commit lost its fence, abort the statement (`juegoland_fence_lost()`, SQLSTATE
/// `JL409`), so nothing of the batch is committed. Only then does a second attempt run the
/// same statement without the abort inside `BEGIN … ROLLBACK` to learn which commits lost;
/// the caller retries the rest. Rows of a commit that lost its fence are never written, so a
/// stale writer meets no unique violation.
async fn attempt(pool: &PgPool, jobs: &[Job], owner: Option<&str>) -> Result<(), Attempt> {
    let commits: Vec<&Commit> = jobs.iter().map(|j| &j.commit).collect();
    let unfenced: BTreeSet<usize> = commits
        .iter()
        .enumerate()
        .filter(|(_, c)| c.state.is_none() && c.expected_revision.is_none())
        .map(|(i, _)| i)
        .collect();
    if !unfenced.is_empty() {
        return Err(Attempt::Fenced(unfenced));
    }
    let batch = Batch::of(&commits)?;
    let mut conn = pool.acquire().await.map_err(db)?;
    if batch.write(&mut conn, owner, true).await?.is_some() {
        return Ok(());
    }
    drop(conn);
    let mut tx = pool.begin().await.map_err(db)?;
    let report = batch.write(&mut tx, owner, false).await?.ok_or_else(|| {
        Attempt::Failed(StoreError::Corrupt("the group commit aborted without being asked to".into()))
    })?;
    let lost = fenced_out(&commits, &report)?;
    if !lost.is_empty() {
        // Dropping the transaction rolls it back.
        return Err(Attempt::Fenced(lost));
    }
    // The fence that failed a moment ago holds now (the other writer's transaction was rolled
    // back): this transaction wrote the whole batch.
    tx.commit().await.map_err(db)?;
    Ok(())
}

/// The statement that writes a batch. Every `WITH` clause reads the arrays of one kind of
/// row; `passed` is the matches whose fence held, and only their rows are written. `$40` is
/// the store's owner: `NULL` (unowned) skips the owner fence and creates unowned matches.
/// Deadlines: `$43`–`$47` are the deadlines every new state holds (`wanted`), `$48`/`$49` the
/// generation each updated match's commit fired; the pending rows of an updated match that its
/// new state no longer holds are closed (`fired` when it is the fired generation, else
/// `cancelled`) and the wanted ones not pending yet are added: the rule of
/// `rows::plan_deadlines` (which the SQLite store runs), in SQL so the batch stays one round
/// trip; the deadline cases of the behaviour suite hold both to it. `$50` aborts the statement
/// (`guard`) when any commit lost its fence: nothing of the batch is then written. The guard's
/// row (`'g'`) is selected only so that it is evaluated.
const WRITE: &str = "
WITH
  created AS (
    INSERT INTO matches (match_id, game_id, rules_version, game_version, rules_digest, revision, phase_epoch, status,
                         state, owner, owner_epoch)
    SELECT u.match_id, u.game_id, u.rules_version, u.game_version, u.rules_digest, u.revision, u.phase_epoch, u.status,
           u.state, $40::text, CASE WHEN $40::text IS NULL THEN 0 ELSE 1 END
    FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $41::text[], $5::int8[], $6::int8[], $7::text[],
                $8::text[])
         AS u(match_id, game_id, rules_version, game_version, rules_digest, revision, phase_epoch, status, state)
    ON CONFLICT (match_id) DO NOTHING
    RETURNING match_id),
  updated AS (
    UPDATE matches AS m SET revision = u.revision, phase_epoch = u.phase_epoch, status = u.status,
           state = u.state, updated_at = now()
    FROM UNNEST($9::uuid[], $10::int8[], $11::int8[], $12::int8[], $13::text[], $14::text[])
         AS u(match_id, expected, revision, phase_epoch, status, state)
    WHERE m.match_id = u.match_id AND m.revision = u.expected AND ($40::text IS NULL OR m.owner = $40::text)
    RETURNING m.match_id),
  checked AS (
    SELECT m.match_id FROM matches AS m
    JOIN UNNEST($15::uuid[], $16::int8[]) AS f(match_id, expected)
      ON m.match_id = f.match_id AND m.revision = f.expected
    WHERE $40::text IS NULL OR m.owner = $40::text
    FOR UPDATE OF m),
  passed AS (
    SELECT match_id FROM created UNION ALL SELECT match_id FROM updated UNION ALL SELECT match_id FROM checked),
  receipts_in AS (
    INSERT INTO receipts (match_id, principal, command_id, fingerprint, outcome, revision)
    SELECT u.match_id, u.principal, u.command_id, u.fingerprint, u.outcome, u.revision
    FROM UNNEST($17::uuid[], $18::text[], $19::uuid[], $20::text[], $21::text[], $22::int8[])
         AS u(match_id, principal, command_id, fingerprint, outcome, revision)
    WHERE u.match_id IN (SELECT match_id FROM passed)
    ON CONFLICT DO NOTHING
    RETURNING match_id, principal, command_id),
  log_in AS (
    INSERT INTO match_log (match_id, revision, instant_ms, entry)
    SELECT u.match_id, u.revision, u.instant_ms, u.entry
    FROM UNNEST($23::uuid[], $24::int8[], $25::int8[], $26::text[]) AS u(match_id, revision, instant_ms, entry)
    WHERE u.match_id IN (SELECT match_id FROM passed)
    ON CONFLICT DO NOTHING
    RETURNING match_id, revision),
  seated AS (
    INSERT INTO participants (match_id, seat, principal, bot_profile, status)
    SELECT u.* FROM UNNEST($27::uuid[], $28::text[], $29::text[], $30::text[], $31::text[])
         AS u(match_id, seat, principal, bot_profile, status)
    WHERE u.match_id IN (SELECT match_id FROM created)),
  reseated AS (
    UPDATE participants AS p SET status = v.status
    FROM UNNEST($32::uuid[], $33::text[], $34::text[]) AS v(match_id, seat, status)
    WHERE p.match_id = v.match_id AND p.seat = v.seat AND p.status <> v.status
      AND v.match_id IN (SELECT match_id FROM updated)),
  published AS (
    INSERT INTO outbox (match_id, revision, recipient, ordinal, payload, trace_context)
    SELECT u.* FROM UNNEST($35::uuid[], $36::int8[], $37::text[], $38::int4[], $39::text[], $42::text[])
         AS u(match_id, revision, recipient, ordinal, payload, trace_context)
    WHERE u.match_id IN (SELECT match_id FROM passed)),
  wanted AS (
    SELECT * FROM UNNEST($43::uuid[], $44::text[], $45::int8[], $46::int8[], $47::text[])
         AS w(match_id, deadline_id, generation, due_ms, payload)),
  closed AS (
    UPDATE deadlines AS d
    SET state = CASE WHEN d.generation = f.generation THEN 'fired' ELSE 'cancelled' END, updated_at = now()
    FROM updated AS u LEFT JOIN UNNEST($48::uuid[], $49::int8[]) AS f(match_id, generation) ON f.match_id = u.match_id
    WHERE d.match_id = u.match_id AND d.state = 'pending'
      AND NOT EXISTS (SELECT 1 FROM wanted AS w
                      WHERE w.match_id = d.match_id AND w.deadline_id = d.deadline_id AND w.generation = d.generation)),
  added AS (
    INSERT INTO deadlines (match_id, deadline_id, generation, due_ms, payload, state)
    SELECT w.match_id, w.deadline_id, w.generation, w.due_ms, w.payload::jsonb, 'pending' FROM wanted AS w
    WHERE w.match_id IN (SELECT match_id FROM passed)
      AND NOT EXISTS (SELECT 1 FROM deadlines AS d
                      WHERE d.match_id = w.match_id AND d.deadline_id = w.deadline_id
                        AND d.generation = w.generation AND d.state = 'pending')),
  guard AS (
    SELECT CASE WHEN $50::bool
                 AND ((SELECT count(*) FROM passed) <> cardinality($1::uuid[]) + cardinality($9::uuid[])
                                                       + cardinality($15::uuid[])
                      OR (SELECT count(*) FROM receipts_in) <> cardinality($17::uuid[])
                      OR (SELECT count(*) FROM log_in) <> cardinality($23::uuid[]))
           THEN juegoland_fence_lost() ELSE 0 END AS lost)
SELECT 'p' AS kind, match_id, NULL::text AS name, NULL::uuid AS command_id, NULL::int8 AS number FROM passed
UNION ALL SELECT 'r', match_id, principal, command_id, NULL FROM receipts_in
UNION ALL SELECT 'l', match_id, NULL, NULL, revision FROM log_in
UNION ALL SELECT 'g', NULL, NULL, NULL, lost FROM guard";

/// The SQLSTATE of `juegoland_fence_lost()` (migration 0007).
const FENCE_LOST: &str = "JL409";

/// What the write statement reported.
#[derive(Default)]
struct Report {
    passed: BTreeSet<Uuid>,
    receipts: BTreeSet<(Uuid, String, Uuid)>,
    log: BTreeSet<(Uuid, i64)>,
}

/// The column arrays of a batch, bound to [`WRITE`].
#[derive(Default)]
struct Batch<'a> {
    created: Columns,
    updated: Columns,
    expected: Vec<i64>,
    checked: Vec<Uuid>,
    checked_expected: Vec<i64>,
    receipts: ReceiptColumns<'a>,
    log: LogColumns,
    seated: SeatColumns<'a>,
    reseated: (Vec<Uuid>, Vec<&'a str>, Vec<&'static str>),
    outbox: OutboxColumns<'a>,
    deadlines: DeadlineColumns<'a>,
    /// The generation each updated match's commit fired.
    fired: (Vec<Uuid>, Vec<i64>),
}

#[derive(Default)]
struct DeadlineColumns<'a> {
    ids: Vec<Uuid>,
    deadline_ids: Vec<&'a str>,
    generations: Vec<i64>,
    due: Vec<i64>,
    payloads: Vec<String>,
}

#[derive(Default)]
struct ReceiptColumns<'a> {
    ids: Vec<Uuid>,
    principals: Vec<&'a str>,
    command_ids: Vec<Uuid>,
    fingerprints: Vec<&'a str>,
    outcomes: Vec<String>,
    revisions: Vec<i64>,
}

#[derive(Default)]
struct LogColumns {
    ids: Vec<Uuid>,
    revisions: Vec<i64>,
    instants: Vec<i64>,
    entries: Vec<String>,
}

#[derive(Default)]
struct SeatColumns<'a> {
    ids: Vec<Uuid>,
    seats: Vec<&'a str>,
    principals: Vec<Option<&'a str>>,
    bots: Vec<Option<&'a str>>,
    statuses: Vec<&'static str>,
}

#[derive(Default)]
struct OutboxColumns<'a> {
    ids: Vec<Uuid>,
    revisions: Vec<i64>,
    recipients: Vec<&'a str>,
    ordinals: Vec<i32>,
    payloads: Vec<&'a str>,
    trace_contexts: Vec<Option<&'a str>>,
}

impl<'a> Batch<'a> {
    fn of(commits: &[&'a Commit]) -> Result<Batch<'a>, StoreError> {
        let mut b = Batch::default();
        for c in commits {
            match (c.expected_revision, c.state.as_deref()) {
                (None, Some(s)) => b.created.push_state(s)?,
                (Some(expected), Some(s)) => {
                    b.updated.push_state(s)?;
                    b.expected.push(rows::to_i64(expected, "expected revision")?);
                }
                (Some(expected), None) => {
                    b.checked.push(c.match_id);
                    b.checked_expected.push(rows::to_i64(expected, "expected revision")?);
                }
                (None, None) => unreachable!("refused before the transaction"),
            }
            if let Some(r) = &c.receipt {
                let revision = match r.outcome {
                    ReceiptOutcome::Applied { revision } | ReceiptOutcome::Rejected { revision, .. } => revision,
                };
                b.receipts.ids.push(r.key.match_id);
                b.receipts.principals.push(r.key.principal.as_str());
                b.receipts.command_ids.push(r.key.command_id);
                b.receipts.fingerprints.push(r.fingerprint.as_str());
                b.receipts.outcomes.push(rows::encode("receipt outcome", &r.outcome)?);
                b.receipts.revisions.push(rows::to_i64(revision, "receipt revision")?);
            }
            if let Some(log) = &c.log {
                b.log.ids.push(c.match_id);
                b.log.revisions.push(rows::to_i64(log.revision, "log revision")?);
                b.log.instants.push(log.instant_ms);
                b.log.entries.push(rows::encode("log entry", log)?);
            }
            if let Some(state) = c.state.as_deref() {
                for (id, d) in &state.deadlines {
                    b.deadlines.ids.push(c.match_id);
                    b.deadlines.deadline_ids.push(id.as_str());
                    b.deadlines.generations.push(rows::to_i64(d.generation, "deadline generation")?);
                    b.deadlines.due.push(d.due_ms);
                    b.deadlines.payloads.push(rows::encode("deadline payload", &d.payload)?);
                }
                if c.expected_revision.is_some()
                    && let Some(generation) = rows::fired_generation(c)?
                {
                    b.fired.0.push(c.match_id);
                    b.fired.1.push(generation);
                }
                for p in rows::participants(state) {
                    if c.expected_revision.is_none() {
                        b.seated.ids.push(c.match_id);
                        b.seated.seats.push(p.seat);
                        b.seated.principals.push(p.principal);
                        b.seated.bots.push(p.bot_profile);
                        b.seated.statuses.push(p.status);
                    } else {
                        b.reseated.0.push(c.match_id);
                        b.reseated.1.push(p.seat);
                        b.reseated.2.push(p.status);
                    }
                }
            }
            for (n, p) in c.publications.iter().enumerate() {
                b.outbox.ids.push(c.match_id);
                b.outbox.revisions.push(rows::to_i64(p.revision, "publication revision")?);
                b.outbox.recipients.push(rows::recipient_column(p));
                b.outbox
                    .ordinals
                    .push(i32::try_from(n).map_err(|_| StoreError::Corrupt("too many publications".into()))?);
                b.outbox.payloads.push(&p.encoded);
                b.outbox.trace_contexts.push(p.trace_context.as_deref());
            }
        }
        Ok(b)
    }

    /// Runs [`WRITE`]; `None` when `abort_if_fenced` and a commit lost its fence (the
    /// statement was aborted: nothing of it was written).
    async fn write(
        &self,
        conn: &mut PgConnection,
        owner: Option<&str>,
        abort_if_fenced: bool,
    ) -> Result<Option<Report>, Attempt> {
        let (c, u, r, l, s, o) = (&self.created, &self.updated, &self.receipts, &self.log, &self.seated, &self.outbox);
        let d = &self.deadlines;
        let found = sqlx::query(WRITE)
            .bind(&c.ids)
            .bind(&c.game_ids)
            .bind(&c.rules_versions)
            .bind(&c.game_versions)
            .bind(&c.revisions)
            .bind(&c.epochs)
            .bind(&c.statuses)
            .bind(&c.states)
            .bind(&u.ids)
            .bind(&self.expected)
            .bind(&u.revisions)
            .bind(&u.epochs)
            .bind(&u.statuses)
            .bind(&u.states)
            .bind(&self.checked)
            .bind(&self.checked_expected)
            .bind(&r.ids)
            .bind(&r.principals)
            .bind(&r.command_ids)
            .bind(&r.fingerprints)
            .bind(&r.outcomes)
            .bind(&r.revisions)
            .bind(&l.ids)
            .bind(&l.revisions)
            .bind(&l.instants)
            .bind(&l.entries)
            .bind(&s.ids)
            .bind(&s.seats)
            .bind(&s.principals)
            .bind(&s.bots)
            .bind(&s.statuses)
            .bind(&self.reseated.0)
            .bind(&self.reseated.1)
            .bind(&self.reseated.2)
            .bind(&o.ids)
            .bind(&o.revisions)
            .bind(&o.recipients)
            .bind(&o.ordinals)
            .bind(&o.payloads)
            .bind(owner)
            .bind(&c.rules_digests)
            .bind(&o.trace_contexts)
            .bind(&d.ids)
            .bind(&d.deadline_ids)
            .bind(&d.generations)
            .bind(&d.due)
            .bind(&d.payloads)
            .bind(&self.fired.0)
            .bind(&self.fired.1)
            .bind(abort_if_fenced)
            .fetch_all(&mut *conn)
            .await;
        let found = match found {
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(FENCE_LOST) => return Ok(None),
            found => found.map_err(db)?,
        };
        let mut report = Report::default();
        for row in found {
            let kind: &str = row.try_get(0).map_err(db)?;
            if kind == "g" {
                continue;
            }
            let id: Uuid = row.try_get(1).map_err(db)?;
            match kind {
                "p" => {
                    report.passed.insert(id);
                }
                "r" => {
                    report.receipts.insert((id, row.try_get(2).map_err(db)?, row.try_get(3).map_err(db)?));
                }
                "l" => {
                    report.log.insert((id, row.try_get(4).map_err(db)?));
                }
                _ => {}
            }
        }
        Ok(Some(report))
    }
}

/// The commits (indexes into the batch) that lost their fence: the match failed its
/// compare-and-set (revision or owner), or its receipt or log entry already existed (the
/// judgement is stale: another writer stored it).
fn fenced_out(commits: &[&Commit], report: &Report) -> Result<BTreeSet<usize>, StoreError> {
    let mut lost = BTreeSet::new();
    for (i, c) in commits.iter().enumerate() {
        let receipt_stored = c
            .receipt
            .as_ref()
            .is_none_or(|r| report.receipts.contains(&(r.key.match_id, r.key.principal.clone(), r.key.command_id)));
        let log_stored = match &c.log {
            Some(log) => report.log.contains(&(c.match_id, rows::to_i64(log.revision, "log revision")?)),
            None => true,
        };
        if !report.passed.contains(&c.match_id) || !receipt_stored || !log_stored {
            lost.insert(i);
        }
    }
    Ok(lost)
}

/// The column arrays of `matches` rows.
#[derive(Default)]
struct Columns {
    ids: Vec<Uuid>,
    game_ids: Vec<String>,
    rules_versions: Vec<String>,
    game_versions: Vec<String>,
    rules_digests: Vec<String>,
    revisions: Vec<i64>,
    epochs: Vec<i64>,
    statuses: Vec<&'static str>,
    states: Vec<String>,
}

impl Columns {
    fn push_state(&mut self, s: &juegoland_core::MatchState) -> Result<(), StoreError> {
        self.ids.push(s.match_id);
        self.game_ids.push(s.game.id.clone());
        self.rules_versions.push(s.game.rules_version.clone());
        self.game_versions.push(s.game_version.clone());
        self.rules_digests.push(s.rules_digest.clone());
        self.revisions.push(rows::to_i64(s.revision, "revision")?);
        self.epochs.push(rows::to_i64(s.phase_epoch, "phase epoch")?);
        self.statuses.push(rows::match_status(s));
        self.states.push(rows::encode("match state", s)?);
        Ok(())
    }
}
