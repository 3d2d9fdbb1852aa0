//! Prometheus metrics of the client edge.

use prometheus::{IntCounterVec, IntGauge, Opts, Registry};

#[derive(Clone)]
pub struct EdgeMetrics {
    pub connections: IntGauge,
    pub subscriptions: IntGauge,
    /// Client messages by type.
    pub messages: IntCounterVec,
    /// `game.error`s sent, by code.
    pub errors: IntCounterVec,
    /// Resyncs by reason: gap, bus-lag, cursor.
    pub resyncs: IntCounterVec,
}

impl EdgeMetrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let connections = IntGauge::new("juegoland_gateway_connections", "Open client connections")?;
        let subscriptions = IntGauge::new("juegoland_gateway_subscriptions", "Live match subscriptions")?;
        let messages = IntCounterVec::new(
            Opts::new("juegoland_gateway_messages_total", "Client messages received, by type"),
            &["type"],
        )?;
        let errors = IntCounterVec::new(
            Opts::new("juegoland_gateway_errors_total", "game.error messages sent, by code"),
            &["code"],
        )?;
        let resyncs = IntCounterVec::new(
            Opts::new("juegoland_gateway_resyncs_total", "Subscription resyncs, by reason"),
            &["reason"],
        )?;
        registry.register(Box::new(connections.clone()))?;
        registry.register(Box::new(subscriptions.clone()))?;
        registry.register(Box::new(messages.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(resyncs.clone()))?;
        Ok(Self { connections, subscriptions, messages, errors, resyncs })
    }
}
