//! The node's gRPC service: the match-scoped calls a router forwards, answered by the
//! [`Host`] for the matches this node owns on the ring.
//!
//! A call for a match the ring gives to another node is refused with `NOT_OWNER` (after
//! one refresh of the membership, in case this node's view is the stale one); a draining
//! node or one that lost its lease answers `UNAVAILABLE`, so routers retry elsewhere. The
//! store's fences (revision compare-and-set and owner) make a stale owner harmless; this
//! check only keeps the actors where the ring says they are.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use juegoland_actors::{Host, Matches};
use juegoland_core::LifecycleRequest;
use juegoland_rpc::{RpcError, pb};
use prometheus::{HistogramVec, IntCounterVec, Registry};
use tonic::{Request, Response, Status};
use tracing::{Instrument, info, info_span};
use uuid::Uuid;

use crate::errors::to_rpc;
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
    node_id: String,
    incarnation: Uuid,
    membership: Membership,
    /// False once the node drains or lost its lease: every call is then `UNAVAILABLE`.
    serving: AtomicBool,
    metrics: NodeMetrics,
}

impl NodeService {
    pub fn new(host: Host, node_id: String, incarnation: Uuid, membership: Membership, metrics: NodeMetrics) -> Self {
        Self {
            inner: Arc::new(Inner { host, node_id, incarnation, membership, serving: AtomicBool::new(true), metrics }),
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
    async fn admit(&self, match_id: Uuid) -> Result<(), RpcError> {
        if !self.is_serving() {
            return Err(RpcError::Unavailable(format!("node {} is not serving", self.inner.node_id)));
        }
        if self.owns(match_id) {
            return Ok(());
        }
        // This node's view may be the stale one: look again once before refusing.
        self.inner.membership.refresh_now().await;
        let ring = self.inner.membership.ring();
        match ring.owner(match_id) {
            Some(m) if m.incarnation == self.inner.incarnation => Ok(()),
            Some(m) => Err(RpcError::NotOwner(format!("match {match_id} belongs to node {}", m.node_id))),
            None => Err(RpcError::Unavailable("no live member in the ring".into())),
        }
    }

    /// Runs one call: admission, the operation, metrics and a span carrying the match id
    /// and the caller's trace context.
    async fn serve<T, F, Fut>(
        &self,
        op: &'static str,
        metadata: &tonic::metadata::MetadataMap,
        match_id: Result<Uuid, RpcError>,
        f: F,
    ) -> Result<Response<T>, Status>
    where
        F: FnOnce(Uuid) -> Fut,
        Fut: Future<Output = Result<T, RpcError>>,
    {
        let started = Instant::now();
        let span = info_span!(
            "node.call",
            op,
            match_id = tracing::field::Empty,
            command_id = tracing::field::Empty,
            node_id = %self.inner.node_id,
        );
        juegoland_telemetry::set_parent(&span, juegoland_telemetry::extract(metadata));
        let result = async {
            let match_id = match_id?;
            tracing::Span::current().record("match_id", tracing::field::display(match_id));
            self.admit(match_id).await?;
            f(match_id).await
        }
        .instrument(span)
        .await;
        let m = &self.inner.metrics;
        m.seconds.with_label_values(&[op]).observe(started.elapsed().as_secs_f64());
        let outcome = result.as_ref().map_or_else(RpcError::label, |_| "ok");
        m.calls.with_label_values(&[op, outcome]).inc();
        result.map(Response::new).map_err(Status::from)
    }
}

fn lifecycle_reply(revision: u64) -> pb::LifecycleReply {
    pb::LifecycleReply { revision }
}

#[tonic::async_trait]
impl pb::node_server::Node for NodeService {
    async fn create_match(
        &self,
        request: Request<pb::CreateMatchRequest>,
    ) -> Result<Response<pb::CreateMatchReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("create_match", &metadata, match_id, |match_id| async move {
            let game = juegoland_rpc::game_key(req.game)?;
            let seats = juegoland_rpc::seats(req.seats)?;
            let config = juegoland_rpc::json_field("config_json", &req.config_json)?;
            let id = self.inner.host.create_match_with_id(match_id, &game, seats, &config).await.map_err(to_rpc)?;
            Ok(pb::CreateMatchReply { match_id: id.to_string(), revision: 0 })
        })
        .await
    }

    async fn submit_command(
        &self,
        request: Request<pb::SubmitCommandRequest>,
    ) -> Result<Response<pb::ServerMessageReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let envelope = juegoland_rpc::envelope(&req.envelope_json);
        let match_id = envelope.as_ref().map(|e| e.match_id).map_err(Clone::clone);
        self.serve("submit_command", &metadata, match_id, |_| async move {
            let envelope = envelope?;
            tracing::Span::current().record("command_id", tracing::field::display(envelope.command_id));
            let answer = self.inner.host.command(&req.principal, envelope).await.map_err(to_rpc)?;
            Ok(pb::ServerMessageReply { message_json: juegoland_rpc::server_message_to_json(&answer) })
        })
        .await
    }

    async fn command_status(
        &self,
        request: Request<pb::CommandStatusRequest>,
    ) -> Result<Response<pb::ServerMessageReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("command_status", &metadata, match_id, |match_id| async move {
            let command_id = juegoland_rpc::uuid_field("command_id", &req.command_id)?;
            let answer = self.inner.host.command_status(match_id, &req.principal, command_id).await.map_err(to_rpc)?;
            Ok(pb::ServerMessageReply { message_json: juegoland_rpc::server_message_to_json(&answer) })
        })
        .await
    }

    async fn sync(&self, request: Request<pb::SyncRequest>) -> Result<Response<pb::SyncReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("sync", &metadata, match_id, |match_id| async move {
            let outcome = match self.inner.host.sync(match_id, &req.principal).await.map_err(to_rpc)? {
                Ok(reply) => pb::sync_reply::Outcome::Snapshot(pb::SyncSnapshot {
                    seat: reply.seat,
                    revision: reply.revision,
                    game: Some(juegoland_rpc::game_key_to_pb(&reply.game)),
                    view_schema_version: reply.view_schema_version,
                    event_schema_version: reply.event_schema_version,
                    snapshot_json: juegoland_rpc::server_message_to_json(&reply.snapshot),
                }),
                Err(e) => pb::sync_reply::Outcome::ErrorJson(juegoland_rpc::server_message_to_json(&e.into())),
            };
            Ok(pb::SyncReply { outcome: Some(outcome) })
        })
        .await
    }

    async fn withdraw(&self, request: Request<pb::WithdrawRequest>) -> Result<Response<pb::LifecycleReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("withdraw", &metadata, match_id, |match_id| async move {
            let request = LifecycleRequest::Withdraw { seat: req.seat };
            self.inner.host.lifecycle(match_id, request).await.map(lifecycle_reply).map_err(to_rpc)
        })
        .await
    }

    async fn fire_deadline(
        &self,
        request: Request<pb::FireDeadlineRequest>,
    ) -> Result<Response<pb::LifecycleReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("fire_deadline", &metadata, match_id, |match_id| async move {
            let request = LifecycleRequest::FireDeadline { id: req.deadline_id, generation: req.generation };
            self.inner.host.lifecycle(match_id, request).await.map(lifecycle_reply).map_err(to_rpc)
        })
        .await
    }

    async fn cancel(&self, request: Request<pb::CancelRequest>) -> Result<Response<pb::LifecycleReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("cancel", &metadata, match_id, |match_id| async move {
            let request = LifecycleRequest::Cancel { reason_code: req.reason_code };
            self.inner.host.lifecycle(match_id, request).await.map(lifecycle_reply).map_err(to_rpc)
        })
        .await
    }

    async fn revision(&self, request: Request<pb::RevisionRequest>) -> Result<Response<pb::RevisionReply>, Status> {
        let (metadata, _, req) = request.into_parts();
        let match_id = juegoland_rpc::uuid_field("match_id", &req.match_id);
        self.serve("revision", &metadata, match_id, |match_id| async move {
            let revision = self.inner.host.revision(match_id).await.map_err(to_rpc)?;
            Ok(pb::RevisionReply { revision })
        })
        .await
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
