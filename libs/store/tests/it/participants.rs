//! The `participants` rows (an operators' query aid: who plays which match, nothing reads
//! them back through `Store`) follow the state on both durable backends: one row per seat at
//! creation, and a seat's status rewritten when a commit withdraws it.

use std::sync::Arc;

use juegoland_core::LoggedOp;
use juegoland_sdk::Lifecycle;
use juegoland_sdk::position::ParticipantStatus;
use sqlx::Connection;
use uuid::Uuid;

use crate::backends::{PgBackend, SqliteBackend};
use crate::game::Game;
use crate::suite::Backend;

/// Commits a match's creation, then the revision that withdraws `p1` (a lifecycle event: only
/// those change participants, `Commit::participants_may_change`), then a move.
async fn play_withdrawal(backend: &impl Backend, match_id: Uuid) {
    let (mut game, created) = Game::create(match_id);
    let mut withdrawal = game.drop_disc(3);
    let mut state = withdrawal.state.as_deref().expect("a state").clone();
    state.position.participants.get_mut("p1").expect("seat p1").status = ParticipantStatus::Withdrawn;
    withdrawal.state = Some(Arc::new(state));
    withdrawal.receipt = None;
    withdrawal.log.as_mut().expect("a log entry").op =
        LoggedOp::Lifecycle { event: Lifecycle::Withdrawal { seat: "p1".into() }, generation: None };
    assert!(withdrawal.participants_may_change());
    // The next move's state (from the engine, which saw no withdrawal) says p1 is active: a
    // move's state is not read for participants.
    let moved = game.drop_disc(4);
    assert!(!moved.participants_may_change());
    for commit in [created, withdrawal, moved] {
        backend.store().commit(&commit).await.expect("commit");
    }
}

/// The statement both backends answer (numbered placeholders are SQLite syntax too).
const ROWS: &str = "SELECT seat, status FROM participants WHERE match_id = $1 ORDER BY seat";

fn assert_seats(rows: &[(String, String)]) {
    let rows: Vec<(&str, &str)> = rows.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
    assert_eq!(rows, [("p0", "active"), ("p1", "withdrawn")]);
}

#[tokio::test]
async fn sqlite_participants_follow_withdrawals() {
    let backend = SqliteBackend::start("participants").await;
    let id = Uuid::from_u128(0x9a27);
    play_withdrawal(&backend, id).await;
    let url = format!("sqlite://{}", backend.path().display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("open the database file");
    assert_seats(&sqlx::query_as(ROWS).bind(id).fetch_all(&mut conn).await.expect("participants"));
    backend.finish().await;
}

#[tokio::test]
async fn pg_participants_follow_withdrawals() {
    let backend = PgBackend::start("participants").await;
    let id = Uuid::from_u128(0x9a28);
    play_withdrawal(&backend, id).await;
    let mut conn = sqlx::PgConnection::connect_with(&backend.options()).await.expect("connect");
    assert_seats(&sqlx::query_as(ROWS).bind(id).fetch_all(&mut conn).await.expect("participants"));
    backend.finish().await;
}
