//! Grouped receipt lookups for PostgreSQL: every command looks its receipt up before it is
//! judged, so under load the lookups of many matches that arrive while one is in flight
//! share the next statement (one `SELECT … JOIN UNNEST` instead of one statement each),
//! the same way commits share transactions (`pg_batch`).

use std::collections::HashMap;
use std::sync::Arc;

use juegoland_core::{Receipt, ReceiptKey};
use sqlx::postgres::PgPool;
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

use crate::StoreError;
use crate::rows::{self, Dialect, store_error};

/// The most lookups one statement carries.
const MAX_BATCH: usize = 256;

/// Statements in flight at once.
const LOOKERS: usize = 2;

/// A found receipt row: match, principal, command id, fingerprint, outcome JSON.
type ReceiptRow = (Uuid, String, Uuid, String, String);

pub(crate) struct Lookup {
    pub key: ReceiptKey,
    pub reply: oneshot::Sender<Result<Option<Receipt>, StoreError>>,
}

/// Starts the lookup tasks; lookups sent on the returned channel are grouped.
pub(crate) fn start(pool: PgPool) -> mpsc::Sender<Lookup> {
    let (tx, rx) = mpsc::channel::<Lookup>(MAX_BATCH * LOOKERS * 4);
    let rx = Arc::new(Mutex::new(rx));
    for _ in 0..LOOKERS {
        let (pool, rx) = (pool.clone(), rx.clone());
        // Each looker ends when every sender (every clone of the store) is dropped.
        tokio::spawn(async move {
            loop {
                let mut batch = Vec::new();
                {
                    let mut rx = rx.lock().await;
                    if rx.recv_many(&mut batch, MAX_BATCH).await == 0 {
                        return;
                    }
                }
                run(&pool, batch).await;
            }
        });
    }
    tx
}

async fn run(pool: &PgPool, batch: Vec<Lookup>) {
    let ids: Vec<Uuid> = batch.iter().map(|l| l.key.match_id).collect();
    let principals: Vec<&str> = batch.iter().map(|l| l.key.principal.as_str()).collect();
    let commands: Vec<Uuid> = batch.iter().map(|l| l.key.command_id).collect();
    let found: Result<Vec<ReceiptRow>, _> = sqlx::query_as(
        "SELECT r.match_id, r.principal, r.command_id, r.fingerprint, r.outcome::text
         FROM receipts AS r
         JOIN UNNEST($1::uuid[], $2::text[], $3::uuid[]) AS k(match_id, principal, command_id)
           ON r.match_id = k.match_id AND r.principal = k.principal AND r.command_id = k.command_id",
    )
    .bind(&ids)
    .bind(&principals)
    .bind(&commands)
    .fetch_all(pool)
    .await;
    match found {
        Ok(rows) => {
            let mut by_key: HashMap<(Uuid, String, Uuid), (String, String)> =
                rows.into_iter().map(|(m, p, c, f, o)| ((m, p, c), (f, o))).collect();
            for lookup in batch {
                let k = &lookup.key;
                let answer = match by_key.remove(&(k.match_id, k.principal.clone(), k.command_id)) {
                    None => Ok(None),
                    Some((fingerprint, outcome)) => rows::decode("receipt outcome", k.match_id, &outcome)
                        .map(|outcome| Some(Receipt { key: lookup.key.clone(), fingerprint, outcome })),
                };
                let _ = lookup.reply.send(answer);
            }
        }
        Err(e) => {
            let e = store_error(Dialect::Postgres, "load receipts", e);
            for lookup in batch {
                let _ = lookup.reply.send(Err(e.clone()));
            }
        }
    }
}
