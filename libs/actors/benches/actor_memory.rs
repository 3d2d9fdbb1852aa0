//! Memory per active match actor, in process: creates N Conecta 4 matches on one host (each
//! creation activates its actor; the embedded store lives on a temporary directory, so the
//! matches' stored copies are not in this process's heap) and reports, per active match, the
//! live heap bytes and the RSS growth, then the code paths that hold that memory (a dhat heap
//! profile written while every actor is alive, summed by program point).
//! `JUEGOLAND_BENCH_MATCHES` sets N (default 5,000: dhat records a backtrace per allocation).
//!
//! Run: `cargo bench -p juegoland-actors --bench actor_memory`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::Matches;
use juegoland_bus::LocalBus;
use juegoland_core::{Engine, GameKey, Registry, SeatHolder};
use juegoland_store::SqliteStore;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("rss pages");
    pages * 4096
}

fn main() {
    let n: usize = std::env::var("JUEGOLAND_BENCH_MATCHES").ok().and_then(|v| v.parse().ok()).unwrap_or(5_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let profile_path = std::env::temp_dir().join(format!("juegoland-actor-memory-{}.json", std::process::id()));
    let mut profiler = Some(dhat::Profiler::builder().file_name(&profile_path).build());
    runtime.block_on(async {
        let dir = tempfile_dir();
        let store = Arc::new(SqliteStore::open(&dir).await.expect("open the embedded store"));
        let mut registry = Registry::new();
        registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
        let prom = prometheus::Registry::new();
        let host = Host::start(
            Arc::new(Engine::new(Arc::new(registry))),
            store,
            Arc::new(LocalBus::default()),
            Metrics::new(&prom).unwrap(),
            HostConfig { idle_passivation: Duration::from_secs(3600), ..Default::default() },
        )
        .await
        .unwrap();
        let game = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
        let seats = BTreeMap::from([
            ("p0".to_owned(), SeatHolder::Principal("alice".into())),
            ("p1".to_owned(), SeatHolder::Principal("bob".into())),
        ]);
        // Warm up (pools, caches, the store's connections), then measure.
        for _ in 0..200 {
            host.create_match(&game, seats.clone(), &serde_json::json!({})).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (bytes0, rss0) = (dhat::HeapStats::get().curr_bytes, rss_bytes());
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for worker in 0..8 {
            let (host, game, seats) = (host.clone(), game.clone(), seats.clone());
            tasks.spawn(async move {
                for _ in (worker..n).step_by(8) {
                    host.create_match(&game, seats.clone(), &serde_json::json!({})).await.unwrap();
                }
            });
        }
        tasks.join_all().await;
        let elapsed = started.elapsed();
        // Quiet matches are kept as text after `cool_after`.
        tokio::time::sleep(HostConfig::default().cool_after + Duration::from_secs(1)).await;
        let (bytes1, rss1) = (dhat::HeapStats::get().curr_bytes, rss_bytes());
        assert_eq!(host.active_actors(), n + 200, "every created match has an active actor");

        let per = |d: i64| d as f64 / n as f64;
        println!("matches: {n} active actors, created at {:.0}/s (under dhat)", n as f64 / elapsed.as_secs_f64());
        println!("heap per active match: {:.0} B", per(bytes1 as i64 - bytes0 as i64));
        println!("RSS per active match:  {:.0} B (includes dhat's own records)", per(rss1 as i64 - rss0 as i64));
        drop(profiler.take());
        report(&profile_path, n);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

fn tempfile_dir() -> std::path::PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    let dir = std::path::PathBuf::from(base).join(format!("juegoland-actor-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Sums the profile's memory alive at the end (every actor still running) by the innermost
/// frame of our own code, and prints the largest per active match.
fn report(path: &std::path::Path, n: usize) {
    let text = std::fs::read_to_string(path).expect("the dhat profile");
    let profile: serde_json::Value = serde_json::from_str(&text).expect("dhat JSON");
    let frames: Vec<&str> = profile["ftbl"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let mut by_site: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for pp in profile["pps"].as_array().unwrap() {
        let (bytes, blocks) = (pp["eb"].as_u64().unwrap_or(0), pp["ebk"].as_u64().unwrap_or(0));
        if bytes == 0 {
            continue;
        }
        let names: Vec<&str> =
            pp["fs"].as_array().unwrap().iter().map(|i| frames[i.as_u64().unwrap() as usize]).collect();
        // The first frame in our code, and the library frame just below it.
        let ours = names.iter().position(|f| f.contains("juegoland"));
        let site = match ours {
            Some(i) => format!("{} <- {}", short(names[i.saturating_sub(1)]), short(names[i])),
            None => names.iter().take(3).map(|f| short(f)).collect::<Vec<_>>().join(" <- "),
        };
        let e = by_site.entry(site).or_default();
        e.0 += bytes;
        e.1 += blocks;
    }
    let mut rows: Vec<_> = by_site.into_iter().collect();
    rows.sort_by_key(|row| std::cmp::Reverse(row.1.0));
    println!("alive at the end, per active match, by allocation site:");
    for (site, (bytes, blocks)) in rows.iter().take(30) {
        println!("  {:>7.0} B in {:>5.1} blocks  {site}", *bytes as f64 / n as f64, *blocks as f64 / n as f64);
    }
    let _ = std::fs::remove_file(path);
}

/// A frame without its address and argument noise.
fn short(frame: &str) -> String {
    let f = frame.split_once(": ").map_or(frame, |(_, rest)| rest);
    let f = f.split(" (").next().unwrap_or(f);
    f.chars().take(110).collect()
}
