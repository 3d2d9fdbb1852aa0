//! The node, router, gateway and scheduler processes: typed configuration (defaults and
//! environment overrides next to each field), start-up, the drain on SIGTERM and the
//! self-fence on a lost lease. `services/node`, `services/router`, `services/gateway`,
//! `services/scheduler` and the `juegoland node|router|gateway|scheduler` subcommands all
//! run these functions.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::routing::get;
use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_bus::{Bus, LocalBus, NearBus, Owns, RedisBus, RedisBusConfig};
use juegoland_core::{Engine, Registry};
use juegoland_edge::{EdgeLimits, EdgeOptions, EdgeState, Tokens};
use juegoland_rpc::pb;
use juegoland_store::PgStore;
use sqlx::postgres::PgPoolOptions;
use tokio::net::TcpListener;
use tracing::{error, info, warn};

use crate::node::{Nearby, NodeMetrics, NodeService};
use crate::router::{Forwarder, RetryBudget, RouterCalls, RouterMetrics, RouterService};
use crate::scheduler::{Scheduler, SchedulerMetrics, SchedulerOptions};
use juegoland_cluster::{Heartbeat, Membership, join};

/// Settings of a node process.
#[derive(clap::Args, Debug, Clone)]
pub struct NodeConfig {
    /// This node's stable name (in Kubernetes, the StatefulSet pod name).
    #[arg(long, env = "JUEGOLAND_NODE_ID")]
    pub node_id: String,
    /// Address the node's gRPC server listens on.
    #[arg(long, env = "JUEGOLAND_GRPC", default_value = "127.0.0.1:7100")]
    pub grpc: SocketAddr,
    /// URL routers use to reach this node (default: `http://` + the gRPC address).
    #[arg(long, env = "JUEGOLAND_ADVERTISE")]
    pub advertise: Option<String>,
    /// Address of the HTTP server for /metrics, /healthz and /readyz.
    #[arg(long, env = "JUEGOLAND_HTTP", default_value = "127.0.0.1:9100")]
    pub http: SocketAddr,
    /// PostgreSQL URL: the store and the membership registry.
    #[arg(long, env = "JUEGOLAND_DATABASE_URL")]
    pub database_url: String,
    /// Redis URL of the publication streams the gateways read; without it publications
    /// stay in this process (a node with no gateway, as in tests of the platform API).
    #[arg(long, env = "JUEGOLAND_REDIS_URL")]
    pub redis_url: Option<String>,
    /// The secret nodes and gateways share to authenticate the publication streams (at
    /// least 32 bytes): nodes tag every entry, gateways deliver only tagged ones. Without it
    /// the streams are not authenticated (anyone who can write to Redis can forge a
    /// revision), which the process warns about.
    #[arg(long, env = "JUEGOLAND_BUS_SECRET", hide_env_values = true)]
    pub bus_secret: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Seconds a match's stream outlives its last publication (Redis `EXPIRE`); finished
    /// matches' streams go after this. 0 keeps streams forever.
    #[arg(long, env = "JUEGOLAND_STREAM_TTL_SECS", default_value_t = 600)]
    pub stream_ttl_secs: u64,
    /// Connections of the store's pool (commits share transactions, so a few suffice).
    #[arg(long, env = "JUEGOLAND_DATABASE_POOL", default_value_t = 16)]
    pub database_pool: u32,
    /// Lease time to live, in milliseconds: a node silent this long leaves the ring.
    #[arg(long, env = "JUEGOLAND_LEASE_TTL_MS", default_value_t = 2_000)]
    pub lease_ttl_ms: u64,
    /// How often the ring is re-read from the registry, in milliseconds.
    #[arg(long, env = "JUEGOLAND_MEMBERSHIP_REFRESH_MS", default_value_t = 250)]
    pub membership_refresh_ms: u64,
    /// Seconds without messages before a match actor passivates.
    #[arg(long, env = "JUEGOLAND_IDLE_PASSIVATION", default_value_t = 300)]
    pub idle_passivation: u64,
    /// Deadlines of active matches due within this many milliseconds fire from a local timer
    /// (the fast path; the durable scheduler stays the authority). 0 turns it off.
    #[arg(long, env = "JUEGOLAND_LOCAL_DEADLINE_HORIZON_MS", default_value_t = 60_000)]
    pub local_deadline_horizon_ms: u64,
    /// The registry directory of published packages (`juegoland publish --registry`): a
    /// match created on a published game pins its lock digest, and a pinned match is loaded
    /// only while that exact publication is there. Without it nothing is pinned, and pinned
    /// matches are refused.
    #[arg(long, env = "JUEGOLAND_REGISTRY")]
    pub registry: Option<std::path::PathBuf>,
    /// Address of this node's own client edge (the protocol at /v1/ws and /socket.io, as a
    /// gateway serves it): the matches this node owns are served in process, with no gRPC
    /// hop and no stream read; the others through their owners, as a gateway serves them.
    /// Needs --redis-url and a token secret or public key. Off when unset.
    #[arg(long, env = "JUEGOLAND_EDGE_HTTP")]
    pub edge_http: Option<SocketAddr>,
    /// The base URL clients reach this node's own edge at (a pod's public address), given
    /// as `clientUrl` in the platform API's reads of the matches this node owns; default:
    /// `http://` + the --edge-http address.
    #[arg(long, env = "JUEGOLAND_EDGE_ADVERTISE", requires = "edge_http")]
    pub edge_advertise: Option<String>,
    /// How the node's own edge serves clients (with --edge-http).
    #[command(flatten)]
    pub clients: ClientEdgeArgs,
}

/// Settings of a router process.
#[derive(clap::Args, Debug, Clone)]
pub struct RouterConfig {
    /// Address the router's gRPC server listens on.
    #[arg(long, env = "JUEGOLAND_GRPC", default_value = "127.0.0.1:7000")]
    pub grpc: SocketAddr,
    /// Address of the HTTP server: the platform API, /healthz, /readyz (and /metrics, behind
    /// the platform token, unless --metrics-http serves them).
    #[arg(long, env = "JUEGOLAND_HTTP", default_value = "127.0.0.1:8080")]
    pub http: SocketAddr,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub routing: RoutingConfig,
    /// Bearer token the platform must present on create/withdraw; open when unset.
    #[arg(long, env = "JUEGOLAND_PLATFORM_TOKEN")]
    pub platform_token: Option<String>,
    /// The registry directory of published packages (the nodes' `--registry`): the router
    /// then serves the public resources API (`GET /v1/packages/{id}`, `…/{version}`,
    /// `…/{version}/{path}`). Without it those paths are not served here.
    #[arg(long, env = "JUEGOLAND_REGISTRY")]
    pub registry: Option<std::path::PathBuf>,
}

/// Where a process that serves an edge (the all-in-one, a router, a gateway) serves its
/// metrics. A listener of their own is the production practice: a port no public Service
/// or Ingress exposes, scraped from inside the cluster (the chart does this).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Address of a listener of the process's own for /metrics, /healthz and /readyz; the
    /// public listener then serves no /metrics. Unset: /metrics is served on the public
    /// listener, behind the platform token where one is set.
    #[arg(long, env = "JUEGOLAND_METRICS_HTTP")]
    pub metrics_http: Option<SocketAddr>,
}

impl MetricsArgs {
    /// Whether the public listener serves /metrics.
    pub fn on_edge(&self) -> bool {
        self.metrics_http.is_none()
    }

    /// Binds the metrics listener, if one is asked for, and serves [`ops_routes`] on it until
    /// `stop` resolves; answers its address.
    pub async fn serve(
        &self,
        registry: prometheus::Registry,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<Option<(SocketAddr, tokio::task::JoinHandle<()>)>> {
        let Some(addr) = self.metrics_http else { return Ok(None) };
        let listener = TcpListener::bind(addr).await.with_context(|| format!("bind {addr} (metrics)"))?;
        let bound = listener.local_addr()?;
        let routes = ops_routes(registry, Arc::new(std::sync::atomic::AtomicBool::new(true)));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, routes).with_graceful_shutdown(stop).await {
                error!(error = %e, "the metrics listener failed");
            }
        });
        Ok(Some((bound, task)))
    }
}

/// How a router or a gateway reaches a match's owner: the ring of live nodes from the
/// membership registry, and retries across NOT_OWNER / UNAVAILABLE.
#[derive(clap::Args, Debug, Clone)]
pub struct RoutingConfig {
    /// PostgreSQL URL of the membership registry.
    #[arg(long, env = "JUEGOLAND_DATABASE_URL")]
    pub database_url: String,
    /// How often the ring is re-read from the registry, in milliseconds.
    #[arg(long, env = "JUEGOLAND_MEMBERSHIP_REFRESH_MS", default_value_t = 250)]
    pub membership_refresh_ms: u64,
    /// How long one call is retried across NOT_OWNER / UNAVAILABLE, in milliseconds.
    #[arg(long, env = "JUEGOLAND_RETRY_BUDGET_MS", default_value_t = 8_000)]
    pub retry_budget_ms: u64,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// The cluster secret every role shares to authenticate its gRPC calls to the others
/// (`credential.rs`).
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    /// The secret nodes, routers, gateways and schedulers share (at least 32 bytes): each
    /// stamps its gRPC calls with a credential made with it, and a node answers, and a router
    /// acts for a principal or the engine, only on such calls. Without it the gRPC ports
    /// trust their network (the process warns).
    #[arg(long, env = "JUEGOLAND_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
}

impl ClusterArgs {
    /// The key, checked; `None` (warned about) without a secret.
    pub fn key(&self) -> anyhow::Result<Option<juegoland_rpc::credential::ClusterKey>> {
        match &self.cluster_secret {
            Some(secret) => Ok(Some(
                juegoland_rpc::credential::ClusterKey::new(secret.as_bytes())
                    .map_err(|why| anyhow::anyhow!("--cluster-secret: {why}"))?,
            )),
            None => {
                warn!("the cluster's gRPC calls are not authenticated: set --cluster-secret on every role");
                Ok(None)
            }
        }
    }

    /// This process's credential on its calls, as `role`.
    pub fn caller(&self, role: juegoland_rpc::credential::Role) -> anyhow::Result<Option<crate::router::Caller>> {
        Ok(self.key()?.map(|key| crate::router::Caller { key, role }))
    }
}

/// Settings of a gateway process.
#[derive(clap::Args, Debug, Clone)]
pub struct GatewayConfig {
    /// Address of the HTTP server: the protocol at /v1/ws, /v1/games, /healthz (and
    /// /metrics, unless --metrics-http serves them).
    #[arg(long, env = "JUEGOLAND_HTTP", default_value = "127.0.0.1:8090")]
    pub http: SocketAddr,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// Where the matches are: the gateway places them on the ring of live nodes, as the
    /// routers do, and calls their owners directly.
    #[command(flatten)]
    pub routing: RoutingConfig,
    /// Redis URL of the publication streams.
    #[arg(long, env = "JUEGOLAND_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// The secret nodes and gateways share to authenticate the publication streams (at
    /// least 32 bytes): nodes tag every entry, gateways deliver only tagged ones. Without it
    /// the streams are not authenticated (anyone who can write to Redis can forge a
    /// revision), which the process warns about.
    #[arg(long, env = "JUEGOLAND_BUS_SECRET", hide_env_values = true)]
    pub bus_secret: Option<String>,
    #[command(flatten)]
    pub clients: ClientEdgeArgs,
}

/// How an edge serves clients (a gateway, or a node serving its own): how tokens are
/// verified, cursors, limits.
#[derive(clap::Args, Debug, Clone)]
pub struct ClientEdgeArgs {
    /// Secret that verifies client tokens (HS256), shared with whoever issues them.
    #[arg(long, env = "JUEGOLAND_JWT_SECRET")]
    pub jwt_secret: Option<String>,
    /// Public keys, issuers, audiences and leeway of client tokens.
    #[command(flatten)]
    pub token_keys: TokenArgs,
    /// Seconds between cursors per subscription.
    #[arg(long, env = "JUEGOLAND_CURSOR_INTERVAL", default_value_t = 15)]
    pub cursor_interval: u64,
    /// What a client may do before it is refused or closed.
    #[command(flatten)]
    pub limits: EdgeLimitsArgs,
}

/// How client tokens are verified besides a shared secret: the identity provider's public
/// key or JWKS, the issuers and audiences a token must name, and the clock skew tolerated.
/// The same flags on the all-in-one, a gateway and a node's own edge.
#[derive(clap::Args, Debug, Clone)]
pub struct TokenArgs {
    /// PEM public key that verifies client tokens (EdDSA, RS256 or ES256; production: only
    /// the platform's identity service holds the private key).
    #[arg(long, env = "JUEGOLAND_JWT_PUBLIC_KEY_FILE")]
    pub jwt_public_key_file: Option<std::path::PathBuf>,
    /// URL of the identity provider's JWKS (its public keys by `kid`, e.g.
    /// `https://TENANT.auth0.com/.well-known/jwks.json`): read at start, every
    /// --jwks-refresh-secs, and again when a token names a key not held (a rotation).
    #[arg(long, env = "JUEGOLAND_JWKS_URL")]
    pub jwks_url: Option<String>,
    /// Seconds between two reads of the JWKS.
    #[arg(long, env = "JUEGOLAND_JWKS_REFRESH_SECS", default_value_t = 300)]
    pub jwks_refresh_secs: u64,
    /// The issuers (`iss`) a token may come from, comma-separated; when set, a token must
    /// name one. Unset: any issuer.
    #[arg(long, env = "JUEGOLAND_JWT_ISSUER", value_delimiter = ',')]
    pub jwt_issuer: Vec<String>,
    /// The audiences (`aud`) a token must name one of, comma-separated. Unset: any audience,
    /// and tokens without one.
    #[arg(long, env = "JUEGOLAND_JWT_AUDIENCE", value_delimiter = ',')]
    pub jwt_audience: Vec<String>,
    /// Seconds of clock skew tolerated on a token's `exp` and `nbf`.
    #[arg(long, env = "JUEGOLAND_JWT_LEEWAY_SECS", default_value_t = juegoland_edge::auth::DEFAULT_LEEWAY_SECS)]
    pub jwt_leeway_secs: u64,
}

/// The streams' secret from `--bus-secret`, checked; `None` (warned about) without one.
fn bus_secret(secret: Option<&str>) -> anyhow::Result<Option<juegoland_bus::BusSecret>> {
    match secret {
        Some(secret) => Ok(Some(juegoland_bus::BusSecret::new(secret.as_bytes()).context("--bus-secret")?)),
        None => {
            warn!("the publication streams are not authenticated: set --bus-secret on nodes and gateways");
            Ok(None)
        }
    }
}

/// The shortest token secret (HS256) a process starts with: 256 bits, SHA-256's output.
pub const MIN_SECRET_BYTES: usize = 32;

impl TokenArgs {
    /// What verifies client tokens: `secret` (HS256, which also mints tokens valid for
    /// `ttl_secs`), the public key's file and the JWKS, whichever are given (at least one),
    /// with the issuers, audiences and leeway.
    pub async fn tokens(&self, secret: Option<&[u8]>, ttl_secs: u64) -> anyhow::Result<Tokens> {
        if let Some(secret) = secret {
            // A shorter HS256 key falls to an offline search over one captured token.
            anyhow::ensure!(
                secret.len() >= MIN_SECRET_BYTES,
                "--jwt-secret: an HS256 secret is at least {MIN_SECRET_BYTES} bytes, this one is {} (`openssl rand \
                 -hex 32` makes one)",
                secret.len()
            );
        }
        let mut tokens = match secret {
            Some(secret) => Tokens::new(secret, ttl_secs).context("token keys")?,
            None => Tokens::none(ttl_secs),
        };
        if let Some(path) = &self.jwt_public_key_file {
            let pem = std::fs::read(path).with_context(|| format!("read {}", path.display()))?;
            tokens = tokens.and_public_key(&pem).context("the token public key")?;
        }
        if let Some(url) = &self.jwks_url {
            let refresh = Duration::from_secs(self.jwks_refresh_secs.max(1));
            tokens = tokens.and_key_set(crate::jwks::JwksKeys::start(url, refresh).await?);
        }
        anyhow::ensure!(
            secret.is_some() || self.jwt_public_key_file.is_some() || self.jwks_url.is_some(),
            "serving clients needs a way to verify tokens: --jwt-secret, --jwt-public-key-file or --jwks-url"
        );
        Ok(tokens.verifying(juegoland_edge::Verification {
            issuers: self.jwt_issuer.clone(),
            audiences: self.jwt_audience.clone(),
            leeway_secs: self.jwt_leeway_secs,
        }))
    }
}

impl ClientEdgeArgs {
    /// What verifies client tokens (a gateway or a node mints none it would use, so a short
    /// lifetime).
    async fn tokens(&self) -> anyhow::Result<Tokens> {
        self.token_keys.tokens(self.jwt_secret.as_deref().map(str::as_bytes), 60).await
    }

    /// The client edge over `matches` and `bus` (no platform API: routers serve it), serving
    /// `/metrics` too when `metrics`, and the handle that closes its sessions.
    async fn edge(
        &self,
        matches: Arc<dyn juegoland_api::Matches>,
        bus: Arc<dyn Bus>,
        prometheus: prometheus::Registry,
        metrics: bool,
    ) -> anyhow::Result<(EdgeState, juegoland_edge::Shutdown)> {
        let tokens = self.tokens().await?;
        let shutdown = juegoland_edge::Shutdown::default();
        let options = EdgeOptions {
            dev: false,
            metrics,
            platform_api: false,
            platform_token: None,
            gateway: juegoland_edge::GatewayConfig {
                cursor_interval: Duration::from_secs(self.cursor_interval),
                limits: self.limits.limits(),
                presence_renew: juegoland_api::PRESENCE_RENEW,
                shutdown: shutdown.clone(),
            },
            packages: None,
            directory: None,
            webhooks: None,
            allowed_hosts: None,
        };
        let edge = EdgeState::new(matches, Some(bus), tokens, prometheus, options).context("register edge metrics")?;
        Ok((edge, shutdown))
    }
}

/// Serves clients on `listener` until `stop`; then their sessions close first — WebSocket
/// close frames, Socket.IO close packets — so they reconnect elsewhere at once; then HTTP
/// stops.
async fn serve_clients(
    listener: TcpListener,
    edge: EdgeState,
    shutdown: juegoland_edge::Shutdown,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let stopping = async move {
        stop.await;
        let open = shutdown.close_sessions(Duration::from_secs(5)).await;
        if open > 0 {
            warn!(sessions = open, "client sessions still open after the grace period; dropping them");
        }
    };
    juegoland_edge::serve(listener, edge, stopping).await?;
    Ok(())
}

/// The edge's limits as flags (`juegoland_edge::EdgeLimits`, whose docs say what each does;
/// the defaults are its defaults), shared by a gateway and the all-in-one.
#[derive(clap::Args, Debug, Clone)]
pub struct EdgeLimitsArgs {
    /// Open client connections (WebSocket and Socket.IO) per process; beyond it an upgrade
    /// gets 503 with Retry-After.
    #[arg(long, env = "JUEGOLAND_MAX_CONNECTIONS", default_value_t = EdgeLimits::default().max_connections)]
    pub max_connections: usize,
    /// Open client connections per remote IP address (behind a proxy that does not keep the
    /// client's address, raise it: every client then shares the proxy's).
    #[arg(long, env = "JUEGOLAND_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = EdgeLimits::default().max_connections_per_address)]
    pub max_connections_per_address: usize,
    /// Open client connections per principal (its tabs and devices; an agent seat counts as
    /// one, spectators are bounded by address only).
    #[arg(long, env = "JUEGOLAND_MAX_CONNECTIONS_PER_PRINCIPAL", default_value_t = EdgeLimits::default().max_connections_per_principal)]
    pub max_connections_per_principal: usize,
    /// Connections of one remote IP address closed for abuse (an oversized message, a
    /// sustained rate) per minute, on average, before its new connections get 429 with
    /// Retry-After (0: never).
    #[arg(long, env = "JUEGOLAND_ABUSIVE_CLOSES_PER_MINUTE", default_value_t = EdgeLimits::default().abusive_closes_per_minute)]
    pub abusive_closes_per_minute: u32,
    /// Connections of one remote IP address closed for abuse at once before its new
    /// connections are refused.
    #[arg(long, env = "JUEGOLAND_ABUSIVE_CLOSE_BURST", default_value_t = EdgeLimits::default().abusive_close_burst)]
    pub abusive_close_burst: u32,
    /// Milliseconds a client may take to send an HTTP request head (slowloris).
    #[arg(long, env = "JUEGOLAND_HEAD_TIMEOUT_MS", default_value_t = millis(EdgeLimits::default().head_timeout))]
    pub head_timeout_ms: u64,
    /// How long a client may take to send a JSON body once its head arrived, in
    /// milliseconds; then 408.
    #[arg(long, env = "JUEGOLAND_BODY_TIMEOUT_MS", default_value_t = millis(EdgeLimits::default().body_timeout))]
    pub body_timeout_ms: u64,
    /// New Socket.IO (engine.io) sessions per second per remote IP address, on average
    /// (beyond it a handshake gets 429); a session that joins nothing within the head timeout
    /// is closed.
    #[arg(long, env = "JUEGOLAND_SESSIONS_PER_SECOND", default_value_t = EdgeLimits::default().sessions_per_second)]
    pub sessions_per_second: u32,
    /// New Socket.IO sessions per remote IP address at once.
    #[arg(long, env = "JUEGOLAND_SESSION_BURST", default_value_t = EdgeLimits::default().session_burst)]
    pub session_burst: u32,
    /// Open HTTP connections per remote IP address (one more is closed at once; behind a
    /// proxy that does not keep the client's address, raise it).
    #[arg(long, env = "JUEGOLAND_MAX_HTTP_CONNECTIONS_PER_ADDRESS", default_value_t = EdgeLimits::default().max_http_connections_per_address)]
    pub max_http_connections_per_address: usize,
    /// Milliseconds between the server's pings on a WebSocket (engine.io's ping interval).
    #[arg(long, env = "JUEGOLAND_PING_INTERVAL_MS", default_value_t = millis(EdgeLimits::default().ping_interval))]
    pub ping_interval_ms: u64,
    /// Milliseconds a WebSocket may go without a complete message or pong before it is
    /// closed with 1008 (engine.io's ping timeout).
    #[arg(long, env = "JUEGOLAND_IDLE_TIMEOUT_MS", default_value_t = millis(EdgeLimits::default().idle_timeout))]
    pub idle_timeout_ms: u64,
    /// Outgoing messages queued per connection; a client that lets it overflow is closed.
    #[arg(long, env = "JUEGOLAND_OUTGOING_QUEUE", default_value_t = EdgeLimits::default().outgoing_queue)]
    pub outgoing_queue: usize,
    /// The largest WebSocket message in bytes (a fragmented one counted whole); beyond it 1009.
    #[arg(long, env = "JUEGOLAND_MAX_MESSAGE_BYTES", default_value_t = EdgeLimits::default().max_message_bytes)]
    pub max_message_bytes: usize,
    /// Client messages per second per connection, on average.
    #[arg(long, env = "JUEGOLAND_RATE_LIMIT", default_value_t = EdgeLimits::default().messages_per_second)]
    pub rate_limit: u32,
    /// Client messages a connection may send in a burst.
    #[arg(long, env = "JUEGOLAND_RATE_BURST", default_value_t = EdgeLimits::default().burst)]
    pub rate_burst: u32,
    /// How far a connection's RATE_LIMITED answers may outrun the rate before it is closed.
    #[arg(long, env = "JUEGOLAND_RATE_SUSTAINED", default_value_t = EdgeLimits::default().sustained_refusals)]
    pub rate_sustained: u32,
    /// Live subscriptions per connection; another sync is answered RATE_LIMITED.
    #[arg(long, env = "JUEGOLAND_MAX_SUBSCRIPTIONS", default_value_t = EdgeLimits::default().max_subscriptions)]
    pub max_subscriptions: usize,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl EdgeLimitsArgs {
    /// The limits these flags say.
    pub fn limits(&self) -> EdgeLimits {
        EdgeLimits {
            max_connections: self.max_connections,
            max_connections_per_address: self.max_connections_per_address,
            max_connections_per_principal: self.max_connections_per_principal,
            abusive_closes_per_minute: self.abusive_closes_per_minute,
            abusive_close_burst: self.abusive_close_burst,
            head_timeout: Duration::from_millis(self.head_timeout_ms),
            body_timeout: Duration::from_millis(self.body_timeout_ms),
            sessions_per_second: self.sessions_per_second,
            session_burst: self.session_burst,
            max_http_connections_per_address: self.max_http_connections_per_address,
            ping_interval: Duration::from_millis(self.ping_interval_ms),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            outgoing_queue: self.outgoing_queue,
            max_message_bytes: self.max_message_bytes,
            messages_per_second: self.rate_limit,
            burst: self.rate_burst,
            sustained_refusals: self.rate_sustained,
            max_subscriptions: self.max_subscriptions,
        }
    }
}

/// Settings of a scheduler process.
#[derive(clap::Args, Debug, Clone)]
pub struct SchedulerConfig {
    /// The routers' gRPC URLs, comma-separated (`http://127.0.0.1:7000,http://127.0.0.1:7001`):
    /// deadlines are fired through them.
    #[arg(long, env = "JUEGOLAND_ROUTERS", value_delimiter = ',', required = true)]
    pub routers: Vec<String>,
    /// PostgreSQL URL of the store, where due deadlines are claimed.
    #[arg(long, env = "JUEGOLAND_DATABASE_URL")]
    pub database_url: String,
    /// Address of the HTTP server for /metrics, /healthz and /readyz.
    #[arg(long, env = "JUEGOLAND_HTTP", default_value = "127.0.0.1:9200")]
    pub http: SocketAddr,
    /// This replica's name in the claims it takes (in Kubernetes, the pod name); a random
    /// `scheduler-…` by default. Replicas running at once need distinct names.
    #[arg(long, env = "JUEGOLAND_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// The longest sleep between two polls, in milliseconds (the loop wakes sooner for a
    /// deadline it knows is due sooner).
    #[arg(long, env = "JUEGOLAND_SCHEDULER_POLL_MS", default_value_t = 250)]
    pub poll_interval_ms: u64,
    /// The most deadlines claimed per poll.
    #[arg(long, env = "JUEGOLAND_SCHEDULER_BATCH", default_value_t = 256)]
    pub batch: usize,
    /// How long a claim keeps other replicas away, in milliseconds: longer than a firing
    /// may take (the routers' retry budget), and the back-off of a failed firing.
    #[arg(long, env = "JUEGOLAND_SCHEDULER_LEASE_MS", default_value_t = 10_000)]
    pub lease_ms: u64,
    /// The most firings in flight at once.
    #[arg(long, env = "JUEGOLAND_SCHEDULER_CONCURRENCY", default_value_t = 64)]
    pub concurrency: usize,
    /// Connections of the store's pool (claims and counts only).
    #[arg(long, env = "JUEGOLAND_DATABASE_POOL", default_value_t = 4)]
    pub database_pool: u32,
    /// Milliseconds past a deadline's due instant left to the owning node's local timer
    /// before this replica claims it (0 when nodes run without local timers).
    #[arg(long, env = "JUEGOLAND_SCHEDULER_GRACE_MS", default_value_t = 200)]
    pub grace_ms: u64,
    /// The webhook endpoints this replica delivers the platform feed to (each held by one
    /// replica at a time).
    #[command(flatten)]
    pub webhooks: WebhookConfig,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Webhooks over the platform feed (`crate::webhooks`): one endpoint from flags, or several
/// from a file (`crate::webhook_config` describes it); none by default. The same settings in
/// the all-in-one (`juegoland dev`) and on every scheduler replica.
#[derive(clap::Args, Debug, Clone)]
pub struct WebhookConfig {
    /// One webhook endpoint's URL (http:// or https://), delivered as the endpoint `default`;
    /// several endpoints go in --webhooks-file.
    #[arg(long = "webhook", env = "JUEGOLAND_WEBHOOK_URL", conflicts_with = "webhooks_file")]
    pub webhook_url: Option<String>,
    /// The secret that signs --webhook's deliveries (HMAC-SHA256).
    #[arg(long, env = "JUEGOLAND_WEBHOOK_SECRET", hide_env_values = true, requires = "webhook_url")]
    pub webhook_secret: Option<String>,
    /// A file holding --webhook's secret (its trailing whitespace ignored).
    #[arg(long, env = "JUEGOLAND_WEBHOOK_SECRET_FILE", conflicts_with = "webhook_secret", requires = "webhook_url")]
    pub webhook_secret_file: Option<std::path::PathBuf>,
    /// Only these feed kinds go to --webhook (comma-separated: created, seatChanged,
    /// finished, cancelled); every kind by default.
    #[arg(long, env = "JUEGOLAND_WEBHOOK_KINDS", value_delimiter = ',', requires = "webhook_url")]
    pub webhook_kinds: Vec<String>,
    /// A JSON file listing the webhook endpoints: {"endpoints": [{"id", "url", "secret" or
    /// "secretFile", "kinds"?}, …]}.
    #[arg(long, env = "JUEGOLAND_WEBHOOKS_FILE")]
    pub webhooks_file: Option<std::path::PathBuf>,
    /// The most feed events one webhook request carries.
    #[arg(long, env = "JUEGOLAND_WEBHOOK_BATCH", default_value_t = 100)]
    pub webhook_batch: u32,
    /// How long one webhook request may take, in milliseconds.
    #[arg(long, env = "JUEGOLAND_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    pub webhook_timeout_ms: u64,
    /// How long an endpoint's lease keeps other deliverers away, in milliseconds (more than
    /// twice the timeout).
    #[arg(long, env = "JUEGOLAND_WEBHOOK_LEASE_MS", default_value_t = 30_000)]
    pub webhook_lease_ms: u64,
    /// How often a caught-up deliverer looks for new events, in milliseconds.
    #[arg(long, env = "JUEGOLAND_WEBHOOK_POLL_MS", default_value_t = 500)]
    pub webhook_poll_ms: u64,
    /// The first retry's back-off after a failed delivery, in milliseconds (doubled after each
    /// failure, with jitter).
    #[arg(long, env = "JUEGOLAND_WEBHOOK_BACKOFF_MS", default_value_t = 500)]
    pub webhook_backoff_ms: u64,
    /// The longest back-off between two attempts, in milliseconds.
    #[arg(long, env = "JUEGOLAND_WEBHOOK_BACKOFF_MAX_MS", default_value_t = 60_000)]
    pub webhook_backoff_max_ms: u64,
    /// How often the endpoints are read from the store, in milliseconds: how soon one
    /// registered, changed or removed through the API (`/v1/webhooks`) takes effect.
    #[arg(long, env = "JUEGOLAND_WEBHOOK_REFRESH_MS", default_value_t = 1_000)]
    pub webhook_refresh_ms: u64,
}

impl WebhookConfig {
    /// The configured endpoints, checked (none without --webhook or --webhooks-file).
    pub fn endpoints(&self) -> Result<Vec<crate::webhooks::Endpoint>, crate::webhook_config::WebhookConfigError> {
        use crate::webhook_config::{DEFAULT_ENDPOINT, SecretSource, endpoint, from_file};
        if let Some(file) = &self.webhooks_file {
            return from_file(file);
        }
        let Some(url) = &self.webhook_url else { return Ok(Vec::new()) };
        let secret = match (&self.webhook_secret, &self.webhook_secret_file) {
            (Some(text), _) => Some(SecretSource::Inline(text)),
            (None, Some(file)) => Some(SecretSource::File(file.clone())),
            (None, None) => None,
        };
        let kinds = (!self.webhook_kinds.is_empty()).then_some(self.webhook_kinds.as_slice());
        Ok(vec![endpoint(DEFAULT_ENDPOINT, url, secret, kinds)?])
    }

    /// The deliverer's options for `claimant`.
    pub fn options(&self, claimant: &str) -> crate::webhooks::WebhookOptions {
        crate::webhooks::WebhookOptions {
            batch: self.webhook_batch,
            timeout: Duration::from_millis(self.webhook_timeout_ms),
            lease: Duration::from_millis(self.webhook_lease_ms),
            poll_interval: Duration::from_millis(self.webhook_poll_ms),
            backoff: Duration::from_millis(self.webhook_backoff_ms),
            backoff_max: Duration::from_millis(self.webhook_backoff_max_ms),
            refresh: Duration::from_millis(self.webhook_refresh_ms.max(1)),
            ..crate::webhooks::WebhookOptions::new(claimant)
        }
    }

    /// Starts delivering the store's endpoints — the configured ones written there first —
    /// from `store` as `claimant`, with metrics in `registry`.
    pub fn start(
        &self,
        store: Arc<dyn juegoland_store::Store>,
        claimant: &str,
        registry: &prometheus::Registry,
    ) -> anyhow::Result<crate::webhooks::Webhooks> {
        let endpoints = self.endpoints().context("webhook configuration")?;
        let ids: Vec<&str> = endpoints.iter().map(|e| e.id.as_str()).collect();
        info!(configured = ?ids, "delivering the platform feed to the webhook endpoints");
        let metrics = crate::webhooks::WebhookMetrics::new(registry).context("register webhook metrics")?;
        crate::webhooks::Webhooks::start(store, endpoints, self.options(claimant), metrics)
            .context("webhook configuration")
    }
}

impl SchedulerConfig {
    /// The loop's options for this replica.
    pub fn options(&self) -> anyhow::Result<SchedulerOptions> {
        let claimant = match &self.replica_id {
            Some(id) => id.clone(),
            None => {
                let mut bytes = [0u8; 4];
                getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random replica id: {e}"))?;
                format!("scheduler-{:08x}", u32::from_le_bytes(bytes))
            }
        };
        Ok(SchedulerOptions {
            poll_interval: Duration::from_millis(self.poll_interval_ms),
            batch: self.batch.max(1),
            lease: Duration::from_millis(self.lease_ms),
            concurrency: self.concurrency.max(1),
            grace: Duration::from_millis(self.grace_ms),
            ..SchedulerOptions::new(claimant)
        })
    }
}

/// Waits for SIGTERM or Ctrl-C.
async fn terminated() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}

/// Registers the process's own metrics: `juegoland_build_info{role, version}` (always 1;
/// dashboards find a release's pods, and each pod's role, by it) and
/// `process_start_time_seconds`, the standard gauge of the Prometheus clients' process
/// collector, set when the process registers its metrics at start-up: a new value means the
/// process restarted (the restart panels and the flapping alerts count them). `role` is
/// `node`, `router`, `gateway`, `scheduler` or `dev` (not `service`, which Prometheus
/// Operator's scrapes set on every target).
pub fn register_process_metrics(registry: &prometheus::Registry, role: &str) -> prometheus::Result<()> {
    let info = prometheus::IntGaugeVec::new(
        prometheus::Opts::new("juegoland_build_info", "The process's role and version (always 1)"),
        &["role", "version"],
    )?;
    info.with_label_values(&[role, env!("CARGO_PKG_VERSION")]).set(1);
    let started =
        prometheus::Gauge::new("process_start_time_seconds", "Start time of the process since unix epoch in seconds.")?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    started.set(now.map_or(0.0, |d| d.as_secs_f64()));
    registry.register(Box::new(info))?;
    registry.register(Box::new(started))
}

/// The operations listener's routes: `/healthz`, `/readyz` (503 once `ready` is false: a
/// draining process) and `/metrics`, open to whoever reaches the listener (a port of its own,
/// not exposed publicly).
pub fn ops_routes(registry: prometheus::Registry, ready: Arc<std::sync::atomic::AtomicBool>) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.load(std::sync::atomic::Ordering::SeqCst);
                async move {
                    if ready {
                        (axum::http::StatusCode::OK, "ready")
                    } else {
                        (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining")
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let families = registry.gather();
                async move {
                    let mut out = String::new();
                    let _ = prometheus::TextEncoder::new().encode_utf8(&families, &mut out);
                    ([(axum::http::header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], out)
                }
            }),
        )
}

/// Runs a node until SIGTERM (then drains) or until its lease is lost (then it stops
/// serving at once and returns an error, so its supervisor restarts it as a new
/// incarnation).
pub async fn run_node(config: NodeConfig, registry: Registry) -> anyhow::Result<()> {
    if config.edge_http.is_some() {
        // Checked before the node joins the ring, so a wrong start leaves no lease behind.
        anyhow::ensure!(
            config.redis_url.is_some(),
            "a node serving clients (--edge-http) needs --redis-url: its clients follow other nodes' matches there"
        );
        config.clients.tokens().await?;
    }
    let ttl = Duration::from_millis(config.lease_ttl_ms);
    let refresh = Duration::from_millis(config.membership_refresh_ms);
    // Membership has its own small pool so heartbeats never queue behind commits.
    let members_pool = PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(ttl / 2)
        .connect(&config.database_url)
        .await
        .context("connect to PostgreSQL (membership)")?;
    // Connecting the store runs the migrations, the registry's table included.
    let options: sqlx::postgres::PgConnectOptions = config.database_url.parse().context("parse the database URL")?;
    let pool = PgStore::pool_options().max_connections(config.database_pool.max(2));
    let store = PgStore::connect_with(pool, options).await.context("connect to PostgreSQL (store)")?;
    let grpc = TcpListener::bind(config.grpc).await.with_context(|| format!("bind {}", config.grpc))?;
    let grpc_addr = grpc.local_addr()?;
    let advertise = config.advertise.clone().unwrap_or_else(|| format!("http://{grpc_addr}"));
    // The node's own client edge, when it serves clients.
    let edge_listener = match config.edge_http {
        Some(addr) => Some(TcpListener::bind(addr).await.with_context(|| format!("bind {addr}"))?),
        None => None,
    };
    let client_url = match &edge_listener {
        Some(l) => Some(config.edge_advertise.clone().unwrap_or(format!("http://{}", l.local_addr()?))),
        None => None,
    };
    let lease = join(&members_pool, &config.node_id, &advertise, ttl).await.context("join the cluster")?;
    let incarnation = lease.incarnation();
    let store = Arc::new(store.owned_by(incarnation.to_string()));
    let heartbeat = Heartbeat::start(members_pool.clone(), lease);

    let prometheus = prometheus::Registry::new();
    register_process_metrics(&prometheus, "node").context("register process metrics")?;
    let membership = Membership::start(members_pool.clone(), refresh);
    membership.register(&prometheus).context("register membership metrics")?;
    membership.refresh_now().await;
    let host_config = HostConfig {
        idle_passivation: Duration::from_secs(config.idle_passivation),
        local_deadline_horizon: (config.local_deadline_horizon_ms > 0)
            .then(|| Duration::from_millis(config.local_deadline_horizon_ms)),
        ..HostConfig::default()
    };
    let registry = Arc::new(registry);
    let mut engine = Engine::new(registry.clone());
    if let Some(dir) = &config.registry {
        engine = engine.with_packages(Arc::new(crate::PublishedDir::new(dir)));
    }
    let engine = Arc::new(engine);
    let metrics = Metrics::new(&prometheus).context("register host metrics")?;
    let remote: Option<Arc<dyn Bus>> = match &config.redis_url {
        // Redis being down does not stop the node: commits go on, the outbox keeps the
        // publications and the sweeper delivers them when Redis is back.
        Some(url) => {
            let streams = RedisBusConfig {
                secret: bus_secret(config.bus_secret.as_deref())?,
                stream_ttl: (config.stream_ttl_secs > 0).then(|| Duration::from_secs(config.stream_ttl_secs)),
                ..RedisBusConfig::default()
            };
            Some(Arc::new(RedisBus::new(url, streams).context("the Redis URL")?))
        }
        None => None,
    };
    // A node serving clients publishes to them in process too, for the matches it owns.
    let near = match (config.edge_http, remote.clone()) {
        (None, _) => None,
        (Some(_), None) => unreachable!("checked at the start"),
        (Some(_), Some(remote)) => {
            let (ring, incarnation) = (membership.clone(), incarnation);
            let owns: Owns = Arc::new(move |m| ring.ring().owner(m).is_some_and(|o| o.incarnation == incarnation));
            Some(Arc::new(NearBus::new(remote, owns)))
        }
    };
    let bus: Arc<dyn Bus> = match (&near, remote) {
        (Some(near), _) => near.clone(),
        (None, Some(remote)) => remote,
        (None, None) => Arc::new(LocalBus::default()),
    };
    let host = Host::start(engine, store, bus, metrics, host_config).await.context("start the match host")?;
    let node_metrics = NodeMetrics::new(&prometheus).context("register node metrics")?;
    let service = NodeService::new(
        host.clone(),
        client_url.clone(),
        config.node_id.clone(),
        incarnation,
        membership.clone(),
        node_metrics,
    );

    // Matches the ring moves elsewhere are passivated here, so their new owner is alone, and
    // this node's own clients follow them there (a watch the remote bus refused is tried
    // again every second).
    let mut ring = membership.subscribe();
    let shedder = service.clone();
    let follower = near.clone();
    tokio::spawn(async move {
        let mut again = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                changed = ring.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    shedder.shed_moved().await;
                }
                _ = again.tick() => {}
            }
            if let Some(near) = &follower {
                near.recheck().await;
            }
        }
    });

    // The node's own client edge, stopped first when the node stops serving.
    let (edge_stop, edge_stopped) = tokio::sync::watch::channel(false);
    let clients_at = client_url.as_ref().map(|u| format!(" clients {u}/")).unwrap_or_default();
    if let (Some(listener), Some(near)) = (edge_listener, near) {
        let forwarder = Forwarder::new(
            membership.clone(),
            registry.clone(),
            RetryBudget::default(),
            RouterMetrics::new(&prometheus).context("register forwarding metrics")?,
            config.cluster.caller(juegoland_rpc::credential::Role::Node)?,
        );
        let matches = Arc::new(Nearby { service: service.clone(), forwarder });
        // The node's metrics are on its own listener (--http), never on its client edge.
        let (edge, shutdown) = config.clients.edge(matches, near, prometheus.clone(), false).await?;
        let mut stopped = edge_stopped;
        tokio::spawn(async move {
            let stop = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            if let Err(e) = serve_clients(listener, edge, shutdown, stop).await {
                error!(error = %e, "the node's client edge failed");
            }
        });
    }

    let ready = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let http = TcpListener::bind(config.http).await.with_context(|| format!("bind {}", config.http))?;
    let http_addr = http.local_addr()?;
    let health = ops_routes(prometheus, ready.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(http, health).await {
            error!(error = %e, "node HTTP server failed");
        }
    });

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut stop_rx2 = stop_rx.clone();
    let server = tonic::transport::Server::builder()
        .add_service({
            // With the cluster secret, a node answers only the other roles' stamped calls.
            let key = config.cluster.key()?;
            pb::node_server::NodeServer::with_interceptor(service.clone(), move |request: tonic::Request<()>| {
                if let Some(key) = &key {
                    key.verify(request.metadata())?;
                }
                Ok(request)
            })
        })
        .serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(grpc), async move {
            let _ = stop_rx2.wait_for(|s| *s).await;
        });
    let server = tokio::spawn(server);
    info!(node_id = %config.node_id, %incarnation, grpc = %grpc_addr, http = %http_addr, "node serving");
    // Tests and scripts read this line to find the ports when started with port 0.
    println!("node {} serving grpc {advertise} http http://{http_addr}/{clients_at}", config.node_id);

    let outcome = tokio::select! {
        _ = terminated() => Ok(()),
        lost = heartbeat.lost() => Err(lost),
    };
    service.stop_serving();
    let _ = edge_stop.send(true);
    ready.store(false, std::sync::atomic::Ordering::SeqCst);
    match outcome {
        Ok(()) => {
            info!(node_id = %config.node_id, "draining: leaving the ring and passivating every match");
            // Leave the ring first (the lease stays renewed while draining), then hand the
            // matches back, then give the lease up.
            if let Err(e) = heartbeat.lease().set_draining(&members_pool).await {
                warn!(error = %e, "could not mark the node draining");
            }
            for match_id in host.active_matches() {
                host.passivate(match_id).await;
                if let Err(e) = host.store().release(match_id).await {
                    warn!(match_id = %match_id, error = %e, "could not release the match");
                }
            }
            // The last dispatched marks reach the outbox; the sweeper and the ticker end.
            host.stop().await;
            let lease = heartbeat.stop().await;
            if let Err(e) = lease.release(&members_pool).await {
                warn!(error = %e, "could not release the lease");
            }
            let _ = stop_tx.send(true);
            let _ = server.await;
            info!(node_id = %config.node_id, "drained");
            Ok(())
        }
        Err(lost) => {
            error!(node_id = %config.node_id, reason = ?lost, "lease lost: stopped serving; restart as a new incarnation");
            for match_id in host.active_matches() {
                host.passivate(match_id).await;
            }
            let _ = stop_tx.send(true);
            anyhow::bail!("the node's lease was lost ({lost:?})")
        }
    }
}

/// Runs a gateway until SIGTERM: the client protocol over WebSocket, commands, syncs and
/// status calls straight to the owning node (the same ring, membership and retries as a
/// router: one hop fewer), publications from the Redis streams.
pub async fn run_gateway(config: GatewayConfig, registry: Registry) -> anyhow::Result<()> {
    let prometheus = prometheus::Registry::new();
    register_process_metrics(&prometheus, "gateway").context("register process metrics")?;
    let forwarder = forwarder(&config.routing, registry, &prometheus, juegoland_rpc::credential::Role::Gateway).await?;
    let streams = RedisBusConfig { secret: bus_secret(config.bus_secret.as_deref())?, ..RedisBusConfig::default() };
    let redis = RedisBus::new(&config.redis_url, streams).context("the Redis URL")?;
    if let Err(e) = redis.ping().await {
        warn!(error = %e, "Redis is not answering yet; subscriptions will resync when it is back");
    }
    let bus: Arc<dyn Bus> = Arc::new(redis);
    let (edge, shutdown) =
        config.clients.edge(Arc::new(forwarder), bus, prometheus.clone(), config.metrics.on_edge()).await?;
    let http = TcpListener::bind(config.http).await.with_context(|| format!("bind {}", config.http))?;
    let http_addr = http.local_addr()?;
    let stop = tokio_util::sync::CancellationToken::new();
    let ops = config.metrics.serve(prometheus, stop.clone().cancelled_owned()).await?;
    let metrics_at = ops.as_ref().map(|(addr, _)| format!(" metrics http://{addr}/")).unwrap_or_default();
    info!(http = %http_addr, "gateway serving");
    // Tests and scripts read this line to find the ports when started with port 0.
    println!("gateway serving http http://{http_addr}/{metrics_at}");
    serve_clients(http, edge, shutdown, terminated()).await?;
    stop.cancel();
    if let Some((_, task)) = ops {
        let _ = task.await;
    }
    info!("gateway stopped");
    Ok(())
}

/// The routing of a router and a gateway: the ring of live nodes from the membership
/// registry, and a forwarder to each match's owner with retries within the budget.
async fn forwarder(
    routing: &RoutingConfig,
    registry: Registry,
    prometheus: &prometheus::Registry,
    role: juegoland_rpc::credential::Role,
) -> anyhow::Result<Forwarder> {
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&routing.database_url)
        .await
        .context("connect to PostgreSQL (membership)")?;
    let membership = Membership::start(pool, Duration::from_millis(routing.membership_refresh_ms));
    membership.register(prometheus).context("register membership metrics")?;
    membership.refresh_now().await;
    let budget = RetryBudget { total: Duration::from_millis(routing.retry_budget_ms), ..RetryBudget::default() };
    let metrics = RouterMetrics::new(prometheus).context("register forwarding metrics")?;
    Ok(Forwarder::new(membership, Arc::new(registry), budget, metrics, routing.cluster.caller(role)?))
}

/// How long a router's webhook ping waits for the endpoint's answer (a delivery's default
/// timeout).
const WEBHOOK_PING_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a router until SIGTERM.
pub async fn run_router(config: RouterConfig, registry: Registry) -> anyhow::Result<()> {
    let prometheus = prometheus::Registry::new();
    register_process_metrics(&prometheus, "router").context("register process metrics")?;
    let forwarder = forwarder(&config.routing, registry, &prometheus, juegoland_rpc::credential::Role::Router).await?;

    // The platform API is the edge's, over the forwarder; the router serves no WebSocket
    // and mints no tokens, so its signing key is a throwaway.
    let mut secret = vec![0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("random token key: {e}"))?;
    let tokens = Tokens::new(&secret, 60).context("token keys")?.without_minting();
    let cluster_db = Arc::new(
        juegoland_store::PgDirectory::connect_lazy(&config.routing.database_url).context("the match directory")?,
    );
    let directory: Arc<dyn juegoland_api::MatchDirectory> = cluster_db.clone();
    // Webhook endpoints are rows of the same database; the scheduler replicas deliver them.
    let webhooks = crate::webhook_admin::StoreWebhooks::new(cluster_db, WEBHOOK_PING_TIMEOUT);
    let options = EdgeOptions {
        dev: false,
        metrics: config.metrics.on_edge(),
        platform_api: true,
        platform_token: config.platform_token.clone(),
        packages: config.registry.clone(),
        // Listings read the cluster's PostgreSQL directly: they address no match.
        directory: Some(directory.clone()),
        webhooks: Some(Arc::new(webhooks)),
        ..EdgeOptions::default()
    };
    let edge = EdgeState::new(Arc::new(forwarder.clone()), None, tokens, prometheus.clone(), options)
        .context("register edge metrics")?;
    let http = TcpListener::bind(config.http).await.with_context(|| format!("bind {}", config.http))?;
    let http_addr = http.local_addr()?;
    let grpc = TcpListener::bind(config.grpc).await.with_context(|| format!("bind {}", config.grpc))?;
    let grpc_addr = grpc.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut grpc_stop = stop_rx.clone();
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(pb::router_server::RouterServer::new(RouterService {
                forwarder,
                directory: Some(directory),
                cluster: config.routing.cluster.key()?,
                platform_token: config.platform_token.clone(),
            }))
            .serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(grpc), async move {
                let _ = grpc_stop.wait_for(|s| *s).await;
            }),
    );
    let mut http_stop = stop_rx.clone();
    let web = tokio::spawn(async move {
        juegoland_edge::serve(http, edge, async move {
            let _ = http_stop.wait_for(|s| *s).await;
        })
        .await
    });
    let mut ops_stop = stop_rx;
    let ops = config
        .metrics
        .serve(prometheus, async move {
            let _ = ops_stop.wait_for(|s| *s).await;
        })
        .await?;
    let metrics_at = ops.as_ref().map(|(addr, _)| format!(" metrics http://{addr}/")).unwrap_or_default();
    info!(grpc = %grpc_addr, http = %http_addr, "router serving");
    // Tests and scripts read this line to find the ports when started with port 0.
    println!("router serving grpc http://{grpc_addr} http http://{http_addr}/{metrics_at}");
    terminated().await;
    info!("router stopping");
    let _ = stop_tx.send(true);
    let _ = server.await;
    let _ = web.await;
    if let Some((_, task)) = ops {
        let _ = task.await;
    }
    Ok(())
}

/// Runs a scheduler replica until SIGTERM: claims due deadlines in PostgreSQL and fires them
/// through the routers, and delivers the configured webhooks whose leases it holds; then lets
/// the firings in flight finish, gives back the claims of those that failed, and releases its
/// webhook leases.
pub async fn run_scheduler(config: SchedulerConfig, registry: Registry) -> anyhow::Result<()> {
    let scheduling = config.options()?;
    let options: sqlx::postgres::PgConnectOptions = config.database_url.parse().context("parse the database URL")?;
    let pool = PgStore::pool_options().max_connections(config.database_pool.max(1));
    let store = PgStore::connect_with(pool, options).await.context("connect to PostgreSQL (store)")?;
    let calls = RouterCalls::new(
        &config.routers,
        Arc::new(registry),
        Duration::from_secs(10),
        config.cluster.caller(juegoland_rpc::credential::Role::Scheduler)?,
    )
    .context("router addresses")?;
    let prometheus = prometheus::Registry::new();
    register_process_metrics(&prometheus, "scheduler").context("register process metrics")?;
    let metrics = SchedulerMetrics::new(&prometheus).context("register scheduler metrics")?;
    // The replica delivers the webhooks whose leases it holds, under its claimant name.
    let webhooks = config.webhooks.start(Arc::new(store.clone()), &scheduling.claimant, &prometheus)?;
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let http = TcpListener::bind(config.http).await.with_context(|| format!("bind {}", config.http))?;
    let http_addr = http.local_addr()?;
    let health = ops_routes(prometheus, ready.clone());
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let web = tokio::spawn(async move {
        axum::serve(http, health)
            .with_graceful_shutdown(async move {
                let _ = stop_rx.wait_for(|s| *s).await;
            })
            .await
    });
    let replica = scheduling.claimant.clone();
    let scheduler = Scheduler::start(Arc::new(store.clone()), Arc::new(calls), scheduling, metrics);
    info!(replica = %replica, http = %http_addr, "scheduler serving");
    // Tests and scripts read this line to find the port when started with port 0.
    println!("scheduler {replica} serving http http://{http_addr}/");
    terminated().await;
    info!(replica = %replica, "scheduler stopping");
    ready.store(false, std::sync::atomic::Ordering::SeqCst);
    scheduler.stop().await;
    webhooks.stop().await;
    let _ = stop_tx.send(true);
    let _ = web.await;
    store.close().await;
    info!(replica = %replica, "scheduler stopped");
    Ok(())
}
