//! The PostgreSQL backend: production storage shared by every node.
//!
//! A commit is ONE transaction (READ COMMITTED): the revision compare-and-set is an
//! `UPDATE … WHERE revision = $expected` (or `SELECT … FOR UPDATE` for a commit without a
//! new state), so a concurrent writer either waits for the row lock and then finds the
//! revision moved (a conflict) or has already lost. JSON columns are `jsonb`, written and
//! read as text so that decoding errors name what did not decode.

use std::time::Duration;

use juegoland_core::{Commit, LogEntry, MatchState, Publication, Receipt, ReceiptKey, ReceiptOutcome};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{PgConnection, Postgres, Transaction};
use uuid::Uuid;

use crate::rows::{self, Dialect, commit_error, store_error};
use crate::{DueDeadline, OutboxRow, Store, StoreError, conflict};

/// The PostgreSQL migrations (`migrations/` at the workspace root), embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

const PG: Dialect = Dialect::Postgres;

/// The PostgreSQL store. Cheap to clone (a pool handle).
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`) with [`PgStore::pool_options`] and
    /// runs the pending migrations.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let options: PgConnectOptions =
            url.parse().map_err(|e| StoreError::Corrupt(format!("parse the database url: {e}")))?;
        Self::connect_with(Self::pool_options(), options).await
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
        let pool = pool.connect_with(options).await.map_err(|e| store_error(PG, "connect to postgres", e))?;
        MIGRATOR.run(&pool).await.map_err(migrate_error)?;
        Ok(Self { pool })
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

/// Writes `commit` inside `tx`; the caller commits or drops (rolls back) the transaction.
async fn write(tx: &mut PgConnection, commit: &Commit) -> Result<(), StoreError> {
    let err = |e| commit_error(PG, commit, e);
    let match_id = commit.match_id;
    match (commit.expected_revision, &commit.state) {
        (None, Some(state)) => {
            let created = sqlx::query(
                "INSERT INTO matches (match_id, game_id, rules_version, game_version, revision, phase_epoch, status, state)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) ON CONFLICT (match_id) DO NOTHING",
            )
            .bind(match_id)
            .bind(&state.game.id)
            .bind(&state.game.rules_version)
            .bind(&state.game_version)
            .bind(rows::to_i64(state.revision, "revision")?)
            .bind(rows::to_i64(state.phase_epoch, "phase epoch")?)
            .bind(rows::match_status(state))
            .bind(rows::encode("match state", &**state)?)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
            if created.rows_affected() == 0 {
                return Err(conflict(commit));
            }
            let participants = rows::participants(state);
            sqlx::query(
                "INSERT INTO participants (match_id, seat, principal, bot_profile, status)
                 SELECT $1, * FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[])",
            )
            .bind(match_id)
            .bind(participants.iter().map(|p| p.seat).collect::<Vec<_>>())
            .bind(participants.iter().map(|p| p.principal).collect::<Vec<_>>())
            .bind(participants.iter().map(|p| p.bot_profile).collect::<Vec<_>>())
            .bind(participants.iter().map(|p| p.status).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        (Some(expected), Some(state)) => {
            let updated = sqlx::query(
                "UPDATE matches SET revision = $3, phase_epoch = $4, status = $5, state = $6::jsonb, updated_at = now()
                 WHERE match_id = $1 AND revision = $2",
            )
            .bind(match_id)
            .bind(rows::to_i64(expected, "expected revision")?)
            .bind(rows::to_i64(state.revision, "revision")?)
            .bind(rows::to_i64(state.phase_epoch, "phase epoch")?)
            .bind(rows::match_status(state))
            .bind(rows::encode("match state", &**state)?)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
            if updated.rows_affected() == 0 {
                return Err(conflict(commit));
            }
            let participants = rows::participants(state);
            sqlx::query(
                "UPDATE participants AS p SET status = v.status
                 FROM UNNEST($2::text[], $3::text[]) AS v(seat, status)
                 WHERE p.match_id = $1 AND p.seat = v.seat AND p.status <> v.status",
            )
            .bind(match_id)
            .bind(participants.iter().map(|p| p.seat).collect::<Vec<_>>())
            .bind(participants.iter().map(|p| p.status).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        (Some(expected), None) => {
            // A final rejection: no new state, but the same fence, and the row stays locked
            // until the receipt is stored.
            let fenced = sqlx::query("SELECT 1 FROM matches WHERE match_id = $1 AND revision = $2 FOR UPDATE")
                .bind(match_id)
                .bind(rows::to_i64(expected, "expected revision")?)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err)?;
            if fenced.is_none() {
                return Err(conflict(commit));
            }
        }
        (None, None) => return Err(conflict(commit)),
    }

    if let Some(r) = &commit.receipt {
        let revision = match r.outcome {
            ReceiptOutcome::Applied { revision } | ReceiptOutcome::Rejected { revision, .. } => revision,
        };
        let stored = sqlx::query(
            "INSERT INTO receipts (match_id, principal, command_id, fingerprint, outcome, revision)
             VALUES ($1, $2, $3, $4, $5::jsonb, $6) ON CONFLICT DO NOTHING",
        )
        .bind(r.key.match_id)
        .bind(&r.key.principal)
        .bind(r.key.command_id)
        .bind(&r.fingerprint)
        .bind(rows::encode("receipt outcome", &r.outcome)?)
        .bind(rows::to_i64(revision, "receipt revision")?)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        if stored.rows_affected() == 0 {
            // Another writer stored this receipt: our judgement is stale.
            return Err(conflict(commit));
        }
    }

    if let Some(log) = &commit.log {
        let stored = sqlx::query(
            "INSERT INTO match_log (match_id, revision, instant_ms, entry) VALUES ($1, $2, $3, $4::jsonb)
             ON CONFLICT DO NOTHING",
        )
        .bind(match_id)
        .bind(rows::to_i64(log.revision, "log revision")?)
        .bind(log.instant_ms)
        .bind(rows::encode("log entry", log)?)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        if stored.rows_affected() == 0 {
            return Err(conflict(commit));
        }
    }

    if let Some(state) = &commit.state {
        let pending: Vec<(String, i64)> = if commit.expected_revision.is_none() {
            Vec::new()
        } else {
            sqlx::query_as("SELECT deadline_id, generation FROM deadlines WHERE match_id = $1 AND state = 'pending'")
                .bind(match_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(err)?
        };
        let plan = rows::plan_deadlines(rows::fired_generation(commit)?, &state.deadlines, pending)?;
        for (id, generation, new_state) in &plan.close {
            sqlx::query(
                "UPDATE deadlines SET state = $4, updated_at = now()
                 WHERE match_id = $1 AND deadline_id = $2 AND generation = $3",
            )
            .bind(match_id)
            .bind(id)
            .bind(generation)
            .bind(new_state)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        for (id, generation, due_ms, payload) in &plan.add {
            sqlx::query(
                "INSERT INTO deadlines (match_id, deadline_id, generation, due_ms, payload, state)
                 VALUES ($1, $2, $3, $4, $5::jsonb, 'pending')",
            )
            .bind(match_id)
            .bind(id)
            .bind(generation)
            .bind(due_ms)
            .bind(rows::encode("deadline payload", payload)?)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
    }

    if !commit.publications.is_empty() {
        let pubs = &commit.publications;
        let revisions =
            pubs.iter().map(|p| rows::to_i64(p.revision, "publication revision")).collect::<Result<Vec<_>, _>>()?;
        let ordinals = (0..pubs.len())
            .map(|i| i32::try_from(i).map_err(|_| StoreError::Corrupt("too many publications".into())))
            .collect::<Result<Vec<_>, _>>()?;
        sqlx::query(
            "INSERT INTO outbox (match_id, revision, recipient, ordinal, payload)
             SELECT $1, * FROM UNNEST($2::int8[], $3::text[], $4::int4[], $5::text[])",
        )
        .bind(match_id)
        .bind(revisions)
        .bind(pubs.iter().map(rows::recipient_column).collect::<Vec<_>>())
        .bind(ordinals)
        .bind(pubs.iter().map(|p| &*p.encoded).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await
        .map_err(err)?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl Store for PgStore {
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        let mut tx: Transaction<'_, Postgres> =
            self.pool.begin().await.map_err(|e| store_error(PG, "begin a commit", e))?;
        // On any error the transaction is dropped, which rolls it back: never half a commit.
        write(&mut tx, commit).await?;
        // A connection lost during COMMIT leaves the outcome unknown; the retry then meets
        // either a clean slate or a conflict, and a conflict makes the caller reload.
        tx.commit().await.map_err(|e| commit_error(PG, commit, e))
    }

    async fn load(&self, match_id: Uuid) -> Result<Option<MatchState>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT state::text FROM matches WHERE match_id = $1")
            .bind(match_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| store_error(PG, "load match", e))?;
        row.map(|(text,)| rows::decode("match state", match_id, &text)).transpose()
    }

    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT fingerprint, outcome::text FROM receipts WHERE match_id = $1 AND principal = $2 AND command_id = $3",
        )
        .bind(key.match_id)
        .bind(&key.principal)
        .bind(key.command_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| store_error(PG, "load receipt", e))?;
        row.map(|(fingerprint, outcome)| {
            Ok(Receipt {
                key: key.clone(),
                fingerprint,
                outcome: rows::decode("receipt outcome", key.match_id, &outcome)?,
            })
        })
        .transpose()
    }

    async fn log(&self, match_id: Uuid) -> Result<Vec<LogEntry>, StoreError> {
        let entries: Vec<(String,)> =
            sqlx::query_as("SELECT entry::text FROM match_log WHERE match_id = $1 ORDER BY revision")
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

    async fn undispatched(&self, limit: usize) -> Result<Vec<OutboxRow>, StoreError> {
        let found: Vec<(Uuid, i64, String, String)> = sqlx::query_as(
            "SELECT match_id, revision, recipient, payload FROM outbox WHERE NOT dispatched
             ORDER BY match_id, revision, ordinal LIMIT $1",
        )
        .bind(rows::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| store_error(PG, "list undispatched outbox rows", e))?;
        found
            .into_iter()
            .map(|(match_id, revision, recipient, payload)| {
                Ok(OutboxRow {
                    publication: Publication {
                        match_id,
                        revision: rows::to_u64(revision, "outbox revision")?,
                        recipient: rows::recipient_of(recipient),
                        encoded: payload.into(),
                    },
                })
            })
            .collect()
    }

    async fn mark_dispatched(&self, match_id: Uuid, revision: u64) -> Result<(), StoreError> {
        sqlx::query("UPDATE outbox SET dispatched = true WHERE match_id = $1 AND revision <= $2 AND NOT dispatched")
            .bind(match_id)
            .bind(rows::to_i64(revision, "revision")?)
            .execute(&self.pool)
            .await
            .map_err(|e| store_error(PG, "mark outbox rows dispatched", e))?;
        Ok(())
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
        found
            .into_iter()
            .map(|(match_id, deadline_id, generation, due_ms)| {
                Ok(DueDeadline { match_id, deadline_id, generation: rows::to_u64(generation, "generation")?, due_ms })
            })
            .collect()
    }
}
