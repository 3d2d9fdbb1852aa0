//! The cluster on loopback, measured: the router hop, end-to-end command latency at 64 and
//! 512 concurrent matches, failover time after SIGKILL, and memory per active match actor
//! with 100,000 active matches on one node. Real `juegoland node` / `juegoland router`
//! processes over a private schema of the PostgreSQL at 127.0.0.1:5432.
//!
//! Run: `cargo bench -p juegoland --bench cluster`; `JUEGOLAND_BENCH_STEPS=hop,e2e,failover,memory,idle`
//! picks steps, `JUEGOLAND_BENCH_SECONDS` sets the load duration (default 10),
//! `JUEGOLAND_BENCH_MATCHES` the matches of the memory step (default 100000).

// A benchmark is the shell: it reads clocks, the environment and /proc.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[path = "../tests/it/harness.rs"]
mod harness;

use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::*;
use hdrhistogram::Histogram;
use juegoland_protocol::{CommandEnvelope, ServerMessage};
use juegoland_rpc::pb;
use juegoland_testkit::TestSchema;
use tokio::sync::Mutex;
use uuid::Uuid;

type NodeClient = pb::node_client::NodeClient<tonic::transport::Channel>;

fn steps() -> Vec<String> {
    std::env::var("JUEGOLAND_BENCH_STEPS")
        .unwrap_or_else(|_| "hop,e2e,failover,memory,idle".into())
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
    Cluster { schema, nodes, routers }
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
    let req = pb::SubmitCommandRequest {
        principal: principal.into(),
        envelope_json: juegoland_rpc::envelope_to_json(envelope),
    };
    let reply = node.submit_command(req).await.expect("the node answers").into_inner();
    juegoland_rpc::server_message(&reply.message_json).expect("a server message")
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
            let _ = router.revision(pb::RevisionRequest { match_id: player.match_id.to_string() }).await;
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
    tokio::time::sleep(Duration::from_secs(2)).await;
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
    let secret = "bench-idle-secret";
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
    tokio::time::sleep(Duration::from_secs(2)).await;
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
    if steps.iter().any(|s| s == "memory") {
        let n = std::env::var("JUEGOLAND_BENCH_MATCHES").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
        memory(n).await;
    }
}
