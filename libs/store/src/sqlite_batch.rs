//! The embedded store's hot path: group commit on one writer thread, and point reads on the
//! caller's thread.
//!
//! Group commit: commits of different matches that arrive while a transaction is being
//! written share the next one, so one `fsync` (SQLite's `synchronous = FULL` commit) covers
//! many moves instead of one. The writer thread takes every queued job, opens ONE `BEGIN
//! IMMEDIATE` transaction and writes each commit inside its own savepoint ([`write`]): a
//! commit that loses its fence (revision compare-and-set, duplicate receipt, owner) rolls
//! back to its savepoint and is answered `Conflict` alone while the others stay in the
//! transaction. Nobody is answered before the transaction's `COMMIT` returns, so an
//! acknowledged commit is durable; if the `COMMIT` fails, every commit of the batch fails
//! with it and nothing of it is stored. Outbox "dispatched" marks ride in the same
//! transaction (they need no durability of their own: a lost mark only means the sweeper
//! sends the rows again, and subscribers drop revisions they already have).
//!
//! Why rusqlite on a thread of our own rather than sqlx: sqlx runs every statement on its
//! connection's worker thread and hands each one over and back (two thread wake-ups per
//! statement, a dozen statements per move). A profile of the all-in-one under load put those
//! hand-offs (futex and eventfd wake-ups, context switches) above SQLite's own work. Here a
//! batch is one hand-off there and one answer back per commit.
//!
//! Reads ([`Readers`]) are point lookups by primary key in a WAL database, a few
//! microseconds with the pages cached: they run on the calling task's thread, on one of a
//! few read connections, which costs less than waking another thread to do it.
//!
//! SQLite has one writer at a time anyway: batching changes nothing about isolation, only how
//! many commits one durable write carries.

use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use juegoland_core::{Commit, MatchState, Receipt, ReceiptKey, ReceiptOutcome, StoredMatch};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::rows;
use crate::sqlite::NOW;
use crate::{StoreError, conflict};

/// The most commits one transaction carries.
const MAX_BATCH: usize = 256;

/// The longest publications text a stored row may unpack to: far above what the engine's
/// per-recipient limit lets a revision publish, far below what a corrupt length could ask.
const MAX_PUBLICATIONS_TEXT: usize = 256 << 20;

/// How long a statement waits for SQLite's lock before the store answers `Unavailable`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

type Reply = oneshot::Sender<Result<(), StoreError>>;

enum Job {
    Commit { commit: Box<Commit>, reply: Reply },
    Marks { marks: Vec<(Uuid, u64)>, reply: Reply },
}

/// Opens a connection to the (already migrated) database at `path` with the store's
/// settings: WAL (persistent in the file), `synchronous = FULL`, foreign keys, busy timeout.
fn open(path: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
    let err = |e| lite_error("open the sqlite store", e);
    let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(err)?;
    conn.pragma_update(None, "foreign_keys", true).map_err(err)?;
    // Statement journals stay in memory rather than in temporary files.
    conn.pragma_update(None, "temp_store", "MEMORY").map_err(err)?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// The handle of a writer thread; the thread ends when the handle is dropped or closed.
#[derive(Debug)]
pub(crate) struct Writer {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Writer {
    /// Starts the writer thread of the store at `path` for `owner` (`None`: unowned).
    pub(crate) fn spawn(path: &Path, owner: Option<Arc<str>>) -> Result<Self, StoreError> {
        let conn = open(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        let (jobs, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || run(conn, owner.as_deref(), &rx))
            .map_err(|e| StoreError::Unavailable(format!("start the sqlite writer: {e}")))?;
        Ok(Self { jobs: Mutex::new(Some(jobs)) })
    }

    /// Commits `commit` in the next transaction; returns once that transaction committed.
    pub(crate) async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        self.call(|reply| Job::Commit { commit: Box::new(commit.clone()), reply }).await
    }

    /// Marks the outbox rows of `marks` (match, up to revision) dispatched.
    pub(crate) async fn mark_dispatched(&self, marks: &[(Uuid, u64)]) -> Result<(), StoreError> {
        self.call(|reply| Job::Marks { marks: marks.to_vec(), reply }).await
    }

    /// Stops the thread once the jobs already queued are written; later calls fail.
    pub(crate) fn close(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    async fn call(&self, job: impl FnOnce(Reply) -> Job) -> Result<(), StoreError> {
        let stopped = || StoreError::Unavailable("the sqlite store is closed".into());
        let (reply, answer) = oneshot::channel();
        {
            let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            jobs.as_ref().ok_or_else(stopped)?.send(job(reply)).map_err(|_| stopped())?;
        }
        answer.await.map_err(|_| stopped())?
    }
}

fn run(conn: Connection, owner: Option<&str>, rx: &mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let results = batch(&conn, owner, &jobs);
        for (job, result) in jobs.into_iter().zip(results) {
            // A caller that stopped waiting (its actor died) needs no answer.
            let (Job::Commit { reply, .. } | Job::Marks { reply, .. }) = job;
            let _ = reply.send(result);
        }
    }
}

/// Writes `jobs` in one transaction; one result per job, in order.
///
/// No savepoint per commit (each would copy every page it touches to a sub-journal): a
/// commit's fence is its first statement, and a commit that fails there has written
/// nothing, so it is answered alone and the others go on. A commit that fails after writing
/// (a receipt or log entry already stored: a stale judgement) rolls the transaction back; it
/// is answered alone and the rest are written again in a new transaction.
fn batch(conn: &Connection, owner: Option<&str>, jobs: &[Job]) -> Vec<Result<(), StoreError>> {
    crash_point!("store-batch-taken");
    let mut results: Vec<Option<Result<(), StoreError>>> = jobs.iter().map(|_| None).collect();
    'attempt: loop {
        let unanswered = |results: &mut [Option<Result<(), StoreError>>], e: &StoreError| {
            results.iter_mut().filter(|r| r.is_none()).for_each(|r| *r = Some(Err(e.clone())));
        };
        if let Err(e) = run_statement(conn, "BEGIN IMMEDIATE") {
            unanswered(&mut results, &lite_error("begin a commit", e));
            break;
        }
        let mut written = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            let outcome = match job {
                Job::Commit { commit, .. } => fence(conn, commit, owner)
                    .map_err(|e| (e, false))
                    .and_then(|seq| rest(conn, commit, seq).map_err(|e| (e, true))),
                Job::Marks { marks, .. } => mark(conn, marks).map_err(|e| (e, true)),
            };
            match outcome {
                Ok(()) => {
                    written.push(i);
                    crash_point!("store-batch-commit-written");
                }
                Err((e, _)) if conn.is_autocommit() => {
                    // SQLite rolled the whole transaction back (an I/O error, a full disk):
                    // nothing of it is stored.
                    unanswered(&mut results, &e);
                    break 'attempt;
                }
                Err((e, false)) => results[i] = Some(Err(e)),
                Err((e, true)) => {
                    if let Err(rollback) = run_statement(conn, "ROLLBACK") {
                        results[i] = Some(Err(e));
                        unanswered(&mut results, &lite_error("roll back a commit", rollback));
                        break 'attempt;
                    }
                    let transient = matches!(e, StoreError::Unavailable(_));
                    results[i] = Some(Err(e.clone()));
                    if transient {
                        unanswered(&mut results, &e);
                        break 'attempt;
                    }
                    continue 'attempt;
                }
            }
        }
        crash_point!("store-batch-before-commit");
        match run_statement(conn, "COMMIT") {
            Ok(()) => {
                crash_point!("store-batch-committed");
                written.into_iter().for_each(|i| results[i] = Some(Ok(())));
            }
            Err(e) => {
                let _ = run_statement(conn, "ROLLBACK");
                unanswered(&mut results, &lite_error("commit", e));
            }
        }
        break;
    }
    results.into_iter().map(|r| r.expect("every job answered")).collect()
}

/// Runs a statement without parameters or rows, prepared once per connection.
fn run_statement(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Moves each match's outbox watermark up to its mark; a finished match dispatched through
/// its last revision drops its watermark row (nothing of it waits any more).
fn mark(conn: &Connection, marks: &[(Uuid, u64)]) -> Result<(), StoreError> {
    let err = |e| lite_error("mark outbox rows dispatched", e);
    let mut raise = conn
        .prepare_cached("UPDATE outbox_watermarks SET dispatched = ?2 WHERE match_id = ?1 AND dispatched < ?2")
        .map_err(err)?;
    let mut done = conn
        .prepare_cached(
            "DELETE FROM outbox_watermarks WHERE match_id = ?1 AND dispatched >=
                 (SELECT revision FROM matches WHERE match_id = ?1 AND status = 'finished')",
        )
        .map_err(err)?;
    for (match_id, revision) in marks {
        if raise.execute(params![match_id, rows::to_i64(*revision, "revision")?]).map_err(err)? > 0 {
            done.execute(params![match_id]).map_err(err)?;
        }
    }
    Ok(())
}

/// Writes the first row of `commit` inside the open transaction of `conn` for the store owned
/// by `owner` (`None`: unowned, no owner checks), checking its fences: the revision
/// compare-and-set, the owner, a creation's fresh id. On an error nothing was written.
/// Returns the match's `seq`, the key of its revisions (a creation takes the next one).
fn fence(conn: &Connection, commit: &Commit, owner: Option<&str>) -> Result<i64, StoreError> {
    let err = |e| commit_error(commit, e);
    let match_id = commit.match_id;
    match (commit.expected_revision, &commit.state) {
        (None, Some(state)) => {
            let (revision, epoch) =
                (rows::to_i64(state.revision, "revision")?, rows::to_i64(state.phase_epoch, "phase epoch")?);
            let encoded = rows::encode("match state", &**state)?;
            // The next `seq` is one seek at the end of its unique index.
            let created: Option<i64> = conn
                .prepare_cached(
                    "INSERT INTO matches (match_id, game_id, rules_version, game_version, revision, phase_epoch, status,
                                          state, owner, owner_epoch, rules_digest, lock_digest, seq)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,
                             (SELECT coalesce(max(seq), 0) + 1 FROM matches))
                     ON CONFLICT (match_id) DO NOTHING RETURNING seq",
                )
                .and_then(|mut s| {
                    s.query_row(params![
                        match_id,
                        state.game.id,
                        state.game.rules_version,
                        state.game_version,
                        revision,
                        epoch,
                        rows::match_status(state),
                        encoded,
                        owner,
                        i64::from(owner.is_some()),
                        state.rules_digest,
                        state.package.as_ref().map_or("", |p| p.lock_digest.as_str()),
                    ], |row| row.get(0))
                    .optional()
                })
                .map_err(err)?;
            let Some(seq) = created else {
                return Err(conflict(commit));
            };
            let mut insert = conn
                .prepare_cached(
                    "INSERT INTO participants (match_id, seat, principal, bot_profile, status)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            for p in rows::participants(state) {
                insert.execute(params![match_id, p.seat, p.principal, p.bot_profile, p.status]).map_err(err)?;
            }
            conn.prepare_cached("INSERT INTO outbox_watermarks (match_id, dispatched) VALUES (?1, -1)")
                .and_then(|mut s| s.execute(params![match_id]))
                .map_err(err)?;
            Ok(seq)
        }
        (Some(expected), state) => {
            // The revision compare-and-set: the match's last revision is the highest of its
            // `revisions` rows (one seek in the index by match). `BEGIN IMMEDIATE` holds the
            // write lock, so neither it nor the owner can move before this commit is written.
            let expected = rows::to_i64(expected, "expected revision")?;
            let fenced: Option<i64> = conn
                .prepare_cached(
                    "SELECT m.seq FROM matches AS m WHERE m.match_id = ?1 AND (?3 IS NULL OR m.owner = ?3)
                         AND (SELECT max(revision) FROM revisions WHERE match_seq = m.seq) = ?2",
                )
                .and_then(|mut s| s.query_row(params![match_id, expected, owner], |row| row.get(0)).optional())
                .map_err(err)?;
            let Some(seq) = fenced else {
                return Err(conflict(commit));
            };
            // A final rejection (no state) changes nothing else of the match; a move changes
            // no participant (`Commit::participants_may_change`).
            if let Some(state) = state {
                snapshot(conn, commit, state)?;
            }
            if let Some(state) = state
                && commit.participants_may_change()
            {
                let mut update = conn
                    .prepare_cached(
                        "UPDATE participants SET status = ?3 WHERE match_id = ?1 AND seat = ?2 AND status <> ?3",
                    )
                    .map_err(err)?;
                for p in rows::participants(state) {
                    update.execute(params![match_id, p.seat, p.status]).map_err(err)?;
                }
            }
            Ok(seq)
        }
        (None, None) => Err(conflict(commit)),
    }
}

/// Writes `state` into its match's row if it is a snapshot point
/// ([`MatchState::is_snapshot_point`]); between them the row keeps the last snapshot and the
/// `revisions` rows after it carry the match forward.
fn snapshot(conn: &Connection, commit: &Commit, state: &MatchState) -> Result<(), StoreError> {
    if !state.is_snapshot_point() {
        return Ok(());
    }
    let c = rows::SnapshotColumns::of(state)?;
    conn.prepare_cached(&format!(
        "UPDATE matches SET revision = ?2, phase_epoch = ?3, status = ?4, state = ?5, updated_at = {NOW}
         WHERE match_id = ?1"
    ))
    .and_then(|mut s| s.execute(params![commit.match_id, c.revision, c.phase_epoch, c.status, c.state]))
    .map(drop)
    .map_err(|e| commit_error(commit, e))
}

/// Writes the rest of `commit` once [`fence`] passed (`seq`: the match's, which keys its
/// revisions); the caller commits or rolls back.
///
/// The revision is ONE `revisions` row: its log entry, the receipt of the command that made
/// it and its publications (compressed, [`pack_publications`]). A final rejection makes no
/// revision: its receipt is a `receipts` row.
fn rest(conn: &Connection, commit: &Commit, seq: i64) -> Result<(), StoreError> {
    let err = |e| commit_error(commit, e);
    let match_id = commit.match_id;
    let mut applied = None;
    if let Some(r) = &commit.receipt {
        if receipt_stored(conn, &r.key, seq).map_err(err)? {
            // Another writer stored this receipt: our judgement is stale.
            return Err(conflict(commit));
        }
        match &r.outcome {
            ReceiptOutcome::Applied { .. } => applied = Some(r),
            ReceiptOutcome::Rejected { revision, .. } => {
                let (outcome, revision) =
                    (rows::encode("receipt outcome", &r.outcome)?, rows::to_i64(*revision, "receipt revision")?);
                conn.prepare_cached(
                    "INSERT INTO receipts (match_id, principal, command_id, fingerprint, outcome, revision)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        r.key.match_id,
                        r.key.principal,
                        r.key.command_id,
                        r.fingerprint,
                        outcome,
                        revision
                    ])
                })
                .map_err(err)?;
            }
        }
    }

    match &commit.log {
        Some(log) => {
            let (revision, entry) = (rows::to_i64(log.revision, "log revision")?, rows::encode("log entry", log)?);
            let publications = pack_publications(&rows::encode_publications(&commit.publications)?);
            let recipients = rows::to_i64(commit.publications.len() as u64, "recipients")?;
            conn.prepare_cached(
                "INSERT INTO revisions (match_seq, revision, principal, command_id, fingerprint, instant_ms, written_ms,
                                        recipients, entry, publications)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    seq,
                    revision,
                    applied.map(|r| &r.key.principal),
                    applied.map(|r| r.key.command_id),
                    applied.map(|r| &r.fingerprint),
                    log.instant_ms,
                    rows::now_ms(),
                    recipients,
                    entry,
                    publications,
                ])
            })
            .map_err(err)?;
        }
        None if applied.is_some() || !commit.publications.is_empty() => {
            return Err(StoreError::Corrupt(format!(
                "a commit of match {match_id} with an applied receipt or publications but no log entry"
            )));
        }
        None => {}
    }

    if let Some(state) = &commit.state {
        let pending: Vec<(String, i64)> = if commit.expected_revision.is_none() {
            Vec::new()
        } else {
            let mut select = conn
                .prepare_cached(
                    "SELECT deadline_id, generation FROM deadlines WHERE match_id = ?1 AND state = 'pending'",
                )
                .map_err(err)?;
            select
                .query_map(params![match_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .and_then(Iterator::collect)
                .map_err(err)?
        };
        let plan = rows::plan_deadlines(rows::fired_generation(commit)?, &state.deadlines, pending)?;
        if !plan.close.is_empty() {
            let mut close = conn
                .prepare_cached(&format!(
                    "UPDATE deadlines SET state = ?4, updated_at = {NOW}
                     WHERE match_id = ?1 AND deadline_id = ?2 AND generation = ?3"
                ))
                .map_err(err)?;
            for (id, generation, new_state) in &plan.close {
                close.execute(params![match_id, id, generation, new_state]).map_err(err)?;
            }
        }
        if !plan.add.is_empty() {
            let mut add = conn
                .prepare_cached(
                    "INSERT INTO deadlines (match_id, deadline_id, generation, due_ms, payload, state)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
                )
                .map_err(err)?;
            for (id, generation, due_ms, payload) in &plan.add {
                add.execute(params![match_id, id, generation, due_ms, rows::encode("deadline payload", payload)?])
                    .map_err(err)?;
            }
        }
    }

    if let Some((kind, body)) = rows::feed_event(commit)? {
        let revision = rows::to_i64(commit.revision_after().unwrap_or(0), "revision")?;
        conn.prepare_cached("INSERT INTO match_events (match_id, revision, kind, body) VALUES (?1, ?2, ?3, ?4)")
            .and_then(|mut s| s.execute(params![match_id, revision, kind, body]))
            .map_err(err)?;
    }

    Ok(())
}

/// Whether a receipt with `key` is stored: a final rejection in `receipts`, or an applied
/// command in its revision (the index by match holds the key, next to the match's others;
/// `seq` is the key's match's).
fn receipt_stored(conn: &Connection, key: &ReceiptKey, seq: i64) -> rusqlite::Result<bool> {
    let rejected = conn
        .prepare_cached("SELECT 1 FROM receipts WHERE match_id = ?1 AND principal = ?2 AND command_id = ?3")?
        .exists(params![key.match_id, key.principal, key.command_id])?;
    Ok(rejected
        || conn
            .prepare_cached("SELECT 1 FROM revisions WHERE match_seq = ?1 AND principal = ?2 AND command_id = ?3")?
            .exists(params![seq, key.principal, key.command_id])?)
}

/// A revision's publications column as stored: the JSON array's text compressed with LZ4
/// (about a third of its size: both seats' snapshots of a move share most of their text).
/// Rows written before migration 0011 hold the text itself; [`unpack_publications`] reads both.
pub(crate) fn pack_publications(text: &str) -> Vec<u8> {
    lz4_flex::compress_prepend_size(text.as_bytes())
}

/// The JSON text of a stored publications column: a blob is [`pack_publications`]'s, text is
/// a row from before migration 0011.
pub(crate) fn unpack_publications(match_id: Uuid, column: rusqlite::types::ValueRef<'_>) -> Result<String, StoreError> {
    use rusqlite::types::ValueRef;
    let corrupt = |why: String| StoreError::Corrupt(format!("the publications of match {match_id}: {why}"));
    match column {
        ValueRef::Text(text) => String::from_utf8(text.to_vec()).map_err(|e| corrupt(e.to_string())),
        ValueRef::Blob(packed) => {
            // The length `compress_prepend_size` wrote, checked before it sizes a buffer.
            let (size, block) = packed.split_first_chunk::<4>().ok_or_else(|| corrupt("a truncated blob".into()))?;
            let size = u32::from_le_bytes(*size) as usize;
            if size > MAX_PUBLICATIONS_TEXT {
                return Err(corrupt(format!("a blob that claims {size} bytes")));
            }
            let text = lz4_flex::decompress(block, size).map_err(|e| corrupt(e.to_string()))?;
            String::from_utf8(text).map_err(|e| corrupt(e.to_string()))
        }
        other => Err(corrupt(format!("a column of type {:?}", other.data_type()))),
    }
}

/// A few read connections, used on the caller's thread (see the module docs).
#[derive(Debug)]
pub(crate) struct Readers {
    connections: Vec<Mutex<Option<Connection>>>,
}

impl Readers {
    /// As many read connections as threads may read at once (Tokio's workers).
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8);
        let connections = (0..n)
            .map(|_| open(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map(|c| Mutex::new(Some(c))))
            .collect::<Result<_, _>>()?;
        Ok(Self { connections })
    }

    /// Closes every read connection; later reads fail with `Unavailable`.
    pub(crate) fn close(&self) {
        for slot in &self.connections {
            slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }

    /// Runs `read` on a free connection (or waits for the first one).
    fn with<T>(&self, action: &str, read: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let guard = self
            .connections
            .iter()
            .find_map(|slot| slot.try_lock().ok())
            .unwrap_or_else(|| self.connections[0].lock().unwrap_or_else(|p| p.into_inner()));
        let conn = guard.as_ref().ok_or_else(|| StoreError::Unavailable(format!("{action}: the store is closed")))?;
        read(conn).map_err(|e| lite_error(action, e))
    }

    /// The match's snapshot and the revisions after it. Two statements, in that order, with
    /// no transaction around them: revisions are only ever appended and a snapshot only ever
    /// moves forward, so revisions written between the two reads only lengthen the tail.
    pub(crate) fn load(&self, match_id: Uuid) -> Result<Option<StoredMatch>, StoreError> {
        let found: Option<(String, Vec<String>)> = self.with("load match", |c| {
            let Some((state, revision, seq)): Option<(String, i64, i64)> = c
                .prepare_cached("SELECT state, revision, seq FROM matches WHERE match_id = ?1")?
                .query_row(params![match_id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()?
            else {
                return Ok(None);
            };
            let tail = c
                .prepare_cached("SELECT entry FROM revisions WHERE match_seq = ?1 AND revision > ?2 ORDER BY revision")?
                .query_map(params![seq, revision], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(Some((state, tail)))
        })?;
        let Some((state, tail)) = found else { return Ok(None) };
        Ok(Some(StoredMatch {
            snapshot: rows::decode("match state", match_id, &state)?,
            tail: tail.iter().map(|text| rows::decode("log entry", match_id, text)).collect::<Result<_, _>>()?,
        }))
    }

    pub(crate) fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        let params = params![key.match_id, key.principal, key.command_id];
        let found: Option<(String, Option<String>, i64, Option<i64>)> = self.with("load receipt", |c| {
            let rejected = c
                .prepare_cached(
                    "SELECT fingerprint, outcome, 0, NULL FROM receipts WHERE match_id = ?1 AND principal = ?2 AND command_id = ?3",
                )?
                .query_row(params, |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
                .optional()?;
            match rejected {
                Some(found) => Ok(Some(found)),
                None => c
                    .prepare_cached(
                        "SELECT fingerprint, NULL, revision, CASE WHEN instr(entry, '\"sequence\":') > 0 THEN json_extract(entry, '$.op.sequence') END FROM revisions
                         WHERE match_seq = (SELECT seq FROM matches WHERE match_id = ?1)
                           AND principal = ?2 AND command_id = ?3",
                    )?
                    .query_row(params, |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
                    .optional(),
            }
        })?;
        found.map(|row| rows::receipt(key.clone(), row)).transpose()
    }

    /// The revisions waiting for dispatch (`sqlite::UNDISPATCHED`) written by `written_by`
    /// (ms), the first `limit`: each match, revision and publications text.
    pub(crate) fn undispatched(&self, limit: i64, written_by: i64) -> Result<Vec<(Uuid, i64, String)>, StoreError> {
        let found: Vec<(Uuid, i64, rusqlite::types::Value)> = self.with("list undispatched publications", |c| {
            c.prepare_cached(crate::sqlite::UNDISPATCHED)?
                .query_map(params![limit, written_by], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect()
        })?;
        found
            .into_iter()
            .map(|(match_id, revision, column)| {
                Ok((match_id, revision, unpack_publications(match_id, (&column).into())?))
            })
            .collect()
    }

    pub(crate) fn receipts(&self, match_id: Uuid) -> Result<Vec<Receipt>, StoreError> {
        type Row = (String, Uuid, String, Option<String>, i64, Option<i64>);
        let found: Vec<Row> = self.with("load receipts", |c| {
            c.prepare_cached(
                "SELECT principal, command_id, fingerprint, outcome, 0, NULL FROM receipts WHERE match_id = ?1
                 UNION ALL
                 SELECT principal, command_id, fingerprint, NULL, revision, CASE WHEN instr(entry, '\"sequence\":') > 0 THEN json_extract(entry, '$.op.sequence') END FROM revisions
                 WHERE match_seq = (SELECT seq FROM matches WHERE match_id = ?1) AND command_id IS NOT NULL",
            )?
            .query_map(params![match_id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
            })?
            .collect()
        })?;
        found
            .into_iter()
            .map(|(principal, command_id, fingerprint, outcome, revision, sequence)| {
                let key = ReceiptKey { match_id, principal, command_id };
                rows::receipt(key, (fingerprint, outcome, revision, sequence))
            })
            .collect()
    }
}

/// Whether SQLite's answer is transient: BUSY, LOCKED, IOERR, FULL, CANTOPEN (the same
/// primary codes as `rows::transient` for sqlx).
fn lite_error(action: &str, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode as C;
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(
                f.code,
                C::DatabaseBusy | C::DatabaseLocked | C::SystemIoFailure | C::DiskFull | C::CannotOpen
            ) =>
        {
            StoreError::Unavailable(format!("{action}: {e}"))
        }
        _ => StoreError::Corrupt(format!("{action}: {e}")),
    }
}

/// A unique violation inside a commit means another writer stored the same match, receipt,
/// log entry or outbox row first.
fn commit_error(commit: &Commit, e: rusqlite::Error) -> StoreError {
    use rusqlite::ffi::{SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE};
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.extended_code, SQLITE_CONSTRAINT_PRIMARYKEY | SQLITE_CONSTRAINT_UNIQUE) =>
        {
            conflict(commit)
        }
        _ => lite_error("commit", e),
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::types::ValueRef;

    use super::*;

    /// A packed column unpacks to its text, as does a text column of a row from before
    /// migration 0011; a damaged one is `Corrupt`, and a length nobody wrote sizes no buffer.
    #[test]
    fn publications_unpack_from_either_form_and_refuse_damage() {
        let m = Uuid::from_u128(9);
        let text = r#"[{"recipient":"p0","payload":{"type":"game.snapshot"},"traceContext":null}]"#;
        let packed = pack_publications(text);
        assert_eq!(unpack_publications(m, ValueRef::Blob(&packed)).unwrap(), text);
        assert_eq!(unpack_publications(m, ValueRef::Text(text.as_bytes())).unwrap(), text);
        let corrupt = |v| matches!(unpack_publications(m, v), Err(StoreError::Corrupt(_)));
        assert!(corrupt(ValueRef::Blob(&packed[..packed.len() - 3])), "truncated");
        assert!(corrupt(ValueRef::Blob(&[1, 2])), "shorter than its length");
        let mut huge = packed.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(corrupt(ValueRef::Blob(&huge)), "a length past the bound");
        assert!(corrupt(ValueRef::Integer(3)));
    }
}
