//! A database written by an earlier version of the embedded store migrates: every match,
//! log entry, receipt and pending publication reads back through the `Store` trait exactly
//! as the version that wrote it read it, every match replays, and play goes on.
//!
//! The fixture (`tests/fixtures/store-0008/`) is a data directory written by `juegoland dev`
//! at schema version 0008 (one row per receipt, log entry and outbox publication), with what
//! that version's store answered for it (`expected.json`). It holds Conecta 4 with and
//! without turn clocks (deadlines pending, fired and cancelled), a rejected command, a
//! withdrawal, a cancellation, bot matches of all three games (Solitario's randomness
//! traces) and a publication left undispatched by a crash right after its commit.
//! `write_the_fixture` made it and can make it again, but only with the code of the schema
//! it captures: run it (`--run-ignored only`) on the commit that `expected.json` names.
//! `tests/fixtures/pg-0009/` is the same for PostgreSQL at schema version 0009.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use juegoland_core::Receipt;
use juegoland_store::{OutboxRow, PgStore, SqliteStore, Store};
use juegoland_testkit::TestSchema;
use serde_json::{Value, json};
use sqlx::Connection;

use crate::client::{Server, command, data_dir, uuid};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-0008")
}

/// What a store answers for everything it holds, as JSON: per match its state, log and
/// receipts (sorted by key), and the undispatched publications in the store's order.
async fn answers(store: &dyn Store) -> Value {
    let engine = juegoland_core::Engine::new(std::sync::Arc::new(juegoland_catalog::registry().unwrap()));
    let mut matches = Vec::new();
    for id in store.match_ids().await.unwrap() {
        let stored = store.load(id).await.unwrap().expect("a listed match loads");
        let state = engine.restore(stored).expect("the match restores").state().clone();
        let log = store.log(id).await.unwrap();
        let mut receipts: Vec<Receipt> = store.receipts(id).await.unwrap();
        receipts.sort_by(|a, b| a.key.cmp(&b.key));
        for r in &receipts {
            assert_eq!(store.receipt(&r.key).await.unwrap().as_ref(), Some(r), "a receipt is found by its key");
        }
        matches.push(json!({ "state": state, "log": log, "receipts": receipts }));
    }
    let undispatched: Vec<Value> =
        store.undispatched(10_000, Duration::ZERO).await.unwrap().iter().map(publication).collect();
    json!({ "matches": matches, "undispatched": undispatched })
}

fn publication(row: &OutboxRow) -> Value {
    let p = &row.publication;
    json!({
        "matchId": p.match_id, "revision": p.revision, "recipient": p.recipient,
        "encoded": &*p.encoded, "traceContext": p.trace_context.as_deref(),
    })
}

async fn create(server: &Server, game: &str, seats: Value, config: Value) -> String {
    let (status, body) =
        server.http("POST", "/v1/matches", Some(json!({ "game": game, "seats": seats, "config": config }))).await;
    assert_eq!(status, 201, "{body}");
    body["matchId"].as_str().expect("matchId").to_owned()
}

/// Plays `columns` in turn (alice first) and returns the last command sent.
async fn play(server: &Server, m: &str, from: u64, columns: &[u64]) -> Value {
    let mut alice = server.connect("alice").await;
    let mut bob = server.connect("bob").await;
    let mut last = Value::Null;
    for (i, column) in columns.iter().enumerate() {
        let revision = from + i as u64;
        let player = if revision.is_multiple_of(2) { &mut alice } else { &mut bob };
        let cmd = command(m, &uuid(), revision, *column);
        player.send(&cmd).await;
        assert_eq!(player.recv_type("game.ack").await.0["status"], "applied");
        last = cmd;
    }
    last
}

/// Where a fixture's matches are written: the embedded store in a directory, or PostgreSQL
/// at a URL (with a directory for the dev token secret).
#[derive(Clone, Copy)]
enum Target<'a> {
    Sqlite(&'a Path),
    Postgres(&'a Path, &'a str),
}

impl Target<'_> {
    fn start(self, env: &[(&str, &str)]) -> Server {
        match self {
            Target::Sqlite(dir) => Server::start_in_with_env(dir, &[], env),
            Target::Postgres(dir, url) => Server::start_in_with_env(dir, &["--database-url", url], env),
        }
    }
}

/// The fixtures' matches, written through `juegoland dev` into `target`; the in-progress
/// match's id, its last command and the command whose commit a crash cut off.
async fn write_matches(target: Target<'_>) -> Value {
    let server = target.start(&[]);

    // Conecta 4 between two people, in progress, with a rejected command.
    let open = create(&server, "conecta4", json!({ "p0": "alice", "p1": "bob" }), json!({})).await;
    let last = play(&server, &open, 0, &[3, 4, 3]).await;
    let mut alice = server.connect("alice").await;
    alice.send(&command(&open, &uuid(), 0, 2)).await;
    assert_eq!(alice.recv_type("game.ack").await.0["status"], "rejected");
    // Against the bot with a long turn clock: a deadline pending.
    let clocked = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 600_000}, "policy": "defaultMove"}});
    let vs_bot = create(&server, "conecta4", json!({ "p0": "alice", "p1": { "bot": "default" } }), clocked).await;
    alice.send(&command(&vs_bot, &uuid(), 0, 3)).await;
    assert_eq!(alice.recv_type("game.ack").await.0["status"], "applied");
    // A short clock whose default moves fire deadlines on their own.
    let fast = json!({"clock": {"mode": {"kind": "perTurn", "turnMs": 1_000}, "policy": "defaultMove"}});
    create(&server, "conecta4", json!({ "p0": "alice", "p1": "bob" }), fast).await;
    // Bots among themselves, in each game (Solitario draws randomness).
    create(&server, "conecta4", json!({ "p0": { "bot": "default" }, "p1": { "bot": "default" } }), json!({})).await;
    create(&server, "hundido", json!({ "p0": { "bot": "default" }, "p1": { "bot": "default" } }), json!({})).await;
    create(&server, "solitario", json!({ "p0": { "bot": "default" } }), json!({})).await;
    // A withdrawal and a cancellation.
    let withdrawn = create(&server, "conecta4", json!({ "p0": "alice", "p1": "bob" }), json!({})).await;
    play(&server, &withdrawn, 0, &[0, 1]).await;
    let (status, body) =
        server.http("POST", &format!("/v1/matches/{withdrawn}/withdrawals"), Some(json!({"seat": "p1"}))).await;
    assert_eq!(status, 200, "{body}");
    let cancelled = create(&server, "conecta4", json!({ "p0": "alice", "p1": "bob" }), json!({})).await;
    let path = format!("/v1/matches/{cancelled}/cancellation");
    let (status, body) = server.http("POST", &path, Some(json!({"reasonCode": "platform.abandoned"}))).await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    drop((alice, server));

    // A crash right after a commit leaves its publications undispatched.
    let server = target.start(&[("FAILPOINTS", "match-after-commit=return")]);
    let mut bob = server.connect("bob").await;
    let crashed = command(&open, &uuid(), 3, 4);
    bob.send(&crashed).await;
    assert!(!server.wait_exit().success(), "the injected crash");
    json!({ "matchId": open, "lastCommand": last, "crashedCommand": crashed })
}

/// What `store` answers, checked to hold the crashed commit and its undispatched
/// publications, with the commit that wrote it and the in-progress match (`open`).
async fn expected_answers(store: &dyn Store, open: Value) -> Value {
    let key = juegoland_core::ReceiptKey {
        match_id: open["matchId"].as_str().unwrap().parse().unwrap(),
        principal: "bob".into(),
        command_id: open["crashedCommand"]["commandId"].as_str().unwrap().parse().unwrap(),
    };
    assert!(store.receipt(&key).await.unwrap().is_some(), "the crash came after bob's commit, not another");
    let mut expected = answers(store).await;
    assert!(!expected["undispatched"].as_array().unwrap().is_empty(), "the crash left publications behind");
    let commit = Command::new("git").args(["rev-parse", "HEAD"]).output().unwrap().stdout;
    expected["writtenBy"] = json!(String::from_utf8_lossy(&commit).trim());
    expected["open"] = open;
    expected
}

#[tokio::test]
#[ignore = "writes tests/fixtures/store-0008 with the code of the schema it captures; run by hand"]
async fn write_the_fixture() {
    let dir = fixture_dir();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let open = write_matches(Target::Sqlite(&dir)).await;
    let store = SqliteStore::open_existing(&dir).await.unwrap();
    let expected = expected_answers(&store, open).await;
    store.close().await;
    std::fs::write(dir.join("expected.json"), serde_json::to_string_pretty(&expected).unwrap() + "\n").unwrap();
    for extra in [juegoland_store::LOCK_FILE, "dev-token-secret", "juegoland.sqlite3-wal", "juegoland.sqlite3-shm"] {
        let _ = std::fs::remove_file(dir.join(extra));
    }
}

/// The PostgreSQL fixture (`tests/fixtures/pg-0009/`): the same matches written by
/// `juegoland dev --database-url` at schema version 0009 (one row per receipt, log entry
/// and outbox publication, the state on every move), dumped as SQL with the schema's name
/// replaced by `__SCHEMA__`, and what that version's store answered.
fn pg_fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pg-0009")
}

const SCHEMA_PLACEHOLDER: &str = "__SCHEMA__";

#[tokio::test]
#[ignore = "writes tests/fixtures/pg-0009 with the code of the schema it captures; run by hand"]
async fn write_the_postgres_fixture() {
    let out = pg_fixture_dir();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let schema = TestSchema::create("fixture", "pg_0009").await;
    let secrets = data_dir();
    let open = write_matches(Target::Postgres(&secrets, &schema.url())).await;
    let store = PgStore::connect_existing(&schema.url()).await.unwrap();
    let expected = expected_answers(&store, open).await;
    store.close().await;
    std::fs::write(out.join("expected.json"), serde_json::to_string_pretty(&expected).unwrap() + "\n").unwrap();
    let dump = Command::new("pg_dump")
        .args(["--no-owner", "--no-privileges", "--no-comments", "--inserts", "--schema", schema.name()])
        .arg(juegoland_testkit::pg_url())
        .output()
        .expect("run pg_dump");
    assert!(dump.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dump.stderr));
    // Only the schema's objects, under a placeholder name: psql meta-commands and the
    // schema's creation (the test makes its own) are left out.
    let sql: String = String::from_utf8(dump.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('\\') && !l.starts_with("CREATE SCHEMA"))
        .map(|l| l.replace(schema.name(), SCHEMA_PLACEHOLDER) + "\n")
        .collect();
    std::fs::write(out.join("dump.sql"), sql).unwrap();
    schema.drop_schema().await;
}

#[tokio::test]
async fn a_postgres_database_of_schema_0009_migrates_and_reads_back_the_same() {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(pg_fixture_dir().join("expected.json")).unwrap()).unwrap();
    let schema = TestSchema::create("migration", "pg_0009").await;
    let dump = std::fs::read_to_string(pg_fixture_dir().join("dump.sql")).unwrap();
    let mut conn = sqlx::PgConnection::connect_with(&schema.options()).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(dump.replace(SCHEMA_PLACEHOLDER, schema.name())))
        .execute(&mut conn)
        .await
        .expect("load the fixture");
    conn.close().await.unwrap();

    let store = PgStore::connect(&schema.url()).await.expect("the old database migrates");
    reads_back(&store, &expected).await;
    store.close().await;
    replays(&["replay", "--database-url", &schema.url()]);

    let secrets = data_dir();
    let server = Target::Postgres(&secrets, &schema.url()).start(&[]);
    plays_on(&server, &expected["open"]).await;
    drop(server);
    schema.drop_schema().await;
}

#[tokio::test]
async fn a_database_of_schema_0008_migrates_and_reads_back_the_same() {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("expected.json")).unwrap()).unwrap();
    let dir = data_dir();
    std::fs::copy(fixture_dir().join("juegoland.sqlite3"), dir.join("juegoland.sqlite3")).unwrap();

    let store = SqliteStore::open(&*dir).await.expect("the old database migrates");
    reads_back(&store, &expected).await;
    store.close().await;
    replays(&["replay", "--data-dir", dir.to_str().expect("a UTF-8 data directory")]);

    let server = Server::start_in(&dir, &[]);
    plays_on(&server, &expected["open"]).await;
}

/// The migrated `store` answers what the old version answered (`expected`, but for the
/// fixture's own keys).
async fn reads_back(store: &dyn Store, expected: &Value) {
    let mut found = answers(store).await;
    for key in ["writtenBy", "open"] {
        found[key] = expected[key].clone();
    }
    assert!(
        &found == expected,
        "the migrated store answers as the old one did:\n{}",
        first_difference(&found, expected)
    );
}

/// `juegoland <replay_args>` replays every migrated match: 0 diverged.
fn replays(replay_args: &[&str]) {
    let replay = Command::new(env!("CARGO_BIN_EXE_juegoland")).args(replay_args).output().unwrap();
    let report = String::from_utf8_lossy(&replay.stdout);
    assert!(
        replay.status.success(),
        "replay after the migration: {report} {}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert!(report.contains("0 diverged"), "{report}");
}

/// Play goes on in the migrated store: the crashed command's receipt survived (a retry is
/// its duplicate), so did the last one before it, and the next move applies.
async fn plays_on(server: &Server, open: &Value) {
    let m = open["matchId"].as_str().unwrap();
    let mut bob = server.connect("bob").await;
    bob.send(&open["crashedCommand"]).await;
    let (ack, _) = bob.recv_type("game.ack").await;
    assert_eq!((ack["duplicate"].as_bool(), ack["revision"].as_u64()), (Some(true), Some(4)), "{ack}");
    let mut alice = server.connect("alice").await;
    alice.send(&open["lastCommand"]).await;
    let (ack, _) = alice.recv_type("game.ack").await;
    assert_eq!((ack["duplicate"].as_bool(), ack["revision"].as_u64()), (Some(true), Some(3)), "{ack}");
    alice.send(&command(m, &uuid(), 4, 5)).await;
    assert_eq!(alice.recv_type("game.ack").await.0["revision"], 5);
}

/// Where two JSON values first differ, for a readable failure.
fn first_difference(a: &Value, b: &Value) -> String {
    fn walk(a: &Value, b: &Value, path: &str) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys()) {
                    let (va, vb) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                    if let Some(d) = walk(va, vb, &format!("{path}.{k}")) {
                        return Some(d);
                    }
                }
                None
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return Some(format!("{path}: {} items, expected {}", x.len(), y.len()));
                }
                x.iter().zip(y).enumerate().find_map(|(i, (va, vb))| walk(va, vb, &format!("{path}[{i}]")))
            }
            _ if a == b => None,
            _ => Some(format!("{path}: {a} but expected {b}")),
        }
    }
    walk(a, b, "").unwrap_or_default()
}
