//! Group commit for PostgreSQL: the commits of different matches that arrive while a
//! transaction is in flight share the next one, written with multi-row statements.
//!
//! Each match's commit stays atomic and isolated. Inside one transaction the fences are
//! checked for the whole batch first (creation `INSERT … ON CONFLICT DO NOTHING RETURNING`,
//! the revision compare-and-set as one `UPDATE … FROM UNNEST … RETURNING`, `SELECT … FOR
//! UPDATE` for rejection-only commits), then receipts and log entries are inserted with
//! `ON CONFLICT DO NOTHING RETURNING`. If any commit lost its fence, the transaction is
//! rolled back, those commits get [`StoreError::Conflict`], and the rest are retried at once
//! in a new transaction: a fenced match never fails the others, it costs them one retry.
//! A transient failure fails the whole batch with [`StoreError::Unavailable`]: nothing of
//! it is committed, and every caller retries its own command.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use juegoland_core::{Commit, ReceiptOutcome};
use sqlx::postgres::PgPool;
use sqlx::{PgConnection, Row};
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

use crate::StoreError;
use crate::rows::{self, Dialect, store_error};

const PG: Dialect = Dialect::Postgres;

/// The most commits one transaction carries.
pub(crate) const MAX_BATCH: usize = 128;

/// Transactions in flight at once (each takes a pooled connection).
pub(crate) const COMMITTERS: usize = 4;

pub(crate) struct Job {
    pub commit: Commit,
    pub reply: oneshot::Sender<Result<(), StoreError>>,
}

/// Starts the committer tasks; commits sent on the returned channel are grouped.
pub(crate) fn start(pool: PgPool) -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>(MAX_BATCH * COMMITTERS * 4);
    let rx = Arc::new(Mutex::new(rx));
    for _ in 0..COMMITTERS {
        let (pool, rx) = (pool.clone(), rx.clone());
        // Each committer ends when every sender (every clone of the store) is dropped.
        tokio::spawn(async move {
            loop {
                let batch = {
                    let mut rx = rx.lock().await;
                    let Some(first) = rx.recv().await else { return };
                    let mut batch = vec![first];
                    while batch.len() < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(job) => batch.push(job),
                            Err(_) => break,
                        }
                    }
                    batch
                };
                run(&pool, batch).await;
            }
        });
    }
    tx
}

/// The same error again, for every caller of a failed batch.
fn replicate(e: &StoreError) -> StoreError {
    match e {
        StoreError::Conflict { match_id, expected } => {
            StoreError::Conflict { match_id: *match_id, expected: *expected }
        }
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        StoreError::Corrupt(m) => StoreError::Corrupt(m.clone()),
    }
}

fn conflict(c: &Commit) -> StoreError {
    StoreError::Conflict { match_id: c.match_id, expected: c.expected_revision }
}

/// Commits a batch, answering every job.
async fn run(pool: &PgPool, mut jobs: Vec<Job>) {
    while !jobs.is_empty() {
        // One commit per match per transaction: a second one for the same match (only a
        // split brain sends it) waits for the next round.
        let mut seen = BTreeSet::new();
        let (now, later): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| seen.insert(j.commit.match_id));
        let mut retry = Vec::new();
        match attempt(pool, &now).await {
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
                    let _ = job.reply.send(Err(replicate(&e)));
                }
            }
        }
        jobs = retry.into_iter().chain(later).collect();
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

/// One transaction for the batch: everything, or nothing and the fenced commits named.
async fn attempt(pool: &PgPool, jobs: &[Job]) -> Result<(), Attempt> {
    let commits: Vec<&Commit> = jobs.iter().map(|j| &j.commit).collect();
    let mut lost = BTreeSet::new();
    for (i, c) in commits.iter().enumerate() {
        if c.state.is_none() && c.expected_revision.is_none() {
            lost.insert(i);
        }
    }
    if !lost.is_empty() {
        return Err(Attempt::Fenced(lost));
    }
    let mut tx = pool.begin().await.map_err(db)?;
    fence(&mut tx, &commits, &mut lost).await?;
    if lost.is_empty() {
        receipts_and_log(&mut tx, &commits, &mut lost).await?;
    }
    if !lost.is_empty() {
        // Dropping the transaction rolls it back.
        return Err(Attempt::Fenced(lost));
    }
    participants(&mut tx, &commits).await?;
    deadlines(&mut tx, &commits).await?;
    outbox(&mut tx, &commits).await?;
    tx.commit().await.map_err(db)?;
    Ok(())
}

/// Creations, the revision compare-and-set and the fence of rejection-only commits.
async fn fence(tx: &mut PgConnection, commits: &[&Commit], lost: &mut BTreeSet<usize>) -> Result<(), Attempt> {
    let (mut create, mut update, mut check) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in commits.iter().enumerate() {
        match (c.expected_revision, &c.state) {
            (None, Some(_)) => create.push(i),
            (Some(_), Some(_)) => update.push(i),
            (Some(_), None) => check.push(i),
            (None, None) => unreachable!("refused before the transaction"),
        }
    }
    let by_id = |idx: &[usize]| -> BTreeMap<Uuid, usize> { idx.iter().map(|i| (commits[*i].match_id, *i)).collect() };

    if !create.is_empty() {
        let mut cols = Columns::default();
        for i in &create {
            let s = commits[*i].state.as_deref().expect("a creation has a state");
            cols.push_state(s)?;
        }
        let rows = sqlx::query(
            "INSERT INTO matches (match_id, game_id, rules_version, game_version, revision, phase_epoch, status, state)
             SELECT u.match_id, u.game_id, u.rules_version, u.game_version, u.revision, u.phase_epoch, u.status, u.state::jsonb
             FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::text[], $8::text[])
                  AS u(match_id, game_id, rules_version, game_version, revision, phase_epoch, status, state)
             ON CONFLICT (match_id) DO NOTHING RETURNING match_id",
        )
        .bind(&cols.ids)
        .bind(&cols.game_ids)
        .bind(&cols.rules_versions)
        .bind(&cols.game_versions)
        .bind(&cols.revisions)
        .bind(&cols.epochs)
        .bind(&cols.statuses)
        .bind(&cols.states)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        mark_missing(&by_id(&create), &rows, lost)?;
    }

    if !update.is_empty() {
        let mut cols = Columns::default();
        let mut expected = Vec::new();
        for i in &update {
            let c = commits[*i];
            cols.push_state(c.state.as_deref().expect("an update has a state"))?;
            expected.push(rows::to_i64(c.expected_revision.expect("an update is fenced"), "expected revision")?);
        }
        let rows = sqlx::query(
            "UPDATE matches AS m SET revision = u.revision, phase_epoch = u.phase_epoch, status = u.status,
                    state = u.state::jsonb, updated_at = now()
             FROM UNNEST($1::uuid[], $2::int8[], $3::int8[], $4::int8[], $5::text[], $6::text[])
                  AS u(match_id, expected, revision, phase_epoch, status, state)
             WHERE m.match_id = u.match_id AND m.revision = u.expected
             RETURNING m.match_id",
        )
        .bind(&cols.ids)
        .bind(&expected)
        .bind(&cols.revisions)
        .bind(&cols.epochs)
        .bind(&cols.statuses)
        .bind(&cols.states)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        mark_missing(&by_id(&update), &rows, lost)?;
    }

    if !check.is_empty() {
        let ids: Vec<Uuid> = check.iter().map(|i| commits[*i].match_id).collect();
        let expected = check
            .iter()
            .map(|i| rows::to_i64(commits[*i].expected_revision.expect("fenced"), "expected revision"))
            .collect::<Result<Vec<_>, _>>()?;
        // The rows stay locked until the receipts are stored.
        let rows = sqlx::query(
            "SELECT m.match_id FROM matches AS m
             JOIN UNNEST($1::uuid[], $2::int8[]) AS f(match_id, expected)
               ON m.match_id = f.match_id AND m.revision = f.expected
             FOR UPDATE OF m",
        )
        .bind(&ids)
        .bind(&expected)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        mark_missing(&by_id(&check), &rows, lost)?;
    }
    Ok(())
}

/// Adds to `lost` every commit whose match id did not come back.
fn mark_missing(
    wanted: &BTreeMap<Uuid, usize>,
    returned: &[sqlx::postgres::PgRow],
    lost: &mut BTreeSet<usize>,
) -> Result<(), Attempt> {
    let got = returned.iter().map(|r| r.try_get::<Uuid, _>(0)).collect::<Result<BTreeSet<Uuid>, _>>().map_err(db)?;
    for (id, i) in wanted {
        if !got.contains(id) {
            lost.insert(*i);
        }
    }
    Ok(())
}

/// The column arrays of `matches` rows.
#[derive(Default)]
struct Columns {
    ids: Vec<Uuid>,
    game_ids: Vec<String>,
    rules_versions: Vec<String>,
    game_versions: Vec<String>,
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
        self.revisions.push(rows::to_i64(s.revision, "revision")?);
        self.epochs.push(rows::to_i64(s.phase_epoch, "phase epoch")?);
        self.statuses.push(rows::match_status(s));
        self.states.push(rows::encode("match state", s)?);
        Ok(())
    }
}

/// Receipts and log entries; a key that already exists means the commit's judgement is
/// stale (another writer stored it): that commit is fenced.
async fn receipts_and_log(
    tx: &mut PgConnection,
    commits: &[&Commit],
    lost: &mut BTreeSet<usize>,
) -> Result<(), Attempt> {
    let (mut idx, mut ids, mut principals, mut command_ids, mut fingerprints, mut outcomes, mut revisions) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, c) in commits.iter().enumerate() {
        if let Some(r) = &c.receipt {
            let revision = match r.outcome {
                ReceiptOutcome::Applied { revision } | ReceiptOutcome::Rejected { revision, .. } => revision,
            };
            idx.push(i);
            ids.push(r.key.match_id);
            principals.push(r.key.principal.as_str());
            command_ids.push(r.key.command_id);
            fingerprints.push(r.fingerprint.as_str());
            outcomes.push(rows::encode("receipt outcome", &r.outcome)?);
            revisions.push(rows::to_i64(revision, "receipt revision")?);
        }
    }
    if !idx.is_empty() {
        let rows = sqlx::query(
            "INSERT INTO receipts (match_id, principal, command_id, fingerprint, outcome, revision)
             SELECT u.match_id, u.principal, u.command_id, u.fingerprint, u.outcome::jsonb, u.revision
             FROM UNNEST($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::int8[])
                  AS u(match_id, principal, command_id, fingerprint, outcome, revision)
             ON CONFLICT DO NOTHING RETURNING match_id, principal, command_id",
        )
        .bind(&ids)
        .bind(&principals)
        .bind(&command_ids)
        .bind(&fingerprints)
        .bind(&outcomes)
        .bind(&revisions)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        let got = rows
            .iter()
            .map(|r| Ok((r.try_get::<Uuid, _>(0)?, r.try_get::<String, _>(1)?, r.try_get::<Uuid, _>(2)?)))
            .collect::<Result<BTreeSet<_>, sqlx::Error>>()
            .map_err(db)?;
        for (n, i) in idx.iter().enumerate() {
            if !got.contains(&(ids[n], principals[n].to_owned(), command_ids[n])) {
                lost.insert(*i);
            }
        }
    }

    let (mut idx, mut ids, mut revisions, mut instants, mut entries) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, c) in commits.iter().enumerate() {
        if let Some(log) = &c.log {
            idx.push(i);
            ids.push(c.match_id);
            revisions.push(rows::to_i64(log.revision, "log revision")?);
            instants.push(log.instant_ms);
            entries.push(rows::encode("log entry", log)?);
        }
    }
    if !idx.is_empty() {
        let rows = sqlx::query(
            "INSERT INTO match_log (match_id, revision, instant_ms, entry)
             SELECT u.match_id, u.revision, u.instant_ms, u.entry::jsonb
             FROM UNNEST($1::uuid[], $2::int8[], $3::int8[], $4::text[]) AS u(match_id, revision, instant_ms, entry)
             ON CONFLICT DO NOTHING RETURNING match_id, revision",
        )
        .bind(&ids)
        .bind(&revisions)
        .bind(&instants)
        .bind(&entries)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        let got = rows
            .iter()
            .map(|r| Ok((r.try_get::<Uuid, _>(0)?, r.try_get::<i64, _>(1)?)))
            .collect::<Result<BTreeSet<_>, sqlx::Error>>()
            .map_err(db)?;
        for (n, i) in idx.iter().enumerate() {
            if !got.contains(&(ids[n], revisions[n])) {
                lost.insert(*i);
            }
        }
    }
    Ok(())
}

/// Participants: inserted with a new match, their status kept in step after.
async fn participants(tx: &mut PgConnection, commits: &[&Commit]) -> Result<(), Attempt> {
    let (mut new_ids, mut new_seats, mut new_principals, mut new_bots, mut new_statuses) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut ids, mut seats, mut statuses) = (Vec::new(), Vec::new(), Vec::new());
    for c in commits {
        let Some(state) = c.state.as_deref() else { continue };
        for p in rows::participants(state) {
            if c.expected_revision.is_none() {
                new_ids.push(c.match_id);
                new_seats.push(p.seat);
                new_principals.push(p.principal);
                new_bots.push(p.bot_profile);
                new_statuses.push(p.status);
            } else {
                ids.push(c.match_id);
                seats.push(p.seat);
                statuses.push(p.status);
            }
        }
    }
    if !new_ids.is_empty() {
        sqlx::query(
            "INSERT INTO participants (match_id, seat, principal, bot_profile, status)
             SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])",
        )
        .bind(&new_ids)
        .bind(&new_seats)
        .bind(&new_principals)
        .bind(&new_bots)
        .bind(&new_statuses)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    if !ids.is_empty() {
        sqlx::query(
            "UPDATE participants AS p SET status = v.status
             FROM UNNEST($1::uuid[], $2::text[], $3::text[]) AS v(match_id, seat, status)
             WHERE p.match_id = v.match_id AND p.seat = v.seat AND p.status <> v.status",
        )
        .bind(&ids)
        .bind(&seats)
        .bind(&statuses)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    Ok(())
}

/// The pending deadline rows of each match become exactly its state's deadlines.
async fn deadlines(tx: &mut PgConnection, commits: &[&Commit]) -> Result<(), Attempt> {
    let existing: Vec<Uuid> =
        commits.iter().filter(|c| c.state.is_some() && c.expected_revision.is_some()).map(|c| c.match_id).collect();
    let mut pending: BTreeMap<Uuid, Vec<(String, i64)>> = BTreeMap::new();
    if !existing.is_empty() {
        let rows = sqlx::query(
            "SELECT match_id, deadline_id, generation FROM deadlines WHERE match_id = ANY($1) AND state = 'pending'",
        )
        .bind(&existing)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        for r in rows {
            let (id, deadline, generation): (Uuid, String, i64) =
                (r.try_get(0).map_err(db)?, r.try_get(1).map_err(db)?, r.try_get(2).map_err(db)?);
            pending.entry(id).or_default().push((deadline, generation));
        }
    }
    let (mut close_ids, mut close_deadlines, mut close_generations, mut close_states) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut add_ids, mut add_deadlines, mut add_generations, mut add_due, mut add_payloads) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for c in commits {
        let Some(state) = c.state.as_deref() else { continue };
        let stored = pending.remove(&c.match_id).unwrap_or_default();
        let plan = rows::plan_deadlines(rows::fired_generation(c)?, &state.deadlines, stored)?;
        for (id, generation, new_state) in plan.close {
            close_ids.push(c.match_id);
            close_deadlines.push(id);
            close_generations.push(generation);
            close_states.push(new_state);
        }
        for (id, generation, due_ms, payload) in plan.add {
            add_ids.push(c.match_id);
            add_deadlines.push(id.to_owned());
            add_generations.push(generation);
            add_due.push(due_ms);
            add_payloads.push(rows::encode("deadline payload", payload)?);
        }
    }
    if !close_ids.is_empty() {
        sqlx::query(
            "UPDATE deadlines AS d SET state = v.state, updated_at = now()
             FROM UNNEST($1::uuid[], $2::text[], $3::int8[], $4::text[]) AS v(match_id, deadline_id, generation, state)
             WHERE d.match_id = v.match_id AND d.deadline_id = v.deadline_id AND d.generation = v.generation",
        )
        .bind(&close_ids)
        .bind(&close_deadlines)
        .bind(&close_generations)
        .bind(&close_states)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    if !add_ids.is_empty() {
        sqlx::query(
            "INSERT INTO deadlines (match_id, deadline_id, generation, due_ms, payload, state)
             SELECT u.match_id, u.deadline_id, u.generation, u.due_ms, u.payload::jsonb, 'pending'
             FROM UNNEST($1::uuid[], $2::text[], $3::int8[], $4::int8[], $5::text[])
                  AS u(match_id, deadline_id, generation, due_ms, payload)",
        )
        .bind(&add_ids)
        .bind(&add_deadlines)
        .bind(&add_generations)
        .bind(&add_due)
        .bind(&add_payloads)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    Ok(())
}

/// One outbox row per publication of every commit.
async fn outbox(tx: &mut PgConnection, commits: &[&Commit]) -> Result<(), Attempt> {
    let (mut ids, mut revisions, mut recipients, mut ordinals, mut payloads) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for c in commits {
        for (n, p) in c.publications.iter().enumerate() {
            ids.push(c.match_id);
            revisions.push(rows::to_i64(p.revision, "publication revision")?);
            recipients.push(rows::recipient_column(p));
            ordinals.push(i32::try_from(n).map_err(|_| StoreError::Corrupt("too many publications".into()))?);
            payloads.push(&*p.encoded);
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO outbox (match_id, revision, recipient, ordinal, payload)
         SELECT * FROM UNNEST($1::uuid[], $2::int8[], $3::text[], $4::int4[], $5::text[])",
    )
    .bind(&ids)
    .bind(&revisions)
    .bind(&recipients)
    .bind(&ordinals)
    .bind(&payloads)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    Ok(())
}
