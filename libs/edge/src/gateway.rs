//! The gateway's shared state and settings: what every connection and subscription of a
//! gateway uses ([`Gateway`]: the match API, the bus, the metrics and the [`GatewayConfig`]),
//! the fixed bounds of the sync barrier ([`BARRIER_MAX_REVISIONS`], [`BARRIER_MAX_BYTES`]) and
//! of a cursor that runs ahead ([`CURSOR_GRACE`]), and how a failed match API call is answered
//! ([`host_error`]).

use std::sync::Arc;
use std::time::Duration;

use juegoland_api::{MatchError, Matches};
use juegoland_bus::Bus;
use juegoland_protocol::ErrorMessage;
use tracing::warn;
use uuid::Uuid;

use crate::limits::{Connections, EdgeLimits};
use crate::metrics::EdgeMetrics;
use crate::shutdown::Shutdown;

/// The most revisions a subscription buffers during its sync barrier (while its snapshot is
/// read); past it, it drops the buffer and syncs again (`spec/protocol.md`, sync barrier).
pub const BARRIER_MAX_REVISIONS: usize = 128;
/// The most bytes of publications a subscription buffers during its sync barrier. The seat is
/// known only once the snapshot is read, so every recipient's publication counts.
pub const BARRIER_MAX_BYTES: usize = 8 << 20;
/// How long a subscription whose cursor shows a revision it has not delivered waits for that
/// publication before it syncs again: a cursor read right after a commit often overtakes the
/// publication, which is then only milliseconds away.
pub const CURSOR_GRACE: Duration = Duration::from_secs(1);

/// Gateway settings.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    pub cursor_interval: Duration,
    /// What a client may do before it is refused or closed (connections, timeouts, queue,
    /// sizes, rate).
    pub limits: EdgeLimits,
    /// How often a seat's open subscription tells its match again that its human is here
    /// (`juegoland_api::PRESENCE_RENEW`): the match forgets a presence not renewed within
    /// its lease (`juegoland_api::PRESENCE_LEASE`), so a gateway that dies without telling
    /// cannot keep a seat counted present.
    pub presence_renew: Duration,
    /// Closes the connections when the process stops.
    pub shutdown: Shutdown,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            cursor_interval: Duration::from_secs(15),
            limits: EdgeLimits::default(),
            presence_renew: juegoland_api::PRESENCE_RENEW,
            shutdown: Shutdown::default(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Gateway {
    pub matches: Arc<dyn Matches>,
    pub bus: Arc<dyn Bus>,
    pub metrics: EdgeMetrics,
    pub config: GatewayConfig,
    /// The open client connections, counted against `config.limits`.
    pub connections: Connections,
}

/// The `game.error` that answers a failed match API call, counted (and logged unless the match
/// is simply not found).
pub(crate) fn host_error(gateway: &Gateway, e: &MatchError, match_id: Option<Uuid>) -> ErrorMessage {
    if !matches!(e, MatchError::NotFound) {
        warn!(match_id = match_id.map(tracing::field::display), error = %e, "host call failed");
    }
    let msg = e.to_error_message(match_id);
    gateway.metrics.errors.with_label_values(&[msg.code.as_str()]).inc();
    msg
}
