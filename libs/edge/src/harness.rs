//! The unit tests' gateway: a match host whose snapshot reads wait for the test
//! ([`GatedMatches`]), a local bus, and connections whose protocol loop runs in a task
//! ([`Harness`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use futures::StreamExt;
use juegoland_api::{MatchError, MatchReply, MatchRequest, Matches, SyncReply};
use juegoland_bus::{Bus, LocalBus};
use juegoland_core::{GameKey, Publication, Registry};
use juegoland_protocol::{ServerMessage, Snapshot};
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::connection::{Ended, Frame, serve_frames};
use crate::gateway::{Gateway, GatewayConfig};
use crate::metrics::EdgeMetrics;
use crate::outbox::{Outbox, Outgoing};
use crate::subscription::Resync;

/// A match host for one match whose snapshot reads each wait for a permit from the test,
/// so it can publish while a subscription is inside its sync barrier.
pub(crate) struct GatedMatches {
    registry: Arc<Registry>,
    pub(crate) permits: Semaphore,
    /// The committed revision every read and cursor answers.
    pub(crate) committed: AtomicU64,
    pub(crate) reads: AtomicU64,
    /// Every presence told: (principal, subscription, present).
    pub(crate) presences: std::sync::Mutex<Vec<(String, String, bool)>>,
    /// The commands received, in the order they reached this host. A command's way here
    /// takes longer the lower its id's last byte (`0x10 - byte` ms), as calls to a remote
    /// owner vary, so commands that set out together would arrive in any order.
    pub(crate) commands: std::sync::Mutex<Vec<Uuid>>,
}

impl GatedMatches {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::new(Registry::new()),
            permits: Semaphore::new(0),
            committed: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            presences: Default::default(),
            commands: Default::default(),
        })
    }

    /// Waits until `n` reads have started.
    pub(crate) async fn reads_started(&self, n: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.reads.load(Ordering::SeqCst) < n {
            assert!(tokio::time::Instant::now() < deadline, "read {n} did not start within 5 s");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

#[async_trait::async_trait]
impl Matches for GatedMatches {
    fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    async fn call(&self, request: MatchRequest) -> Result<MatchReply, MatchError> {
        match request {
            MatchRequest::Sync { match_id, .. } => Ok(MatchReply::Snapshot(Box::new(self.read(match_id, true).await))),
            MatchRequest::Spectate { match_id } => Ok(MatchReply::Snapshot(Box::new(self.read(match_id, false).await))),
            MatchRequest::Revision { .. } => Ok(MatchReply::Revision(self.committed.load(Ordering::SeqCst))),
            MatchRequest::Presence { principal, subscription, present, .. } => {
                self.presences.lock().expect("not poisoned").push((principal, subscription, present));
                Ok(MatchReply::Revision(self.committed.load(Ordering::SeqCst)))
            }
            MatchRequest::Command { envelope, .. } => {
                let way = 0x10u64.saturating_sub(u64::from(envelope.command_id.as_bytes()[15]));
                tokio::time::sleep(Duration::from_millis(way)).await;
                self.commands.lock().expect("not poisoned").push(envelope.command_id);
                Err(MatchError::NotFound)
            }
            _ => Err(MatchError::NotFound),
        }
    }
}

impl GatedMatches {
    /// A sync read (`seat`: p0's, else a spectator's): counted, then held until a permit is
    /// given.
    async fn read(&self, match_id: Uuid, seat: bool) -> SyncReply {
        let seat = seat.then(|| "p0".to_owned());
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.permits.acquire().await.expect("the semaphore stays open").forget();
        let revision = self.committed.load(Ordering::SeqCst);
        let snapshot = Snapshot {
            match_id,
            subscription_id: String::new(),
            request_id: None,
            from_revision: None,
            revision,
            seat: seat.clone(),
            view: (&json!({})).into(),
            context: (&json!({})).into(),
            actions: Vec::new(),
            result: None,
            events: Vec::new(),
            controllers: None,
        };
        SyncReply {
            seat,
            revision,
            game: GameKey { id: "g".into(), rules_version: "1".into() },
            view_schema_version: 1,
            event_schema_version: 1,
            snapshot: ServerMessage::Snapshot(Box::new(snapshot)),
        }
    }
}

pub(crate) struct Harness {
    pub(crate) matches: Arc<GatedMatches>,
    bus: Arc<LocalBus>,
    pub(crate) gateway: Gateway,
    pub(crate) match_id: Uuid,
}

impl Harness {
    pub(crate) fn new(config: GatewayConfig) -> Harness {
        let matches = GatedMatches::new();
        let bus = Arc::new(LocalBus::default());
        let metrics = EdgeMetrics::new(&prometheus::Registry::new()).expect("metrics");
        let gateway =
            Gateway { matches: matches.clone(), bus: bus.clone(), metrics, config, connections: Default::default() };
        Harness { matches, bus, gateway, match_id: Uuid::from_u128(0x5eed) }
    }

    /// A connection that has sent one `game.sync` and then stays open; its loop's task
    /// and the receiving end of its outbox.
    pub(crate) fn connect_and_sync(&self, queue: usize) -> (JoinHandle<Ended>, mpsc::Receiver<Outgoing>) {
        self.connect_and_sync_as(crate::auth::Bearer::seats("alice"), queue)
    }

    /// [`Harness::connect_and_sync`] with `bearer`'s token.
    pub(crate) fn connect_and_sync_as(
        &self,
        bearer: crate::auth::Bearer,
        queue: usize,
    ) -> (JoinHandle<Ended>, mpsc::Receiver<Outgoing>) {
        let sync = json!({
            "protocolVersion": 1, "type": "game.sync", "requestId": "r1", "matchId": self.match_id,
            "accept": [{"id": "g", "rulesVersion": "1", "viewSchemaVersion": 1, "eventSchemaVersion": 1}]
        });
        let frames = futures::stream::iter([Frame::Text { bytes: Bytes::from(sync.to_string()), named: None }])
            .chain(futures::stream::pending());
        let (out, rx) = Outbox::channel(queue);
        (tokio::spawn(serve_frames(self.gateway.clone(), bearer, frames, out)), rx)
    }

    /// Publishes revision `revision` for both seats, p0's carrying `padding` bytes.
    pub(crate) async fn publish(&self, revision: u64, padding: usize) {
        let publications: Vec<Publication> = ["p0", "p1"]
            .into_iter()
            .map(|seat| {
                let encoded = json!({
                    "type": "game.snapshot", "subscriptionId": "", "revision": revision,
                    "padding": if seat == "p0" { "x".repeat(padding) } else { String::new() },
                });
                Publication {
                    match_id: self.match_id,
                    revision,
                    recipient: Some(seat.into()),
                    encoded: encoded.to_string().into(),
                    trace_context: None,
                }
            })
            .collect();
        self.bus.publish(&publications).await.expect("publish");
        // Publications arrive over time: let the subscription take each in.
        tokio::task::yield_now().await;
    }

    pub(crate) fn resyncs(&self, reason: Resync) -> u64 {
        self.gateway.metrics.resyncs.with_label_values(&[reason.as_str()]).get()
    }
}
