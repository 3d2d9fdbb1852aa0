//! Durable commits per second on PostgreSQL, next to pgbench running a transaction of the
//! same shape on the same server in the same run.
//!
//! For 1, 16, 64 and 256 concurrent Conecta 4 matches (one task each, as one actor per
//! match), every task decides its next move with the real engine and commits it through
//! `PgStore`; the run reports commits per second, p50/p99 commit latency (HDR histogram),
//! PostgreSQL CPU per command (from /proc of the server's processes) and bytes stored per
//! command. Then `pgbench` runs a script writing the same rows per transaction in the same
//! shape (migration 0010: the owner's row share-locked, the revision fence, one revision row
//! with the receipt key and both publications, the deadlines read), each client on its own
//! match, into tables with our column types and keys. Both stores are owned (a node's).
//!
//! Run: `cargo bench -p juegoland-store --bench pg_commit` against the server at
//! `JUEGOLAND_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! `JUEGOLAND_BENCH_SECONDS` sets the duration of each step (default 5);
//! `JUEGOLAND_BENCH_LEVELS=64` runs only the listed concurrency levels.

// A benchmark is the shell: it reads clocks, the environment and /proc.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use juegoland_core::{Decision, Engine, GameKey, LiveMatch, Pending, Registry, SeatHolder};
use juegoland_protocol::{Action, CommandEnvelope, Precondition};
use juegoland_sdk::SplitMix64;
use juegoland_store::{PgStore, Store};
use serde_json::json;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use uuid::Uuid;

// The same allocator as the `juegoland` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LEVELS: [usize; 4] = [1, 16, 64, 256];

fn url() -> String {
    std::env::var("JUEGOLAND_TEST_DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The concurrency levels to run: `JUEGOLAND_BENCH_LEVELS=64` or `1,64` (default all).
fn levels() -> Vec<usize> {
    std::env::var("JUEGOLAND_BENCH_LEVELS")
        .ok()
        .map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect())
        .unwrap_or_else(|| LEVELS.to_vec())
}

fn seconds() -> u64 {
    std::env::var("JUEGOLAND_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5)
}

/// Total CPU (user + system) of every `postgres` process, in seconds.
fn postgres_cpu() -> f64 {
    let tick = 100.0; // USER_HZ on Linux.
    let mut total = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some((name_end, rest)) = stat.rsplit_once(") ") else { continue };
        if !name_end.ends_with("(postgres") {
            continue;
        }
        let fields: Vec<&str> = rest.split(' ').collect();
        // After the name, field 3 (state) is index 0: utime, stime, cutime and cstime (fields
        // 14–17) are indexes 11–14. A backend that exits is reaped by the postmaster, so its
        // time moves into the postmaster's cutime/cstime: summing all four over every
        // postgres process counts live and finished backends once each.
        total += (11..=14).filter_map(|i| fields.get(i).and_then(|v| v.parse::<f64>().ok())).sum::<f64>() / tick;
    }
    total
}

async fn schema_bytes(admin: &mut PgConnection, schema: &str) -> i64 {
    let (bytes,): (Option<i64>,) = sqlx::query_as(
        "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
    )
    .bind(schema)
    .fetch_one(admin)
    .await
    .expect("table sizes");
    bytes.unwrap_or(0)
}

struct Player {
    engine: Engine,
    live: LiveMatch,
    rng: SplitMix64,
    next_id: u128,
}

fn key() -> GameKey {
    GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }
}

impl Player {
    /// A new match: its creation commit and the player.
    fn create(engine: &Engine, seed: u64) -> (juegoland_core::Commit, Player) {
        let mut rng = SplitMix64(seed);
        let seats = BTreeMap::from([
            ("p0".to_string(), SeatHolder::Principal("alice".into())),
            ("p1".to_string(), SeatHolder::Principal("bob".into())),
        ]);
        let id = Uuid::from_u128((u128::from(seed) << 64) | 1);
        let (pending, live) = engine.create(id, key(), seats, &json!({}), 0, &mut rng).expect("create");
        (pending.commit, Player { engine: engine.clone(), live, rng, next_id: u128::from(seed) << 64 })
    }

    /// The next move that applies and does not end the game, or `None` when only ending
    /// moves remain.
    fn next(&mut self) -> Option<Pending> {
        let s = self.live.state();
        let seat = s.position.flow.actors.keys().next()?.clone();
        let principal = if seat == "p0" { "alice" } else { "bob" };
        for column in 0..7 {
            self.next_id += 1;
            let env = CommandEnvelope {
                match_id: s.match_id,
                command_id: Uuid::from_u128(self.next_id),
                precondition: Precondition::Match { revision: s.revision },
                action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
            };
            if let Decision::Commit(p) = self.engine.command(&self.live, principal, &env, None, 0, &mut self.rng)
                && p.commit.state.as_ref().is_some_and(|st| !st.is_finished())
            {
                return Some(*p);
            }
        }
        None
    }
}

struct Step {
    commits: u64,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    pg_cpu_ms_per_command: f64,
    bytes_per_command: f64,
}

async fn run_level(
    store: Arc<PgStore>,
    engine: &Engine,
    admin: &mut PgConnection,
    schema: &str,
    n: usize,
    seed: u64,
) -> Step {
    let mut players = Vec::new();
    for i in 0..n {
        let (create, player) = Player::create(engine, seed + i as u64);
        store.commit(&create).await.expect("create a match");
        players.push(player);
    }
    let bytes_before = schema_bytes(admin, schema).await;
    let cpu_before = postgres_cpu();
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, mut player) in players.into_iter().enumerate() {
        let store = store.clone();
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            let mut hist = Histogram::<u64>::new(3).expect("histogram");
            let mut seed = seed + 1_000_000 + i as u64 * 1_000;
            while Instant::now() < deadline {
                let pending = match player.next() {
                    Some(p) => p,
                    None => {
                        seed += 1;
                        let (create, fresh) = Player::create(&engine, seed);
                        store.commit(&create).await.expect("create a match");
                        player = fresh;
                        continue;
                    }
                };
                let t = Instant::now();
                store.commit(&pending.commit).await.expect("commit");
                hist.record(t.elapsed().as_micros() as u64).expect("record");
                player.live.advance(pending);
            }
            hist
        }));
    }
    let mut hist = Histogram::<u64>::new(3).expect("histogram");
    for t in tasks {
        hist.add(t.await.expect("task")).expect("merge");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = postgres_cpu() - cpu_before;
    let bytes = schema_bytes(admin, schema).await - bytes_before;
    let commits = hist.len();
    Step {
        commits,
        per_second: commits as f64 / elapsed,
        p50_ms: hist.value_at_quantile(0.50) as f64 / 1000.0,
        p99_ms: hist.value_at_quantile(0.99) as f64 / 1000.0,
        pg_cpu_ms_per_command: cpu * 1000.0 / commits.max(1) as f64,
        bytes_per_command: bytes as f64 / commits.max(1) as f64,
    }
}

/// pgbench with one transaction per command of the same shape as a `PgStore` commit. Each
/// client writes its own match, as each benchmark task plays its own: no client waits for
/// another's row lock (until 2026-12-01 clients picked a random match among as many as there
/// were clients, and most of pgbench's time went to row-lock waits).
fn pgbench(url: &str, schema: &str, clients: usize) -> (f64, f64) {
    // The revision fence as `PgStore` checks it (the newest revision, then the next one
    // appended under the primary key), the owner's row share-locked, the revision row with
    // its receipt key, entry and both publications, the deadline read; the state only at
    // snapshot points (every 32nd command, left out).
    let script = "\\set m :client_id + 1\n\
         BEGIN;\n\
         SELECT 1 FROM bench_matches WHERE id = :m AND owner = 'bench' FOR SHARE;\n\
         SELECT coalesce(max(revision), 0) + 1 AS revision FROM bench_revisions WHERE match_id = :m \\gset\n\
         INSERT INTO bench_revisions VALUES (:m, :revision, 'alice', gen_random_uuid(), repeat('f', 64), 0, now(), \
             '{\"op\":\"' || repeat('o', 300) || '\"}', '[\"' || repeat('p', 2400) || '\"]');\n\
         SELECT 1 FROM bench_deadlines WHERE id = :m;\n\
         END;\n";
    let path = std::env::temp_dir().join(format!("juegoland-pgbench-{}.sql", std::process::id()));
    std::fs::write(&path, script).expect("write the pgbench script");
    let options = format!("-c search_path={schema}");
    let cpu_before = postgres_cpu();
    let out = Command::new("pgbench")
        .args(["-n", "-T", &seconds().to_string(), "-c", &clients.to_string(), "-j", "2", "-M", "prepared", "-f"])
        .arg(&path)
        .env("PGOPTIONS", options)
        .arg(url)
        .output()
        .expect("run pgbench (Debian package postgresql-client)");
    let cpu = postgres_cpu() - cpu_before;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "pgbench failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    let tps = text
        .lines()
        .find_map(|l| l.strip_prefix("tps = ").and_then(|r| r.split(' ').next()).and_then(|v| v.parse::<f64>().ok()))
        .expect("a tps line");
    let transactions = tps * seconds() as f64;
    (tps, cpu * 1000.0 / transactions.max(1.0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; this harness takes no other arguments.
    let url = url();
    let mut admin = PgConnection::connect(&url).await.unwrap_or_else(|e| {
        panic!("the benchmark needs PostgreSQL at {url} ({e}); start it with pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start")
    });
    let schema = format!("bench_{}", std::process::id());
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&mut admin).await.expect("schema");
    let options = url.parse::<PgConnectOptions>().expect("url").options([("search_path", schema.as_str())]);
    let pool = PgPoolOptions::new().max_connections(64).acquire_timeout(Duration::from_secs(30));
    // Owned, as a cluster node's store: every commit share-locks its match's owner row.
    let store = Arc::new(PgStore::connect_with(pool, options).await.expect("connect").owned_by("bench"));
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).expect("register");
    let engine = Engine::new(Arc::new(registry));

    println!("PgStore commits (group commit), {} s per step:", seconds());
    println!("| matches | commands | commands/s | p50 ms | p99 ms | PostgreSQL CPU ms/command | bytes/command |");
    println!("|---|---|---|---|---|---|---|");
    for (i, n) in levels().iter().enumerate() {
        let s = run_level(store.clone(), &engine, &mut admin, &schema, *n, (i as u64 + 1) << 40).await;
        println!(
            "| {n} | {} | {:.0} | {:.2} | {:.2} | {:.3} | {:.0} |",
            s.commits, s.per_second, s.p50_ms, s.p99_ms, s.pg_cpu_ms_per_command, s.bytes_per_command
        );
    }
    store.close().await;

    for ddl in [
        "CREATE TABLE bench_matches (id int PRIMARY KEY, revision bigint NOT NULL, state text NOT NULL, owner text, updated_at timestamptz) WITH (fillfactor = 70)",
        "CREATE TABLE bench_revisions (match_id int, revision bigint, principal text, command_id uuid, fingerprint text, instant_ms bigint, written_at timestamptz, entry text, publications text, PRIMARY KEY (match_id, revision))",
        "CREATE UNIQUE INDEX bench_revisions_receipt ON bench_revisions (match_id, principal, command_id) WHERE command_id IS NOT NULL",
        "CREATE TABLE bench_deadlines (id int, deadline_id text, PRIMARY KEY (id, deadline_id))",
        "INSERT INTO bench_matches SELECT g, 0, '{}', 'bench', now() FROM generate_series(1, 256) g",
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("SET search_path = {schema}; {ddl}")))
            .execute(&mut admin)
            .await
            .expect("pgbench tables");
    }
    println!();
    println!("pgbench, the same transaction shape (one per command):");
    println!("| matches (clients, at most 64) | transactions/s | PostgreSQL CPU ms/transaction |");
    println!("|---|---|---|");
    for n in levels() {
        // The server allows 100 connections in all; pgbench keeps a margin for others.
        let (tps, cpu) = pgbench(&url, &schema, n.min(64));
        println!("| {n} | {tps:.0} | {cpu:.3} |");
    }
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&mut admin).await.expect("drop");
}
