//! The router: maps a match id to its owner on the ring of live members and forwards the
//! call; on `NOT_OWNER` or `UNAVAILABLE` it refreshes membership and retries the same call
//! (every forwarded call is idempotent: commands by their receipt, creations by the match
//! id the router chose) until the retry budget is spent.
//!
//! [`Forwarder`] implements [`Matches`], so the edge's HTTP platform API runs unchanged on
//! a router; [`RouterService`] serves the same operations over gRPC.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use juegoland_actors::{HostError, Matches, SyncReply};
use juegoland_core::{GameKey, LifecycleRequest, Registry, SeatHolder};
use juegoland_protocol::{CommandEnvelope, ErrorMessage, ServerMessage};
use juegoland_rpc::{RpcError, pb};
use juegoland_telemetry::Context as TraceContext;
use prometheus::{HistogramVec, IntCounterVec};
use serde_json::Value;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tracing::{Instrument, debug, info_span};
use uuid::Uuid;

use crate::errors::to_host;
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
        let ops = [
            "create_match",
            "submit_command",
            "command_status",
            "sync",
            "withdraw",
            "fire_deadline",
            "cancel",
            "revision",
        ];
        for op in ops {
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
}

impl Forwarder {
    pub fn new(membership: Membership, registry: Arc<Registry>, budget: RetryBudget, metrics: RouterMetrics) -> Self {
        Self {
            inner: Arc::new(Inner {
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

    fn client(&self, address: &str) -> Result<NodeClient, RpcError> {
        let mut channels = self.inner.channels.lock();
        if let Some(c) = channels.get(address) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(address.to_owned())
            .map_err(|e| RpcError::Internal(format!("node address {address:?}: {e}")))?
            .connect_timeout(self.inner.budget.connect_timeout)
            .timeout(self.inner.budget.call_timeout)
            .tcp_nodelay(true);
        let client = NodeClient::new(endpoint.connect_lazy());
        channels.insert(address.to_owned(), client.clone());
        Ok(client)
    }

    /// Calls the owner of `match_id` with `call`, retrying retryable failures on a fresh
    /// view of the ring until the budget is spent. The `router.forward` span continues
    /// `parent` (the caller's trace context) when given; `call` builds its request with
    /// [`request`], so every attempt carries this span's context to the node.
    pub async fn forward<T, F, Fut>(
        &self,
        op: &'static str,
        match_id: Uuid,
        parent: Option<TraceContext>,
        call: F,
    ) -> Result<T, RpcError>
    where
        F: Fn(NodeClient) -> Fut,
        Fut: Future<Output = Result<Response<T>, Status>>,
    {
        let span = info_span!(
            "router.forward",
            op,
            match_id = %match_id,
            command_id = tracing::field::Empty,
            node_id = tracing::field::Empty,
        );
        if let Some(parent) = parent {
            juegoland_telemetry::set_parent(&span, parent);
        }
        async {
            let budget = &self.inner.budget;
            let m = &self.inner.metrics;
            let deadline = Instant::now() + budget.total;
            let mut backoff = budget.first_backoff;
            loop {
                let ring = self.inner.membership.ring();
                let error = match ring.owner(match_id) {
                    None => RpcError::Unavailable("no live node in the ring".into()),
                    Some(owner) => {
                        tracing::Span::current().record("node_id", owner.node_id.as_str());
                        let client = self.client(&owner.address)?;
                        let started = Instant::now();
                        let result = call(client).await;
                        m.hop_seconds.with_label_values(&[op]).observe(started.elapsed().as_secs_f64());
                        match result {
                            Ok(reply) => {
                                m.forwards.with_label_values(&[op, "ok"]).inc();
                                return Ok(reply.into_inner());
                            }
                            Err(status) => RpcError::from(status),
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

    async fn create(
        &self,
        parent: Option<TraceContext>,
        req: pb::CreateMatchRequest,
    ) -> Result<pb::CreateMatchReply, RpcError> {
        let match_id = if req.match_id.is_empty() {
            juegoland_actors::shell::random_uuid()
        } else {
            juegoland_rpc::uuid_field("match_id", &req.match_id)?
        };
        let req = pb::CreateMatchRequest { match_id: match_id.to_string(), ..req };
        self.forward("create_match", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.create_match(req).await }
        })
        .await
    }

    async fn submit(
        &self,
        parent: Option<TraceContext>,
        req: pb::SubmitCommandRequest,
    ) -> Result<pb::ServerMessageReply, RpcError> {
        let envelope = juegoland_rpc::envelope(&req.envelope_json)?;
        let (match_id, command_id) = (envelope.match_id, envelope.command_id);
        self.forward("submit_command", match_id, parent, |mut c| {
            // Inside the `router.forward` span.
            tracing::Span::current().record("command_id", tracing::field::display(command_id));
            let req = request(req.clone());
            async move { c.submit_command(req).await }
        })
        .await
    }

    async fn status_of(
        &self,
        parent: Option<TraceContext>,
        req: pb::CommandStatusRequest,
    ) -> Result<pb::ServerMessageReply, RpcError> {
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id)?;
        self.forward("command_status", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.command_status(req).await }
        })
        .await
    }

    async fn sync_of(&self, parent: Option<TraceContext>, req: pb::SyncRequest) -> Result<pb::SyncReply, RpcError> {
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id)?;
        self.forward("sync", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.sync(req).await }
        })
        .await
    }

    async fn withdraw_of(
        &self,
        parent: Option<TraceContext>,
        req: pb::WithdrawRequest,
    ) -> Result<pb::LifecycleReply, RpcError> {
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id)?;
        self.forward("withdraw", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.withdraw(req).await }
        })
        .await
    }

    async fn fire_of(
        &self,
        parent: Option<TraceContext>,
        req: pb::FireDeadlineRequest,
    ) -> Result<pb::LifecycleReply, RpcError> {
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id)?;
        self.forward("fire_deadline", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.fire_deadline(req).await }
        })
        .await
    }

    async fn cancel_of(
        &self,
        parent: Option<TraceContext>,
        req: pb::CancelRequest,
    ) -> Result<pb::LifecycleReply, RpcError> {
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id)?;
        self.forward("cancel", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.cancel(req).await }
        })
        .await
    }

    async fn revision_of(
        &self,
        parent: Option<TraceContext>,
        req: pb::RevisionRequest,
    ) -> Result<pb::RevisionReply, RpcError> {
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id)?;
        self.forward("revision", match_id, parent, |mut c| {
            let req = request(req.clone());
            async move { c.revision(req).await }
        })
        .await
    }
}

/// A request to a node carrying the current span's trace context (inside `forward`, the
/// `router.forward` span's).
fn request<T>(message: T) -> Request<T> {
    let mut request = Request::new(message);
    juegoland_telemetry::inject(request.metadata_mut());
    request
}

/// A sync reply from the wire.
fn sync_reply(reply: pb::SyncReply) -> Result<Result<SyncReply, ErrorMessage>, RpcError> {
    match reply.outcome {
        Some(pb::sync_reply::Outcome::Snapshot(s)) => Ok(Ok(SyncReply {
            seat: s.seat,
            revision: s.revision,
            game: juegoland_rpc::game_key(s.game)?,
            view_schema_version: s.view_schema_version,
            event_schema_version: s.event_schema_version,
            snapshot: juegoland_rpc::server_message(&s.snapshot_json)?,
        })),
        Some(pb::sync_reply::Outcome::ErrorJson(json)) => match juegoland_rpc::server_message(&json)? {
            ServerMessage::Error(e) => Ok(Err(e)),
            other => Err(RpcError::Internal(format!("sync answered {}", other.message_type()))),
        },
        None => Err(RpcError::Internal("empty sync reply".into())),
    }
}

/// The match-scoped calls of the API as wire messages. A router makes them by forwarding
/// to owners ([`Forwarder`]); a gateway by calling a router ([`RouterCalls`]). [`Remote`]
/// turns either into the edge's [`Matches`], so the conversions live in one place.
#[async_trait::async_trait]
pub trait Calls: Send + Sync + 'static {
    fn registry(&self) -> &Arc<Registry>;
    async fn create(&self, req: pb::CreateMatchRequest) -> Result<pb::CreateMatchReply, RpcError>;
    async fn submit(&self, req: pb::SubmitCommandRequest) -> Result<pb::ServerMessageReply, RpcError>;
    async fn command_status(&self, req: pb::CommandStatusRequest) -> Result<pb::ServerMessageReply, RpcError>;
    async fn sync(&self, req: pb::SyncRequest) -> Result<pb::SyncReply, RpcError>;
    async fn withdraw(&self, req: pb::WithdrawRequest) -> Result<pb::LifecycleReply, RpcError>;
    async fn fire_deadline(&self, req: pb::FireDeadlineRequest) -> Result<pb::LifecycleReply, RpcError>;
    async fn cancel(&self, req: pb::CancelRequest) -> Result<pb::LifecycleReply, RpcError>;
    async fn revision(&self, req: pb::RevisionRequest) -> Result<pb::RevisionReply, RpcError>;
}

#[async_trait::async_trait]
impl Calls for Forwarder {
    fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }
    async fn create(&self, req: pb::CreateMatchRequest) -> Result<pb::CreateMatchReply, RpcError> {
        Forwarder::create(self, None, req).await
    }
    async fn submit(&self, req: pb::SubmitCommandRequest) -> Result<pb::ServerMessageReply, RpcError> {
        Forwarder::submit(self, None, req).await
    }
    async fn command_status(&self, req: pb::CommandStatusRequest) -> Result<pb::ServerMessageReply, RpcError> {
        self.status_of(None, req).await
    }
    async fn sync(&self, req: pb::SyncRequest) -> Result<pb::SyncReply, RpcError> {
        self.sync_of(None, req).await
    }
    async fn withdraw(&self, req: pb::WithdrawRequest) -> Result<pb::LifecycleReply, RpcError> {
        self.withdraw_of(None, req).await
    }
    async fn fire_deadline(&self, req: pb::FireDeadlineRequest) -> Result<pb::LifecycleReply, RpcError> {
        self.fire_of(None, req).await
    }
    async fn cancel(&self, req: pb::CancelRequest) -> Result<pb::LifecycleReply, RpcError> {
        self.cancel_of(None, req).await
    }
    async fn revision(&self, req: pb::RevisionRequest) -> Result<pb::RevisionReply, RpcError> {
        self.revision_of(None, req).await
    }
}

/// A gateway's calls: to the routers (one channel balanced over every router address; the
/// routers retry on owners, so a transport failure here is answered `UNAVAILABLE` and the
/// client retries the same command).
#[derive(Clone)]
pub struct RouterCalls {
    client: pb::router_client::RouterClient<Channel>,
    registry: Arc<Registry>,
}

impl RouterCalls {
    /// Calls to the routers at `addresses` (`http://host:port`), balanced.
    pub fn new(addresses: &[String], registry: Arc<Registry>, call_timeout: Duration) -> Result<Self, RpcError> {
        let endpoints = addresses
            .iter()
            .map(|a| {
                Endpoint::from_shared(a.clone())
                    .map(|e| e.timeout(call_timeout).connect_timeout(Duration::from_millis(500)).tcp_nodelay(true))
                    .map_err(|e| RpcError::Internal(format!("router address {a:?}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let channel = Channel::balance_list(endpoints.into_iter());
        Ok(Self { client: pb::router_client::RouterClient::new(channel), registry })
    }
}

#[async_trait::async_trait]
impl Calls for RouterCalls {
    fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
    async fn create(&self, req: pb::CreateMatchRequest) -> Result<pb::CreateMatchReply, RpcError> {
        Ok(self.client.clone().create_match(request(req)).await?.into_inner())
    }
    async fn submit(&self, req: pb::SubmitCommandRequest) -> Result<pb::ServerMessageReply, RpcError> {
        Ok(self.client.clone().submit_command(request(req)).await?.into_inner())
    }
    async fn command_status(&self, req: pb::CommandStatusRequest) -> Result<pb::ServerMessageReply, RpcError> {
        Ok(self.client.clone().command_status(request(req)).await?.into_inner())
    }
    async fn sync(&self, req: pb::SyncRequest) -> Result<pb::SyncReply, RpcError> {
        Ok(self.client.clone().sync(request(req)).await?.into_inner())
    }
    async fn withdraw(&self, req: pb::WithdrawRequest) -> Result<pb::LifecycleReply, RpcError> {
        Ok(self.client.clone().withdraw(request(req)).await?.into_inner())
    }
    async fn fire_deadline(&self, req: pb::FireDeadlineRequest) -> Result<pb::LifecycleReply, RpcError> {
        Ok(self.client.clone().fire_deadline(request(req)).await?.into_inner())
    }
    async fn cancel(&self, req: pb::CancelRequest) -> Result<pb::LifecycleReply, RpcError> {
        Ok(self.client.clone().cancel(request(req)).await?.into_inner())
    }
    async fn revision(&self, req: pb::RevisionRequest) -> Result<pb::RevisionReply, RpcError> {
        Ok(self.client.clone().revision(request(req)).await?.into_inner())
    }
}

/// The edge's [`Matches`] over wire calls.
pub struct Remote<C>(pub C);

#[async_trait::async_trait]
impl<C: Calls> Matches for Remote<C> {
    fn registry(&self) -> &Arc<Registry> {
        self.0.registry()
    }

    async fn create_match(
        &self,
        game: &GameKey,
        seats: BTreeMap<String, SeatHolder>,
        config: &Value,
    ) -> Result<Uuid, HostError> {
        let req = pb::CreateMatchRequest {
            match_id: String::new(),
            game: Some(juegoland_rpc::game_key_to_pb(game)),
            seats: juegoland_rpc::seats_to_pb(&seats),
            config_json: config.to_string(),
        };
        let reply = self.0.create(req).await.map_err(to_host)?;
        juegoland_rpc::uuid_field("match_id", &reply.match_id).map_err(to_host)
    }

    async fn command(&self, principal: &str, envelope: CommandEnvelope) -> Result<ServerMessage, HostError> {
        let req = pb::SubmitCommandRequest {
            principal: principal.to_owned(),
            envelope_json: juegoland_rpc::envelope_to_json(&envelope),
        };
        let reply = self.0.submit(req).await.map_err(to_host)?;
        juegoland_rpc::server_message(&reply.message_json).map_err(to_host)
    }

    async fn sync(&self, match_id: Uuid, principal: &str) -> Result<Result<SyncReply, ErrorMessage>, HostError> {
        let req = pb::SyncRequest { match_id: match_id.to_string(), principal: principal.to_owned() };
        let reply = self.0.sync(req).await.map_err(to_host)?;
        sync_reply(reply).map_err(to_host)
    }

    async fn command_status(
        &self,
        match_id: Uuid,
        principal: &str,
        command_id: Uuid,
    ) -> Result<ServerMessage, HostError> {
        let req = pb::CommandStatusRequest {
            match_id: match_id.to_string(),
            principal: principal.to_owned(),
            command_id: command_id.to_string(),
        };
        let reply = self.0.command_status(req).await.map_err(to_host)?;
        juegoland_rpc::server_message(&reply.message_json).map_err(to_host)
    }

    async fn lifecycle(&self, match_id: Uuid, request: LifecycleRequest) -> Result<u64, HostError> {
        let match_id = match_id.to_string();
        let reply = match request {
            LifecycleRequest::Withdraw { seat } => self.0.withdraw(pb::WithdrawRequest { match_id, seat }).await,
            LifecycleRequest::FireDeadline { id, generation } => {
                self.0.fire_deadline(pb::FireDeadlineRequest { match_id, deadline_id: id, generation }).await
            }
            LifecycleRequest::Cancel { reason_code } => {
                self.0.cancel(pb::CancelRequest { match_id, reason_code }).await
            }
        };
        Ok(reply.map_err(to_host)?.revision)
    }

    async fn revision(&self, match_id: Uuid) -> Result<u64, HostError> {
        let req = pb::RevisionRequest { match_id: match_id.to_string() };
        Ok(self.0.revision(req).await.map_err(to_host)?.revision)
    }
}

/// The router's gRPC service over a [`Forwarder`].
#[derive(Clone)]
pub struct RouterService(pub Forwarder);

/// The trace context the caller (a gateway, the platform, a test) sent, if any.
fn parent<T>(request: &Request<T>) -> Option<TraceContext> {
    Some(juegoland_telemetry::extract(request.metadata()))
}

fn reply<T>(r: Result<T, RpcError>) -> Result<Response<T>, Status> {
    r.map(Response::new).map_err(Status::from)
}

#[tonic::async_trait]
impl pb::router_server::Router for RouterService {
    async fn list_games(&self, _: Request<pb::ListGamesRequest>) -> Result<Response<pb::ListGamesReply>, Status> {
        let games = self
            .0
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
                }
            })
            .collect();
        Ok(Response::new(pb::ListGamesReply { games }))
    }

    async fn create_match(
        &self,
        request: Request<pb::CreateMatchRequest>,
    ) -> Result<Response<pb::CreateMatchReply>, Status> {
        reply(self.0.create(parent(&request), request.into_inner()).await)
    }

    async fn submit_command(
        &self,
        request: Request<pb::SubmitCommandRequest>,
    ) -> Result<Response<pb::ServerMessageReply>, Status> {
        reply(self.0.submit(parent(&request), request.into_inner()).await)
    }

    async fn command_status(
        &self,
        request: Request<pb::CommandStatusRequest>,
    ) -> Result<Response<pb::ServerMessageReply>, Status> {
        reply(self.0.status_of(parent(&request), request.into_inner()).await)
    }

    async fn sync(&self, request: Request<pb::SyncRequest>) -> Result<Response<pb::SyncReply>, Status> {
        reply(self.0.sync_of(parent(&request), request.into_inner()).await)
    }

    async fn withdraw(&self, request: Request<pb::WithdrawRequest>) -> Result<Response<pb::LifecycleReply>, Status> {
        reply(self.0.withdraw_of(parent(&request), request.into_inner()).await)
    }

    async fn fire_deadline(
        &self,
        request: Request<pb::FireDeadlineRequest>,
    ) -> Result<Response<pb::LifecycleReply>, Status> {
        reply(self.0.fire_of(parent(&request), request.into_inner()).await)
    }

    async fn cancel(&self, request: Request<pb::CancelRequest>) -> Result<Response<pb::LifecycleReply>, Status> {
        reply(self.0.cancel_of(parent(&request), request.into_inner()).await)
    }

    async fn revision(&self, request: Request<pb::RevisionRequest>) -> Result<Response<pb::RevisionReply>, Status> {
        reply(self.0.revision_of(parent(&request), request.into_inner()).await)
    }
}
