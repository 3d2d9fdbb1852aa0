//! Group commit for PostgreSQL: the commits of different matches that arrive while a
//! transaction is in flight share the next one, written with multi-row statements. Up to
//! [`COMMITTERS`] transactions are in flight at once, the second only once its batch is worth
//! it ([`OVERLAP_AT`]).
//!
//! Each match's commit stays atomic and isolated. One statement ([`WRITE`]) carries the
//! whole batch: its data-modifying `WITH` clauses check the fences (a creation's `INSERT …
//! ON CONFLICT DO NOTHING RETURNING`; for every other commit its expected revision as the
//! match's newest `revisions` row and, for an owned store, its `matches` row owned by the
//! store's owner, share-locked; the revision row's primary key and the receipt key's unique
//! index take each once) and write the revision rows, final rejections, participants,
//! snapshots and deadlines of the matches that passed. It runs alone (autocommit): a batch
//! is one round trip. A transaction carries the commits of one owner (clones of a store
//! with different owners share the committer; their commits take separate rounds). If any commit lost its fence (or its
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
                crash_point!("store-batch-committed");
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
/// `JL409`; or the revision's `unique_violation` when its key was taken after the fence
/// was read, by a writer racing this one or a receipt key already stored), so nothing of the
/// batch is committed. Only then does a second attempt run [`WRITE_REPORT`] without the
/// abort inside `BEGIN … ROLLBACK` to learn which commits lost; the caller retries the rest.
/// Rows of a commit that lost its fence are never written, so a stale writer meets no
/// unique violation there.
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
    crash_point!("store-batch-taken");
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
/// row; `passed` is the matches whose fence held, and only their rows are written. `$12` is
/// the store's owner: `NULL` (unowned) skips the owner fence and creates unowned matches.
///
/// The fences: a creation inserts its `matches` row (`ON CONFLICT DO NOTHING`: a taken id
/// loses); any other commit finds its expected revision as the match's newest `revisions`
/// row (that one and not the next: two primary-key probes) and, for an owned store, its
/// `matches` row owned by `$12`, share-locked (`owned`) so that a claim (an `UPDATE` of that
/// row) waits for this transaction, and a claim committed first fails it. The revision row
/// itself is the compare-and-set: its primary key takes revision r + 1 once, and
/// `revisions_receipt` a receipt key once; a row that meets either is not written
/// (`ON CONFLICT DO NOTHING`), and its commit lost. A final rejection is a `receipts` row,
/// refused where the key is taken in `revisions`. The state is written only at snapshot
/// points (`$35`–`$39`, `snapshots`).
///
/// Deadlines: `$40`–`$44` are the deadlines every new state holds (`wanted`), `$45`/`$46` the
/// generation each advanced match's commit fired; the pending rows of an advanced match that
/// its new state no longer holds are closed (`fired` when it is the fired generation, else
/// `cancelled`) and the wanted ones not pending yet are added: the rule of
/// `rows::plan_deadlines` (which the SQLite store runs), in SQL so the batch stays one round
/// trip; the deadline cases of the behaviour suite hold both to it. `$48`–`$51` are the
/// platform feed's events of the batch (`fed`, `match_events`), written for the matches that
/// passed. `$47` aborts the
/// statement (`guard`) when any commit lost its fence: nothing of the batch is then written.
/// The guard's row (`'g'`) is selected only so that it is evaluated.
///
/// The statement comes in two forms ([`WRITE`], [`WRITE_REPORT`]) that differ only in how a
/// revision row meets a taken key: in the first, the batch's common case, it is a plain
/// `INSERT`, so a taken revision or receipt key fails the statement (`unique_violation`)
/// like the guard does, and PostgreSQL skips the speculative insertion that `ON CONFLICT`
/// costs on every row (a pre-check of both keys and a confirmation record: about 6% of its
/// CPU in the cluster load test, docs/benchmarks.md); the second, run only to learn which
/// commits lost, skips such a row (`ON CONFLICT DO NOTHING`) and reports it.
macro_rules! write_statement {
    ($on_taken_key:literal) => {
        concat!(
            "
WITH
  created AS (
    INSERT INTO matches (match_id, game_id, rules_version, game_version, rules_digest, revision, phase_epoch, status,
                         state, owner, owner_epoch, lock_digest)
    SELECT u.match_id, u.game_id, u.rules_version, u.game_version, u.rules_digest, u.revision, u.phase_epoch, u.status,
           u.state, $12::text, CASE WHEN $12::text IS NULL THEN 0 ELSE 1 END,
           coalesce(u.state::jsonb #>> '{package,lockDigest}', '')
    FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::int8[], $8::text[],
                $9::text[])
         AS u(match_id, game_id, rules_version, game_version, rules_digest, revision, phase_epoch, status, state)
    ON CONFLICT (match_id) DO NOTHING
    RETURNING match_id),
  owned AS (
    SELECT m.match_id FROM matches AS m
    WHERE $12::text IS NOT NULL AND m.match_id = ANY($10::uuid[]) AND m.owner = $12::text
    FOR SHARE OF m),
  fenced AS (
    SELECT f.match_id FROM UNNEST($10::uuid[], $11::int8[]) AS f(match_id, expected)
    WHERE EXISTS (SELECT 1 FROM revisions AS r WHERE r.match_id = f.match_id AND r.revision = f.expected)
      AND NOT EXISTS (SELECT 1 FROM revisions AS r WHERE r.match_id = f.match_id AND r.revision = f.expected + 1)
      AND ($12::text IS NULL OR f.match_id IN (SELECT match_id FROM owned))),
  passed AS (SELECT match_id FROM created UNION ALL SELECT match_id FROM fenced),
  logged AS (
    INSERT INTO revisions (match_id, revision, principal, command_id, fingerprint, instant_ms, entry, publications)
    SELECT u.* FROM UNNEST($13::uuid[], $14::int8[], $15::text[], $16::uuid[], $17::text[], $18::int8[], $19::text[],
                           $20::text[])
         AS u(match_id, revision, principal, command_id, fingerprint, instant_ms, entry, publications)
    WHERE u.match_id IN (SELECT match_id FROM passed)
      AND (u.command_id IS NULL
           OR NOT EXISTS (SELECT 1 FROM receipts AS k
                          WHERE k.match_id = u.match_id AND k.principal = u.principal AND k.command_id = u.command_id))
    ",
            $on_taken_key,
            "
    RETURNING match_id, revision),
  rejected AS (
    INSERT INTO receipts (match_id, principal, command_id, fingerprint, outcome, revision)
    SELECT u.* FROM UNNEST($21::uuid[], $22::text[], $23::uuid[], $24::text[], $25::text[], $26::int8[])
         AS u(match_id, principal, command_id, fingerprint, outcome, revision)
    WHERE u.match_id IN (SELECT match_id FROM passed)
      AND NOT EXISTS (SELECT 1 FROM revisions AS r
                      WHERE r.match_id = u.match_id AND r.principal = u.principal AND r.command_id = u.command_id)
    ON CONFLICT DO NOTHING
    RETURNING match_id),
  advanced AS (SELECT match_id FROM logged WHERE revision > 0),
  watermarked AS (INSERT INTO outbox_watermarks (match_id, dispatched) SELECT match_id, -1 FROM created),
  seated AS (
    INSERT INTO participants (match_id, seat, principal, bot_profile, status)
    SELECT u.* FROM UNNEST($27::uuid[], $28::text[], $29::text[], $30::text[], $31::text[])
         AS u(match_id, seat, principal, bot_profile, status)
    WHERE u.match_id IN (SELECT match_id FROM created)),
  reseated AS (
    UPDATE participants AS p SET status = v.status
    FROM UNNEST($32::uuid[], $33::text[], $34::text[]) AS v(match_id, seat, status)
    WHERE p.match_id = v.match_id AND p.seat = v.seat AND p.status <> v.status
      AND v.match_id IN (SELECT match_id FROM advanced)),
  snapshots AS (
    UPDATE matches AS m SET revision = u.revision, phase_epoch = u.phase_epoch, status = u.status, state = u.state,
           updated_at = now()
    FROM UNNEST($35::uuid[], $36::int8[], $37::int8[], $38::text[], $39::text[])
         AS u(match_id, revision, phase_epoch, status, state)
    WHERE m.match_id = u.match_id AND u.match_id IN (SELECT match_id FROM advanced)),
  wanted AS (
    SELECT * FROM UNNEST($40::uuid[], $41::text[], $42::int8[], $43::int8[], $44::text[])
         AS w(match_id, deadline_id, generation, due_ms, payload)),
  closed AS (
    UPDATE deadlines AS d
    SET state = CASE WHEN d.generation = f.generation THEN 'fired' ELSE 'cancelled' END, updated_at = now()
    FROM advanced AS u LEFT JOIN UNNEST($45::uuid[], $46::int8[]) AS f(match_id, generation) ON f.match_id = u.match_id
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
  fed AS (
    INSERT INTO match_events (match_id, revision, kind, body)
    SELECT u.* FROM UNNEST($48::uuid[], $49::int8[], $50::text[], $51::text[]) AS u(match_id, revision, kind, body)
    WHERE u.match_id IN (SELECT match_id FROM passed)),
  guard AS (
    SELECT CASE WHEN $47::bool
                 AND ((SELECT count(*) FROM passed) <> cardinality($1::uuid[]) + cardinality($10::uuid[])
                      OR (SELECT count(*) FROM logged) <> cardinality($13::uuid[])
                      OR (SELECT count(*) FROM rejected) <> cardinality($21::uuid[]))
           THEN juegoland_fence_lost() ELSE 0 END AS lost)
SELECT 'p' AS kind, match_id, NULL::int8 AS number FROM passed
UNION ALL SELECT 'l', match_id, revision FROM logged
UNION ALL SELECT 'r', match_id, NULL FROM rejected
UNION ALL SELECT 'g', NULL, lost FROM guard"
        )
    };
}

/// The batch's statement, a taken key failing it (see [`write_statement!`]).
const WRITE: &str = write_statement!("");
/// The batch's statement, a taken key skipped and reported (see [`write_statement!`]).
const WRITE_REPORT: &str = write_statement!("ON CONFLICT DO NOTHING");

/// The SQLSTATE of a taken unique key.
const UNIQUE_VIOLATION: &str = "23505";

/// The SQLSTATE of `juegoland_fence_lost()` (migration 0007).
const FENCE_LOST: &str = "JL409";

/// What the write statement reported.
#[derive(Default)]
struct Report {
    passed: BTreeSet<Uuid>,
    /// The revisions appended.
    logged: BTreeSet<(Uuid, i64)>,
    /// The matches whose final rejection was stored.
    rejected: BTreeSet<Uuid>,
}

/// The column arrays of a batch, bound to [`WRITE`].
#[derive(Default)]
struct Batch<'a> {
    created: Columns,
    /// Every other commit's match and the revision it expects to be the newest.
    fenced: (Vec<Uuid>, Vec<i64>),
    revisions: RevisionColumns<'a>,
    rejections: RejectionColumns<'a>,
    seated: SeatColumns<'a>,
    reseated: (Vec<Uuid>, Vec<&'a str>, Vec<&'static str>),
    /// The new states that are snapshot points (creations are in `created`).
    snapshots: Columns,
    deadlines: DeadlineColumns<'a>,
    /// The generation each advanced match's commit fired.
    fired: (Vec<Uuid>, Vec<i64>),
    /// The platform feed's events (`rows::feed_event`): match, revision, kind, body.
    feed: (Vec<Uuid>, Vec<i64>, Vec<&'static str>, Vec<String>),
}

#[derive(Default)]
struct DeadlineColumns<'a> {
    ids: Vec<Uuid>,
    deadline_ids: Vec<&'a str>,
    generations: Vec<i64>,
    due: Vec<i64>,
    payloads: Vec<String>,
}

/// One `revisions` row per commit with a log entry: the entry, the applied receipt's key and
/// fingerprint, the publications.
#[derive(Default)]
struct RevisionColumns<'a> {
    ids: Vec<Uuid>,
    revisions: Vec<i64>,
    principals: Vec<Option<&'a str>>,
    command_ids: Vec<Option<Uuid>>,
    fingerprints: Vec<Option<&'a str>>,
    instants: Vec<i64>,
    entries: Vec<String>,
    publications: Vec<String>,
}

/// One `receipts` row per final rejection.
#[derive(Default)]
struct RejectionColumns<'a> {
    ids: Vec<Uuid>,
    principals: Vec<&'a str>,
    command_ids: Vec<Uuid>,
    fingerprints: Vec<&'a str>,
    outcomes: Vec<String>,
    revisions: Vec<i64>,
}

#[derive(Default)]
struct SeatColumns<'a> {
    ids: Vec<Uuid>,
    seats: Vec<&'a str>,
    principals: Vec<Option<&'a str>>,
    /// Bot profiles, and agent profiles behind `rows::AGENT_PROFILE`.
    bots: Vec<Option<String>>,
    statuses: Vec<&'static str>,
}

impl<'a> Batch<'a> {
    fn of(commits: &[&'a Commit]) -> Result<Batch<'a>, StoreError> {
        let mut b = Batch::default();
        for c in commits {
            match (c.expected_revision, c.state.as_deref()) {
                (None, Some(s)) => b.created.push_state(s)?,
                (Some(expected), state) => {
                    b.fenced.0.push(c.match_id);
                    b.fenced.1.push(rows::to_i64(expected, "expected revision")?);
                    if let Some(s) = state.filter(|s| s.is_snapshot_point()) {
                        b.snapshots.push_state(s)?;
                    }
                }
                (None, None) => unreachable!("refused before the transaction"),
            }
            let applied = match &c.receipt {
                Some(r) => match r.outcome {
                    ReceiptOutcome::Applied { .. } => Some(r),
                    ReceiptOutcome::Rejected { revision, .. } => {
                        b.rejections.ids.push(r.key.match_id);
                        b.rejections.principals.push(r.key.principal.as_str());
                        b.rejections.command_ids.push(r.key.command_id);
                        b.rejections.fingerprints.push(r.fingerprint.as_str());
                        b.rejections.outcomes.push(rows::encode("receipt outcome", &r.outcome)?);
                        b.rejections.revisions.push(rows::to_i64(revision, "receipt revision")?);
                        None
                    }
                },
                None => None,
            };
            match &c.log {
                Some(log) => {
                    let r = &mut b.revisions;
                    r.ids.push(c.match_id);
                    r.revisions.push(rows::to_i64(log.revision, "log revision")?);
                    r.principals.push(applied.map(|a| a.key.principal.as_str()));
                    r.command_ids.push(applied.map(|a| a.key.command_id));
                    r.fingerprints.push(applied.map(|a| a.fingerprint.as_str()));
                    r.instants.push(log.instant_ms);
                    r.entries.push(rows::encode("log entry", log)?);
                    r.publications.push(rows::encode_publications(&c.publications)?);
                }
                None if applied.is_some() || !c.publications.is_empty() => {
                    return Err(StoreError::Corrupt(format!(
                        "a commit of match {} with an applied receipt or publications but no log entry",
                        c.match_id
                    )));
                }
                None => {}
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
                if let Some((kind, body)) = rows::feed_event(c)? {
                    b.feed.0.push(c.match_id);
                    b.feed.1.push(rows::to_i64(state.revision, "revision")?);
                    b.feed.2.push(kind);
                    b.feed.3.push(body);
                }
                let participants = if c.participants_may_change() { rows::participants(state) } else { Vec::new() };
                for p in participants {
                    if c.expected_revision.is_none() {
                        b.seated.ids.push(c.match_id);
                        b.seated.seats.push(p.seat);
                        b.seated.principals.push(p.principal);
                        b.seated.bots.push(p.bot_profile.map(std::borrow::Cow::into_owned));
                        b.seated.statuses.push(p.status);
                    } else {
                        b.reseated.0.push(c.match_id);
                        b.reseated.1.push(p.seat);
                        b.reseated.2.push(p.status);
                    }
                }
            }
        }
        Ok(b)
    }

    /// Runs [`WRITE`] when `abort_if_fenced`, else [`WRITE_REPORT`]; `None` when
    /// `abort_if_fenced` and a commit lost its fence (the statement was aborted: nothing of it
    /// was written).
    async fn write(
        &self,
        conn: &mut PgConnection,
        owner: Option<&str>,
        abort_if_fenced: bool,
    ) -> Result<Option<Report>, Attempt> {
        let (c, r, j, s, n) = (&self.created, &self.revisions, &self.rejections, &self.seated, &self.snapshots);
        let d = &self.deadlines;
        let found = sqlx::query(if abort_if_fenced { WRITE } else { WRITE_REPORT })
            .bind(&c.ids)
            .bind(&c.game_ids)
            .bind(&c.rules_versions)
            .bind(&c.game_versions)
            .bind(&c.rules_digests)
            .bind(&c.revisions)
            .bind(&c.epochs)
            .bind(&c.statuses)
            .bind(&c.states)
            .bind(&self.fenced.0)
            .bind(&self.fenced.1)
            .bind(owner)
            .bind(&r.ids)
            .bind(&r.revisions)
            .bind(&r.principals)
            .bind(&r.command_ids)
            .bind(&r.fingerprints)
            .bind(&r.instants)
            .bind(&r.entries)
            .bind(&r.publications)
            .bind(&j.ids)
            .bind(&j.principals)
            .bind(&j.command_ids)
            .bind(&j.fingerprints)
            .bind(&j.outcomes)
            .bind(&j.revisions)
            .bind(&s.ids)
            .bind(&s.seats)
            .bind(&s.principals)
            .bind(&s.bots)
            .bind(&s.statuses)
            .bind(&self.reseated.0)
            .bind(&self.reseated.1)
            .bind(&self.reseated.2)
            .bind(&n.ids)
            .bind(&n.revisions)
            .bind(&n.epochs)
            .bind(&n.statuses)
            .bind(&n.states)
            .bind(&d.ids)
            .bind(&d.deadline_ids)
            .bind(&d.generations)
            .bind(&d.due)
            .bind(&d.payloads)
            .bind(&self.fired.0)
            .bind(&self.fired.1)
            .bind(abort_if_fenced)
            .bind(&self.feed.0)
            .bind(&self.feed.1)
            .bind(&self.feed.2)
            .bind(&self.feed.3)
            .fetch_all(&mut *conn)
            .await;
        let found = match found {
            Err(sqlx::Error::Database(e))
                if abort_if_fenced && matches!(e.code().as_deref(), Some(FENCE_LOST | UNIQUE_VIOLATION)) =>
            {
                return Ok(None);
            }
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
                "l" => {
                    report.logged.insert((id, row.try_get(2).map_err(db)?));
                }
                "r" => {
                    report.rejected.insert(id);
                }
                _ => {}
            }
        }
        Ok(Some(report))
    }
}

/// The commits (indexes into the batch) that lost their fence: the match failed its
/// compare-and-set (revision or owner), or its revision or receipt key was already taken
/// (the judgement is stale: another writer stored it).
fn fenced_out(commits: &[&Commit], report: &Report) -> Result<BTreeSet<usize>, StoreError> {
    let mut lost = BTreeSet::new();
    for (i, c) in commits.iter().enumerate() {
        let logged = match &c.log {
            Some(log) => report.logged.contains(&(c.match_id, rows::to_i64(log.revision, "log revision")?)),
            None => true,
        };
        let rejection_stored =
            !c.receipt.as_ref().is_some_and(|r| matches!(r.outcome, ReceiptOutcome::Rejected { .. }))
                || report.rejected.contains(&c.match_id);
        if !report.passed.contains(&c.match_id) || !logged || !rejection_stored {
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
        let c = rows::SnapshotColumns::of(s)?;
        self.revisions.push(c.revision);
        self.epochs.push(c.phase_epoch);
        self.statuses.push(c.status);
        self.states.push(c.state);
        Ok(())
    }
}
