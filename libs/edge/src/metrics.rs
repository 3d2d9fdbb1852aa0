//! Prometheus metrics of the client edge.

use prometheus::{Histogram, HistogramOpts, IntCounterVec, IntGauge, Opts, Registry};

use crate::subscription::Resync;

#[derive(Clone)]
pub struct EdgeMetrics {
    pub connections: IntGauge,
    pub subscriptions: IntGauge,
    /// Client messages by type.
    pub messages: IntCounterVec,
    /// `game.error`s sent, by code.
    pub errors: IntCounterVec,
    /// Resyncs by reason: gap, bus-lag, cursor, barrier-overflow.
    pub resyncs: IntCounterVec,
    /// Seconds from a decoded `game.command` to its answer (the router, the node and the
    /// commit included; the client's network not).
    pub command_seconds: Histogram,
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
        let command_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "juegoland_gateway_command_seconds",
                "Decoded game.command to its answer, on the gateway",
            )
            .buckets(prometheus::exponential_buckets(0.0005, 2.0, 14)?),
        )?;
        for reason in Resync::ALL {
            resyncs.with_label_values(&[reason.as_str()]);
        }
        registry.register(Box::new(connections.clone()))?;
        registry.register(Box::new(subscriptions.clone()))?;
        registry.register(Box::new(messages.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(resyncs.clone()))?;
        registry.register(Box::new(command_seconds.clone()))?;
        Ok(Self { connections, subscriptions, messages, errors, resyncs, command_seconds })
    }
}
