//! Durability of the all-in-one's embedded store: a killed process keeps every match,
//! receipt and pending publication; a crash right after a commit and before any answer is
//! recovered from the receipt and the outbox without re-running rules; stored matches
//! replay with `juegoland replay`.

use std::process::Command;

use juegoland_store::{SqliteStore, Store};
use serde_json::json;

use crate::client::{Server, command, data_dir, uuid};

#[tokio::test]
async fn a_killed_process_keeps_matches_and_receipts() {
    let dir = data_dir();
    let server = Server::start_in(&dir, &[]);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let mut last = None;
    for (i, column) in [3u64, 4, 3].iter().enumerate() {
        let player = if i % 2 == 0 { &mut alice } else { &mut bob };
        let cmd = command(&m, &uuid(), i as u64, *column);
        player.send(&cmd).await;
        assert_eq!(player.recv_type("game.ack").await.0["status"], "applied");
        last = Some(cmd);
    }
    drop((alice, bob));
    drop(server); // SIGKILL: no graceful shutdown.

    let server = Server::start_in(&dir, &[]);
    let mut alice = server.connect("alice").await;
    let snap = alice.sync(&m, "after-restart").await;
    assert_eq!(snap["revision"], 3);
    assert_eq!(snap["view"]["moveCount"], 3);
    // The receipt survived: the retry is a duplicate, not a second move.
    alice.send(last.as_ref().unwrap()).await;
    let (dup, _) = alice.recv_type("game.ack").await;
    assert_eq!(dup["duplicate"], true);
    assert_eq!(dup["revision"], 3);
    // And play goes on.
    let mut bob = server.connect("bob").await;
    bob.send(&command(&m, &uuid(), 3, 0)).await;
    assert_eq!(bob.recv_type("game.ack").await.0["revision"], 4);
}

/// Where a crash test's server keeps its matches.
pub(crate) enum Backend {
    /// The data directory's SQLite file.
    Embedded,
    Postgres(Box<juegoland_testkit::TestSchema>),
}

impl Backend {
    pub(crate) fn args(&self) -> Vec<String> {
        match self {
            Backend::Embedded => vec![],
            Backend::Postgres(schema) => vec!["--database-url".into(), schema.url()],
        }
    }

    pub(crate) async fn store(&self, dir: &std::path::Path) -> Box<dyn Store> {
        match self {
            Backend::Embedded => Box::new(SqliteStore::open(dir).await.expect("open the embedded store")),
            Backend::Postgres(schema) => Box::new(
                juegoland_store::PgStore::connect_with(juegoland_store::PgStore::pool_options(), schema.options())
                    .await
                    .expect("connect to the test schema"),
            ),
        }
    }
}

#[tokio::test]
async fn crash_after_commit_before_sending_recovers_on_the_embedded_store() {
    crash_after_commit_before_sending(Backend::Embedded).await;
}

#[tokio::test]
async fn crash_after_commit_before_sending_recovers_on_postgres() {
    let schema = juegoland_testkit::TestSchema::create("juegoland_e2e", "crash_after_commit").await;
    crash_after_commit_before_sending(Backend::Postgres(Box::new(schema))).await;
}

/// Acceptance "crash after commit, before sending": recovery from the receipt and the
/// outbox, rules not re-run.
async fn crash_after_commit_before_sending(backend: Backend) {
    let dir = data_dir();
    let args: Vec<String> = backend.args();
    let args_ref: Vec<&str> = args.iter().map(String::as_str).collect();
    // The second actor commit aborts the process before it answers or publishes.
    let crash = [("FAILPOINTS", "match-after-commit=1*off->return")];
    let server = Server::start_in_with_env(&dir, &args_ref, &crash);
    let m = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    alice.sync(&m, "a").await;
    bob.sync(&m, "b").await;
    alice.send(&command(&m, &uuid(), 0, 3)).await;
    assert_eq!(alice.recv_type("game.ack").await.0["status"], "applied");
    let crashing = command(&m, &uuid(), 1, 4);
    bob.send(&crashing).await;
    let status = server.wait_exit();
    assert!(!status.success(), "the process aborted: {status:?}");

    let restart_args = backend.args();
    let restart_ref: Vec<&str> = restart_args.iter().map(String::as_str).collect();
    let server = Server::start_in(&dir, &restart_ref);
    let mut bob = server.connect("bob").await;
    // The client never got an answer: it asks, then retries the same command.
    bob.send(&json!({"protocolVersion":1,"type":"game.command-status","matchId":m,"commandId":crashing["commandId"]}))
        .await;
    let status = bob.recv().await;
    assert_eq!(status["type"], "game.ack", "the receipt was committed: {status}");
    assert_eq!(status["revision"], 2);
    bob.send(&crashing).await;
    let (retry, _) = bob.recv_type("game.ack").await;
    assert_eq!(
        (retry["status"].as_str(), retry["revision"].as_u64(), retry["duplicate"].as_bool()),
        (Some("applied"), Some(2), Some(true))
    );
    let snap = bob.sync(&m, "b2").await;
    assert_eq!(snap["revision"], 2);
    assert_eq!(snap["view"]["lastMove"]["column"], 4);
    // Give the sweeper (1 s) time to dispatch what the crash left in the outbox.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    drop(bob);
    drop(server);

    let store = backend.store(&dir).await;
    let id = m.parse().unwrap();
    let log = store.log(id).await.unwrap();
    assert_eq!(log.iter().map(|e| e.revision).collect::<Vec<_>>(), [0, 1, 2], "rules ran once per revision");
    assert!(
        store.undispatched(100, std::time::Duration::ZERO).await.unwrap().is_empty(),
        "the sweeper dispatched the crash's publications"
    );
    drop(store);

    // The stored match replays from its log and trace.
    let out = Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .args(["replay", "--data-dir"])
        .arg(&*dir)
        .args(backend.args())
        .output()
        .expect("run juegoland replay");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("ok        {m} revision 2")), "{text}");
    assert!(text.contains("1 matches replayed, 0 diverged"), "{text}");
    if let Backend::Postgres(schema) = backend {
        schema.drop_schema().await;
    }
}

/// `juegoland migrate` (the Helm chart's migrations Job) applies every migration to an empty
/// PostgreSQL schema and exits 0; run again, it has nothing left to do and still exits 0.
#[tokio::test]
async fn migrate_applies_every_migration_and_is_idempotent() {
    let schema = juegoland_testkit::TestSchema::create("juegoland_e2e", "migrate").await;
    for _ in 0..2 {
        let out = Command::new(env!("CARGO_BIN_EXE_juegoland"))
            .args(["migrate", "--database-url", &schema.url()])
            .env("RUST_LOG", "warn")
            .output()
            .expect("run juegoland migrate");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect_with(&schema.options()).await.unwrap();
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sql"))
        .count();
    assert_eq!(applied.len(), files, "every migration file is applied once: {applied:?}");
    assert_eq!(applied.first(), Some(&1));
    drop(conn);
    schema.drop_schema().await;
}
