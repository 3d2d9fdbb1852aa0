//! The load-test harness behind `juegoland-loadtest`: plays many real matches through the real protocol (WebSocket, one
//! connection per player) against the all-in-one or a cluster, and reports what it measured
//! as one JSON summary: moves, command → ack and command → view latencies (HDR histograms),
//! errors by code, server-side CPU and memory of the processes it was told to watch (so
//! moves per server CPU-second), and an end-of-run audit against the store.
//!
//! `juegoland-loadtest report` turns summaries (ours and the peers' from `loadtest/peers/`)
//! into the comparison table in `docs/benchmarks.md`. See `loadtest/README.md`.

mod api;
mod attack;
mod conn;
mod play;
mod procs;
mod report;
mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::api::{Api, Endpoint, TokenSource};
use crate::play::{Ending, Game, PlayContext, Rng};
use crate::procs::{GroupFigures, Tracker, Watch};
pub use crate::stats::ViewTimeline;
use crate::stats::{Latency, Percentiles, Stats};

#[derive(Parser)]
#[command(name = "juegoland-loadtest", version, about = "Load tests for the Juegoland engine")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play matches against a running server and write a JSON summary.
    Run(Box<RunOptions>),
    /// Turn summaries into the comparison table (and write it into a markdown file).
    Report(report::ReportOptions),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Scenario {
    /// Conecta 4 matches, moves as fast as the rules allow.
    Conecta4Storm,
    /// Hundido: both players place their fleets at the same time, then battle.
    HundidoPlacement,
    /// Conecta 4 where players drop their connection and resync mid-match.
    ReconnectStorm,
    /// Conecta 4 on a cluster while a node is SIGKILLed mid-run; the audit must pass.
    Chaos,
    /// Laberinto: both players send a real-time (`queue`) move every `--think-time`; the
    /// game's cooldown rejections are counted, not errors of the engine.
    LaberintoRealtime,
}

impl Scenario {
    /// The scenario's name as on the command line and in summaries (`conecta4-storm`).
    fn name(self) -> &'static str {
        match self {
            Scenario::Conecta4Storm => "conecta4-storm",
            Scenario::HundidoPlacement => "hundido-placement",
            Scenario::ReconnectStorm => "reconnect-storm",
            Scenario::Chaos => "chaos",
            Scenario::LaberintoRealtime => "laberinto-realtime",
        }
    }
}

#[derive(clap::Args, Debug)]
struct RunOptions {
    /// The platform HTTP API (catalog, match creation, dev tokens): the all-in-one's address
    /// or a router's HTTP address.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    api: String,
    /// WebSocket endpoints players connect to (gateways, or the all-in-one), comma separated;
    /// players spread over them at random. Default: the API's host at /v1/ws.
    #[arg(long, value_delimiter = ',')]
    ws: Vec<String>,
    /// Play through these routers' gRPC API (`http://host:port`, comma separated) instead of
    /// WebSocket, as a platform back end playing for its users: commands with
    /// `SubmitCommand`, syncs with `Sync`, and the view of a newer revision by polling
    /// `Revision` every `--grpc-poll` (the router API has no push).
    #[arg(long, value_delimiter = ',')]
    grpc: Vec<String>,
    /// The cluster's secret (`--cluster-secret` of its roles): gRPC players stamp their calls
    /// with a gateway's credential, as a router answers calls that act for a principal only
    /// from the cluster's roles.
    #[arg(long, env = "JUEGOLAND_CLUSTER_SECRET", hide_env_values = true)]
    cluster_secret: Option<String>,
    /// Players connect to the client edge of the node that owns their match (the
    /// `clientUrl` of the platform API's `GET /v1/matches/{id}`, read each time they
    /// connect), and to --ws when the owner serves no clients itself.
    #[arg(long, conflicts_with = "grpc")]
    ws_owner: bool,
    /// How often a gRPC player polls the revision while it waits for a view.
    #[arg(long, value_parser = parse_duration, default_value = "5ms")]
    grpc_poll: Duration,
    /// Bearer token for the platform API, when the server requires one.
    #[arg(long, env = "JUEGOLAND_PLATFORM_TOKEN")]
    platform_token: Option<String>,
    /// Secret the gateways verify client tokens with (HS256); without it tokens come from the
    /// all-in-one's dev endpoint.
    #[arg(long, env = "JUEGOLAND_JWT_SECRET")]
    jwt_secret: Option<String>,
    #[arg(long, value_enum, default_value = "conecta4-storm")]
    scenario: Scenario,
    /// Concurrent matches (each with two player connections).
    #[arg(long, default_value_t = 50)]
    matches: usize,
    /// Length of the measured window, after the ramp-up (e.g. 30s, 10m).
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    duration: Duration,
    /// Stop instead once this many matches finished in the window.
    #[arg(long)]
    match_count: Option<u64>,
    /// Matches start spread over this time; nothing in it is measured.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    ramp_up: Duration,
    /// Pause of a player after each of its moves.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    think_time: Duration,
    /// Game mix as game=weight pairs (conecta4, hundido, brisca, brisca4, oca, serpientes,
    /// laberinto); the scenario's game by default.
    #[arg(long, value_delimiter = ',')]
    games: Vec<String>,
    /// Reconnect storm: a player drops its connection after about one in N of its moves.
    #[arg(long)]
    reconnect_every: Option<u64>,
    /// Server-side processes to measure: label=pid:N, label=comm:NAME (every process of
    /// that name, e.g. postgres, redis-server) or label=pids-file:PATH (the cluster
    /// launcher's `--pids-file`). Repeatable.
    #[arg(long)]
    watch: Vec<Watch>,
    /// Audit the store at the end: the cluster's PostgreSQL.
    #[arg(long)]
    audit_database_url: Option<String>,
    /// Audit the store at the end: the all-in-one's data directory (SQLite).
    #[arg(long)]
    audit_data_dir: Option<PathBuf>,
    /// Chaos: the launcher's pids file, to find the process to kill.
    #[arg(long)]
    chaos_pids_file: Option<PathBuf>,
    /// Chaos: the role to SIGKILL (a key of the pids file, e.g. node-1).
    #[arg(long, default_value = "node-1")]
    chaos_kill: String,
    /// Chaos: when to kill it, counted from the start of the measured window.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    chaos_after: Duration,
    /// The server's name in the summary (e.g. "juegoland all-in-one").
    #[arg(long, default_value = "juegoland")]
    label: String,
    /// Where to write the JSON summary (it is printed too).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A player that hears nothing for this long counts a stall and resyncs.
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    patience: Duration,
    /// Abuse the WebSocket endpoint during the measured window while the players play
    /// (`attack.rs`); the summary's `attack` says what the server did to the attackers.
    #[arg(long, value_enum)]
    attack: Option<attack::Attack>,
    /// How many attackers (tasks) run the attack; a storm's attacker N storms the N-th
    /// match that exists when the window starts (1: one match, more: many).
    #[arg(long, default_value_t = 20)]
    attackers: usize,
    /// The source address of the attackers' connections (another loopback address by
    /// default, so that the per-address cap tells them from the players).
    #[arg(long, default_value = "127.0.0.2")]
    attack_from: std::net::IpAddr,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = s.find(|c: char| !c.is_ascii_digit() && c != '.').map_or((s, "s"), |i| s.split_at(i));
    let n: f64 = number.parse().map_err(|_| format!("{s}: a duration is a number with ms, s, m or h"))?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("{s}: a duration is a number with ms, s, m or h")),
    };
    Ok(Duration::from_secs_f64(seconds))
}

/// The end-of-run audit, as it goes into the summary.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditSummary {
    pub passed: bool,
    pub matches: usize,
    pub receipts_checked: usize,
    pub log_entries: usize,
    pub replayed: usize,
    pub problems: Vec<String>,
}

/// The JSON summary; the peers' driver writes the same shape.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub server: String,
    pub version: String,
    pub scenario: String,
    pub matches: usize,
    pub duration_seconds: f64,
    pub moves: u64,
    pub matches_finished: u64,
    pub moves_per_second: f64,
    pub server_cpu_seconds: f64,
    pub moves_per_server_cpu_second: f64,
    pub server_peak_rss_bytes: u64,
    /// Bytes every server process wrote to storage during the window, per move.
    #[serde(default)]
    pub server_written_bytes_per_move: f64,
    pub latency_ms: BTreeMap<String, Percentiles>,
    pub errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub matches_created: u64,
    #[serde(default)]
    pub rejected: u64,
    #[serde(default)]
    pub reconnects: u64,
    #[serde(default)]
    pub processes: BTreeMap<String, GroupFigures>,
    #[serde(default)]
    pub audit: Option<AuditSummary>,
    #[serde(default)]
    pub chaos: Option<serde_json::Value>,
    #[serde(default)]
    pub started_at: Option<String>,
    /// Views per 100 ms of the window, for callers in process (the partition tests); not
    /// written into the JSON summary.
    #[serde(default, skip_serializing)]
    pub view_timeline: Option<stats::ViewTimeline>,
    /// The attack run alongside (`--attack`) and what the server did to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<serde_json::Value>,
}

impl Summary {
    /// Whether the run is a pass: it moved, and its audit (when it had one) found nothing.
    pub fn passed(&self) -> bool {
        self.moves > 0 && self.audit.as_ref().is_none_or(|a| a.passed)
    }
}

/// Runs a parsed command line: `Some(summary)` for a run, `None` for a report.
pub async fn execute(cli: Cli) -> anyhow::Result<Option<Summary>> {
    match cli.command {
        Command::Run(options) => run(*options).await.map(Some),
        Command::Report(options) => report::report(options).map(|()| None),
    }
}

/// The scenario's games (with weights), unless `--games` names a mix.
fn mix(options: &RunOptions) -> anyhow::Result<Vec<Game>> {
    let pairs: Vec<String> = if options.games.is_empty() {
        match options.scenario {
            Scenario::HundidoPlacement => vec!["hundido=1".into()],
            Scenario::LaberintoRealtime => vec!["laberinto=1".into()],
            _ => vec!["conecta4=1".into()],
        }
    } else {
        options.games.clone()
    };
    let mut mix = Vec::new();
    for pair in &pairs {
        let (name, weight) = pair.split_once('=').unwrap_or((pair, "1"));
        let game = Game::parse(name).with_context(|| format!("{name}: the harness plays {}", Game::NAMES))?;
        let weight: usize = weight.parse().with_context(|| format!("{pair}: the weight is a whole number"))?;
        mix.extend(std::iter::repeat_n(game, weight));
    }
    if mix.is_empty() {
        bail!("the game mix is empty");
    }
    Ok(mix)
}

async fn catalog(api: &mut Api) -> anyhow::Result<Vec<juegoland_protocol::ContractTuple>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match api.catalog().await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() < deadline => {
                eprintln!("waiting for the server's catalog: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => bail!("the server's catalog: {e}"),
        }
    }
}

/// One match slot: creates a match, plays every seat, and starts the next one.
async fn slot(
    ctx: Arc<PlayContext>,
    endpoint: Endpoint,
    mix: Arc<Vec<Game>>,
    run_id: String,
    index: usize,
    delay: Duration,
) {
    tokio::time::sleep(delay).await;
    let mut api = Api::new(endpoint);
    let mut rng = Rng::seeded();
    let mut n = 0u64;
    while !ctx.stop.load(Ordering::Relaxed) {
        let game = mix[rng.below(mix.len() as u64) as usize];
        let principals: Vec<String> =
            ["a", "b", "c", "d"][..game.seats()].iter().map(|s| format!("lt-{run_id}-{index}-{n}-{s}")).collect();
        let started = Instant::now();
        let (match_id, client_url) = match api.create_match(game.id(), &principals, &game.config()).await {
            Ok(created) => created,
            Err(e) => {
                ctx.stats.error(e.key());
                tokio::time::sleep(Duration::from_millis(if e.retryable() { 200 } else { 2000 })).await;
                continue;
            }
        };
        ctx.stats.latency(Latency::Create, started.elapsed());
        ctx.stats.created(match_id);
        let endings = futures::future::join_all(
            principals.into_iter().map(|p| play::play(&ctx, match_id, game, p, client_url.clone())),
        )
        .await;
        if endings.iter().all(|e| *e == Ending::Finished) {
            ctx.stats.count(&ctx.stats.matches_finished);
        }
        n += 1;
    }
}

/// One sample of the watched processes, on a blocking thread.
async fn sample(mut tracker: Tracker, last: bool) -> anyhow::Result<Tracker> {
    Ok(tokio::task::spawn_blocking(move || {
        tracker.tick(last);
        tracker
    })
    .await?)
}

fn kill(pids_file: &std::path::Path, role: &str) -> anyhow::Result<i32> {
    let pids = procs::read_pids_file(pids_file)?;
    let pid = *pids.get(role).with_context(|| format!("{role} is not in {}", pids_file.display()))?;
    // Through kill(1): the harness stays free of unsafe code.
    let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status()?;
    if !status.success() {
        bail!("kill -KILL {pid} failed");
    }
    Ok(pid)
}

async fn run(options: RunOptions) -> anyhow::Result<Summary> {
    let endpoint = Endpoint::parse(&options.api, options.platform_token.clone())?;
    let ws_urls =
        if options.ws.is_empty() { vec![format!("ws://{}/v1/ws", endpoint.authority)] } else { options.ws.clone() };
    let grpc = options
        .grpc
        .iter()
        .map(|url| {
            tonic::transport::Endpoint::from_shared(url.clone())
                .map(|e| e.connect_lazy())
                .with_context(|| format!("--grpc {url}: not a gRPC address"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mix = Arc::new(mix(&options)?);
    let mut api = Api::new(endpoint.clone());
    let accept = catalog(&mut api).await?;
    let tokens = match &options.jwt_secret {
        Some(secret) => TokenSource::Secret(Box::new(juegoland_edge::Tokens::new(secret.as_bytes(), 86_400)?)),
        None => TokenSource::Dev(endpoint.clone()),
    };
    if options.scenario == Scenario::Chaos && options.chaos_pids_file.is_none() {
        bail!("the chaos scenario needs --chaos-pids-file (start the cluster with `juegoland cluster --pids-file …`)");
    }
    let reconnect_every = match (options.reconnect_every, options.scenario) {
        (Some(n), _) => Some(n.max(1)),
        (None, Scenario::ReconnectStorm) => Some(5),
        (None, _) => None,
    };
    let stats = Arc::new(Stats::default());
    let ctx = Arc::new(PlayContext {
        stats: stats.clone(),
        tokens,
        ws_urls,
        owner_edge: options.ws_owner.then(|| endpoint.clone()),
        grpc,
        grpc_poll: options.grpc_poll,
        cluster_key: options
            .cluster_secret
            .as_deref()
            .map(|s| juegoland_rpc::credential::ClusterKey::new(s.as_bytes()))
            .transpose()
            .map_err(|why| anyhow::anyhow!("--cluster-secret: {why}"))?,
        accept,
        think: options.think_time,
        reconnect_every,
        patience: options.patience,
        stop: Default::default(),
    });
    let run_id = format!("{:08x}", Rng::seeded().next() as u32);
    let started_at = std::time::SystemTime::now();
    let mut slots = Vec::with_capacity(options.matches);
    for i in 0..options.matches {
        let delay = options.ramp_up.mul_f64(i as f64 / options.matches.max(1) as f64);
        let task = slot(ctx.clone(), endpoint.clone(), mix.clone(), run_id.clone(), i, delay);
        slots.push(tokio::spawn(task));
    }

    let bar = ProgressBar::new(options.duration.as_secs().max(1));
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{elapsed_precise}] {bar:24} {msg}")
            .expect("a valid progress template"),
    );
    bar.set_prefix("ramp-up");
    let ramp_end = Instant::now() + options.ramp_up;
    while Instant::now() < ramp_end {
        bar.set_message(format!("{} matches started", stats.matches_created.load(Ordering::Relaxed)));
        bar.tick();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stats.start_measuring();
    let attack_stats = Arc::new(attack::AttackStats::default());
    let attack_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attack_task = match options.attack {
        Some(kind) => {
            let ws_url = ctx.ws_urls.first().cloned().unwrap_or_default();
            let target = Arc::new(attack::Target::resolve(&ws_url, options.attack_from, ctx.clone()).await?);
            let matches = Arc::new(stats.created_ids().into_iter().rev().collect::<Vec<_>>());
            Some(tokio::spawn(attack::run(
                kind,
                options.attackers,
                target,
                matches,
                attack_stats.clone(),
                attack_stop.clone(),
            )))
        }
        None => None,
    };
    let window = Instant::now();
    let mut tracker = Tracker::start(options.watch.clone());
    bar.set_prefix(options.scenario.name());
    let mut chaos = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        tracker = sample(tracker, false).await?;
        let elapsed = window.elapsed();
        let moves = stats.moves.load(Ordering::Relaxed);
        let finished = stats.matches_finished.load(Ordering::Relaxed);
        bar.set_position(elapsed.as_secs());
        bar.set_message(format!(
            "{:.0} moves/s, view p99 {:.1} ms, {finished} matches finished, {} errors",
            moves as f64 / elapsed.as_secs_f64(),
            stats.p99_ms(Latency::CommandToView),
            stats.errors_total()
        ));
        if options.scenario == Scenario::Chaos
            && chaos.is_none()
            && elapsed >= options.chaos_after
            && let Some(file) = &options.chaos_pids_file
        {
            let pid = kill(file, &options.chaos_kill)?;
            bar.println(format!(
                "chaos: SIGKILLed {} (pid {pid}) at {:.1} s",
                options.chaos_kill,
                elapsed.as_secs_f64()
            ));
            chaos = Some(json!({
                "killed": options.chaos_kill,
                "pid": pid,
                "atSecond": elapsed.as_secs_f64(),
                "movesBefore": moves,
            }));
        }
        let done = match options.match_count {
            Some(n) => finished >= n,
            None => elapsed >= options.duration,
        };
        if done {
            break;
        }
    }
    let elapsed = window.elapsed().as_secs_f64();
    let moves = stats.moves.load(Ordering::Relaxed);
    let finished = stats.matches_finished.load(Ordering::Relaxed);
    let tracker = sample(tracker, true).await?;
    let processes = tracker.figures();
    let view = stats.percentiles(Latency::CommandToView);
    let ack = stats.percentiles(Latency::CommandToAck);
    let resync = stats.percentiles(Latency::Resync);
    let create = stats.percentiles(Latency::Create);
    bar.finish_and_clear();
    attack_stop.store(true, Ordering::SeqCst);
    if let Some(task) = attack_task {
        // Attackers blocked on a socket the server never answers are abandoned.
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }

    // Stop: every player settles its pending command, so the audit sees no half-known one.
    ctx.stop.store(true, Ordering::SeqCst);
    let settle = futures::future::join_all(slots);
    if tokio::time::timeout(Duration::from_secs(60), settle).await.is_err() {
        eprintln!("some players did not settle within 60 s; auditing anyway");
    }

    let audit = audit(&options, &stats).await?;
    let server_cpu: f64 = processes.values().map(|g| g.cpu_seconds).sum();
    let mut latency_ms = BTreeMap::from([("commandToAck".to_owned(), ack), ("commandToView".to_owned(), view)]);
    if resync.count > 0 {
        latency_ms.insert("resync".into(), resync);
    }
    latency_ms.insert("createMatch".into(), create);
    let summary = Summary {
        server: options.label.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        scenario: options.scenario.name().to_owned(),
        matches: options.matches,
        duration_seconds: (elapsed * 100.0).round() / 100.0,
        moves,
        matches_finished: finished,
        moves_per_second: (moves as f64 / elapsed * 10.0).round() / 10.0,
        server_cpu_seconds: (server_cpu * 1000.0).round() / 1000.0,
        moves_per_server_cpu_second: if server_cpu > 0.0 {
            (moves as f64 / server_cpu * 10.0).round() / 10.0
        } else {
            0.0
        },
        server_peak_rss_bytes: processes.values().map(|g| g.peak_memory_bytes).sum(),
        server_written_bytes_per_move: if moves > 0 {
            (processes.values().map(|g| g.written_bytes).sum::<u64>() as f64 / moves as f64).round()
        } else {
            0.0
        },
        latency_ms,
        errors: stats.errors(),
        matches_created: stats.matches_created.load(Ordering::Relaxed),
        rejected: stats.rejected.load(Ordering::Relaxed),
        reconnects: stats.reconnects.load(Ordering::Relaxed),
        processes,
        audit,
        chaos,
        started_at: Some(report::rfc3339(started_at)),
        view_timeline: Some(stats.timeline()),
        attack: options.attack.map(|kind| attack_stats.json(kind, options.attackers)),
    };
    let text = serde_json::to_string_pretty(&summary)?;
    println!("{text}");
    if let Some(out) = &options.out {
        std::fs::write(out, format!("{text}\n")).with_context(|| format!("write {}", out.display()))?;
    }
    Ok(summary)
}

async fn audit(options: &RunOptions, stats: &Stats) -> anyhow::Result<Option<AuditSummary>> {
    let store: Box<dyn juegoland_store::Store> = match (&options.audit_database_url, &options.audit_data_dir) {
        (Some(url), _) => Box::new(juegoland_store::PgStore::connect(url).await.context("connect the audit store")?),
        (None, Some(dir)) => {
            Box::new(juegoland_store::SqliteStore::open_reader(dir).await.context("open the audit store")?)
        }
        (None, None) => {
            if options.scenario == Scenario::Chaos {
                bail!("the chaos scenario must be audited: give --audit-database-url");
            }
            eprintln!("no store given (--audit-database-url / --audit-data-dir): the run is not audited");
            return Ok(None);
        }
    };
    let registry = juegoland_catalog::registry()?;
    let created: BTreeSet<_> = stats.created_ids();
    let seen = stats.seen();
    let report = juegoland_store::audit::audit(store.as_ref(), &registry, &seen, Some(&created)).await?;
    Ok(Some(AuditSummary {
        passed: report.passed(),
        matches: report.matches,
        receipts_checked: report.receipts_checked,
        log_entries: report.log_entries,
        replayed: report.replayed,
        problems: report.problems.into_iter().take(50).collect(),
    }))
}
