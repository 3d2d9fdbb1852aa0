//! The harness against the real servers: the all-in-one (`juegoland dev` on its embedded
//! store) for every client scenario, and a local cluster (`juegoland cluster` on the real
//! PostgreSQL and Redis) for the chaos scenario, whose node kill must leave an audit that
//! passes; and the same roles as separate processes in a network lab, partitioned under load
//! (`partitions.rs`). The servers are the `juegoland` binary of this workspace's build (`cargo nextest
//! run --workspace` builds it; alone: `cargo build -p juegoland` first).

mod partitions;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use clap::Parser;
use juegoland_loadtest::{Cli, Summary, execute};
use juegoland_testkit::{TempDir, TestSchema, announced_line, free_port, free_port_block};

/// `juegoland_ring_members` on the HTTP server at `port` (its `/metrics`), if it answers.
fn ring_members(port: u16) -> Option<u64> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.lines().find_map(|l| l.strip_prefix("juegoland_ring_members ")?.trim().parse().ok())
}

fn juegoland_bin() -> PathBuf {
    // target/<profile>/deps/it-… → target/<profile>/juegoland
    let exe = std::env::current_exe().expect("the test's path");
    let bin = exe.parent().and_then(|d| d.parent()).expect("the target directory").join("juegoland");
    assert!(bin.exists(), "{} is missing: build the servers with `cargo build -p juegoland`", bin.display());
    bin
}

/// A child process killed (SIGTERM, then SIGKILL) when dropped.
struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn all_in_one(dir: &TempDir) -> (Server, String) {
    let mut child = Command::new(juegoland_bin())
        .args(["dev", "--http", "127.0.0.1:0", "--jwt-secret", "load-secret-0123456789abcdef0123456789", "--data-dir"])
        .arg(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start juegoland dev");
    let line = announced_line(&mut child, "listening on ");
    let api = line.trim().trim_start_matches("listening on ").trim_end_matches('/').to_owned();
    (Server { child }, api)
}

async fn run<S: AsRef<str>>(args: &[S]) -> Summary {
    let argv = ["juegoland-loadtest", "run"].into_iter().chain(args.iter().map(AsRef::as_ref));
    let cli = Cli::try_parse_from(argv).expect("valid options");
    execute(cli).await.expect("the run completes").expect("a run gives a summary")
}

/// The cluster secret of the local clusters (the gRPC players stamp their calls with it).
const CLUSTER_SECRET: &str = "the-local-clusters-secret-0123456789abcdef";

/// A local cluster (`juegoland cluster`: 2 nodes, a router, a scheduler, and what `roles`
/// adds) on `schema_url` with the client token `secret`, its children's pids kept in
/// `pids`; answers the process and its router's gRPC and HTTP ports.
fn local_cluster(schema_url: &str, secret: &str, pids: &std::path::Path, roles: &[&str]) -> (Server, u16, u16) {
    // The launcher derives the nodes' gRPC and metrics ports from --node-port.
    let (node, router, router_http, scheduler) =
        (free_port_block(&[0, 1, 100, 101]), free_port(), free_port(), free_port());
    let mut child = Command::new(juegoland_bin())
        .args(["cluster", "--nodes", "2", "--routers", "1", "--schedulers", "1"])
        .args(roles)
        .args(["--jwt-secret", secret, "--database-url", schema_url, "--cluster-secret", CLUSTER_SECRET])
        .args(["--node-port", &node.to_string(), "--router-port", &router.to_string()])
        .args(["--router-http-port", &router_http.to_string(), "--scheduler-http-port", &scheduler.to_string()])
        .arg("--pids-file")
        .arg(pids)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start juegoland cluster");
    announced_line(&mut child, "local cluster:");
    // The secret reaches the children in their environment, never on a command line (which
    // every local user reads in `ps`).
    let children: std::collections::BTreeMap<String, u32> =
        serde_json::from_slice(&std::fs::read(pids).expect("the pids file")).expect("pids");
    assert!(children.len() >= 4, "{children:?}");
    for (role, pid) in children {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&cmdline).contains(secret), "{role}'s command line holds the token secret");
    }
    (Server { child }, router, router_http)
}

/// Waits until the router on `router_http` has both nodes in its ring.
async fn until_both_nodes(router_http: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while ring_members(router_http) != Some(2) {
        assert!(std::time::Instant::now() < deadline, "the ring never held both nodes");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn audited(s: &Summary) -> &juegoland_loadtest::AuditSummary {
    let audit = s.audit.as_ref().expect("the run was audited");
    assert!(audit.passed, "the audit found problems: {:#?}", audit.problems);
    assert!(audit.matches > 0 && audit.receipts_checked as u64 >= s.moves, "{audit:?}");
    audit
}

#[tokio::test(flavor = "multi_thread")]
async fn all_in_one_scenarios_play_real_matches_and_pass_the_audit() {
    let dir = TempDir::new("loadtest-aio");
    let (server, api) = all_in_one(&dir);
    let pid = format!("engine=pid:{}", server.child.id());
    let data = dir.path().to_str().unwrap().to_owned();
    let args = |extra: &[&str]| -> Vec<String> {
        let common = [
            "--api",
            &api,
            "--jwt-secret",
            "load-secret-0123456789abcdef0123456789",
            "--ramp-up",
            "1s",
            "--watch",
            &pid,
        ];
        common.iter().chain(&["--audit-data-dir", data.as_str()]).chain(extra).map(|s| s.to_string()).collect()
    };

    // Conecta 4 storm: moves, finished matches, both latencies, the engine's CPU.
    let storm = run(&args(&["--scenario", "conecta4-storm", "--matches", "4", "--duration", "4s"])).await;
    assert_eq!(storm.scenario, "conecta4-storm");
    assert!(storm.moves > 20 && storm.matches_finished > 0, "{storm:?}");
    assert!(storm.errors.is_empty(), "a clean run has no errors: {:?}", storm.errors);
    for which in ["commandToAck", "commandToView"] {
        let p = &storm.latency_ms[which];
        assert!(p.count > 0 && p.p50 > 0.0 && p.p50 <= p.p99 && p.p99 <= p.max, "{which}: {p:?}");
    }
    let engine = &storm.processes["engine"];
    assert!(engine.cpu_seconds > 0.0 && engine.peak_memory_bytes > 0, "{engine:?}");
    assert!(storm.moves_per_server_cpu_second > 0.0);
    audited(&storm);

    // Hundido: both seats place at once under actor preconditions; no needless conflicts.
    let hundido = run(&args(&["--scenario", "hundido-placement", "--matches", "3", "--duration", "4s"])).await;
    assert!(hundido.moves > 20, "{hundido:?}");
    assert!(hundido.errors.is_empty(), "{:?}", hundido.errors);
    audited(&hundido);

    // The card and dice games in one mix (Brisca with two and with four players): every
    // seat plays its offers, matches finish, the audit replays them.
    let mixed =
        run(&args(&["--games", "brisca=1,brisca4=1,oca=1,serpientes=1", "--matches", "4", "--duration", "4s"])).await;
    assert!(mixed.moves > 40 && mixed.matches_finished > 0, "{mixed:?}");
    assert!(mixed.errors.is_empty(), "{:?}", mixed.errors);
    audited(&mixed);

    // Reconnect storm: players drop their sockets and resync mid-match; every command they
    // resent after a drop took effect once.
    let storm_args = ["--scenario", "reconnect-storm", "--matches", "3", "--duration", "4s", "--reconnect-every", "2"];
    let reconnects = run(&args(&storm_args)).await;
    assert!(reconnects.reconnects > 3, "{reconnects:?}");
    assert!(reconnects.latency_ms["resync"].count > 0);
    audited(&reconnects);

    // Laberinto in real time: queue moves every 20 ms against a 150 ms cooldown, so the
    // game rejects some; the engine itself reports nothing else, and the audit replays.
    let realtime_args =
        ["--scenario", "laberinto-realtime", "--matches", "3", "--duration", "4s", "--think-time", "20ms"];
    let realtime = run(&args(&realtime_args)).await;
    assert_eq!(realtime.scenario, "laberinto-realtime");
    assert!(realtime.moves > 20 && realtime.rejected > 0, "{realtime:?}");
    let other: Vec<&String> = realtime.errors.keys().filter(|k| k.as_str() != "rejected ILLEGAL_ACTION").collect();
    assert!(other.is_empty(), "only the game's own rejections: {:?}", realtime.errors);
    audited(&realtime);

    // Abuse alongside the load (issue 25): a command storm from another address is rate
    // limited while the players' moves go on without errors; a flood is refused at the
    // per-address cap.
    let attacked = run(&args(&["--matches", "3", "--duration", "3s", "--attack", "storm", "--attackers", "2"])).await;
    let attack = attacked.attack.as_ref().expect("the summary says what the attack did");
    assert_eq!(attack["kind"], "storm");
    assert!(attack["rateLimited"].as_u64().unwrap() > 0, "{attack}");
    assert!(attacked.moves > 20 && attacked.errors.is_empty(), "{attacked:?}");
    audited(&attacked);
    drop(server);
}

/// A `chaos` run of 6 matches for 12 s against `api` that kills node-1 after 4 s (its pids
/// in `pids`), audited on `url`, with the transport flags in `edge`: checks that the load went
/// on after the kill and that every match replays.
async fn through_a_node_kill(api: &str, secret: &str, pids: &std::path::Path, url: &str, edge: &[&str]) -> Summary {
    let mut args = vec!["--api", api, "--jwt-secret", secret, "--audit-database-url", url];
    args.extend(edge);
    let pids = pids.to_str().unwrap();
    args.extend([
        "--scenario",
        "chaos",
        "--matches",
        "6",
        "--ramp-up",
        "2s",
        "--duration",
        "12s",
        "--chaos-after",
        "4s",
        "--chaos-kill",
        "node-1",
        "--chaos-pids-file",
        pids,
    ]);
    let summary = run(&args).await;
    let chaos = summary.chaos.as_ref().expect("a node was killed");
    assert_eq!(chaos["killed"], "node-1");
    let before = chaos["movesBefore"].as_u64().unwrap();
    assert!(summary.moves > before + 20, "the load went on after the kill: {before} then {}", summary.moves);
    let audit = audited(&summary);
    assert!(audit.replayed == audit.matches);
    summary
}

#[tokio::test(flavor = "multi_thread")]
async fn chaos_kills_a_node_mid_run_and_the_audit_passes() {
    let schema = TestSchema::create("loadtest", "chaos").await;
    let dir = TempDir::new("loadtest-chaos");
    let pids = dir.path().join("pids.json");
    let gateway = free_port();
    let (cluster, router, router_http) = local_cluster(
        &schema.url(),
        "chaos-secret-0123456789abcdef0123456789",
        &pids,
        &["--gateways", "1", "--gateway-port", &gateway.to_string()],
    );
    let api = format!("http://127.0.0.1:{router_http}");
    let ws = format!("ws://127.0.0.1:{gateway}/v1/ws");
    let engine = format!("engine=pids-file:{}", pids.display());
    let url = schema.url();
    through_a_node_kill(
        &api,
        "chaos-secret-0123456789abcdef0123456789",
        &pids,
        &url,
        &["--ws", &ws, "--watch", &engine],
    )
    .await;

    // The launcher restarted node-1: let the router's ring hold both nodes again before the
    // next run, which expects no error (on a loaded machine the new incarnation may still be
    // joining when the chaos run ends).
    until_both_nodes(router_http).await;

    // The same cluster, played over the routers' gRPC API instead of WebSocket.
    let grpc = format!("http://127.0.0.1:{router}");
    let summary = run(&[
        "--api",
        &api,
        "--grpc",
        &grpc,
        // A router acts for a principal only on a cluster role's stamped call.
        "--cluster-secret",
        CLUSTER_SECRET,
        "--jwt-secret",
        "chaos-secret-0123456789abcdef0123456789",
        "--matches",
        "4",
        "--ramp-up",
        "1s",
        "--duration",
        "4s",
        "--audit-database-url",
        &url,
    ])
    .await;
    assert!(summary.moves > 20, "moves over gRPC: {}", summary.moves);
    assert!(summary.errors.is_empty(), "errors over gRPC: {:?}", summary.errors);
    assert!(summary.latency_ms["commandToView"].count > 0, "no view over gRPC");
    let audit = audited(&summary);
    assert!(audit.replayed == audit.matches);
    drop(cluster);
    schema.drop_schema().await;
}

/// A cluster whose nodes serve clients themselves, each player connecting to its match's
/// owner (`--ws-owner`): the load plays without gateways, and when a node is killed its
/// players reconnect to the new owner's edge and the audit passes.
#[tokio::test(flavor = "multi_thread")]
async fn owner_served_players_follow_their_matches_through_a_node_kill() {
    let schema = TestSchema::create("loadtest", "owner_served").await;
    let dir = TempDir::new("loadtest-owner-served");
    let pids = dir.path().join("pids.json");
    let edge = free_port_block(&[0, 1]).to_string();
    let (cluster, _, router_http) = local_cluster(
        &schema.url(),
        "owner-secret-0123456789abcdef0123456789",
        &pids,
        &["--gateways", "0", "--node-edge-port", &edge],
    );
    until_both_nodes(router_http).await;
    let api = format!("http://127.0.0.1:{router_http}");
    // The fallback --ws is never needed: every node serves clients.
    let unused = format!("ws://127.0.0.1:{}/v1/ws", free_port());
    let url = schema.url();
    let summary = through_a_node_kill(
        &api,
        "owner-secret-0123456789abcdef0123456789",
        &pids,
        &url,
        &["--ws-owner", "--ws", &unused],
    )
    .await;
    let before = summary.chaos.as_ref().expect("a node was killed")["movesBefore"].as_u64().unwrap();
    assert!(before > 20, "the players played on their owners' edges before the kill: {before}");
    drop(cluster);
    schema.drop_schema().await;
}
