//! The PostgreSQL backend: production storage shared by every node.
//!
//! The shape is one row per revision (migration 0010, SQLite's 0009 shape): a move appends
//! one `revisions` row (its log entry, the applied command's receipt key and fingerprint,
//! every recipient's publication); the match's state is written to `matches` only at
//! snapshot points, final rejections are `receipts` rows, and the outbox is a per-match
//! watermark. A commit is written inside ONE statement (READ COMMITTED), shared with the
//! commits of other matches that arrive meanwhile (group commit, `pg_batch`): the revision
//! compare-and-set is the `revisions` primary key (revision r + 1 appended after finding r),
//! so of two writers at the same revision the second waits for the first's key and then
//! loses. The JSON documents (state, log entry, publications, receipt outcome) are `text`
//! columns (the database never reads inside them); deadline payloads are `jsonb`, written
//! and read as text, so that decoding errors name what did not decode.
//!
//! Ownership fencing: an owned handle ([`PgStore::owned_by`]) share-locks the match's row
//! with `owner = me` in the same statement, so a claim ([`Store::claim`], an `UPDATE` of that
//! row) and a commit of the previous owner serialize on the row: the commit either lands
//! before the claim or finds the owner changed (a conflict).

use std::sync::Arc;
use std::time::Duration;

use juegoland_core::{Commit, LogEntry, MatchState, Receipt, ReceiptKey, StoredMatch};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::rows::{self, Dialect, store_error};
use crate::{DueDeadline, OpenError, OutboxBacklog, OutboxRow, Store, StoreError, WebhookClaim};

/// The PostgreSQL migrations (`migrations/` at the workspace root), embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

const PG: Dialect = Dialect::Postgres;

/// The PostgreSQL store. Cheap to clone (a pool handle); clones share the pool and the
/// group committer.
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    /// The group committer's queue.
    committer: mpsc::Sender<crate::pg_batch::Job>,
    /// This handle's owner identity; `None` is unowned mode (no owner checks).
    owner: Option<Arc<str>>,
}

/// Planner settings of every store connection. Every statement of the store finds rows by
/// key (one key, or a batch of keys joined from arrays), so an index lookup per key is the
/// right plan at any table size. Left to the statistics, PostgreSQL hashes or scans whole
/// tables while they look small (a fresh schema, or a server with `autovacuum = off` that
/// never analyzes them), and a generic plan made then stays cached in the connection's
/// prepared statement as the table grows: group-commit batches seq-scanned `matches` every
/// time (15% of the server's CPU in the benchmark) and receipt lookups read 8.1 M rows in 15 s
/// of a load test (docs/benchmarks.md). With these off, a table without a usable index is
/// still scanned. JIT is off too: such a scan costs 10^10 in the planner's eyes, far above
/// `jit_above_cost`, so a statement that scans a small table whole (the outbox backlog
/// over the watermarks) was compiled on every call: 200 ms of JIT for 2 ms of work. And
/// every prepared statement runs its generic plan from the first call: a key lookup's plan
/// does not depend on the keys, and re-planning the group commit's statement for each batch
/// cost PostgreSQL about a tenth of its CPU per move in the cluster load test.
const PLANNER: [(&str, &str); 5] = [
    ("enable_seqscan", "off"),
    ("enable_hashjoin", "off"),
    ("enable_mergejoin", "off"),
    ("jit", "off"),
    ("plan_cache_mode", "force_generic_plan"),
];

/// A page of [`Store::list_matches`] read through `pool` (a store's, or a router's read-only
/// [`PgDirectory`]).
async fn list_matches(
    pool: &PgPool,
    query: &juegoland_api::MatchQuery,
) -> Result<Vec<juegoland_api::MatchListing>, StoreError> {
    use crate::listing::{MatchRow, SeatRow, listings, matches_sql};
    let created = r#"to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"#;
    let kind = "(CAST(m.state AS jsonb) #>> '{position,result,kind}')";
    let sql = matches_sql(created, "CAST(CAST($4 AS text) AS timestamptz)", kind);
    let rows: Vec<MatchRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(query.principal.as_deref())
        .bind(query.game.as_deref())
        .bind(query.status.map(|s| s.as_str()))
        .bind(query.after.as_ref().map(|c| c.created_at.as_str()))
        .bind(query.after.as_ref().map(|c| c.match_id))
        .bind(i64::from(query.limit))
        .fetch_all(pool)
        .await
        .map_err(|e| store_error(PG, "list matches", e))?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let seats: Vec<SeatRow> = sqlx::query_as(
        "SELECT match_id, seat, principal, bot_profile, status FROM participants WHERE match_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await
    .map_err(|e| store_error(PG, "list the listed matches' seats", e))?;
    listings(rows, seats)
}

/// Up to `limit` feed events after `after` through `pool`. Only the events of transactions
/// older than every one still running are read (`pg_snapshot_xmin`), in (txid, seq) order:
/// an event that commits later always sorts after what a reader has passed.
async fn feed(
    pool: &PgPool,
    after: juegoland_api::FeedCursor,
    limit: u32,
) -> Result<Vec<juegoland_api::FeedEvent>, StoreError> {
    let rows: Vec<crate::listing::FeedRow> = sqlx::query_as(
        r#"SELECT txid::text::int8, seq, match_id, revision, kind,
                  to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), body
           FROM match_events
           WHERE (txid, seq) > (CAST($1 AS int8)::text::xid8, $2)
             AND txid < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY txid, seq
           LIMIT $3"#,
    )
    .bind(rows::to_i64(after.txid, "feed cursor")?)
    .bind(rows::to_i64(after.seq, "feed cursor")?)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(|e| store_error(PG, "read the feed", e))?;
    crate::listing::feed_events(rows)
}

/// The cluster's matches as a router lists them: a small read-only pool on the cluster's
/// PostgreSQL, without the store's migrations or group committer (the nodes own those).
pub struct PgDirectory {
    pool: PgPool,
}

impl PgDirectory {
    /// Connects lazily: a router starts before PostgreSQL answers, and a listing while it is
    /// down is `UNAVAILABLE`.
    pub fn connect_lazy(url: &str) -> Result<Self, StoreError> {
        let options: PgConnectOptions =
            url.parse().map_err(|e| StoreError::Corrupt(format!("parse the database url: {e}")))?;
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(5))
            .connect_lazy_with(options.options(PLANNER));
        Ok(Self { pool })
    }
}

#[async_trait::async_trait]
impl juegoland_api::MatchDirectory for PgDirectory {
    async fn list(
        &self,
        query: &juegoland_api::MatchQuery,
    ) -> Result<juegoland_api::MatchPage, juegoland_api::MatchError> {
        let matches = list_matches(&self.pool, query).await?;
        Ok(crate::listing::page(query, matches))
    }

    async fn feed(
        &self,
        after: juegoland_api::FeedCursor,
        limit: u32,
    ) -> Result<juegoland_api::FeedPage, juegoland_api::MatchError> {
        Ok(crate::listing::feed_page(after, feed(&self.pool, after, limit).await?))
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`) with [`PgStore::pool_options`] and
    /// runs the pending migrations.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let options: PgConnectOptions =
            url.parse().map_err(|e| StoreError::Corrupt(format!("parse the database url: {e}")))?;
        Self::connect_with(Self::pool_options(), options).await
    }

    /// As [`PgStore::connect`], but the database must already hold the schema (a `matches`
    /// table on the connection's `search_path`): a database without it is
    /// [`OpenError::NoStore`] and nothing is created. For tools over existing data
    /// (`juegoland replay`).
    pub async fn connect_existing(url: &str) -> Result<Self, OpenError> {
        let options: PgConnectOptions =
            url.parse().map_err(|e| StoreError::Corrupt(format!("parse the database url: {e}")))?;
        let location = format!(
            "database {:?} on {}:{}",
            options.get_database().unwrap_or("postgres"),
            options.get_host(),
            options.get_port()
        );
        let mut conn = options.connect().await.map_err(|e| store_error(PG, "connect to postgres", e))?;
        let (found,): (bool,) = sqlx::query_as("SELECT to_regclass('matches') IS NOT NULL")
            .fetch_one(&mut conn)
            .await
            .map_err(|e| store_error(PG, "read the schema", e))?;
        let _ = conn.close().await;
        if !found {
            return Err(OpenError::NoStore { location, why: "no Juegoland schema (no matches table)" });
        }
        Ok(Self::connect_with(Self::pool_options(), options).await?)
    }

    /// The default pool: 16 connections, and a 5 s wait for one before a call gives up
    /// with [`StoreError::Unavailable`].
    pub fn pool_options() -> PgPoolOptions {
        PgPoolOptions::new().max_connections(16).acquire_timeout(Duration::from_secs(5))
    }

    /// Connects with explicit pool and connection options (a schema in `search_path`, a
    /// shorter timeout) and runs the pending migrations. Several nodes may run them at once:
    /// sqlx serializes them with an advisory lock.
    pub async fn connect_with(pool: PgPoolOptions, options: PgConnectOptions) -> Result<Self, StoreError> {
        let pool =
            pool.connect_with(options.options(PLANNER)).await.map_err(|e| store_error(PG, "connect to postgres", e))?;
        MIGRATOR.run(&pool).await.map_err(migrate_error)?;
        let committer = crate::pg_batch::start(pool.clone());
        Ok(Self { pool, committer, owner: None })
    }

    /// This handle in cluster mode: it creates matches as `owner` (the node's incarnation)
    /// and commits only to the matches `owner` owns (see the crate docs). Other clones keep
    /// their own owner and share the pool and the group committer.
    pub fn owned_by(self, owner: impl Into<String>) -> Self {
        Self { owner: Some(owner.into().into()), ..self }
    }

    /// The owner identity this handle commits as; `None` in unowned mode.
    pub fn identity(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// Closes every connection; later calls fail with [`StoreError::Unavailable`].
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

fn migrate_error(e: MigrateError) -> StoreError {
    match e {
        MigrateError::Execute(e) => store_error(PG, "run migrations", e),
        other => StoreError::Corrupt(format!("run migrations: {other}")),
    }
}

/// The revisions waiting for dispatch, in match and revision order: from the watermarks (a
/// match that may have some waiting), the revisions past each, so the cost follows the
/// backlog, not the history. A `LATERAL` subquery with a `LIMIT` (which the planner cannot
/// flatten into a join) keeps the watermarks the outer loop: as a join, even a `LATERAL` one,
/// the planner walked the whole `revisions` key in order (it matches the `ORDER BY`) and
/// probed the watermarks, 122 ms a sweep in the cluster load test (docs/benchmarks.md).
const UNDISPATCHED: &str = "SELECT w.match_id, r.revision, r.publications FROM outbox_watermarks AS w
             CROSS JOIN LATERAL (
                 SELECT revision, publications FROM revisions
                 WHERE match_id = w.match_id AND revision > w.dispatched AND publications <> '[]'
                   AND written_at <= now() - $2 * interval '1 millisecond'
                 ORDER BY revision LIMIT $1) AS r
             ORDER BY w.match_id, r.revision LIMIT $1";

/// The waiting publications written `$1` ms ago or earlier, and when the oldest was written (the same plan as
/// [`UNDISPATCHED`]: an aggregate per watermark, which the planner cannot flatten either).
const BACKLOG: &str = "SELECT sum(r.publications)::int8, (extract(epoch FROM now() - min(r.oldest)) * 1000)::int8
             FROM outbox_watermarks AS w
             CROSS JOIN LATERAL (
                 SELECT sum(json_array_length(publications::json)) AS publications, min(written_at) AS oldest
                 FROM revisions
                 WHERE match_id = w.match_id AND revision > w.dispatched AND publications <> '[]'
                   AND written_at <= now() - $1 * interval '1 millisecond') AS r";

/// The feed's end on PostgreSQL: before every transaction still running (the feed reads only
/// the events of transactions older than all of those, `feed`).
const PG_FEED_END: &str = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::int8, 0::int8";

crate::webhook_endpoints::sql_webhook_endpoints!(PgStore, PG, PG_FEED_END);
crate::webhook_endpoints::sql_webhook_endpoints!(PgDirectory, PG, PG_FEED_END);

#[async_trait::async_trait]
impl Store for PgStore {
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        // Group commit: this commit shares the next transaction with those of other matches
        // (see `pg_batch`). A connection lost during COMMIT leaves the outcome unknown; the
        // retry then meets either a clean slate or a conflict, and a conflict makes the
        // caller reload.
        let (reply, answer) = oneshot::channel();
        // The caller's span (an actor's `store.commit`) is linked with the transaction's.
        let span = tracing::Span::current();
        let job = crate::pg_batch::Job { commit: commit.clone(), owner: self.owner.clone(), reply, span };
        let gone = || StoreError::Unavailable("the PostgreSQL committer stopped".into());
        self.committer.send(job).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    async fn load(&self, match_id: Uuid) -> Result<Option<StoredMatch>, StoreError> {
        // The snapshot, then the revisions after it: revisions are only appended and a
        // snapshot only moves forward, so what is written between the two reads only
        // lengthens the tail (as on SQLite).
        let err = |e| store_error(PG, "load match", e);
        let row: Option<(String, i64)> = sqlx::query_as("SELECT state, revision FROM matches WHERE match_id = $1")
            .bind(match_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?;
        let Some((state, revision)) = row else { return Ok(None) };
        let tail: Vec<(String,)> =
            sqlx::query_as("SELECT entry FROM revisions WHERE match_id = $1 AND revision > $2 ORDER BY revision")
                .bind(match_id)
                .bind(revision)
                .fetch_all(&self.pool)
                .await
                .map_err(err)?;
        Ok(Some(StoredMatch {
            snapshot: rows::decode("match state", match_id, &state)?,
            tail: tail.iter().map(|(text,)| rows::decode("log entry", match_id, text)).collect::<Result<_, _>>()?,
        }))
    }

    async fn snapshot(&self, state: &MatchState) -> Result<bool, StoreError> {
        // One statement, outside the group commit (a passivation's, rare). The owner's check
        // is the claim's row: a claim committed first makes it match nothing.
        let c = rows::SnapshotColumns::of(state)?;
        let written = sqlx::query(
            "UPDATE matches AS m SET revision = $2, phase_epoch = $3, status = $4, state = $5, updated_at = now()
             WHERE m.match_id = $1 AND m.revision < $2 AND ($6::text IS NULL OR m.owner = $6)
               AND (SELECT max(r.revision) FROM revisions AS r WHERE r.match_id = $1) = $2",
        )
        .bind(state.match_id)
        .bind(c.revision)
        .bind(c.phase_epoch)
        .bind(c.status)
        .bind(c.state)
        .bind(self.owner.as_deref())
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(PG, "write a match snapshot", e))?;
        Ok(written.rows_affected() > 0)
    }

    async fn replace_snapshot(&self, expected: &MatchState, state: &MatchState) -> Result<(), StoreError> {
        let r = rows::Replacement::of(expected, state)?;
        let query = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{}, updated_at = now() {} AND ($9::text IS NULL OR owner = $9)
               AND (SELECT max(r.revision) FROM revisions AS r WHERE r.match_id = $1) = $2",
            rows::REPLACE_SET,
            rows::REPLACE_WHERE
        )));
        let written = rows::bind_replacement!(query, r, self.owner.as_deref())
            .execute(&self.pool)
            .await
            .map_err(|e| store_error(PG, "replace a match snapshot", e))?;
        if written.rows_affected() == 0 {
            return Err(rows::Replacement::conflict(expected));
        }
        Ok(())
    }

    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        // Audits and tools only: a match's actor reads its receipts once (`receipts`).
        let found: Option<(String, Option<String>, i64, Option<i64>)> = sqlx::query_as(
            "SELECT fingerprint, outcome, 0::int8, NULL::int8 FROM receipts WHERE match_id = $1 AND principal = $2 AND command_id = $3
             UNION ALL
             SELECT fingerprint, NULL, revision, CASE WHEN entry LIKE '%\"sequence\":%' THEN (entry::jsonb #>> '{op,sequence}')::int8 END FROM revisions
             WHERE match_id = $1 AND principal = $2 AND command_id = $3",
        )
        .bind(key.match_id)
        .bind(&key.principal)
        .bind(key.command_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| store_error(PG, "load receipt", e))?;
        found.map(|row| rows::receipt(key.clone(), row)).transpose()
    }

    async fn receipts(&self, match_id: Uuid) -> Result<Vec<Receipt>, StoreError> {
        let found: Vec<(String, Uuid, String, Option<String>, i64, Option<i64>)> = sqlx::query_as(
            "SELECT principal, command_id, fingerprint, outcome, 0::int8, NULL::int8 FROM receipts WHERE match_id = $1
             UNION ALL
             SELECT principal, command_id, fingerprint, NULL, revision, CASE WHEN entry LIKE '%\"sequence\":%' THEN (entry::jsonb #>> '{op,sequence}')::int8 END FROM revisions
             WHERE match_id = $1 AND command_id IS NOT NULL",
        )
        .bind(match_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(PG, "load receipts", e))?;
        found
            .into_iter()
            .map(|(principal, command_id, fingerprint, outcome, revision, sequence)| {
                let key = ReceiptKey { match_id, principal, command_id };
                rows::receipt(key, (fingerprint, outcome, revision, sequence))
            })
            .collect()
    }

    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError> {
        let entries: Vec<(String,)> =
            sqlx::query_as("SELECT entry FROM revisions WHERE match_id = $1 ORDER BY revision")
                .bind(match_id)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| store_error(PG, "load match log", e))?;
        entries.iter().map(|(text,)| rows::decode("log entry", match_id, text)).collect()
    }

    async fn match_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        let ids: Vec<(Uuid,)> = sqlx::query_as("SELECT match_id FROM matches ORDER BY match_id")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| store_error(PG, "list matches", e))?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    async fn pinned_to(&self, lock_digest: &str) -> Result<Vec<Uuid>, StoreError> {
        if lock_digest.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<(Uuid,)> = sqlx::query_as(rows::PINNED_TO)
            .bind(lock_digest)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| store_error(PG, "list the matches pinned to a lock digest", e))?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    async fn list_matches(
        &self,
        query: &juegoland_api::MatchQuery,
    ) -> Result<Vec<juegoland_api::MatchListing>, StoreError> {
        list_matches(&self.pool, query).await
    }

    async fn feed(
        &self,
        after: juegoland_api::FeedCursor,
        limit: u32,
    ) -> Result<Vec<juegoland_api::FeedEvent>, StoreError> {
        feed(&self.pool, after, limit).await
    }

    async fn undispatched(&self, limit: usize, min_age: Duration) -> Result<Vec<OutboxRow>, StoreError> {
        // Every revision has at least one publication or none waits for it, so `limit`
        // revisions hold at least `limit`.
        let found: Vec<(Uuid, i64, String)> = sqlx::query_as(UNDISPATCHED)
            .bind(rows::limit(limit))
            .bind(rows::age_ms(min_age))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| store_error(PG, "list undispatched publications", e))?;
        rows::undispatched(found, limit)
    }

    async fn mark_dispatched(&self, marks: &[(Uuid, u64)]) -> Result<(), StoreError> {
        if marks.is_empty() {
            return Ok(());
        }
        let ids: Vec<Uuid> = marks.iter().map(|(id, _)| *id).collect();
        let revisions = marks.iter().map(|(_, r)| rows::to_i64(*r, "revision")).collect::<Result<Vec<_>, _>>()?;
        let err = |e| store_error(PG, "mark outbox rows dispatched", e);
        // A lost mark is a harmless re-dispatch: no need to wait for the WAL flush (set with
        // the `BEGIN`, in the same round trip). Each watermark only rises; a finished match
        // dispatched through its last revision drops its watermark instead (nothing of it
        // waits any more): the two touch disjoint rows, as one statement must.
        let mut tx = self.pool.begin_with("BEGIN; SET LOCAL synchronous_commit TO OFF").await.map_err(err)?;
        sqlx::query(
            "WITH done AS (
                 DELETE FROM outbox_watermarks AS w
                 USING UNNEST($1::uuid[], $2::int8[]) AS m(match_id, revision), matches AS x
                 WHERE w.match_id = m.match_id AND x.match_id = m.match_id AND x.status = 'finished'
                   AND m.revision >= x.revision
                 RETURNING w.match_id)
             UPDATE outbox_watermarks AS w SET dispatched = m.revision
             FROM UNNEST($1::uuid[], $2::int8[]) AS m(match_id, revision)
             WHERE w.match_id = m.match_id AND w.dispatched < m.revision
               AND w.match_id NOT IN (SELECT match_id FROM done)",
        )
        .bind(&ids)
        .bind(&revisions)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        crash_point!("store-marks-before-commit");
        tx.commit().await.map_err(err)?;
        Ok(())
    }

    async fn outbox_backlog(&self, min_age: Duration) -> Result<OutboxBacklog, StoreError> {
        // Ages are on the database clock, like `written_at`.
        let (rows, age_ms): (Option<i64>, Option<i64>) = sqlx::query_as(BACKLOG)
            .bind(rows::age_ms(min_age))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| store_error(PG, "measure the outbox backlog", e))?;
        Ok(OutboxBacklog {
            rows: rows::to_u64(rows.unwrap_or(0), "outbox backlog")?,
            oldest_age: age_ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
        })
    }

    async fn due_deadlines(&self, now_ms: i64, limit: usize) -> Result<Vec<DueDeadline>, StoreError> {
        let found: Vec<(Uuid, String, i64, i64)> = sqlx::query_as(
            "SELECT match_id, deadline_id, generation, due_ms FROM deadlines
             WHERE state = 'pending' AND due_ms <= $1
             ORDER BY due_ms, match_id, deadline_id COLLATE \"C\", generation LIMIT $2",
        )
        .bind(now_ms)
        .bind(rows::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(PG, "list due deadlines", e))?;
        rows::due_sorted(found)
    }

    async fn claim_deadlines(
        &self,
        claimant: &str,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<DueDeadline>, StoreError> {
        // `SKIP LOCKED`: rows another replica is claiming right now (or a commit is closing)
        // are left to it; a row whose claim or state changed meanwhile is re-checked against
        // the inner `WHERE` once its lock is taken, so two claimants never share a row.
        let found: Vec<(Uuid, String, i64, i64)> = sqlx::query_as(
            "UPDATE deadlines AS d SET claimed_by = $1, claim_until = now() + $2 * interval '1 millisecond'
             WHERE (d.match_id, d.deadline_id, d.generation) IN (
                 SELECT match_id, deadline_id, generation FROM deadlines
                 WHERE state = 'pending' AND due_ms <= $3 AND (claim_until IS NULL OR claim_until < now())
                 ORDER BY due_ms LIMIT $4
                 FOR UPDATE SKIP LOCKED)
             RETURNING d.match_id, d.deadline_id, d.generation, d.due_ms",
        )
        .bind(claimant)
        .bind(rows::millis(lease))
        .bind(now_ms)
        .bind(rows::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(PG, "claim due deadlines", e))?;
        rows::due_sorted(found)
    }

    async fn release_deadlines(&self, claimant: &str, deadlines: &[DueDeadline]) -> Result<(), StoreError> {
        if deadlines.is_empty() {
            return Ok(());
        }
        let keys = rows::DeadlineKeys::of(deadlines)?;
        sqlx::query(
            "UPDATE deadlines AS d SET claimed_by = NULL, claim_until = NULL
             FROM UNNEST($1::uuid[], $2::text[], $3::int8[]) AS k(match_id, deadline_id, generation)
             WHERE d.match_id = k.match_id AND d.deadline_id = k.deadline_id AND d.generation = k.generation
               AND d.state = 'pending' AND d.claimed_by = $4",
        )
        .bind(&keys.match_ids)
        .bind(&keys.deadline_ids)
        .bind(&keys.generations)
        .bind(claimant)
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(PG, "release deadline claims", e))?;
        Ok(())
    }

    async fn cancel_finished_deadlines(&self, deadlines: &[DueDeadline]) -> Result<(), StoreError> {
        if deadlines.is_empty() {
            return Ok(());
        }
        let keys = rows::DeadlineKeys::of(deadlines)?;
        sqlx::query(
            "UPDATE deadlines AS d SET state = 'cancelled', updated_at = now()
             FROM UNNEST($1::uuid[], $2::text[], $3::int8[]) AS k(match_id, deadline_id, generation), matches AS m
             WHERE d.match_id = k.match_id AND d.deadline_id = k.deadline_id AND d.generation = k.generation
               AND d.state = 'pending' AND m.match_id = d.match_id AND m.status = 'finished'",
        )
        .bind(&keys.match_ids)
        .bind(&keys.deadline_ids)
        .bind(&keys.generations)
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(PG, "cancel deadlines of finished matches", e))?;
        Ok(())
    }

    async fn pending_deadlines(&self) -> Result<u64, StoreError> {
        let (count,): (i64,) = sqlx::query_as("SELECT count(*) FROM deadlines WHERE state = 'pending'")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| store_error(PG, "count pending deadlines", e))?;
        rows::to_u64(count, "pending deadline count")
    }

    async fn next_deadline_due(&self, after_ms: i64) -> Result<Option<i64>, StoreError> {
        let (due,): (Option<i64>,) =
            sqlx::query_as("SELECT min(due_ms) FROM deadlines WHERE state = 'pending' AND due_ms > $1")
                .bind(after_ms)
                .fetch_one(&self.pool)
                .await
                .map_err(|e| store_error(PG, "find the next due deadline", e))?;
        Ok(due)
    }

    async fn claim_webhook(
        &self,
        endpoint: &str,
        claimant: &str,
        lease: Duration,
    ) -> Result<Option<WebhookClaim>, StoreError> {
        // One statement: a concurrent claim waits for the row's lock and then tests the
        // `WHERE` against the winner's claim, so two claimants never both get it.
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "INSERT INTO webhook_cursors AS w (endpoint, claimed_by, claim_until, claim_epoch)
             VALUES ($1, $2, now() + $3 * interval '1 millisecond', 1)
             ON CONFLICT (endpoint) DO UPDATE
             SET claimed_by = EXCLUDED.claimed_by,
                 claim_until = EXCLUDED.claim_until,
                 claim_epoch = CASE WHEN w.claimed_by = EXCLUDED.claimed_by THEN w.claim_epoch
                                    ELSE w.claim_epoch + 1 END
             WHERE w.claimed_by IS NULL OR w.claimed_by = EXCLUDED.claimed_by OR w.claim_until < now()
             RETURNING w.claim_epoch, w.txid, w.seq",
        )
        .bind(endpoint)
        .bind(claimant)
        .bind(rows::millis(lease))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| store_error(PG, "claim a webhook endpoint", e))?;
        row.map(|row| rows::webhook_claim(endpoint, claimant, row)).transpose()
    }

    async fn advance_webhook(&self, claim: &WebhookClaim, to: juegoland_api::FeedCursor) -> Result<bool, StoreError> {
        let (epoch, txid, seq) = rows::webhook_fence(claim)?;
        let moved = sqlx::query(
            "UPDATE webhook_cursors SET txid = $6, seq = $7, advanced_at = now()
             WHERE endpoint = $1 AND claimed_by = $2 AND claim_epoch = $3 AND txid = $4 AND seq = $5",
        )
        .bind(&claim.endpoint)
        .bind(&claim.claimant)
        .bind(epoch)
        .bind(txid)
        .bind(seq)
        .bind(rows::to_i64(to.txid, "webhook cursor")?)
        .bind(rows::to_i64(to.seq, "webhook cursor")?)
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(PG, "advance a webhook cursor", e))?;
        Ok(moved.rows_affected() == 1)
    }

    async fn release_webhook(&self, claim: &WebhookClaim) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE webhook_cursors SET claimed_by = NULL, claim_until = NULL
             WHERE endpoint = $1 AND claimed_by = $2 AND claim_epoch = $3",
        )
        .bind(&claim.endpoint)
        .bind(&claim.claimant)
        .bind(rows::to_i64(claim.epoch, "webhook claim epoch")?)
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(PG, "release a webhook endpoint", e))?;
        Ok(())
    }

    async fn claim(&self, match_id: Uuid) -> Result<Option<u64>, StoreError> {
        // Outside the group committer: one statement, which takes the row lock a commit's
        // compare-and-set takes, so the two serialize.
        let epoch: Option<(i64,)> = match &self.owner {
            Some(me) => {
                sqlx::query_as(
                    "UPDATE matches SET owner = $2, owner_epoch = owner_epoch + 1 WHERE match_id = $1
                     RETURNING owner_epoch",
                )
                .bind(match_id)
                .bind(&**me)
                .fetch_optional(&self.pool)
                .await
            }
            None => {
                sqlx::query_as("SELECT owner_epoch FROM matches WHERE match_id = $1")
                    .bind(match_id)
                    .fetch_optional(&self.pool)
                    .await
            }
        }
        .map_err(|e| store_error(PG, "claim match", e))?;
        epoch.map(|(epoch,)| rows::to_u64(epoch, "owner epoch")).transpose()
    }

    async fn release(&self, match_id: Uuid) -> Result<(), StoreError> {
        let Some(me) = &self.owner else { return Ok(()) };
        sqlx::query("UPDATE matches SET owner = NULL WHERE match_id = $1 AND owner = $2")
            .bind(match_id)
            .bind(&**me)
            .execute(&self.pool)
            .await
            .map_err(|e| store_error(PG, "release match", e))?;
        Ok(())
    }

    async fn owner(&self, match_id: Uuid) -> Result<Option<(Option<String>, u64)>, StoreError> {
        let row: Option<(Option<String>, i64)> =
            sqlx::query_as("SELECT owner, owner_epoch FROM matches WHERE match_id = $1")
                .bind(match_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| store_error(PG, "load match owner", e))?;
        row.map(|(owner, epoch)| Ok((owner, rows::to_u64(epoch, "owner epoch")?))).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A move's row is over TOAST's threshold: its publications are compressed with LZ4 where
    /// the server has it (migration 0011), not pglz.
    #[tokio::test]
    async fn revisions_publications_compress_with_lz4_where_the_server_has_it() {
        let schema = juegoland_testkit::TestSchema::create("store_unit", "pg_publications_lz4").await;
        let store = PgStore::connect(&schema.url()).await.unwrap();
        let has_lz4 =
            sqlx::query("CREATE TEMPORARY TABLE lz4_probe (x text COMPRESSION lz4)").execute(&store.pool).await.is_ok();
        let (method,): (String,) = sqlx::query_as(
            "SELECT attcompression::text FROM pg_attribute
             WHERE attrelid = 'revisions'::regclass AND attname = 'publications'",
        )
        .fetch_one(&store.pool)
        .await
        .unwrap();
        assert_eq!(method, if has_lz4 { "l" } else { "" }, "the server has LZ4: {has_lz4}");
        store.pool.close().await;
        schema.drop_schema().await;
    }

    /// The outbox reads find the waiting revisions from the watermarks: every scan of
    /// `revisions` is a key lookup by match, never a walk of the whole table or key.
    #[tokio::test]
    async fn the_outbox_reads_start_from_the_watermarks() {
        let schema = juegoland_testkit::TestSchema::create("store_unit", "pg_outbox_plan").await;
        let store = PgStore::connect(&schema.url()).await.unwrap();
        for sql in [UNDISPATCHED, BACKLOG] {
            let explain = format!("EXPLAIN (FORMAT JSON) {}", sql.replace("$1", "10").replace("$2", "0"));
            let (plan,): (serde_json::Value,) =
                sqlx::query_as(sqlx::AssertSqlSafe(explain)).fetch_one(&store.pool).await.unwrap();
            let mut scans = Vec::new();
            collect_scans(&plan[0]["Plan"], &mut scans);
            let revisions: Vec<_> = scans.iter().filter(|(relation, _)| relation == "revisions").collect();
            assert!(!revisions.is_empty(), "{plan}");
            assert!(
                revisions.iter().all(|(_, cond)| cond.contains("match_id = w.match_id")),
                "a scan of revisions not by match: {plan}"
            );
        }
        // A whole scan of a small table plans at 10^10: with JIT on, it would be compiled.
        let (jit,): (String,) = sqlx::query_as("SHOW jit").fetch_one(&store.pool).await.unwrap();
        assert_eq!(jit, "off");
        store.close().await;
        schema.drop_schema().await;
    }

    /// Every scan in `plan`: its relation and index condition.
    fn collect_scans(plan: &serde_json::Value, out: &mut Vec<(String, String)>) {
        if let Some(relation) = plan["Relation Name"].as_str() {
            out.push((relation.to_owned(), plan["Index Cond"].as_str().unwrap_or("").to_owned()));
        }
        for child in plan["Plans"].as_array().into_iter().flatten() {
            collect_scans(child, out);
        }
    }
}
