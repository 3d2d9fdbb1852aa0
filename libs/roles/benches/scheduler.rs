//! Deadline lag through the durable path: from a deadline's due instant to its committed
//! transition, with 10,000 pending deadlines of which 100 fall due every second.
//!
//! Setup: 10,000 Conecta 4 matches with a per-turn clock of 100 s under the `defaultMove`
//! policy, stored on PostgreSQL (a schema of its own on the real server), created so that
//! match i's first clock falls due at T0 + 10·i ms. Every firing plays the default disc and
//! arms the next turn 100 s later, so the pending set stays at 10,000 while 100 fall due per
//! second. One scheduler replica (the production defaults: 250 ms polls that wake early for
//! the next due instant, batches of 256, 64 firings in flight, 10 s leases) claims and fires
//! them through a `Host` over the same `PgStore`: each firing activates the match's actor
//! (load), runs the rules and commits the transition with the consumed deadline (group
//! commit), so the lag includes activation, rules and the durable commit.
//!
//! Reported: the lag as the scheduler sees it (due → the host's answer after the commit,
//! HDR histogram), the lag on the database clock (due → the `fired` row's commit
//! timestamp), throughput, and the cost of the claim and count queries at 10,000 pending.
//!
//! Run: `cargo bench -p juegoland-roles --bench scheduler` against the server at
//! `JUEGOLAND_TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`).
//! `JUEGOLAND_BENCH_SECONDS` sets how long deadlines fall due (default 60: 6,000 firings);
//! `JUEGOLAND_BENCH_PENDING` the pending set (default 10,000).
//!
//! `JUEGOLAND_BENCH_PATH=local` measures the node's fast path instead: every match is active
//! (activated before its clock falls due), the host arms a local timer for deadlines within
//! a horizon longer than the clock, and the scheduler runs with its default 200 ms grace, so
//! it only fires what a local timer missed (reported as its `fired` count). The lag on the
//! database clock is then the fast path's.

// A benchmark is the shell: it reads clocks and the environment.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use juegoland_actors::shell::now_ms;
use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::{MatchError, MatchReply, MatchRequest, Matches};
use juegoland_bus::LocalBus;
use juegoland_core::{Engine, GameKey, Registry, SeatHolder};
use juegoland_roles::{Scheduler, SchedulerMetrics, SchedulerOptions};
use juegoland_sdk::SplitMix64;
use juegoland_store::{PgStore, Store};
use juegoland_testkit::TestSchema;
use parking_lot::Mutex;
use serde_json::json;
use sqlx::Connection;
use uuid::Uuid;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TURN_MS: i64 = 100_000;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// The host, noting when each firing's commit was answered.
struct Timed {
    host: Host,
    answered: Mutex<Vec<(Uuid, i64)>>,
}

#[async_trait::async_trait]
impl Matches for Timed {
    fn registry(&self) -> &Arc<Registry> {
        self.host.registry()
    }
    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
        let firing = matches!(request, MatchRequest::Lifecycle { .. }).then(|| request.match_id());
        let reply = self.host.call(request).await?;
        if let Some(m) = firing {
            self.answered.lock().push((m, now_ms()));
        }
        Ok(reply)
    }
}

fn registry() -> Arc<Registry> {
    let mut registry = Registry::new();
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).expect("register conecta4");
    Arc::new(registry)
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1_000.0
}

#[tokio::main]
async fn main() {
    let pending = env("JUEGOLAND_BENCH_PENDING", 10_000) as i64;
    let local = std::env::var("JUEGOLAND_BENCH_PATH").is_ok_and(|p| p == "local");
    let seconds = env("JUEGOLAND_BENCH_SECONDS", 60) as i64;
    let schema = TestSchema::create("bench", "scheduler").await;
    let pg = PgStore::connect_with(PgStore::pool_options().max_connections(8), schema.options())
        .await
        .expect("connect the store");
    let store: Arc<dyn Store> = Arc::new(pg.clone());
    let engine = Arc::new(Engine::new(registry()));

    // 10,000 matches, match i's clock due at T0 + 10·i ms (created "100 s earlier").
    let lead = 20_000 + pending;
    let t0 = now_ms() + lead;
    let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let config = json!({ "clock": { "mode": { "kind": "perTurn", "turnMs": TURN_MS }, "policy": "defaultMove" } });
    let seats = BTreeMap::from([
        ("p0".to_string(), SeatHolder::Principal("alice".into())),
        ("p1".to_string(), SeatHolder::Principal("bob".into())),
    ]);
    let setup = Instant::now();
    let mut due_of: BTreeMap<Uuid, i64> = BTreeMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    let workers = 64;
    for w in 0..workers {
        let (store, engine, key, config, seats) =
            (store.clone(), engine.clone(), key.clone(), config.clone(), seats.clone());
        let mine: Vec<(i64, Uuid)> =
            (0..pending).filter(|i| i % workers == w).map(|i| (i, Uuid::from_u128(0xdead_0000 + i as u128))).collect();
        for (i, m) in &mine {
            due_of.insert(*m, t0 + 10 * i);
        }
        tasks.spawn(async move {
            let mut entropy = SplitMix64(w as u64);
            for (i, m) in mine {
                let created = t0 + 10 * i - TURN_MS;
                let (p, mut live) =
                    engine.create(m, &key, seats.clone(), &config, created, &mut entropy).expect("create a match");
                store.commit(&live.advance(p)).await.expect("store a match");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let created_in = setup.elapsed();
    assert!(now_ms() < t0, "setup took longer than its lead ({created_in:?}); raise the lead");
    let count_started = Instant::now();
    let stored = store.pending_deadlines().await.expect("count");
    let count_time = count_started.elapsed();
    let claim_started = Instant::now();
    let nothing = store.claim_deadlines("probe", 0, Duration::from_secs(1), 256).await.expect("claim");
    let claim_time = claim_started.elapsed();
    assert!(nothing.is_empty());
    println!(
        "setup: {pending} matches with a pending clock in {:.1} s; count query {:.2} ms, empty claim {:.2} ms",
        created_in.as_secs_f64(),
        count_time.as_secs_f64() * 1e3,
        claim_time.as_secs_f64() * 1e3
    );
    assert_eq!(stored, pending as u64);

    let host = Host::start(
        engine.clone(),
        store.clone(),
        Arc::new(LocalBus::default()),
        Metrics::new(&prometheus::Registry::new()).unwrap(),
        HostConfig {
            // Durable path: no local timers. Local path: every clock within the horizon.
            local_deadline_horizon: local.then(|| Duration::from_millis(2 * TURN_MS as u64)),
            ..HostConfig::default()
        },
    )
    .await
    .expect("start the host");
    if local {
        let activated = Instant::now();
        for m in due_of.keys() {
            host.revision(*m).await.expect("activate a match");
        }
        println!("local path: {} matches activated in {:.1} s", due_of.len(), activated.elapsed().as_secs_f64());
        assert!(now_ms() < t0, "activation took longer than the lead; raise the lead");
    }
    let timed = Arc::new(Timed { host: host.clone(), answered: Mutex::new(Vec::new()) });
    let prom = prometheus::Registry::new();
    let metrics = SchedulerMetrics::new(&prom).unwrap();
    let options = SchedulerOptions {
        grace: if local { SchedulerOptions::new("bench").grace } else { Duration::ZERO },
        ..SchedulerOptions::new("bench")
    };
    let scheduler = Scheduler::start(store.clone(), timed.clone(), options, metrics.clone());

    // Let `seconds` worth of deadlines fall due, then wait for the last to be answered.
    let end = t0 + seconds * 1_000;
    tokio::time::sleep(Duration::from_millis(u64::try_from(end - now_ms()).unwrap_or(0))).await;
    let expected = due_of.values().filter(|due| **due <= end).count();
    let give_up = Instant::now() + Duration::from_secs(30);
    while timed.answered.lock().len() < expected && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pending_after = store.pending_deadlines().await.expect("count");
    scheduler.stop().await;

    let mut lag = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).unwrap();
    let answered = timed.answered.lock().clone();
    for (m, at) in &answered {
        let due = due_of[m];
        lag.record(u64::try_from((at - due) * 1_000).unwrap_or(0).max(1)).unwrap();
    }
    let fired = metrics.deadlines.with_label_values(&["fired"]).get();
    let stale = metrics.deadlines.with_label_values(&["stale"]).get();
    let failed = metrics.deadlines.with_label_values(&["failed"]).get();
    println!(
        "fired {fired} ({expected} fell due in the window), stale {stale}, failed {failed}; pending after: {pending_after} \
         (re-armed clocks keep it at {pending})"
    );
    println!(
        "lag due → answered (ms): p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  (n = {})",
        ms(&lag, 0.5),
        ms(&lag, 0.9),
        ms(&lag, 0.99),
        ms(&lag, 0.999),
        lag.max() as f64 / 1_000.0,
        lag.len()
    );

    // The same lag on the database clock: due → the transaction that marked the row fired.
    let mut c = sqlx::PgConnection::connect_with(&schema.options()).await.expect("connect");
    let (p50, p99, max): (f64, f64, f64) = sqlx::query_as(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY l), percentile_cont(0.99) WITHIN GROUP (ORDER BY l),
                max(l)
         FROM (SELECT (extract(epoch FROM updated_at) * 1000 - due_ms)::float8 AS l FROM deadlines WHERE state = 'fired') AS f",
    )
    .fetch_one(&mut c)
    .await
    .expect("commit lag");
    println!("lag due → fired row committed (database clock, ms): p50 {p50:.1}  p99 {p99:.1}  max {max:.1}");
    if local {
        let target = p99 <= 50.0;
        println!("local path target p99 ≤ 50 ms (database clock): {}", if target { "met" } else { "NOT met" });
    } else {
        let target = ms(&lag, 0.99) <= 500.0;
        println!("target p99 ≤ 500 ms: {}", if target { "met" } else { "NOT met" });
    }
    drop(c);
    drop(host);
    pg.close().await;
    schema.drop_schema().await;
}
