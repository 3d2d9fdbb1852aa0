//! Prometheus metrics of the client edge.

use prometheus::{Histogram, HistogramOpts, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use crate::limits::Refusal;
use crate::subscription::Resync;

#[derive(Clone)]
pub struct EdgeMetrics {
    pub connections: IntGauge,
    /// Live match subscriptions by kind (`seat` or `spectator`) and, for a seat, the kind of
    /// its controller (`human` or `agent`; empty for a spectator).
    pub subscriptions: IntGaugeVec,
    /// Client messages by type.
    pub messages: IntCounterVec,
    /// `game.error`s sent, by code.
    pub errors: IntCounterVec,
    /// Resyncs by reason: gap, bus-lag, cursor, barrier-overflow.
    pub resyncs: IntCounterVec,
    /// Seconds from a decoded `game.command` to its answer (the router, the node and the
    /// commit included; the client's network not).
    pub command_seconds: Histogram,
    /// MCP tool calls of agents (`/v1/mcp`), by tool and outcome (`ok`, `error`: a typed
    /// error or a rejection in the tool's result).
    pub mcp_calls: IntCounterVec,
    /// Clients refused or closed by a limit (`limits.rs`), by reason.
    pub refused: IntCounterVec,
}

impl EdgeMetrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let connections = IntGauge::new("juegoland_gateway_connections", "Open client connections")?;
        let subscriptions = IntGaugeVec::new(
            Opts::new(
                "juegoland_gateway_subscriptions",
                "Live match subscriptions, by kind (seat, spectator) and seat controller (human, agent)",
            ),
            &["kind", "controller"],
        )?;
        for labels in [["seat", "human"], ["seat", "agent"], ["spectator", ""]] {
            subscriptions.with_label_values(&labels);
        }
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
        let mcp_calls = IntCounterVec::new(
            Opts::new("juegoland_gateway_mcp_calls_total", "MCP tool calls of agents, by tool and outcome"),
            &["tool", "outcome"],
        )?;
        for tool in ["instructions", "get_view", "legal_actions", "play", "wait_for_turn"] {
            for outcome in ["ok", "error"] {
                mcp_calls.with_label_values(&[tool, outcome]);
            }
        }
        let refused = IntCounterVec::new(
            Opts::new(
                "juegoland_edge_refused_total",
                "Clients refused or closed by an edge limit, by reason (process_cap, address_cap, principal_cap, abusive_address, head_timeout, body_timeout, http_address_cap, idle, slow_reader, too_large, rate_limited, rate_sustained, subscriptions, session_rate)",
            ),
            &["reason"],
        )?;
        for reason in Refusal::ALL {
            refused.with_label_values(&[reason.as_str()]);
        }
        for reason in Resync::ALL {
            resyncs.with_label_values(&[reason.as_str()]);
        }
        registry.register(Box::new(connections.clone()))?;
        registry.register(Box::new(subscriptions.clone()))?;
        registry.register(Box::new(messages.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(resyncs.clone()))?;
        registry.register(Box::new(command_seconds.clone()))?;
        registry.register(Box::new(mcp_calls.clone()))?;
        registry.register(Box::new(refused.clone()))?;
        Ok(Self { connections, subscriptions, messages, errors, resyncs, command_seconds, mcp_calls, refused })
    }
}
