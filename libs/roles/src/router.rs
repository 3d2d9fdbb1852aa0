//! The router: maps a match id to its owner on the ring of live members and forwards the
//! call; on `NOT_OWNER` or `UNAVAILABLE` it refreshes membership and retries the same call
//! (every forwarded call is idempotent: commands by their receipt, creations by the match
//! id the router chose) until the retry budget is spent.
//!
//! [`Forwarder`] implements the match API ([`Matches`]), so the edge's HTTP platform API
//! runs unchanged on a router; [`RouterService`] serves the same requests over gRPC, and
//! [`RouterCalls`] is a gateway's or a scheduler's [`Matches`] through the routers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_api::{MatchDirectory, MatchError, MatchReply, MatchRequest, Matches};
use juegoland_core::{LifecycleRequest, Registry};
use juegoland_rpc::pb;
use juegoland_telemetry::Context as TraceContext;
use prometheus::{HistogramVec, IntCounterVec};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tracing::{Instrument, debug, info_span};

use juegoland_cluster::Membership;

type NodeClient = pb::node_client::NodeClient<Channel>;

/// How long a router keeps retrying one call, and how.
#[derive(Clone, Debug)]
pub struct RetryBudget {
    /// The longest one call is retried (it must outlast a failover: lease ttl + refresh).
    pub total: Duration,
    /// The first pause between attempts; it doubles up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// The longest one forwarded call may take; then it is retried (a node that stopped
    /// answering without closing its connections — frozen, partitioned — times out here).
    pub call_timeout: Duration,
    /// The longest a connection attempt to a node may take.
    pub connect_timeout: Duration,
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self {
            total: Duration::from_secs(8),
            first_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(400),
            call_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_millis(500),
        }
    }
}

/// Metrics of the router.
#[derive(Clone)]
pub struct RouterMetrics {
    /// Forwarded calls by operation and final outcome.
    pub forwards: IntCounterVec,
    /// Retries by operation and reason (`not_owner`, `unavailable`).
    pub retries: IntCounterVec,
    /// Latency of one forwarded call (the hop to the node and back), seconds.
    pub hop_seconds: HistogramVec,
}

impl RouterMetrics {
    pub fn new(registry: &prometheus::Registry) -> prometheus::Result<Self> {
        let forwards = IntCounterVec::new(
            prometheus::Opts::new(
                "juegoland_router_forwards_total",
                "Calls forwarded to nodes, by operation and outcome",
            ),
            &["op", "outcome"],
        )?;
        let retries = IntCounterVec::new(
            prometheus::Opts::new("juegoland_router_retries_total", "Forwarding retries, by operation and reason"),
            &["op", "reason"],
        )?;
        let hop_seconds = HistogramVec::new(
            prometheus::HistogramOpts::new(
                "juegoland_router_hop_seconds",
                "One forwarded call, router to node and back",
            )
            .buckets(prometheus::exponential_buckets(0.0001, 2.0, 18)?),
            &["op"],
        )?;
        // The retryable failures of every operation are known: their series start at 0.
        for op in MatchRequest::OPS {
            for reason in ["not_owner", "unavailable"] {
                retries.with_label_values(&[op, reason]);
            }
        }
        registry.register(Box::new(forwards.clone()))?;
        registry.register(Box::new(retries.clone()))?;
        registry.register(Box::new(hop_seconds.clone()))?;
        Ok(Self { forwards, retries, hop_seconds })
    }
}

/// Forwards match-scoped calls to their owners. Cheap to clone.
#[derive(Clone)]
pub struct Forwarder {
    inner: Arc<Inner>,
}

struct Inner {
    membership: Membership,
    registry: Arc<Registry>,
    budget: RetryBudget,
    metrics: RouterMetrics,
    /// One lazily connected channel per node address (a channel multiplexes calls).
    channels: parking_lot::Mutex<HashMap<String, NodeClient>>,
    /// The credential stamped on every call to a node (`credential.rs`).
    caller: Option<Caller>,
}

/// Who this process is on its calls to the others, when the cluster has a secret.
#[derive(Clone, Debug)]
pub struct Caller {
    pub key: juegoland_rpc::credential::ClusterKey,
    pub role: juegoland_rpc::credential::Role,
}

impl Caller {
    /// `message` as a call: the caller's trace context, and this credential.
    fn request<T>(caller: Option<&Caller>, message: T) -> Request<T> {
        let mut request = with_context(message);
        if let Some(caller) = caller {
            caller.key.stamp(caller.role, request.metadata_mut());
        }
        request
    }
}

impl Forwarder {
    pub fn new(
        membership: Membership,
        registry: Arc<Registry>,
        budget: RetryBudget,
        metrics: RouterMetrics,
        caller: Option<Caller>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                caller,
                membership,
                registry,
                budget,
                metrics,
                channels: parking_lot::Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn membership(&self) -> &Membership {
        &self.inner.membership
    }

    fn client(&self, address: &str) -> Result<NodeClient, MatchError> {
        let mut channels = self.inner.channels.lock();
        if let Some(c) = channels.get(address) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(address.to_owned())
            .map_err(|e| MatchError::Internal(format!("node address {address:?}: {e}")))?
            .connect_timeout(self.inner.budget.connect_timeout)
            .timeout(self.inner.budget.call_timeout)
            .tcp_nodelay(true);
        let client = NodeClient::new(endpoint.connect_lazy());
        channels.insert(address.to_owned(), client.clone());
        Ok(client)
    }

    /// Calls the owner of the request's match, retrying retryable failures on a fresh view
    /// of the ring until the budget is spent (every request is idempotent: commands by their
    /// receipt, creations by their match id). The `router.forward` span continues `parent`
    /// (the caller's trace context) when given, and every attempt carries its context to
    /// the node.
    pub async fn forward(&self, parent: Option<TraceContext>, request: MatchRequest) -> Result<MatchReply, MatchError> {
        let (op, match_id) = (request.op(), request.match_id());
        let span = info_span!(
            "router.forward",
            op,
            match_id = %match_id,
            command_id = tracing::field::Empty,
            node_id = tracing::field::Empty,
        );
        if let Some(command_id) = request.command_id() {
            span.record("command_id", tracing::field::display(command_id));
        }
        if let Some(parent) = parent {
            juegoland_telemetry::set_parent(&span, parent);
        }
        let wire = juegoland_rpc::request_to_pb(&request);
        async {
            let budget = &self.inner.budget;
            let m = &self.inner.metrics;
            let deadline = Instant::now() + budget.total;
            let mut backoff = budget.first_backoff;
            loop {
                let ring = self.inner.membership.ring();
                let error = match ring.owner(match_id) {
                    None => MatchError::Unavailable("no live node in the ring".into()),
                    Some(owner) => {
                        tracing::Span::current().record("node_id", owner.node_id.as_str());
                        let mut client = self.client(&owner.address)?;
                        let started = Instant::now();
                        let result = client.call(Caller::request(self.inner.caller.as_ref(), wire.clone())).await;
                        m.hop_seconds.with_label_values(&[op]).observe(started.elapsed().as_secs_f64());
                        match result {
                            Ok(reply) => {
                                m.forwards.with_label_values(&[op, "ok"]).inc();
                                return juegoland_rpc::reply(reply.into_inner());
                            }
                            Err(status) => juegoland_rpc::from_status(&status),
                        }
                    }
                };
                if !error.is_retryable() || Instant::now() + backoff > deadline {
                    m.forwards.with_label_values(&[op, error.label()]).inc();
                    return Err(error);
                }
                debug!(error = %error, "retrying on a fresh ring");
                m.retries.with_label_values(&[op, error.label()]).inc();
                self.inner.membership.refresh_now().await;
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(budget.max_backoff);
            }
        }
        .instrument(span)
        .await
    }
}

#[async_trait::async_trait]
impl Matches for Forwarder {
    fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
        self.forward(None, request).await
    }
}

/// A request carrying the current span's trace context (inside `forward`, the
/// `router.forward` span's).
fn with_context<T>(message: T) -> Request<T> {
    let mut request = Request::new(message);
    juegoland_telemetry::inject(request.metadata_mut());
    request
}

/// A gateway's or a scheduler's calls: to the routers (one channel balanced over every
/// router address; the routers retry on owners, so a transport failure here is answered
/// `UNAVAILABLE` and the client retries the same command).
#[derive(Clone)]
pub struct RouterCalls {
    client: pb::router_client::RouterClient<Channel>,
    registry: Arc<Registry>,
    caller: Option<Caller>,
}

impl RouterCalls {
    /// Calls to the routers at `addresses` (`http://host:port`), balanced.
    pub fn new(
        addresses: &[String],
        registry: Arc<Registry>,
        call_timeout: Duration,
        caller: Option<Caller>,
    ) -> Result<Self, MatchError> {
        let endpoints = addresses
            .iter()
            .map(|a| {
                Endpoint::from_shared(a.clone())
                    .map(|e| e.timeout(call_timeout).connect_timeout(Duration::from_millis(500)).tcp_nodelay(true))
                    .map_err(|e| MatchError::Internal(format!("router address {a:?}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let channel = Channel::balance_list(endpoints.into_iter());
        Ok(Self { client: pb::router_client::RouterClient::new(channel), registry, caller })
    }
}

#[async_trait::async_trait]
impl Matches for RouterCalls {
    fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
        let wire = juegoland_rpc::request_to_pb(&request);
        match self.client.clone().call(Caller::request(self.caller.as_ref(), wire)).await {
            Ok(reply) => juegoland_rpc::reply(reply.into_inner()),
            Err(status) => Err(juegoland_rpc::from_status(&status)),
        }
    }
}

/// The router's gRPC service: match operations over a [`Forwarder`], listings and the feed
/// from a [`MatchDirectory`] (the cluster's PostgreSQL; none: those calls are UNIMPLEMENTED).
#[derive(Clone)]
pub struct RouterService {
    pub forwarder: Forwarder,
    pub directory: Option<Arc<dyn MatchDirectory>>,
    /// The cluster secret: with it, a request that acts as a principal or as the engine (a
    /// command, a sync, presence, a hand-over, a deadline firing) needs another role's
    /// credential, and a platform operation that or the platform token.
    pub cluster: Option<juegoland_rpc::credential::ClusterKey>,
    /// The platform token of the platform operations (none: open, as on the HTTP API).
    pub platform_token: Option<String>,
}

impl RouterService {
    fn directory(&self) -> Result<&Arc<dyn MatchDirectory>, Status> {
        self.directory.as_ref().ok_or_else(|| Status::unimplemented("this router lists no matches"))
    }

    /// Whether `metadata` may make a platform operation: a role of the cluster, or the
    /// platform with its token.
    fn platform(&self, metadata: &tonic::metadata::MetadataMap) -> Result<(), Status> {
        let Some(cluster) = &self.cluster else { return Ok(()) };
        if cluster.verify(metadata).is_ok() {
            return Ok(());
        }
        let Some(expected) = &self.platform_token else { return Ok(()) };
        let given = metadata.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        if given.is_some_and(|given| juegoland_edge::same_secret(given, expected)) {
            Ok(())
        } else {
            Err(Status::unauthenticated("this call needs the platform token (authorization: Bearer <platform token>)"))
        }
    }

    /// Whether `metadata` may make `request`: one that acts as a principal or as the engine
    /// only with a role's credential.
    fn authorize(&self, metadata: &tonic::metadata::MetadataMap, request: &MatchRequest) -> Result<(), Status> {
        let Some(cluster) = &self.cluster else { return Ok(()) };
        let internal = match request {
            MatchRequest::Presence { .. }
            | MatchRequest::Command { .. }
            | MatchRequest::CommandStatus { .. }
            | MatchRequest::Sync { .. }
            | MatchRequest::Spectate { .. }
            | MatchRequest::Revision { .. } => true,
            MatchRequest::Lifecycle { request, .. } => {
                matches!(request, LifecycleRequest::FireDeadline { .. } | LifecycleRequest::Control { .. })
            }
            _ => false,
        };
        if internal { cluster.verify(metadata).map(|_| ()) } else { self.platform(metadata) }
    }
}

#[tonic::async_trait]
impl pb::router_server::Router for RouterService {
    async fn list_games(&self, request: Request<pb::ListGamesRequest>) -> Result<Response<pb::ListGamesReply>, Status> {
        self.platform(request.metadata())?;
        let games = self
            .forwarder
            .inner
            .registry
            .games()
            .map(|g| {
                let d = g.descriptor();
                pb::GameInfo {
                    key: Some(pb::GameKey { id: d.id.clone(), rules_version: d.rules_version.clone() }),
                    game_version: d.version.clone(),
                    view_schema_version: d.view_schema_version,
                    event_schema_version: d.event_schema_version,
                    min_seats: d.min_seats,
                    max_seats: d.max_seats,
                    bots: d.bots.clone(),
                    actions: d.actions.iter().map(|a| a.action_type.clone()).collect(),
                    agents: d.agents.as_ref().map(juegoland_rpc::virtual_players_to_pb),
                }
            })
            .collect();
        Ok(Response::new(pb::ListGamesReply { games }))
    }

    async fn call(&self, request: Request<pb::MatchRequest>) -> Result<Response<pb::MatchReply>, Status> {
        // The trace context the caller (a gateway, the platform, a test) sent, if any.
        let parent = Some(juegoland_telemetry::extract(request.metadata()));
        let (metadata, _, message) = request.into_parts();
        let result = match juegoland_rpc::request(message) {
            Ok(request) => {
                self.authorize(&metadata, &request)?;
                self.forwarder.forward(parent, request).await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(reply) => Ok(Response::new(juegoland_rpc::reply_to_pb(&reply))),
            Err(e) => Err(juegoland_rpc::to_status(&e)),
        }
    }

    async fn list_matches(&self, request: Request<pb::ListMatchesRequest>) -> Result<Response<pb::MatchPage>, Status> {
        self.platform(request.metadata())?;
        let directory = self.directory()?;
        let query = juegoland_rpc::match_query(request.into_inner()).map_err(|e| juegoland_rpc::to_status(&e))?;
        match directory.list(&query).await {
            Ok(page) => Ok(Response::new(juegoland_rpc::match_page_to_pb(&page))),
            Err(e) => Err(juegoland_rpc::to_status(&e)),
        }
    }

    async fn read_feed(&self, request: Request<pb::ReadFeedRequest>) -> Result<Response<pb::FeedPage>, Status> {
        self.platform(request.metadata())?;
        let directory = self.directory()?;
        let (after, limit) = juegoland_rpc::feed_query(request.get_ref()).map_err(|e| juegoland_rpc::to_status(&e))?;
        match directory.feed(after, limit).await {
            Ok(page) => Ok(Response::new(juegoland_rpc::feed_page_to_pb(&page))),
            Err(e) => Err(juegoland_rpc::to_status(&e)),
        }
    }
}
