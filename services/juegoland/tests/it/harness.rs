//! The cluster harness, shared by the cluster tests and the cluster benchmark (which
//! includes this file with `#[path]`): nodes and routers of the `juegoland` binary as real
//! processes on loopback over a private PostgreSQL schema, a Conecta 4 load driven through
//! the router's gRPC API, and the audit of the store against what clients saw.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_api::{MatchError, MatchReply, MatchRequest};
use juegoland_protocol::{Action, CommandEnvelope, Precondition, Recovery, ServerMessage};
use juegoland_rpc::pb;
use juegoland_store::audit::SeenApplied;
use juegoland_store::{PgStore, Store};
use juegoland_testkit::TestSchema;
use serde_json::json;
use tokio::sync::Mutex;
use uuid::Uuid;

pub type RouterClient = pb::router_client::RouterClient<tonic::transport::Channel>;
pub type NodeClient = pb::node_client::NodeClient<tonic::transport::Channel>;

/// One match request through a router's `Call`, as the wire carries it (`request` may be a
/// `tonic::Request` carrying metadata).
/// What `store` holds of match `id` made live with every compiled-in game: its snapshot with
/// the revisions after it recovered by the rules (the state an activation starts from).
pub async fn current_state(store: &dyn Store, id: Uuid) -> Option<juegoland_core::MatchState> {
    let stored = store.load(id).await.expect("load the match")?;
    let engine = juegoland_core::Engine::new(Arc::new(juegoland_catalog::registry().expect("the catalog")));
    Some(engine.restore(stored).expect("the stored match restores").state().clone())
}

pub async fn router_call(client: &mut RouterClient, request: &MatchRequest) -> Result<MatchReply, MatchError> {
    answer(client.call(juegoland_rpc::request_to_pb(request)).await)
}

/// One match request straight to a node's `Call`, as a router with a stale ring would send it.
pub async fn node_call(client: &mut NodeClient, request: &MatchRequest) -> Result<MatchReply, MatchError> {
    answer(client.call(juegoland_rpc::request_to_pb(request)).await)
}

/// A `Call`'s outcome in the match API's terms.
pub fn answer(result: Result<tonic::Response<pb::MatchReply>, tonic::Status>) -> Result<MatchReply, MatchError> {
    match result {
        Ok(reply) => juegoland_rpc::reply(reply.into_inner()),
        Err(status) => Err(juegoland_rpc::from_status(&status)),
    }
}

/// A `game.command` through `call` from `principal`.
pub fn command(principal: &str, envelope: &CommandEnvelope) -> MatchRequest {
    MatchRequest::Command { principal: principal.into(), envelope: envelope.clone() }
}

/// The message a command was answered with.
pub fn message(reply: MatchReply) -> ServerMessage {
    match reply {
        MatchReply::Message(message) => message,
        other => panic!("a command was answered with {other:?}"),
    }
}

/// One child process of the cluster, SIGKILLed on drop.
pub struct Proc {
    pub child: Child,
    pub args: Vec<String>,
    /// Extra environment variables of the process (kept across restarts).
    pub env: Vec<(String, String)>,
    /// The gRPC URL (`http://127.0.0.1:port`).
    pub grpc: String,
    pub http: String,
    /// A node's own client edge (`--edge-http`), `host:port`.
    pub clients: Option<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([sig, &pid.to_string()]).status().expect("run kill").success();
    assert!(ok, "kill {sig} {pid}");
}

pub use juegoland_testkit::announced_line;

impl Proc {
    pub fn spawn(args: Vec<String>) -> Proc {
        Proc::spawn_with_env(args, Vec::new())
    }

    /// Like `spawn`, with extra environment variables (they override the defaults).
    pub fn spawn_with_env(args: Vec<String>, env: Vec<(String, String)>) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_juegoland"))
            .args(&args)
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the juegoland binary");
        let line = announced_line(&mut child, " serving ");
        // "node N serving grpc URL http URL [clients URL]", "router serving grpc URL http URL"
        // or "gateway serving http URL" (a gateway serves no gRPC: `grpc` is empty).
        let words: Vec<&str> = line.split_whitespace().collect();
        let at =
            |key: &str| words.iter().position(|w| *w == key).map(|i| words[i + 1].trim_end_matches('/').to_owned());
        let http = at("http").unwrap_or_else(|| panic!("no http address in {line:?}"));
        let grpc = at("grpc").unwrap_or_default();
        let clients = at("clients").map(|u| u.trim_start_matches("http://").to_owned());
        Proc { child, args, env, grpc, http, clients }
    }

    /// The text of `GET path` on the process's HTTP server (metrics, health).
    pub async fn get(&self, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self.http.trim_start_matches("http://");
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect to the HTTP server");
        // A router given a platform token serves its metrics to that token only.
        let auth = self
            .env
            .iter()
            .find(|(k, _)| k == "JUEGOLAND_PLATFORM_TOKEN")
            .map(|(_, token)| format!("Authorization: Bearer {token}\r\n"))
            .unwrap_or_default();
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        signal(self.pid(), "-TERM");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "{:?} did not stop after SIGTERM", self.args);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the same role again with the same arguments (ports chosen anew).
    pub fn restart(&mut self) {
        let (args, env) = (self.args.clone(), self.env.clone());
        *self = Proc::spawn_with_env(args, env);
    }
}

/// The streams' secret of the clusters with a gateway.
pub const BUS_SECRET: &str = "the-test-clusters-bus-secret-0123456789";

pub struct Cluster {
    pub schema: TestSchema,
    pub nodes: Vec<Proc>,
    pub routers: Vec<Proc>,
    /// Nodes [`Cluster::supervise`] started again after an error exit.
    pub restarts: usize,
}

impl Cluster {
    pub async fn start(test: &str, nodes: usize, routers: usize) -> Cluster {
        Cluster::start_with_env(test, nodes, routers, &[]).await
    }

    /// Like `start`, with extra environment variables for every process.
    pub async fn start_with_env(test: &str, nodes: usize, routers: usize, env: &[(&str, &str)]) -> Cluster {
        let schema = TestSchema::create("cluster", test).await;
        let url = schema.url();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let spawn = |args| Proc::spawn_with_env(args, env.clone());
        // The first node runs the migrations alone; the others start once the tables exist.
        let mut started = vec![spawn(node_args(&url, 0))];
        started.extend((1..nodes).map(|i| spawn(node_args(&url, i))));
        let routers = (0..routers).map(|_| spawn(router_args(&url))).collect();
        let cluster = Cluster { schema, nodes: started, routers, restarts: 0 };
        cluster.wait_for_ring().await;
        cluster
    }

    /// A cluster whose nodes publish to the Redis at `redis` and one gateway reading it
    /// (cursors every second), with client tokens signed by `secret`. Stream keys are per
    /// match, so tests that share a Redis do not meet.
    pub async fn start_with_gateway(test: &str, nodes: usize, secret: &str, redis: &str) -> (Cluster, Proc) {
        Cluster::start_with_gateway_and(test, nodes, secret, redis, &[]).await
    }

    /// Like `start_with_gateway`, with extra environment variables for every node
    /// (`FAILPOINTS`, fault injection).
    pub async fn start_with_gateway_and(
        test: &str,
        nodes: usize,
        secret: &str,
        redis: &str,
        node_env: &[(&str, &str)],
    ) -> (Cluster, Proc) {
        Cluster::start_with_gateway_full(test, nodes, secret, redis, node_env, false).await
    }

    /// Like `start_with_gateway`, and every node also serves its own matches' players itself
    /// (`--edge-http`, its address in [`Proc::clients`]).
    pub async fn start_with_gateway_and_node_edges(
        test: &str,
        nodes: usize,
        secret: &str,
        redis: &str,
    ) -> (Cluster, Proc) {
        Cluster::start_with_gateway_full(test, nodes, secret, redis, &[], true).await
    }

    async fn start_with_gateway_full(
        test: &str,
        nodes: usize,
        secret: &str,
        redis: &str,
        node_env: &[(&str, &str)],
        node_edges: bool,
    ) -> (Cluster, Proc) {
        let redis = redis.to_owned();
        let schema = TestSchema::create("cluster", test).await;
        let url = schema.url();
        let node = |i| {
            let mut args = node_args(&url, i);
            args.extend(["--redis-url".to_owned(), redis.clone()]);
            if node_edges {
                args.extend(["--edge-http", "127.0.0.1:0", "--jwt-secret", secret].map(str::to_owned));
            }
            let mut env: Vec<(String, String)> =
                node_env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            env.push(("JUEGOLAND_BUS_SECRET".to_owned(), BUS_SECRET.to_owned()));
            Proc::spawn_with_env(args, env)
        };
        let nodes = (0..nodes).map(node).collect();
        let routers: Vec<Proc> = (0..2).map(|_| Proc::spawn(router_args(&url))).collect();
        let gateway = Proc::spawn_with_env(
            [
                "gateway",
                "--http",
                "127.0.0.1:0",
                "--database-url",
                &url,
                "--redis-url",
                &redis,
                "--jwt-secret",
                secret,
                "--cursor-interval",
                "1",
            ]
            .map(str::to_owned)
            .to_vec(),
            // The streams are authenticated end to end, as the chart deploys them.
            vec![("JUEGOLAND_BUS_SECRET".to_owned(), BUS_SECRET.to_owned())],
        );
        let cluster = Cluster { schema, nodes, routers, restarts: 0 };
        cluster.wait_for_ring().await;
        (cluster, gateway)
    }

    /// Waits until every node and router sees every node in its ring, so a test starts from
    /// a settled placement (nodes that joined after an early reader started are otherwise
    /// missing from its view for up to one refresh period).
    pub async fn wait_for_ring(&self) {
        let want = self.nodes.len() as f64;
        let deadline = Instant::now() + Duration::from_secs(10);
        for p in self.nodes.iter().chain(&self.routers) {
            while metric_sum(&p.get("/metrics").await, "juegoland_ring_members") != want {
                assert!(Instant::now() < deadline, "{:?} never saw all {want} nodes", p.args);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    /// Runs `work` while acting as the nodes' supervisor, as Kubernetes does for the chart's
    /// pods: a node that exits with an error (it lost its lease and fenced itself, the
    /// designed answer to a stall longer than its ttl, as a loaded VM can pause every
    /// process at once) is started again as a new incarnation. A node the test stopped
    /// (SIGTERM, a clean exit) or killed (by a signal) stays down. Returns `work`'s output.
    pub async fn supervise<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                out = &mut work => return out,
                _ = tick.tick() => {}
            }
            for (i, node) in self.nodes.iter_mut().enumerate() {
                let Some(status) = node.child.try_wait().expect("wait") else { continue };
                if status.code().is_some_and(|code| code != 0) {
                    eprintln!("supervisor: node-{i} exited with {status} (a lost lease); starting it again");
                    node.restart();
                    self.restarts += 1;
                }
            }
        }
    }

    /// [`Cluster::supervise`] for `period`.
    pub async fn supervise_for(&mut self, period: Duration) {
        self.supervise(tokio::time::sleep(period)).await
    }

    /// Kills every process and drops the schema; call it last, once the test has passed.
    pub async fn stop(self) {
        drop(self.nodes);
        drop(self.routers);
        self.schema.drop_schema().await;
    }

    /// The shared Redis of the tests (`JUEGOLAND_TEST_REDIS_URL` overrides).
    pub fn shared_redis() -> String {
        std::env::var("JUEGOLAND_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
    }

    /// The routers' gRPC URLs, comma-separated (a gateway's or scheduler's `--routers`).
    pub fn router_urls(&self) -> String {
        self.routers.iter().map(|r| r.grpc.clone()).collect::<Vec<_>>().join(",")
    }

    pub async fn client(&self, router: usize) -> RouterClient {
        RouterClient::connect(self.routers[router].grpc.clone()).await.expect("connect to the router")
    }

    pub async fn store(&self) -> PgStore {
        PgStore::connect_with(PgStore::pool_options().max_connections(2), self.schema.options())
            .await
            .expect("connect the audit store")
    }
}

pub fn node_args(url: &str, i: usize) -> Vec<String> {
    // A small store pool per node: several test clusters share one PostgreSQL (100
    // connections) on this machine.
    [
        "node",
        "--node-id",
        &format!("node-{i}"),
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--database-url",
        url,
        "--database-pool",
        "4",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A deadline scheduler replica named `replica` firing through `routers` (comma-separated
/// gRPC URLs, [`Cluster::router_urls`]), polling every 100 ms, with `extra` arguments.
pub fn scheduler_args(url: &str, routers: &str, replica: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "scheduler",
        "--routers",
        routers,
        "--database-url",
        url,
        "--http",
        "127.0.0.1:0",
        "--replica-id",
        replica,
        "--poll-interval-ms",
        "100",
        "--database-pool",
        "2",
        // The tests' nodes run without local timers: no grace for them.
        "--grace-ms",
        "0",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

pub fn router_args(url: &str) -> Vec<String> {
    ["router", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--database-url", url].map(str::to_owned).to_vec()
}

/// What the clients saw: every applied ack (match, principal, command id, revision) and,
/// per match, the longest time between two applied commands.
#[derive(Default)]
pub struct Seen {
    pub applied: Vec<(Uuid, String, Uuid, u64)>,
    pub longest_gap: BTreeMap<Uuid, Duration>,
    pub failed_calls: u64,
}

/// Creates a Conecta 4 match between alice and bob. The client picks the match id, so a
/// creation retried after a lost answer is the same match.
pub async fn create(client: &mut RouterClient) -> Uuid {
    create_with(client, "{}").await
}

/// Like `create`, with the match's config as JSON (`{"clock": …}`).
pub async fn create_with(client: &mut RouterClient, config_json: &str) -> Uuid {
    let match_id = Uuid::from_u128(rand_u128());
    let seats = [("p0", "alice"), ("p1", "bob")]
        .into_iter()
        .map(|(s, p)| (s.to_owned(), juegoland_core::SeatHolder::Principal(p.to_owned())))
        .collect();
    let req = MatchRequest::Create {
        match_id,
        game: juegoland_core::GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() }.into(),
        seats,
        config: serde_json::from_str(config_json).expect("a JSON config"),
        options: Default::default(),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match router_call(client, &req).await {
            Ok(reply) => {
                assert!(matches!(&reply, MatchReply::Created(c) if c.match_id == match_id), "{reply:?}");
                return match_id;
            }
            Err(e) => {
                assert!(Instant::now() < deadline, "creation kept failing: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Plays Conecta 4 through `client` until `until`; a match that ends is replaced by a new
/// one. Every command is retried with the same id until it gets an answer, so a client
/// never gives up on a command the cluster might have applied.
pub async fn play(mut client: RouterClient, until: Instant, seen: Arc<Mutex<Seen>>) {
    let mut match_id = create(&mut client).await;
    let mut revision = 0u64;
    let mut last_applied = Instant::now();
    while Instant::now() < until {
        let principal = if revision.is_multiple_of(2) { "alice" } else { "bob" };
        let mut applied = false;
        for k in 0..7u64 {
            let envelope = CommandEnvelope {
                match_id,
                command_id: Uuid::from_u128(rand_u128()),
                precondition: Precondition::Match { revision },
                action: Action { r#type: "drop".into(), payload: json!({ "column": (revision * 3 + k) % 7 }) },
            };
            let req = command(principal, &envelope);
            let asked = Instant::now();
            let answer = loop {
                // Retrying forever would hang the suite when the cluster is gone for good.
                assert!(asked.elapsed() < Duration::from_secs(60), "no answer to {req:?} for 60 s");
                match router_call(&mut client, &req).await.map(message) {
                    // UNAVAILABLE answered as a game.error (an owner fenced mid-command, a
                    // retry budget spent mid-restart) says what a client does: send it again.
                    Ok(ServerMessage::Error(e)) if e.recovery == Recovery::RetrySameCommand => {}
                    Ok(m) => break m,
                    Err(_) => {}
                }
                seen.lock().await.failed_calls += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            match answer {
                ServerMessage::Ack(ack) if ack.status == juegoland_protocol::AckStatus::Applied => {
                    let r = ack.revision.expect("an applied ack has a revision");
                    assert_eq!(r, revision + 1, "applied at the next revision");
                    let mut seen = seen.lock().await;
                    seen.applied.push((match_id, principal.to_owned(), envelope.command_id, r));
                    let gap = last_applied.elapsed();
                    let longest = seen.longest_gap.entry(match_id).or_default();
                    *longest = (*longest).max(gap);
                    last_applied = Instant::now();
                    revision = r;
                    applied = true;
                    break;
                }
                ServerMessage::Ack(_) => continue,
                other => panic!("unexpected answer {other:?}"),
            }
        }
        if !applied {
            // Finished (or every column full): next match.
            match_id = create(&mut client).await;
            revision = 0;
            last_applied = Instant::now();
        }
    }
}

pub fn rand_u128() -> u128 {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("entropy");
    u128::from_le_bytes(b)
}

/// Audits the store against what the clients saw (`juegoland_store::audit`, the same audit
/// as the load-test harness's), then replays every match through `juegoland replay`.
pub async fn audit(cluster: &Cluster, seen: &Seen) {
    let store = cluster.store().await;
    let seen: Vec<SeenApplied> = seen
        .applied
        .iter()
        .map(|(match_id, principal, command_id, revision)| SeenApplied {
            match_id: *match_id,
            principal: principal.clone(),
            command_id: *command_id,
            revision: *revision,
        })
        .collect();
    let registry = juegoland_catalog::registry().expect("the catalog");
    let report = juegoland_store::audit::audit(&store, &registry, &seen, None).await.expect("read the store");
    assert!(report.passed(), "the audit found {} problems: {:#?}", report.problems.len(), report.problems);
    assert!(report.matches > 0 && report.receipts_checked == seen.len(), "{report:?}");
    store.close().await;
    let out = Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .args(["replay", "--database-url", &cluster.schema.url()])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run juegoland replay");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "replay diverged:\n{text}");
    assert!(text.contains(" 0 diverged"), "{text}");
}

/// The sum of every sample of `name` in a Prometheus text exposition.
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

pub async fn submit(client: &mut RouterClient, principal: &str, envelope: &CommandEnvelope) -> ServerMessage {
    message(router_call(client, &command(principal, envelope)).await.expect("the router answers"))
}

pub fn drop_at(match_id: Uuid, revision: u64, column: u64) -> CommandEnvelope {
    CommandEnvelope {
        match_id,
        command_id: Uuid::from_u128(rand_u128()),
        precondition: Precondition::Match { revision },
        action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
    }
}

pub fn applied_revision(msg: &ServerMessage) -> Option<u64> {
    match msg {
        ServerMessage::Ack(a) if a.status == juegoland_protocol::AckStatus::Applied => a.revision,
        _ => None,
    }
}

/// The matches of the load that the ring places on `node`, read from the store's owner
/// column (the owner is the node's incarnation).
pub async fn owned_by(cluster: &Cluster, node: &Proc) -> Vec<Uuid> {
    let client = pb::node_client::NodeClient::connect(node.grpc.clone()).await;
    let incarnation = client.expect("connect to the node").status(pb::NodeStatusRequest {}).await.expect("status");
    let incarnation = incarnation.into_inner().incarnation;
    let store = cluster.store().await;
    let mut owned = Vec::new();
    for id in store.match_ids().await.expect("list") {
        if let Some((Some(owner), _)) = store.owner(id).await.expect("owner")
            && owner == incarnation
        {
            owned.push(id);
        }
    }
    store.close().await;
    owned
}
