//! The cluster on loopback, measured: the router hop, end-to-end command latency at 64 and
//! 512 concurrent matches, failover time after SIGKILL, memory per active match actor
//! with 100,000 active matches on one node, idle gateway connections, and commit-to-client
//! publication latency through a gateway (`fanout`). Real `juegoland node` / `juegoland
//! router` / `juegoland gateway` processes over a private schema of the PostgreSQL at
//! 127.0.0.1:5432.
//!
//! Run: `cargo bench -p juegoland --bench cluster`;
//! `JUEGOLAND_BENCH_STEPS=hop,e2e,failover,memory,idle,fanout` picks steps,
//! `JUEGOLAND_BENCH_SECONDS` sets the load duration (default 10),
//! `JUEGOLAND_BENCH_MATCHES` the matches of the memory step (default 100000),
//! `JUEGOLAND_BENCH_FANOUT` the subscribed matches of the fanout step (default `1000,10000`)
//! and `JUEGOLAND_BENCH_RATE` its commands per second (default 200).

// A benchmark is the shell: it reads clocks, the environment and /proc.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[path = "../tests/it/harness.rs"]
mod harness;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures::{SinkExt, StreamExt};
use harness::*;
use hdrhistogram::Histogram;
use juegoland_api::MatchRequest;
use juegoland_bus::{RedisBus, RedisBusConfig};
use juegoland_protocol::{CommandEnvelope, ServerMessage};
use juegoland_rpc::pb;
use juegoland_testkit::{PrivateRedis, TestSchema};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;

type NodeClient = pb::node_client::NodeClient<tonic::transport::Channel>;

fn steps() -> Vec<String> {
    std::env::var("JUEGOLAND_BENCH_STEPS")
        .unwrap_or_else(|_| "hop,e2e,failover,memory,idle,fanout".into())
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect()
}

fn seconds() -> u64 {
    std::env::var("JUEGOLAND_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(10)
}

/// A cluster whose nodes have `pool` store connections each.
async fn cluster(name: &str, nodes: usize, routers: usize, pool: u32) -> Cluster {
    let schema = TestSchema::create("bench", name).await;
    let url = schema.url();
    let with_pool = |i| {
        let mut args = node_args(&url, i);
        let at = args.iter().position(|a| a == "--database-pool").expect("pool flag") + 1;
        args[at] = pool.to_string();
        args
    };
    let nodes = (0..nodes).map(|i| Proc::spawn(with_pool(i))).collect();
    let routers = (0..routers).map(|_| Proc::spawn(router_args(&url))).collect();
    Cluster { schema, nodes, routers, restarts: 0 }
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// One player's next command on its match: alice and bob alternate, a column is tried until
/// one applies, and a finished match is replaced.
struct Player {
    match_id: Uuid,
    revision: u64,
    column: u64,
}

impl Player {
    async fn new(client: &mut RouterClient) -> Player {
        Player { match_id: create(client).await, revision: 0, column: 0 }
    }

    fn next(&self) -> (String, CommandEnvelope) {
        let principal = if self.revision.is_multiple_of(2) { "alice" } else { "bob" };
        let env = drop_at(self.match_id, self.revision, (self.revision * 3 + self.column) % 7);
        (principal.to_owned(), env)
    }

    /// Takes the answer; false when the match cannot go on.
    fn answered(&mut self, msg: &ServerMessage) -> bool {
        match applied_revision(msg) {
            Some(r) => {
                self.revision = r;
                self.column = 0;
                true
            }
            None => {
                self.column += 1;
                self.column < 7
            }
        }
    }
}

async fn direct(node: &mut NodeClient, principal: &str, envelope: &CommandEnvelope) -> ServerMessage {
    message(node_call(node, &command(principal, envelope)).await.expect("the node answers"))
}

/// The router hop: the same sequential command stream sent alternately through the router
/// and straight to the owning node.
async fn hop() {
    let c = cluster("hop", 3, 1, 16).await;
    let mut router = c.client(0).await;
    let mut via_router = Histogram::<u64>::new(3).expect("histogram");
    let mut via_node = Histogram::<u64>::new(3).expect("histogram");
    let until = Instant::now() + Duration::from_secs(seconds());
    let mut player = Player::new(&mut router).await;
    let mut owner: Option<NodeClient> = None;
    let mut n = 0u64;
    while Instant::now() < until {
        if owner.is_none() {
            // Activate the match on its owner, then find the owner by its incarnation.
            let _ = router_call(&mut router, &MatchRequest::Revision { match_id: player.match_id }).await;
            for node in &c.nodes {
                if owned_by(&c, node).await.contains(&player.match_id) {
                    owner = Some(NodeClient::connect(node.grpc.clone()).await.expect("connect"));
                }
            }
        }
        let (principal, env) = player.next();
        let t = Instant::now();
        let msg = if n.is_multiple_of(2) {
            let msg = submit(&mut router, &principal, &env).await;
            via_router.record(t.elapsed().as_micros() as u64).expect("record");
            msg
        } else {
            let msg = direct(owner.as_mut().expect("owner"), &principal, &env).await;
            via_node.record(t.elapsed().as_micros() as u64).expect("record");
            msg
        };
        n += 1;
        if !player.answered(&msg) {
            player = Player::new(&mut router).await;
            owner = None;
        }
    }
    println!("## router hop (sequential commands on one match, {} s)", seconds());
    println!("| path | commands | p50 ms | p99 ms |");
    println!("|---|---|---|---|");
    println!("| client → node | {} | {:.3} | {:.3} |", via_node.len(), ms(&via_node, 0.5), ms(&via_node, 0.99));
    println!(
        "| client → router → node | {} | {:.3} | {:.3} |",
        via_router.len(),
        ms(&via_router, 0.5),
        ms(&via_router, 0.99)
    );
    println!(
        "| hop overhead | | {:.3} | {:.3} |",
        ms(&via_router, 0.5) - ms(&via_node, 0.5),
        ms(&via_router, 0.99) - ms(&via_node, 0.99)
    );
    c.stop().await;
}

/// End-to-end latency through router and node with `matches` concurrent players.
async fn e2e(matches: usize) {
    let c = cluster(&format!("e2e{matches}"), 3, 1, 16).await;
    let hist = Arc::new(Mutex::new(Histogram::<u64>::new(3).expect("histogram")));
    let ready = Arc::new(tokio::sync::Barrier::new(matches + 1));
    let until = Arc::new(Mutex::new(None::<Instant>));
    let mut tasks = Vec::new();
    for _ in 0..matches {
        let mut client = c.client(0).await;
        let (hist, ready, until) = (hist.clone(), ready.clone(), until.clone());
        tasks.push(tokio::spawn(async move {
            let mut player = Player::new(&mut client).await;
            ready.wait().await;
            let until = until.lock().await.expect("set before the barrier opens");
            let mut local = Histogram::<u64>::new(3).expect("histogram");
            while Instant::now() < until {
                let (principal, env) = player.next();
                let t = Instant::now();
                let msg = submit(&mut client, &principal, &env).await;
                local.record(t.elapsed().as_micros() as u64).expect("record");
                if !player.answered(&msg) {
                    player = Player::new(&mut client).await;
                }
            }
            hist.lock().await.add(local).expect("merge");
        }));
    }
    *until.lock().await = Some(Instant::now() + Duration::from_secs(seconds()));
    let started = Instant::now();
    ready.wait().await;
    for t in tasks {
        t.await.expect("player");
    }
    let h = hist.lock().await;
    println!(
        "| {matches} | {} | {:.0} | {:.2} | {:.2} |",
        h.len(),
        h.len() as f64 / started.elapsed().as_secs_f64(),
        ms(&h, 0.5),
        ms(&h, 0.99)
    );
    drop(h);
    c.stop().await;
}

/// Failover: SIGKILL the node owning part of a running load; the longest pause any of its
/// matches saw.
async fn failover(run: usize) -> Duration {
    let mut c = cluster(&format!("failover{run}"), 3, 1, 8).await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let until = Instant::now() + Duration::from_secs(7);
    let mut players = Vec::new();
    for _ in 0..24 {
        players.push(tokio::spawn(play(c.client(0).await, until, seen.clone())));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let victims = owned_by(&c, &c.nodes[1]).await;
    c.nodes[1].kill9();
    for p in players {
        p.await.expect("player");
    }
    let worst = {
        let seen = seen.lock().await;
        victims.iter().filter_map(|id| seen.longest_gap.get(id)).max().copied().unwrap_or_default()
    };
    c.stop().await;
    worst
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Memory: `n` active Conecta 4 matches on one node (creation activates each match's actor;
/// idle passivation is 300 s, far beyond the run).
async fn memory(n: usize) {
    let c = cluster("memory", 1, 1, 16).await;
    let pid = c.nodes[0].pid();
    let before = rss_kib(pid);
    let created = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let mut client = c.client(0).await;
        let created = created.clone();
        tasks.push(tokio::spawn(async move {
            while created.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                create(&mut client).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("creator");
    }
    let took = started.elapsed();
    // Quiet matches are kept as compact text after the host's `cool_after` (1 s).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = rss_kib(pid);
    let active = metric_sum(&c.nodes[0].get("/metrics").await, "juegoland_active_match_actors");
    println!("## memory per active match actor ({n} Conecta 4 matches on one node)");
    println!("| RSS before | RSS after | active actors | per actor | creations/s |");
    println!("|---|---|---|---|---|");
    println!(
        "| {:.1} MiB | {:.1} MiB | {active} | {:.2} KiB | {:.0} |",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        after.saturating_sub(before) as f64 / active.max(1.0),
        n as f64 / took.as_secs_f64()
    );
    c.stop().await;
}

/// Idle WebSocket connections on one gateway: `n` authenticated connections that send
/// nothing, and the gateway's resident memory before and after.
async fn idle_connections(n: usize) {
    let secret = "bench-idle-secret-0123456789abcdef0123456789";
    let (c, gateway) = Cluster::start_with_gateway("idle", 1, secret, &Cluster::shared_redis()).await;
    let tokens = juegoland_edge::Tokens::new(secret.as_bytes(), 3_600).expect("tokens");
    let token = tokens.issue("alice").expect("a token");
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let pid = gateway.pid();
    let before = rss_kib(pid);
    let started = Instant::now();
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let url = format!("ws://{addr}/v1/ws?access_token={token}");
        let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("a WebSocket connection");
        sockets.push(ws);
    }
    let took = started.elapsed();
    // Quiet matches are kept as compact text after the host's `cool_after` (1 s).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = rss_kib(pid);
    let connections = metric_sum(&gateway.get("/metrics").await, "juegoland_gateway_connections");
    println!("## idle WebSocket connections on one gateway");
    println!("| connections | RSS before | RSS after | per connection | connects/s |");
    println!("|---|---|---|---|---|");
    println!(
        "| {connections} | {:.1} MiB | {:.1} MiB | {:.2} KiB | {:.0} |",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        after.saturating_sub(before) as f64 / connections.max(1.0),
        n as f64 / took.as_secs_f64()
    );
    drop(sockets);
    drop(gateway);
    c.stop().await;
}

/// The CPU seconds (user + system) process `pid` has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')').expect("a stat line").1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    // USER_HZ is 100 on Linux.
    ticks / 100.0
}

/// The machine's busy and total CPU time so far (clock ticks of every CPU, from /proc/stat).
fn machine_cpu() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").expect("read /proc/stat");
    let line = stat.lines().next().expect("the cpu line");
    let ticks: Vec<u64> = line.split_whitespace().skip(1).filter_map(|t| t.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
    let total: u64 = ticks.iter().take(8).sum();
    (total - ticks[3] - ticks[4], total)
}

/// A live snapshot one client received: the match, its revision and when it arrived.
struct Delivery {
    matches: usize,
    revision: u64,
    at: SystemTime,
}

/// One WebSocket client of the fanout step, synced to its match as alice; it records every
/// live snapshot it receives from then on.
async fn watcher(
    addr: String,
    token: String,
    index: usize,
    match_id: Uuid,
    deliveries: Arc<std::sync::Mutex<Vec<Delivery>>>,
    resyncs: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<()> {
    let url = format!("ws://{addr}/v1/ws?access_token={token}");
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("a WebSocket connection");
    let accept: serde_json::Value = serde_json::from_str(
        r#"[{"id":"conecta4","rulesVersion":"1.0.0","viewSchemaVersion":1,"eventSchemaVersion":1}]"#,
    )
    .expect("json");
    let sync = serde_json::json!({
        "protocolVersion": 1, "type": "game.sync", "requestId": "r", "matchId": match_id.to_string(), "accept": accept
    });
    ws.send(Message::Text(sync.to_string().into())).await.expect("send the sync");
    loop {
        let Some(Ok(Message::Text(text))) = ws.next().await else { panic!("the connection ended before the sync") };
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_ne!(v["type"], "game.error", "sync refused: {v}");
        if v["requestId"] == "r" {
            break;
        }
    }
    tokio::spawn(async move {
        while let Some(Ok(message)) = ws.next().await {
            let at = SystemTime::now();
            let Message::Text(text) = message else { continue };
            let v: serde_json::Value = serde_json::from_str(&text).expect("json");
            if v["type"] != "game.snapshot" {
                continue;
            }
            if v.get("fromRevision").is_none() {
                resyncs.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let revision = v["revision"].as_u64().expect("a revision");
            deliveries.lock().expect("lock").push(Delivery { matches: index, revision, at });
        }
    })
}

/// Commit-to-client publication latency through the gateway: `n` Conecta 4 matches, each
/// watched by its own WebSocket client (alice) on one gateway, while commands through the
/// router at `rate` a second (round robin over the matches) make two nodes commit and
/// publish to a private Redis. A live snapshot's latency is its arrival at the client minus
/// the `published` instant the node's bus wrote into the stream entry just before sending it
/// (one machine, one clock).
async fn fanout(n: usize, rate: u64) {
    let redis = PrivateRedis::start().await;
    let schema = TestSchema::create("bench", &format!("fanout{n}")).await;
    let url = schema.url();
    let node = |i| {
        let mut args = node_args(&url, i);
        let at = args.iter().position(|a| a == "--database-pool").expect("pool flag") + 1;
        args[at] = "8".into();
        args.extend(["--redis-url".to_owned(), redis.url()]);
        Proc::spawn(args)
    };
    let nodes = (0..2).map(node).collect();
    let routers = vec![Proc::spawn(router_args(&url))];
    let c = Cluster { schema, nodes, routers, restarts: 0 };
    c.wait_for_ring().await;
    let secret = "bench-fanout-secret-0123456789abcdef0123456789";
    // The gateway as deployed: default bus settings and cursor interval (15 s) unless
    // `JUEGOLAND_BENCH_CURSOR_INTERVAL` says otherwise.
    let cursor = std::env::var("JUEGOLAND_BENCH_CURSOR_INTERVAL").unwrap_or_else(|_| "15".into());
    let gateway = Proc::spawn(
        ["gateway", "--http", "127.0.0.1:0", "--database-url", &url, "--redis-url", &redis.url()]
            .into_iter()
            .chain(["--jwt-secret", secret, "--cursor-interval", &cursor])
            .map(str::to_owned)
            .collect(),
    );
    let addr = gateway.http.trim_start_matches("http://").to_owned();
    let token = juegoland_edge::Tokens::new(secret.as_bytes(), 3_600).expect("tokens").issue("alice").expect("a token");

    // The matches, created through the router (which activates each on its node).
    let ids = Arc::new(std::sync::Mutex::new(Vec::with_capacity(n)));
    let mut creators = Vec::new();
    for _ in 0..32 {
        let (mut client, ids) = (c.client(0).await, ids.clone());
        creators.push(tokio::spawn(async move {
            loop {
                if ids.lock().expect("lock").len() >= n {
                    return;
                }
                let id = create(&mut client).await;
                let mut ids = ids.lock().expect("lock");
                if ids.len() < n {
                    ids.push(id);
                }
            }
        }));
    }
    for t in creators {
        t.await.expect("creator");
    }
    let ids: Vec<Uuid> = std::mem::take(&mut *ids.lock().expect("lock"));

    // One client per match, connected and synced 64 at a time.
    let deliveries = Arc::new(std::sync::Mutex::new(Vec::new()));
    let resyncs = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let watchers: Vec<_> = futures::stream::iter(ids.iter().enumerate())
        .map(|(i, id)| watcher(addr.clone(), token.clone(), i, *id, deliveries.clone(), resyncs.clone()))
        .buffer_unordered(64)
        .collect()
        .await;
    let synced_in = started.elapsed();
    let subscriptions = metric_sum(&gateway.get("/metrics").await, "juegoland_gateway_subscriptions");
    tokio::time::sleep(Duration::from_secs(1)).await;

    // The load: `rate` commands a second, round robin, each match's previous command long done.
    struct Driven {
        player: Player,
        done: bool,
    }
    let players: Vec<Arc<Mutex<Driven>>> = ids
        .iter()
        .map(|id| {
            Arc::new(Mutex::new(Driven { player: Player { match_id: *id, revision: 0, column: 0 }, done: false }))
        })
        .collect();
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(c.client(0).await);
    }
    let commands = Arc::new(std::sync::Mutex::new(Histogram::<u64>::new(3).expect("histogram")));
    let (applied, busy) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let gateway_cpu = cpu_seconds(gateway.pid());
    let machine_before = machine_cpu();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let load_started = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..(rate * seconds()) as usize {
        tick.tick().await;
        let (driven, mut client) = (players[k % n].clone(), clients[k % clients.len()].clone());
        let (commands, applied, busy) = (commands.clone(), applied.clone(), busy.clone());
        tasks.push(tokio::spawn(async move {
            let Ok(mut d) = driven.try_lock() else {
                busy.fetch_add(1, Ordering::Relaxed);
                return;
            };
            if d.done {
                return;
            }
            let (principal, env) = d.player.next();
            let t = Instant::now();
            let msg = submit(&mut client, &principal, &env).await;
            commands.lock().expect("lock").record(t.elapsed().as_micros() as u64).expect("record");
            if applied_revision(&msg).is_some() {
                applied.fetch_add(1, Ordering::Relaxed);
            }
            d.done = !d.player.answered(&msg);
        }));
    }
    for t in tasks {
        t.await.expect("command");
    }
    let load_took = load_started.elapsed();
    let gateway_cpu = (cpu_seconds(gateway.pid()) - gateway_cpu) / load_took.as_secs_f64() * 100.0;
    let machine_after = machine_cpu();
    let machine_busy =
        (machine_after.0 - machine_before.0) as f64 / (machine_after.1 - machine_before.1) as f64 * 100.0;
    // Stragglers.
    let applied = applied.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(10);
    while (deliveries.lock().expect("lock").len() as u64) < applied && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let received = std::mem::take(&mut *deliveries.lock().expect("lock"));
    for w in watchers {
        w.abort();
    }

    // When each revision was published, from the stream entries the nodes wrote.
    let bus = Arc::new(RedisBus::new(&redis.url(), RedisBusConfig::default()).expect("a bus"));
    let mut touched: Vec<usize> = received.iter().map(|d| d.matches).collect();
    touched.sort_unstable();
    touched.dedup();
    let stamps: std::collections::BTreeMap<usize, _> = futures::stream::iter(touched)
        .map(|i| {
            let (bus, id) = (bus.clone(), ids[i]);
            async move { (i, bus.published(id).await.expect("read the stream")) }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
    let mut unstamped = 0;
    for d in &received {
        match stamps.get(&d.matches).and_then(|s| s.get(&d.revision)) {
            Some(published) => {
                let latency = d.at.duration_since(*published).unwrap_or_default();
                hist.saturating_record((latency.as_micros() as u64).max(1));
            }
            None => unstamped += 1,
        }
    }
    let commands = commands.lock().expect("lock").clone();
    println!(
        "| {n} | {subscriptions} | {:.1} s | {:.0} | {applied} | {} | {} | {unstamped} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0}% | {:.0}% |",
        synced_in.as_secs_f64(),
        applied as f64 / load_took.as_secs_f64(),
        hist.len(),
        resyncs.load(Ordering::Relaxed),
        ms(&hist, 0.5),
        ms(&hist, 0.99),
        ms(&hist, 0.999),
        hist.max() as f64 / 1000.0,
        ms(&commands, 0.99),
        gateway_cpu,
        machine_busy,
    );
    let busy = busy.load(Ordering::Relaxed);
    if busy > 0 {
        println!("({busy} ticks skipped: the match's previous command was still running)");
    }
    drop(gateway);
    c.stop().await;
    drop(redis);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let steps = steps();
    if steps.iter().any(|s| s == "hop") {
        hop().await;
    }
    if steps.iter().any(|s| s == "e2e") {
        println!("## end to end through router and node ({} s per level)", seconds());
        println!("| concurrent matches | commands | commands/s | p50 ms | p99 ms |");
        println!("|---|---|---|---|---|");
        e2e(64).await;
        e2e(512).await;
    }
    if steps.iter().any(|s| s == "failover") {
        let mut runs = Vec::new();
        for run in 0..5 {
            let worst = failover(run).await;
            println!("failover run {run}: worst pause {worst:?}");
            runs.push(worst);
        }
        runs.sort();
        println!("## failover after SIGKILL: median {:?}, worst {:?} (5 runs)", runs[2], runs[4]);
    }
    if steps.iter().any(|s| s == "idle") {
        // The machine's hard limit is 20,000 open files per process: the gateway needs a few
        // beyond its connections.
        let n = std::env::var("JUEGOLAND_BENCH_CONNECTIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(19_500);
        idle_connections(n).await;
    }
    if steps.iter().any(|s| s == "fanout") {
        let levels = std::env::var("JUEGOLAND_BENCH_FANOUT").unwrap_or_else(|_| "1000,10000".into());
        let rate = std::env::var("JUEGOLAND_BENCH_RATE").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
        println!("## commit-to-client publication latency through one gateway ({rate} commands/s, {} s)", seconds());
        println!(
            "| subscribed matches | gateway subscriptions | connect + sync | applied/s | applied | live snapshots | resyncs | unstamped | p50 ms | p99 ms | p99.9 ms | max ms | command p99 ms | gateway CPU | machine CPU |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for n in levels.split(',') {
            fanout(n.trim().parse().expect("a number of matches"), rate).await;
        }
    }
    if steps.iter().any(|s| s == "memory") {
        let n = std::env::var("JUEGOLAND_BENCH_MATCHES").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
        memory(n).await;
    }
}
