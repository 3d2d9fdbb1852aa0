//! The node's gRPC service: the match requests a router forwards, answered by the
//! [`Host`] (through the match API's one `call`) for the matches this node owns on the ring.
//!
//! A call for a match the ring gives to another node is refused with `NOT_OWNER` (after
//! one refresh of the membership, in case this node's view is the stale one); a draining
//! node or one that lost its lease answers `UNAVAILABLE`, so routers retry elsewhere. The
//! store's fences (revision compare-and-set and owner) make a stale owner harmless; this
//! check only keeps the actors where the ring says they are.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use juegoland_actors::Host;
use juegoland_api::{MatchError, Matches};
use juegoland_rpc::pb;
use prometheus::{HistogramVec, IntCounterVec, Registry};
use tonic::{Request, Response, Status};
use tracing::{Instrument, info, info_span};
use uuid::Uuid;

use juegoland_cluster::Membership;

/// Metrics of the node's gRPC service.
#[derive(Clone)]
pub struct NodeMetrics {
    /// Calls by operation and outcome (`ok`, or the failure's name).
    pub calls: IntCounterVec,
    /// Call latency by operation, seconds.
    pub seconds: HistogramVec,
}

impl NodeMetrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let calls = IntCounterVec::new(
            prometheus::Opts::new(
                "juegoland_node_calls_total",
                "gRPC calls served by the node, by operation and outcome",
            ),
            &["op", "outcome"],
        )?;
        let seconds = HistogramVec::new(
            prometheus::HistogramOpts::new("juegoland_node_call_seconds", "gRPC call latency on the node")
                .buckets(prometheus::exponential_buckets(0.0001, 2.0, 18)?),
            &["op"],
        )?;
        registry.register(Box::new(calls.clone()))?;
        registry.register(Box::new(seconds.clone()))?;
        Ok(Self { calls, seconds })
    }
}

/// The node's gRPC service. Cheap to clone.
#[derive(Clone)]
pub struct NodeService {
    inner: Arc<Inner>,
}

struct Inner {
    host: Host,
    /// The base URL of this node's own client edge, given in match summaries.
    client_url: Option<String>,
    node_id: String,
    incarnation: Uuid,
    membership: Membership,
    /// False once the node drains or lost its lease: every call is then `UNAVAILABLE`.
    serving: AtomicBool,
    metrics: NodeMetrics,
}

impl NodeService {
    /// The service of `host`; `client_url` is the base URL of the node's own client edge,
    /// which the summaries of its matches carry (`MatchSummary::client_url`), if it serves
    /// clients.
    pub fn new(
        host: Host,
        client_url: Option<String>,
        node_id: String,
        incarnation: Uuid,
        membership: Membership,
        metrics: NodeMetrics,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                host,
                client_url,
                node_id,
                incarnation,
                membership,
                serving: AtomicBool::new(true),
                metrics,
            }),
        }
    }

    /// The host's answer to `request`, with this node's client edge in a summary or a
    /// creation.
    async fn answer(&self, request: juegoland_api::MatchRequest) -> Result<juegoland_api::MatchReply, MatchError> {
        match self.inner.host.call(request).await? {
            juegoland_api::MatchReply::Summary(mut summary) => {
                summary.client_url.clone_from(&self.inner.client_url);
                Ok(juegoland_api::MatchReply::Summary(summary))
            }
            juegoland_api::MatchReply::Created(mut created) => {
                created.client_url.clone_from(&self.inner.client_url);
                Ok(juegoland_api::MatchReply::Created(created))
            }
            reply => Ok(reply),
        }
    }

    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// Stops serving: every later call is `UNAVAILABLE` (drain, or a lost lease).
    pub fn stop_serving(&self) {
        self.inner.serving.store(false, Ordering::SeqCst);
    }

    pub fn is_serving(&self) -> bool {
        self.inner.serving.load(Ordering::SeqCst)
    }

    /// Whether this node owns `match_id` on its current ring.
    pub fn owns(&self, match_id: Uuid) -> bool {
        self.inner.membership.ring().owner(match_id).is_some_and(|m| m.incarnation == self.inner.incarnation)
    }

    /// Passivates every active match the ring now places elsewhere; returns how many.
    pub async fn shed_moved(&self) -> usize {
        let mut moved = 0;
        for match_id in self.inner.host.active_matches() {
            if !self.owns(match_id) {
                self.inner.host.passivate(match_id).await;
                moved += 1;
            }
        }
        if moved > 0 {
            info!(moved, "passivated matches the ring moved to other nodes");
        }
        moved
    }

    /// Admits a call for `match_id`, or says why not.
    async fn admit(&self, match_id: Uuid) -> Result<(), MatchError> {
        if !self.is_serving() {
            return Err(MatchError::Unavailable(format!("node {} is not serving", self.inner.node_id)));
        }
        if self.owns(match_id) {
            return Ok(());
        }
        // This node's view may be the stale one: look again once before refusing.
        self.inner.membership.refresh_now().await;
        let ring = self.inner.membership.ring();
        match ring.owner(match_id) {
            Some(m) if m.incarnation == self.inner.incarnation => Ok(()),
            Some(m) => Err(MatchError::NotOwner(format!("match {match_id} belongs to node {}", m.node_id))),
            None => Err(MatchError::Unavailable("no live member in the ring".into())),
        }
    }

    /// Serves one match request: validation, admission, the host's answer, metrics, and a
    /// `node.call` span carrying the match and command ids and the caller's trace context.
    async fn serve(&self, request: Request<pb::MatchRequest>) -> Result<pb::MatchReply, MatchError> {
        let (metadata, _, wire) = request.into_parts();
        let request = juegoland_rpc::request(wire);
        let op = request.as_ref().map_or("invalid", |r| r.op());
        let started = Instant::now();
        let span = info_span!(
            "node.call",
            op,
            match_id = tracing::field::Empty,
            command_id = tracing::field::Empty,
            node_id = %self.inner.node_id,
        );
        juegoland_telemetry::set_parent(&span, juegoland_telemetry::extract(&metadata));
        let result = async {
            let request = request?;
            let current = tracing::Span::current();
            current.record("match_id", tracing::field::display(request.match_id()));
            if let Some(command_id) = request.command_id() {
                current.record("command_id", tracing::field::display(command_id));
            }
            self.admit(request.match_id()).await?;
            self.answer(request).await
        }
        .instrument(span)
        .await;
        let m = &self.inner.metrics;
        m.seconds.with_label_values(&[op]).observe(started.elapsed().as_secs_f64());
        let outcome = result.as_ref().map_or_else(MatchError::label, |_| "ok");
        m.calls.with_label_values(&[op, outcome]).inc();
        result.map(|reply| juegoland_rpc::reply_to_pb(&reply))
    }
}

#[tonic::async_trait]
impl pb::node_server::Node for NodeService {
    async fn call(&self, request: Request<pb::MatchRequest>) -> Result<Response<pb::MatchReply>, Status> {
        self.serve(request).await.map(Response::new).map_err(|e| juegoland_rpc::to_status(&e))
    }

    async fn status(&self, _: Request<pb::NodeStatusRequest>) -> Result<Response<pb::NodeStatusReply>, Status> {
        Ok(Response::new(pb::NodeStatusReply {
            node_id: self.inner.node_id.clone(),
            incarnation: self.inner.incarnation.to_string(),
            active_actors: self.inner.host.active_actors() as u64,
            draining: !self.is_serving(),
        }))
    }
}

/// The matches as a node's own client edge sees them: a match this node owns is answered by
/// its host in process (no gRPC hop), any other is forwarded to its owner as a gateway
/// forwards it. A local answer that says to retry elsewhere (the match moved meanwhile) is
/// retried through the forwarder: every request is idempotent.
#[derive(Clone)]
pub struct Nearby {
    pub service: NodeService,
    pub forwarder: crate::Forwarder,
}

#[async_trait::async_trait]
impl Matches for Nearby {
    fn registry(&self) -> &Arc<juegoland_core::Registry> {
        self.forwarder.registry()
    }

    async fn call(&self, request: juegoland_api::MatchRequest) -> Result<juegoland_api::MatchReply, MatchError> {
        if self.service.is_serving() && self.service.owns(request.match_id()) {
            match self.service.answer(request.clone()).await {
                Err(e) if e.is_retryable() => {}
                reply => return reply,
            }
        }
        self.forwarder.call(request).await
    }
}
