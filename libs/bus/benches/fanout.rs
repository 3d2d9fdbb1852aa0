//! The Redis bus alone, measured: how long a publication takes from just before
//! `RedisBus::publish` (what a node calls after its commit) to the subscriber's stream in
//! another `RedisBus` (what a gateway's subscription reads), with 1,000 and 10,000 watched
//! matches at a steady publication rate, for several bounds on the streams one reader serves.
//! BUS LEVEL ONLY: no gateway, no WebSocket, no client; both buses live in this process and
//! use a private `redis-server` on a free port (`redis-server` must be installed).
//!
//! Run: `cargo bench -p juegoland-bus --bench fanout`. Knobs: `JUEGOLAND_BENCH_MATCHES`
//! (default `1000,10000`), `JUEGOLAND_BENCH_STREAMS_PER_READER` (default `32,64,256`;
//! `100000` puts every stream in one read, the single-reader design this replaced),
//! `JUEGOLAND_BENCH_RATE` (revisions per second, default 500) and `JUEGOLAND_BENCH_SECONDS`
//! (default 10).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use hdrhistogram::Histogram;
use juegoland_bus::{Bus, BusItem, RedisBus, RedisBusConfig};
use juegoland_core::Publication;
use juegoland_testkit::PrivateRedis;
use redis::InfoDict;
use uuid::Uuid;

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|s| s.trim().parse().unwrap_or_else(|e| panic!("{name}: {s:?} is not a number ({e})")))
        .collect()
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn random_match() -> Uuid {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS's entropy");
    Uuid::new_v8(bytes)
}

/// Redis's CPU seconds (user + system) so far.
async fn redis_cpu(conn: &mut redis::aio::MultiplexedConnection) -> f64 {
    let info: InfoDict = redis::cmd("INFO").arg("cpu").query_async(conn).await.expect("INFO cpu");
    let get = |k: &str| info.get::<f64>(k).unwrap_or_default();
    get("used_cpu_user") + get("used_cpu_sys")
}

struct Row {
    matches: usize,
    per_reader: usize,
    readers: usize,
    published: u64,
    delivered: u64,
    gaps: u64,
    hist: Histogram<u64>,
    redis_cpu: f64,
}

async fn run(redis: &PrivateRedis, matches: usize, per_reader: usize, rate: u64, seconds: u64) -> Row {
    let client = redis::Client::open(redis.url()).expect("redis url");
    let mut admin = client.get_multiplexed_async_connection().await.expect("connect to redis");
    let () = redis::cmd("FLUSHALL").query_async(&mut admin).await.expect("FLUSHALL");
    let gateway = RedisBus::new(&redis.url(), RedisBusConfig { streams_per_reader: per_reader, ..Default::default() })
        .expect("the gateway's bus");
    let node = RedisBus::new(&redis.url(), RedisBusConfig::default()).expect("the node's bus");
    let ids: Vec<Uuid> = (0..matches).map(|_| random_match()).collect();

    let base = Instant::now();
    let hist = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram")));
    let (delivered, gaps) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut subscribers = Vec::with_capacity(matches);
    for id in &ids {
        let mut sub = gateway.subscribe(*id).await.expect("subscribe");
        let (hist, delivered, gaps) = (hist.clone(), delivered.clone(), gaps.clone());
        subscribers.push(tokio::spawn(async move {
            while let Some(item) = sub.next().await {
                match item {
                    // One sample per revision: its first recipient's entry.
                    BusItem::Publication(p) if p.recipient.as_deref() == Some("p0") => {
                        let sent: u64 = p.encoded.parse().expect("the send instant");
                        let latency = (base.elapsed().as_micros() as u64).saturating_sub(sent);
                        hist.lock().unwrap().saturating_record(latency.max(1));
                        delivered.fetch_add(1, Ordering::Relaxed);
                    }
                    BusItem::Publication(_) => {}
                    BusItem::Gap => {
                        gaps.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    let readers = gateway.readers();
    // Let every reader block on its streams before the clock starts.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let cpu_before = redis_cpu(&mut admin).await;
    let node = Arc::new(node);
    let mut revision = vec![0u64; matches];
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let total = rate * seconds;
    let mut publishes = Vec::with_capacity(total as usize);
    // Round robin: a match comes back only every `matches / rate` seconds, so its previous
    // revision is long published.
    for n in 0..total as usize {
        tick.tick().await;
        let i = n % matches;
        revision[i] += 1;
        let (node, id, r) = (node.clone(), ids[i], revision[i]);
        publishes.push(tokio::spawn(async move {
            let sent = base.elapsed().as_micros() as u64;
            let publications: Vec<Publication> = ["p0", "p1"]
                .into_iter()
                .map(|seat| Publication {
                    match_id: id,
                    revision: r,
                    recipient: Some(seat.to_owned()),
                    encoded: sent.to_string().into(),
                    trace_context: None,
                })
                .collect();
            node.publish(&publications).await.expect("publish");
        }));
    }
    for p in publishes {
        p.await.expect("publisher");
    }
    let cpu = redis_cpu(&mut admin).await - cpu_before;
    // Stragglers.
    let deadline = Instant::now() + Duration::from_secs(5);
    while delivered.load(Ordering::Relaxed) < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(gateway);
    for s in subscribers {
        let _ = s.await;
    }
    let hist = hist.lock().unwrap().clone();
    Row {
        matches,
        per_reader,
        readers,
        published: total,
        delivered: delivered.load(Ordering::Relaxed),
        gaps: gaps.load(Ordering::Relaxed),
        hist,
        redis_cpu: cpu / seconds as f64 * 100.0,
    }
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let matches = env_list("JUEGOLAND_BENCH_MATCHES", "1000,10000");
    let bounds = env_list("JUEGOLAND_BENCH_STREAMS_PER_READER", "32,64,256");
    let rate = env_number("JUEGOLAND_BENCH_RATE", 500);
    let seconds = env_number("JUEGOLAND_BENCH_SECONDS", 10);
    let redis = PrivateRedis::start().await;
    println!("## bus level: publish → subscriber, {rate} revisions/s (2 entries each), {seconds} s per row");
    println!(
        "| watched matches | streams per reader | readers | revisions | delivered | gaps | p50 ms | p99 ms | p99.9 ms | max ms | Redis CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &m in &matches {
        for &k in &bounds {
            let r = run(&redis, m, k, rate, seconds).await;
            println!(
                "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0}% |",
                r.matches,
                r.per_reader,
                r.readers,
                r.published,
                r.delivered,
                r.gaps,
                ms(&r.hist, 0.5),
                ms(&r.hist, 0.99),
                ms(&r.hist, 0.999),
                r.hist.max() as f64 / 1000.0,
                r.redis_cpu
            );
        }
    }
}
