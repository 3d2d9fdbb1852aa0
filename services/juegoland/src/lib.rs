//! The all-in-one composition: every role in one process (the deadline scheduler and the
//! webhook deliverer included), with an embedded store and an in-process bus behind the same
//! traits and code paths the cluster uses.
//!
//! Owns: the command line, the registry of compiled-in games, wiring (engine → host →
//! edge), `replay`, `publish` and the state-migration admin operation (`admin`). Must not use: another service crate.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_bus::{Bus, LocalBus};
use juegoland_core::{Engine, Registry};
use juegoland_edge::{EdgeOptions, EdgeState, GatewayConfig};
use juegoland_roles::{Scheduler, SchedulerMetrics, SchedulerOptions};
use juegoland_store::{MemoryStore, PgStore, SqliteStore, Store};
use tokio::net::TcpListener;
use tracing::info;

pub mod admin;
pub mod cluster;
pub mod dev_secret;
pub mod publish;
pub mod replay;

#[derive(Parser, Debug)]
#[command(name = "juegoland", version, about = "The Juegoland game engine")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run every role in one process and serve the web client, the protocol and the API.
    Dev(DevConfig),
    /// Re-run stored matches from their log and randomness trace with their pinned rules and
    /// report any divergence from the stored state (exit code 1 if any).
    Replay(ReplayConfig),
    /// Apply the store's migrations and exit (the Helm chart's pre-install/pre-upgrade
    /// Job; every role also applies them at start-up).
    Migrate(StoreConfig),
    /// Run a cluster node: match actors for the matches the ring gives it (PostgreSQL).
    Node(juegoland_roles::NodeConfig),
    /// Run a cluster router: the platform API and gRPC front door, forwarding to owners.
    Router(juegoland_roles::RouterConfig),
    /// Run a gateway: the client protocol over WebSocket, through the routers, with
    /// publications from Redis streams.
    Gateway(juegoland_roles::GatewayConfig),
    /// Run a deadline scheduler replica: claims due deadlines in PostgreSQL and fires them
    /// through the routers (any number of replicas may run at once).
    Scheduler(juegoland_roles::SchedulerConfig),
    /// Start a local cluster on loopback: PostgreSQL-backed nodes and routers as child
    /// processes of this binary, restarted if they exit; Ctrl-C drains them all.
    Cluster(cluster::ClusterConfig),
    /// Publish a package directory: the seven steps of spec/packages.md in order (structure
    /// and exact dependencies, files and references, art and translations, the compiled rules
    /// module against the manifest, schemas, conformance, lock and immutable publication).
    Publish(publish::PublishConfig),
    /// Migrate a stored match to another registered rules version of its game (the
    /// state-migration admin operation: validated under the target rules, pinned to the
    /// target's publication, with a backup for `restore-match`). Run it while no server
    /// serves the store.
    MigrateMatch(admin::MigrateMatchConfig),
    /// Restore a migrated match from the backup `migrate-match` wrote, if it has not changed
    /// since.
    RestoreMatch(admin::RestoreMatchConfig),
}

/// Where matches are stored. The embedded SQLite store in a data directory by default
/// (one process at a time: the directory is locked while a process serves it); PostgreSQL
/// when a database URL is given.
#[derive(clap::Args, Debug, Clone)]
pub struct StoreConfig {
    /// Directory of the embedded store and of the dev token secret (created if missing).
    #[arg(long, env = "JUEGOLAND_DATA_DIR", default_value = "data")]
    pub data_dir: std::path::PathBuf,
    /// PostgreSQL URL; when set, PostgreSQL is used instead of the embedded store.
    #[arg(long, env = "JUEGOLAND_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Keep matches in memory only (nothing survives a restart; only the newest 1,000
    /// finished matches are kept).
    #[arg(long, conflicts_with = "database_url")]
    pub in_memory: bool,
}

/// How many finished matches `--in-memory` keeps (and every active one): older finished
/// matches are forgotten whole, so memory stays bounded however long the process runs.
pub const KEEP_FINISHED_IN_MEMORY: usize = 1_000;

impl StoreConfig {
    /// The store, created (with its schema) where there is none yet.
    pub async fn open(&self) -> anyhow::Result<Arc<dyn Store>> {
        if self.in_memory {
            return Ok(Arc::new(MemoryStore::keeping_finished(KEEP_FINISHED_IN_MEMORY)));
        }
        if let Some(url) = &self.database_url {
            let store = PgStore::connect(url).await.context("connect to PostgreSQL")?;
            return Ok(Arc::new(store));
        }
        let store = SqliteStore::open(&self.data_dir)
            .await
            .with_context(|| format!("open the embedded store in {}", self.data_dir.display()))?;
        Ok(Arc::new(store))
    }

    /// The store as it exists: a missing data directory or database file, or a database
    /// without the schema, is an error naming where it looked (nothing is created).
    pub async fn open_existing(&self) -> anyhow::Result<Arc<dyn Store>> {
        if self.in_memory {
            anyhow::bail!("an in-memory store holds nothing to read; give --data-dir or --database-url");
        }
        if let Some(url) = &self.database_url {
            return Ok(Arc::new(PgStore::connect_existing(url).await?));
        }
        let store = SqliteStore::open_existing(&self.data_dir)
            .await
            .with_context(|| format!("open the embedded store in {}", self.data_dir.display()))?;
        Ok(Arc::new(store))
    }

    /// Where the store is, for messages (a database URL without its user and password).
    pub fn location(&self) -> String {
        match &self.database_url {
            Some(url) => {
                match url.split_once("://").and_then(|(scheme, rest)| Some((scheme, rest.rsplit_once('@')?.1))) {
                    Some((scheme, host)) => format!("{scheme}://{host}"),
                    None => url.clone(),
                }
            }
            None => self.data_dir.display().to_string(),
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReplayConfig {
    #[command(flatten)]
    pub store: StoreConfig,
    /// Replay only this match.
    #[arg(long = "match")]
    pub match_id: Option<uuid::Uuid>,
}

/// Settings of `juegoland dev`, each with its default and environment override.
#[derive(clap::Args, Debug, Clone)]
pub struct DevConfig {
    #[command(flatten)]
    pub store: StoreConfig,
    /// Address of the HTTP server (page, API, WebSocket; metrics unless --metrics-http).
    #[arg(long, env = "JUEGOLAND_HTTP", default_value = "127.0.0.1:8080")]
    pub http: SocketAddr,
    /// Host names the server answers besides its loopback ones (localhost, *.localhost,
    /// 127.0.0.1, [::1]); `.example.com` also answers every name under it. On a loopback
    /// address it answers only those, so that a page whose name is pointed at 127.0.0.1 (DNS
    /// rebinding) cannot drive it; on another address, any name unless some are given.
    #[arg(long = "allowed-host", env = "JUEGOLAND_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    #[command(flatten)]
    pub metrics: juegoland_roles::MetricsArgs,
    /// Secret that signs client tokens (HS256). By default one kept in the data directory
    /// (`dev-token-secret`, created on first start), so tokens survive restarts; a random one
    /// per start with `--in-memory`.
    #[arg(long, env = "JUEGOLAND_JWT_SECRET")]
    pub jwt_secret: Option<String>,
    /// Replace the data directory's token secret with a new one (every token issued before
    /// is refused from now on).
    #[arg(long, conflicts_with_all = ["jwt_secret", "in_memory"])]
    pub new_jwt_secret: bool,
    /// Public keys, issuers, audiences and leeway of the tokens the platform's identity
    /// provider signs (the secret above keeps verifying the tokens minted here).
    #[command(flatten)]
    pub token_keys: juegoland_roles::TokenArgs,
    /// Lifetime of issued dev tokens, in seconds.
    #[arg(long, env = "JUEGOLAND_TOKEN_TTL", default_value_t = 86_400)]
    pub token_ttl: u64,
    /// Bearer token the platform back end must present on every platform call (the match
    /// API, the feed, grants; /metrics unless --metrics-http); open when unset. With it, no
    /// dev tokens are minted (`POST /v1/dev/tokens` is not served): players' tokens come
    /// from the platform, signed with --jwt-secret.
    #[arg(long, env = "JUEGOLAND_PLATFORM_TOKEN")]
    pub platform_token: Option<String>,
    /// Seconds without messages before a match actor passivates.
    #[arg(long, env = "JUEGOLAND_IDLE_PASSIVATION", default_value_t = 300)]
    pub idle_passivation: u64,
    /// Seconds between cursors per subscription.
    #[arg(long, env = "JUEGOLAND_CURSOR_INTERVAL", default_value_t = 15)]
    pub cursor_interval: u64,
    /// What a client may do before it is refused or closed (the gateway's flags).
    #[command(flatten)]
    pub limits: juegoland_roles::EdgeLimitsArgs,
    /// Published packages whose public files `GET /v1/packages/…` serves.
    #[command(flatten)]
    pub packages: publish::RegistryConfig,
    /// Webhooks over the platform feed, delivered by this process (the same flags as a
    /// scheduler replica's).
    #[command(flatten)]
    pub webhooks: juegoland_roles::WebhookConfig,
}

/// Logs as structured lines (`RUST_LOG` filters, default `info`; human text unless
/// `JUEGOLAND_LOG_FORMAT=json`, for every subcommand: the deployed `juegoland-*` binaries log
/// JSON by default) and OpenTelemetry spans under the subcommand's service name, exported
/// over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`libs/telemetry` lists every variable).
/// Hold the guard for the life of the process.
pub fn init_tracing(command: &Command) -> juegoland_telemetry::Guard {
    let service_name = match command {
        Command::Dev(_) => "juegoland-dev",
        Command::Replay(_) => "juegoland-replay",
        Command::Migrate(_) => "juegoland-migrate",
        Command::Node(_) => "juegoland-node",
        Command::Router(_) => "juegoland-router",
        Command::Gateway(_) => "juegoland-gateway",
        Command::Scheduler(_) => "juegoland-scheduler",
        Command::Cluster(_) => "juegoland-cluster",
        Command::Publish(_) => "juegoland-publish",
        Command::MigrateMatch(_) => "juegoland-migrate-match",
        Command::RestoreMatch(_) => "juegoland-restore-match",
    };
    juegoland_telemetry::init(service_name)
}

/// Every game compiled into this binary (the shared catalog).
pub fn registry() -> anyhow::Result<Registry> {
    juegoland_catalog::registry().context("register the games")
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Dev(config) => dev(config, registry()?).await,
        Command::Replay(config) => replay_command(config).await,
        Command::Migrate(store) => {
            store.open().await?;
            println!("migrations applied");
            Ok(())
        }
        Command::Node(config) => juegoland_roles::run_node(config, registry()?).await,
        Command::Router(config) => juegoland_roles::run_router(config, registry()?).await,
        Command::Gateway(config) => juegoland_roles::run_gateway(config, registry()?).await,
        Command::Scheduler(config) => juegoland_roles::run_scheduler(config, registry()?).await,
        Command::Cluster(config) => cluster::run(config).await,
        Command::Publish(config) => publish::run(config, &registry()?),
        Command::MigrateMatch(config) => admin::migrate_command(config, registry()?).await,
        Command::RestoreMatch(config) => admin::restore_command(config, registry()?).await,
    }
}

async fn replay_command(config: ReplayConfig) -> anyhow::Result<()> {
    let store = config.store.open_existing().await?;
    let registry = registry()?;
    let results = replay::replay(store.as_ref(), &registry, config.match_id).await.context("read the store")?;
    if results.is_empty() {
        // Nothing replayed is not a pass: a typo'd or fresh store proves nothing.
        anyhow::bail!("the store at {} holds no matches: nothing to replay", config.store.location());
    }
    let mut diverged = 0;
    for r in &results {
        match &r.result {
            Ok(()) => println!("ok        {} revision {}", r.match_id, r.revision),
            Err(e) => {
                diverged += 1;
                println!("DIVERGED  {} revision {}: {e}", r.match_id, r.revision);
            }
        }
    }
    println!("{} matches replayed, {diverged} diverged", results.len());
    if diverged > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// `juegoland dev` with the rules modules of `registry` (the binary passes [`registry`]; a
/// test may add a rules version the catalog does not ship). Serves until Ctrl-C.
pub async fn dev(config: DevConfig, registry: Registry) -> anyhow::Result<()> {
    // Matches pin the packages published in the registry the resources API serves.
    let published = Arc::new(juegoland_roles::PublishedDir::new(&config.packages.registry));
    let engine = Arc::new(Engine::new(Arc::new(registry)).with_packages(published));
    let prometheus = prometheus::Registry::new();
    juegoland_roles::register_process_metrics(&prometheus, "dev").context("register process metrics")?;
    let metrics = Metrics::new(&prometheus).context("register metrics")?;
    let host_config =
        HostConfig { idle_passivation: Duration::from_secs(config.idle_passivation), ..Default::default() };
    let store = config.store.open().await?;
    let directory = Arc::new(juegoland_store::listing::Directory(store.clone()));
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::default());
    let host =
        Host::start(engine, store.clone(), bus.clone(), metrics, host_config).await.context("start the match host")?;
    // The deadline scheduler runs in process: it claims due deadlines in this store and fires
    // them through the host, as a scheduler replica fires through the routers.
    let scheduler_metrics = SchedulerMetrics::new(&prometheus).context("register scheduler metrics")?;
    // So does the webhook deliverer: it holds every endpoint's lease, as a replica would.
    let webhooks = config.webhooks.start(store.clone(), ALL_IN_ONE, &prometheus)?;
    let scheduler =
        Scheduler::start(store.clone(), Arc::new(host.clone()), SchedulerOptions::new(ALL_IN_ONE), scheduler_metrics);
    // After the store: its directory lock means no other process writes the secret.
    let secret = match &config.jwt_secret {
        Some(s) => s.as_bytes().to_vec(),
        None if config.store.in_memory => dev_secret::random()?,
        None => dev_secret::load_or_create(&config.store.data_dir, config.new_jwt_secret)?,
    };
    let options = EdgeOptions {
        dev: true,
        metrics: config.metrics.on_edge(),
        platform_api: true,
        platform_token: config.platform_token.clone(),
        gateway: GatewayConfig {
            cursor_interval: Duration::from_secs(config.cursor_interval),
            limits: config.limits.limits(),
            ..Default::default()
        },
        packages: Some(config.packages.registry.clone()),
        directory: Some(directory),
        allowed_hosts: allowed_hosts(config.http, &config.allowed_hosts),
        // Endpoints registered here are delivered by this process's deliverer (above).
        webhooks: Some(Arc::new(juegoland_roles::webhook_admin::StoreWebhooks::new(
            store.clone(),
            Duration::from_millis(config.webhooks.webhook_timeout_ms),
        ))),
    };
    let edge = EdgeState::new(
        Arc::new(host.clone()),
        Some(bus),
        config.token_keys.tokens(Some(&secret), config.token_ttl).await?,
        prometheus.clone(),
        options,
    )
    .context("register edge metrics")?;
    let listener = TcpListener::bind(config.http).await.with_context(|| format!("bind {}", config.http))?;
    let addr = listener.local_addr()?;
    let stop = tokio_util::sync::CancellationToken::new();
    let ops = config.metrics.serve(prometheus, stop.clone().cancelled_owned()).await?;
    info!(%addr, "juegoland dev is listening; open http://{addr}/");
    // Tests and scripts read this line to find the ports when started with port 0.
    let metrics_at = ops.as_ref().map(|(metrics, _)| format!(" metrics http://{metrics}/")).unwrap_or_default();
    println!("listening on http://{addr}/{metrics_at}");
    juegoland_edge::serve(listener, edge, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .context("serve")?;
    stop.cancel();
    if let Some((_, task)) = ops {
        let _ = task.await;
    }
    scheduler.stop().await;
    webhooks.stop().await;
    host.stop().await;
    Ok(())
}

/// The host names the all-in-one answers: its loopback names, its own address and `extra`
/// when it listens on a loopback address or `extra` names some; any otherwise.
fn allowed_hosts(listen: SocketAddr, extra: &[String]) -> Option<Vec<String>> {
    if !listen.ip().is_loopback() && extra.is_empty() {
        return None;
    }
    let own = match listen.ip() {
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    let loopback = ["localhost", ".localhost", "127.0.0.1", "[::1]"].map(str::to_owned);
    Some(loopback.into_iter().chain([own]).chain(extra.iter().cloned()).collect())
}

/// The all-in-one's name in the store's deadline claims and webhook leases.
const ALL_IN_ONE: &str = "all-in-one";
