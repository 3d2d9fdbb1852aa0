//! The SQLite backend: the embedded durable store of `juegoland dev` and quick starts.
//!
//! SINGLE PROCESS ONLY: one process opens a data directory at a time (the engine's
//! embedded profile). Within that process, a commit is one `BEGIN IMMEDIATE` transaction,
//! which takes SQLite's write lock up front, so the revision check and the writes that
//! follow it cannot interleave with another commit; the journal is in WAL mode with
//! `synchronous = FULL`, so a committed transaction survives a crash of the process or
//! the machine. Reads run beside a commit (WAL readers see the last committed state).
//!
//! Ownership fencing works as on PostgreSQL (an owned handle's checks run in the same
//! transaction as the revision check), so the behaviour suite runs the same cases here,
//! with two owners as two clones of one handle; the embedded profile itself is unowned.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use juegoland_core::{Commit, LogEntry, MatchState, Receipt, ReceiptKey, StoredMatch};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use uuid::Uuid;

use crate::dir_lock::DirLock;
use crate::rows::{self, Dialect, store_error};
use crate::sqlite_batch::{Readers, Writer};
use crate::{DueDeadline, OpenError, OutboxBacklog, OutboxRow, Store, StoreError, WebhookClaim};

/// The SQLite migrations (`migrations/sqlite/` at the workspace root), embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("../../migrations/sqlite");

const LITE: Dialect = Dialect::Sqlite;

/// Makes the data directory readable by its owner only (0700) and its database file too
/// (0600; a new one is created so before SQLite opens it, and SQLite gives its `-wal` and
/// `-shm` files the database file's mode). Every match's whole state is in there, hidden
/// hands and fleets included; so is the dev token secret.
fn private(data_dir: &Path, database: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))?;
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(database)?;
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", database.display()));
        if file.exists() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// The file a data directory holds.
pub const SQLITE_FILE: &str = "juegoland.sqlite3";

/// The embedded SQLite store. Cheap to clone (a pool handle); clones share the data.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    path: PathBuf,
    /// This handle's owner identity; `None` is unowned mode (no owner checks).
    owner: Option<Arc<str>>,
    /// The writer thread of this handle's owner (`sqlite_batch`), started on first write (a
    /// failed start is tried again by the next write).
    writer: Arc<tokio::sync::OnceCell<Writer>>,
    /// The read connections of the hot reads (`sqlite_batch`), shared by every clone.
    readers: Arc<Readers>,
    /// The data directory's exclusive lock, held until [`SqliteStore::close`] or until the
    /// last clone is dropped (the OS releases it when the process dies); `None` for a reader.
    lock: Arc<Mutex<Option<DirLock>>>,
    /// A reader's handle ([`SqliteStore::open_reader`]): every write fails.
    read_only: bool,
}

/// How a process opens a data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// The serving process of a directory that may be new: create, migrate, lock.
    Create,
    /// The serving process of a directory that must already hold a store: migrate, lock.
    Existing,
    /// A reader beside the serving process (an audit): no lock, no migrations, no writes.
    Reader,
}

impl SqliteStore {
    /// Opens (creating if needed) `data_dir/juegoland.sqlite3`, takes the directory's
    /// exclusive lock and runs the pending migrations. Only one process may use a data
    /// directory at a time: while another holds it, this fails with [`OpenError::Locked`].
    pub async fn open(data_dir: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_in(data_dir.as_ref(), Mode::Create).await
    }

    /// As [`SqliteStore::open`], but the directory must already hold a store (with its
    /// schema): a missing directory, file or schema is [`OpenError::NoStore`] and nothing is
    /// created. For tools over existing data (`juegoland replay`).
    pub async fn open_existing(data_dir: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_in(data_dir.as_ref(), Mode::Existing).await
    }

    /// Opens an existing store for reading beside the process that serves it (WAL readers see
    /// its last committed state): no lock, no migrations, and every write fails. For audits
    /// of a running server (the load-test harness).
    pub async fn open_reader(data_dir: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_in(data_dir.as_ref(), Mode::Reader).await
    }

    async fn open_in(data_dir: &Path, mode: Mode) -> Result<Self, OpenError> {
        let path = data_dir.join(SQLITE_FILE);
        if mode == Mode::Create {
            std::fs::create_dir_all(data_dir).map_err(|source| OpenError::Io {
                action: "create the data directory",
                path: data_dir.to_owned(),
                source,
            })?;
        } else if !data_dir.is_dir() {
            return Err(OpenError::NoStore { location: data_dir.display().to_string(), why: "no such directory" });
        } else if !path.is_file() {
            return Err(OpenError::NoStore { location: data_dir.display().to_string(), why: "no database file" });
        }
        let lock = match mode {
            Mode::Reader => None,
            Mode::Create | Mode::Existing => Some(DirLock::acquire(data_dir)?),
        };
        if mode != Mode::Reader {
            private(data_dir, &path).map_err(|source| OpenError::Io {
                action: "make the data directory private",
                path: data_dir.to_owned(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(mode == Mode::Create)
            .read_only(mode == Mode::Reader)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(5))
            .connect_with(options)
            .await
            .map_err(|e| store_error(LITE, "open the sqlite store", e))?;
        if mode != Mode::Create {
            let (tables,): (i64,) =
                sqlx::query_as("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'matches'")
                    .fetch_one(&pool)
                    .await
                    .map_err(|e| store_error(LITE, "read the sqlite schema", e))?;
            if tables == 0 {
                pool.close().await;
                return Err(OpenError::NoStore { location: path.display().to_string(), why: "no Juegoland schema" });
            }
        }
        if mode != Mode::Reader {
            MIGRATOR.run(&pool).await.map_err(|e| match e {
                MigrateError::Execute(e) => store_error(LITE, "run migrations", e),
                other => StoreError::Corrupt(format!("run migrations: {other}")),
            })?;
        }
        let readers = Arc::new(Readers::open(&path)?);
        Ok(Self {
            pool,
            path,
            owner: None,
            writer: Arc::default(),
            readers,
            lock: Arc::new(Mutex::new(lock)),
            read_only: mode == Mode::Reader,
        })
    }

    /// This handle in cluster mode: it creates matches as `owner` and commits only to the
    /// matches `owner` owns (see the crate docs). Other clones keep their own owner.
    pub fn owned_by(self, owner: impl Into<String>) -> Self {
        Self { owner: Some(owner.into().into()), writer: Arc::default(), ..self }
    }

    /// The owner identity this handle commits as; `None` in unowned mode.
    pub fn identity(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes every connection (checkpointing the WAL); later calls fail with
    /// [`StoreError::Unavailable`].
    pub async fn close(&self) {
        if let Some(writer) = self.writer.get() {
            writer.close();
        }
        self.readers.close();
        self.pool.close().await;
        self.lock.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// Fails for a reader's handle ([`SqliteStore::open_reader`]).
    fn writable(&self) -> Result<(), StoreError> {
        match self.read_only {
            true => Err(StoreError::Corrupt(format!("a reader of {} cannot write", self.path.display()))),
            false => Ok(()),
        }
    }

    /// This handle's writer thread, started on first use.
    async fn writer(&self) -> Result<&Writer, StoreError> {
        self.writable()?;
        self.writer.get_or_try_init(|| async { Writer::spawn(&self.path, self.owner.clone()) }).await
    }
}

/// The revisions waiting for dispatch, in match and revision order: for each watermark (a
/// match that may have some), its match's `seq` and its revisions past it. `CROSS JOIN` keeps
/// the watermarks the outer loop: left to itself, SQLite's planner scans every revision ever
/// stored and probes the watermarks, which made each sweep read the whole history.
pub(crate) const UNDISPATCHED: &str = "SELECT w.match_id, r.revision, r.publications FROM outbox_watermarks AS w
     CROSS JOIN matches AS m ON m.match_id = w.match_id
     CROSS JOIN revisions AS r ON r.match_seq = m.seq AND r.revision > w.dispatched
     WHERE r.recipients > 0 AND r.written_ms <= ?2
     ORDER BY w.match_id, r.revision LIMIT ?1";

/// The waiting publications written by `?1` (ms) and when the oldest was written (same plan
/// as [`UNDISPATCHED`]).
const BACKLOG: &str = "SELECT sum(r.recipients), min(r.written_ms) FROM outbox_watermarks AS w
     CROSS JOIN matches AS m ON m.match_id = w.match_id
     CROSS JOIN revisions AS r ON r.match_seq = m.seq AND r.revision > w.dispatched
     WHERE r.recipients > 0 AND r.written_ms <= ?1";

/// SQLite's clock as ISO 8601 text in UTC, the form of every timestamp column.
pub(crate) const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

crate::webhook_endpoints::sql_webhook_endpoints!(
    SqliteStore,
    LITE,
    "SELECT 0, COALESCE(max(seq), 0) FROM match_events"
);

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        // Commits of different matches share transactions (group commit, `sqlite_batch`).
        self.writer().await?.commit(commit).await
    }

    async fn load(&self, match_id: Uuid) -> Result<Option<StoredMatch>, StoreError> {
        self.readers.load(match_id)
    }

    async fn snapshot(&self, state: &MatchState) -> Result<bool, StoreError> {
        self.writable()?;
        // One statement: atomic, and serialized with the writer's batches by SQLite's lock.
        let c = rows::SnapshotColumns::of(state)?;
        let written = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE matches SET revision = $2, phase_epoch = $3, status = $4, state = $5, updated_at = {NOW}
             WHERE match_id = $1 AND revision < $2 AND ($6 IS NULL OR owner = $6)
               AND (SELECT max(r.revision) FROM revisions AS r WHERE r.match_seq = matches.seq) = $2"
        )))
        .bind(state.match_id)
        .bind(c.revision)
        .bind(c.phase_epoch)
        .bind(c.status)
        .bind(c.state)
        .bind(self.owner.as_deref())
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "write a match snapshot", e))?;
        Ok(written.rows_affected() > 0)
    }

    async fn replace_snapshot(&self, expected: &MatchState, state: &MatchState) -> Result<(), StoreError> {
        self.writable()?;
        let r = rows::Replacement::of(expected, state)?;
        let query = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{}, updated_at = {NOW} {} AND ($9 IS NULL OR owner = $9)
               AND (SELECT max(r.revision) FROM revisions AS r WHERE r.match_seq = matches.seq) = $2",
            rows::REPLACE_SET,
            rows::REPLACE_WHERE
        )));
        let written = rows::bind_replacement!(query, r, self.owner.as_deref())
            .execute(&self.pool)
            .await
            .map_err(|e| store_error(LITE, "replace a match snapshot", e))?;
        if written.rows_affected() == 0 {
            return Err(rows::Replacement::conflict(expected));
        }
        Ok(())
    }

    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        self.readers.receipt(key)
    }

    async fn receipts(&self, match_id: Uuid) -> Result<Vec<Receipt>, StoreError> {
        self.readers.receipts(match_id)
    }

    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError> {
        let entries: Vec<(String,)> = sqlx::query_as(
            "SELECT entry FROM revisions WHERE match_seq = (SELECT seq FROM matches WHERE match_id = $1)
                 ORDER BY revision",
        )
        .bind(match_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "load match log", e))?;
        entries.iter().map(|(text,)| rows::decode("log entry", match_id, text)).collect()
    }

    async fn match_ids(&self) -> Result<Vec<Uuid>, StoreError> {
        let ids: Vec<(Uuid,)> = sqlx::query_as("SELECT match_id FROM matches ORDER BY match_id")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| store_error(LITE, "list matches", e))?;
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
            .map_err(|e| store_error(LITE, "list the matches pinned to a lock digest", e))?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    async fn list_matches(
        &self,
        query: &juegoland_api::MatchQuery,
    ) -> Result<Vec<juegoland_api::MatchListing>, StoreError> {
        use crate::listing::{MatchRow, SeatRow, listings, matches_sql};
        // `created_at` is written as '%Y-%m-%dT%H:%M:%fZ': fixed width already.
        let kind = "json_extract(m.state, '$.position.result.kind')";
        let sql = matches_sql("m.created_at", "CAST($4 AS text)", kind);
        let rows: Vec<MatchRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(query.principal.as_deref())
            .bind(query.game.as_deref())
            .bind(query.status.map(|s| s.as_str()))
            .bind(query.after.as_ref().map(|c| c.created_at.as_str()))
            .bind(query.after.as_ref().map(|c| c.match_id))
            .bind(i64::from(query.limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| store_error(LITE, "list matches", e))?;
        // At most a page of ids, each bound as its own parameter.
        let marks = vec!["?"; rows.len()].join(", ");
        let sql = format!(
            "SELECT match_id, seat, principal, bot_profile, status FROM participants WHERE match_id IN ({marks})"
        );
        let mut seats_query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
        for row in &rows {
            seats_query = seats_query.bind(row.0);
        }
        let seats: Vec<SeatRow> = match rows.is_empty() {
            true => Vec::new(),
            false => seats_query
                .fetch_all(&self.pool)
                .await
                .map_err(|e| store_error(LITE, "list the listed matches' seats", e))?,
        };
        listings(rows, seats)
    }

    async fn feed(
        &self,
        after: juegoland_api::FeedCursor,
        limit: u32,
    ) -> Result<Vec<juegoland_api::FeedEvent>, StoreError> {
        // One writer commits in order: `seq` is the feed's order.
        let rows: Vec<crate::listing::FeedRow> = sqlx::query_as(
            "SELECT 0, seq, match_id, revision, kind, at, body FROM match_events WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(rows::to_i64(after.seq, "feed cursor")?)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "read the feed", e))?;
        crate::listing::feed_events(rows)
    }

    async fn undispatched(&self, limit: usize, min_age: Duration) -> Result<Vec<OutboxRow>, StoreError> {
        // Every revision has at least one publication or none waits for it, so `limit`
        // revisions hold at least `limit` publications. Read with rusqlite, which tells a
        // compressed column from a text one (`sqlite_batch::unpack_publications`).
        let written_by = rows::now_ms() - rows::age_ms(min_age);
        rows::undispatched(self.readers.undispatched(rows::limit(limit), written_by)?, limit)
    }

    async fn mark_dispatched(&self, marks: &[(Uuid, u64)]) -> Result<(), StoreError> {
        // The marks ride in the writer's next transaction.
        self.writer().await?.mark_dispatched(marks).await
    }

    async fn outbox_backlog(&self, min_age: Duration) -> Result<OutboxBacklog, StoreError> {
        let written_by = rows::now_ms() - rows::age_ms(min_age);
        let (rows, oldest_ms): (Option<i64>, Option<i64>) = sqlx::query_as(BACKLOG)
            .bind(written_by)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| store_error(LITE, "measure the outbox backlog", e))?;
        Ok(OutboxBacklog {
            rows: rows::to_u64(rows.unwrap_or(0), "outbox backlog")?,
            oldest_age: oldest_ms
                .map(|ms| Duration::from_millis(rows::now_ms().saturating_sub(ms).max(0).unsigned_abs())),
        })
    }

    async fn due_deadlines(&self, now_ms: i64, limit: usize) -> Result<Vec<DueDeadline>, StoreError> {
        let found: Vec<(Uuid, String, i64, i64)> = sqlx::query_as(
            "SELECT match_id, deadline_id, generation, due_ms FROM deadlines
             WHERE state = 'pending' AND due_ms <= $1
             ORDER BY due_ms, match_id, deadline_id, generation LIMIT $2",
        )
        .bind(now_ms)
        .bind(rows::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "list due deadlines", e))?;
        rows::due_sorted(found)
    }

    async fn claim_deadlines(
        &self,
        claimant: &str,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<DueDeadline>, StoreError> {
        // One statement, so atomic; claim_until is on SQLite's clock, as ISO 8601 text that
        // compares in time order.
        let found: Vec<(Uuid, String, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "UPDATE deadlines SET claimed_by = $1, claim_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', $2)
             WHERE (match_id, deadline_id, generation) IN (
                 SELECT match_id, deadline_id, generation FROM deadlines
                 WHERE state = 'pending' AND due_ms <= $3 AND (claim_until IS NULL OR claim_until < {NOW})
                 ORDER BY due_ms LIMIT $4)
             RETURNING match_id, deadline_id, generation, due_ms"
        )))
        .bind(claimant)
        .bind(format!("+{:.3} seconds", lease.as_secs_f64()))
        .bind(now_ms)
        .bind(rows::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "claim due deadlines", e))?;
        rows::due_sorted(found)
    }

    async fn release_deadlines(&self, claimant: &str, deadlines: &[DueDeadline]) -> Result<(), StoreError> {
        let err = |e| store_error(LITE, "release deadline claims", e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        for d in deadlines {
            sqlx::query(
                "UPDATE deadlines SET claimed_by = NULL, claim_until = NULL
                 WHERE match_id = $1 AND deadline_id = $2 AND generation = $3 AND state = 'pending'
                   AND claimed_by = $4",
            )
            .bind(d.match_id)
            .bind(&d.deadline_id)
            .bind(rows::to_i64(d.generation, "deadline generation")?)
            .bind(claimant)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    async fn cancel_finished_deadlines(&self, deadlines: &[DueDeadline]) -> Result<(), StoreError> {
        let err = |e| store_error(LITE, "cancel deadlines of finished matches", e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        for d in deadlines {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE deadlines SET state = 'cancelled', updated_at = {NOW}
                 WHERE match_id = $1 AND deadline_id = $2 AND generation = $3 AND state = 'pending'
                   AND match_id IN (SELECT match_id FROM matches WHERE match_id = $1 AND status = 'finished')"
            )))
            .bind(d.match_id)
            .bind(&d.deadline_id)
            .bind(rows::to_i64(d.generation, "deadline generation")?)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    async fn pending_deadlines(&self) -> Result<u64, StoreError> {
        let (count,): (i64,) = sqlx::query_as("SELECT count(*) FROM deadlines WHERE state = 'pending'")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| store_error(LITE, "count pending deadlines", e))?;
        rows::to_u64(count, "pending deadline count")
    }

    async fn next_deadline_due(&self, after_ms: i64) -> Result<Option<i64>, StoreError> {
        let (due,): (Option<i64>,) =
            sqlx::query_as("SELECT min(due_ms) FROM deadlines WHERE state = 'pending' AND due_ms > $1")
                .bind(after_ms)
                .fetch_one(&self.pool)
                .await
                .map_err(|e| store_error(LITE, "find the next due deadline", e))?;
        Ok(due)
    }

    async fn claim_webhook(
        &self,
        endpoint: &str,
        claimant: &str,
        lease: Duration,
    ) -> Result<Option<WebhookClaim>, StoreError> {
        // One statement, so atomic; claim_until is on SQLite's clock, as ISO 8601 text that
        // compares in time order.
        let row: Option<(i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO webhook_cursors AS w (endpoint, claimed_by, claim_until, claim_epoch)
             VALUES ($1, $2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', $3), 1)
             ON CONFLICT (endpoint) DO UPDATE
             SET claimed_by = excluded.claimed_by,
                 claim_until = excluded.claim_until,
                 claim_epoch = CASE WHEN w.claimed_by = excluded.claimed_by THEN w.claim_epoch
                                    ELSE w.claim_epoch + 1 END
             WHERE w.claimed_by IS NULL OR w.claimed_by = excluded.claimed_by OR w.claim_until < {NOW}
             RETURNING claim_epoch, txid, seq"
        )))
        .bind(endpoint)
        .bind(claimant)
        .bind(format!("+{:.3} seconds", lease.as_secs_f64()))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "claim a webhook endpoint", e))?;
        row.map(|row| rows::webhook_claim(endpoint, claimant, row)).transpose()
    }

    async fn advance_webhook(&self, claim: &WebhookClaim, to: juegoland_api::FeedCursor) -> Result<bool, StoreError> {
        let (epoch, txid, seq) = rows::webhook_fence(claim)?;
        let moved = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE webhook_cursors SET txid = $6, seq = $7, advanced_at = {NOW}
             WHERE endpoint = $1 AND claimed_by = $2 AND claim_epoch = $3 AND txid = $4 AND seq = $5"
        )))
        .bind(&claim.endpoint)
        .bind(&claim.claimant)
        .bind(epoch)
        .bind(txid)
        .bind(seq)
        .bind(rows::to_i64(to.txid, "webhook cursor")?)
        .bind(rows::to_i64(to.seq, "webhook cursor")?)
        .execute(&self.pool)
        .await
        .map_err(|e| store_error(LITE, "advance a webhook cursor", e))?;
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
        .map_err(|e| store_error(LITE, "release a webhook endpoint", e))?;
        Ok(())
    }

    async fn claim(&self, match_id: Uuid) -> Result<Option<u64>, StoreError> {
        // One statement: atomic, and serialized with commits by SQLite's write lock.
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
        .map_err(|e| store_error(LITE, "claim match", e))?;
        epoch.map(|(epoch,)| rows::to_u64(epoch, "owner epoch")).transpose()
    }

    async fn release(&self, match_id: Uuid) -> Result<(), StoreError> {
        let Some(me) = &self.owner else { return Ok(()) };
        sqlx::query("UPDATE matches SET owner = NULL WHERE match_id = $1 AND owner = $2")
            .bind(match_id)
            .bind(&**me)
            .execute(&self.pool)
            .await
            .map_err(|e| store_error(LITE, "release match", e))?;
        Ok(())
    }

    async fn owner(&self, match_id: Uuid) -> Result<Option<(Option<String>, u64)>, StoreError> {
        let row: Option<(Option<String>, i64)> =
            sqlx::query_as("SELECT owner, owner_epoch FROM matches WHERE match_id = $1")
                .bind(match_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| store_error(LITE, "load match owner", e))?;
        row.map(|(owner, epoch)| Ok((owner, rows::to_u64(epoch, "owner epoch")?))).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outbox reads find the waiting revisions from the watermarks, never by scanning
    /// every revision (a sweep runs every second over a table that only grows).
    #[tokio::test]
    async fn the_outbox_reads_start_from_the_watermarks() {
        let dir = std::env::temp_dir().join(format!("juegoland-plan-{}", std::process::id()));
        let store = SqliteStore::open(&dir).await.unwrap();
        for sql in [UNDISPATCHED, BACKLOG] {
            let plan: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
                    .bind(10)
                    .bind(0)
                    .fetch_all(&store.pool)
                    .await
                    .unwrap();
            let steps: Vec<&str> = plan.iter().map(|(_, _, _, step)| step.as_str()).collect();
            assert!(
                steps
                    .iter()
                    .any(|s| s.starts_with("SEARCH r USING INDEX revisions_by_match (match_seq=? AND revision>?)")),
                "{steps:?}"
            );
            assert!(!steps.iter().any(|s| s.starts_with("SCAN r")), "{steps:?}");
        }
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
