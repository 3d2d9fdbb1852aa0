//! The audit of deadline firings against the match logs, over PostgreSQL: every generation
//! the logs fired, fired once, and exactly the rows marked `fired` (so nothing cancelled or
//! replaced fired). `services/juegoland/tests/it/scheduler.rs` includes this file with
//! `#[path]`.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use juegoland_core::LoggedOp;
use juegoland_sdk::Lifecycle;
use juegoland_store::Store;
use sqlx::postgres::PgConnectOptions;
use uuid::Uuid;

/// A deadline row: (match, id, generation).
pub type Key = (Uuid, String, u64);

/// The `deadlines` rows of the schema `options` selects, by state.
pub async fn rows_by_state(options: &PgConnectOptions) -> BTreeMap<String, BTreeSet<Key>> {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect_with(options).await.expect("connect for the audit");
    let rows: Vec<(Uuid, String, i64, String)> =
        sqlx::query_as("SELECT match_id, deadline_id, generation, state FROM deadlines")
            .fetch_all(&mut c)
            .await
            .expect("read the deadline rows");
    let mut by_state: BTreeMap<String, BTreeSet<Key>> = BTreeMap::new();
    for (m, id, g, state) in rows {
        by_state.entry(state).or_default().insert((m, id, g as u64));
    }
    by_state
}

/// Every deadline firing in the match logs, with how many times each appears.
pub async fn firings_in_logs(store: &dyn Store) -> BTreeMap<Key, usize> {
    let mut fired = BTreeMap::new();
    for m in store.match_ids().await.expect("list matches") {
        for entry in store.log(m).await.expect("read a log") {
            if let LoggedOp::Lifecycle { event: Lifecycle::DeadlineExpired { id, .. }, generation: Some(g) } = entry.op
            {
                *fired.entry((m, id, g)).or_insert(0) += 1;
            }
        }
    }
    fired
}

/// Checks that every firing in the logs happened once, and that the rows marked `fired`
/// are exactly the generations the logs fired (so nothing cancelled or replaced fired).
/// Returns the fired keys.
pub async fn each_fired_once(store: &dyn Store, options: &PgConnectOptions) -> BTreeSet<Key> {
    let logged = firings_in_logs(store).await;
    let twice: Vec<_> = logged.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "deadline generations fired more than once: {twice:?}");
    let rows = rows_by_state(options).await;
    let fired_rows = rows.get("fired").cloned().unwrap_or_default();
    let logged: BTreeSet<Key> = logged.into_keys().collect();
    assert_eq!(logged, fired_rows, "the rows marked fired are the generations the logs fired");
    let cancelled = rows.get("cancelled").cloned().unwrap_or_default();
    assert!(logged.is_disjoint(&cancelled), "a cancelled or replaced generation fired");
    logged
}
