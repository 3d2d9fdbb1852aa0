//! Group commit for the embedded store: commits of different matches that arrive while a
//! transaction is being written share the next one, so one `fsync` (SQLite's
//! `synchronous = FULL` commit) covers many moves instead of one.
//!
//! One committer task per store handle (per owner identity) takes every queued commit, opens
//! ONE `BEGIN IMMEDIATE` transaction and writes each commit inside its own savepoint
//! (`crate::sqlite::write`, the same code as a lone commit): a commit that loses its fence
//! (revision compare-and-set, duplicate receipt, owner) rolls back to its savepoint and is
//! answered `Conflict` alone while the others stay in the transaction. Nobody is answered
//! before the transaction's `COMMIT` returns, so an acknowledged commit is durable; if the
//! `COMMIT` fails, every commit of the batch fails with it and nothing of it is stored.
//!
//! SQLite has one writer at a time anyway: batching changes nothing about isolation, only how
//! many commits one durable write carries.

use std::sync::Arc;

use juegoland_core::Commit;
use sqlx::{Acquire, Connection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use crate::StoreError;
use crate::rows::{Dialect, store_error};

/// The most commits one transaction carries.
const MAX_BATCH: usize = 256;

struct Job {
    commit: Commit,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// The handle of a committer task; the task ends when every handle is dropped.
#[derive(Debug)]
pub(crate) struct Committer {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Committer {
    pub(crate) fn spawn(pool: SqlitePool, owner: Option<Arc<str>>) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, owner, rx));
        Self { jobs }
    }

    /// Commits `commit` in the next transaction; returns once that transaction committed.
    pub(crate) async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { commit: commit.clone(), reply })
            .map_err(|_| StoreError::Unavailable("the sqlite committer has stopped".into()))?;
        answer.await.map_err(|_| StoreError::Unavailable("the sqlite committer has stopped".into()))?
    }
}

async fn run(pool: SqlitePool, owner: Option<Arc<str>>, mut rx: mpsc::UnboundedReceiver<Job>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        let results = batch(&pool, owner.as_deref(), &jobs).await;
        for (job, result) in jobs.drain(..).zip(results) {
            // A caller that stopped waiting (its actor died) needs no answer.
            let _ = job.reply.send(result);
        }
    }
}

/// Writes `jobs` in one transaction; one result per job, in order.
async fn batch(pool: &SqlitePool, owner: Option<&str>, jobs: &[Job]) -> Vec<Result<(), StoreError>> {
    let all = |e: StoreError| jobs.iter().map(|_| Err(e.clone())).collect();
    let mut conn = match pool.acquire().await {
        Ok(c) => c,
        Err(e) => return all(store_error(Dialect::Sqlite, "begin a commit", e)),
    };
    let mut tx = match conn.begin_with("BEGIN IMMEDIATE").await {
        Ok(tx) => tx,
        Err(e) => return all(store_error(Dialect::Sqlite, "begin a commit", e)),
    };
    let mut results = Vec::with_capacity(jobs.len());
    for job in jobs {
        let mut savepoint = match (&mut tx).begin().await {
            Ok(sp) => sp,
            Err(e) => return all(store_error(Dialect::Sqlite, "open a savepoint", e)),
        };
        match crate::sqlite::write(&mut savepoint, &job.commit, owner).await {
            Ok(()) => match savepoint.commit().await {
                Ok(()) => results.push(Ok(())),
                Err(e) => return all(store_error(Dialect::Sqlite, "release a savepoint", e)),
            },
            Err(e) => {
                if let Err(rollback) = savepoint.rollback().await {
                    return all(store_error(Dialect::Sqlite, "roll back a savepoint", rollback));
                }
                results.push(Err(e));
            }
        }
    }
    match tx.commit().await {
        Ok(()) => results,
        Err(e) => all(store_error(Dialect::Sqlite, "commit", e)),
    }
}
