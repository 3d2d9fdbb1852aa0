//! The cluster's roles: the node (match actors behind a gRPC service, owning the matches
//! the ring gives it), the router (stateless forwarding to the owner with bounded retries,
//! and the platform HTTP API over it), the gateway, and the deadline scheduler (claims due
//! deadlines in the store and fires them through any `Matches`), and the webhook deliverer
//! that runs beside it (`webhooks.rs`: the platform feed POSTed, signed, to configured
//! endpoints, one deliverer per endpoint at a time through a lease in the store).
//!
//! Owns: the node and router gRPC services ([`NodeService`], [`RouterService`]), the
//! [`Forwarder`] and [`RouterCalls`] (which implement the match API's `Matches`, so the
//! same edge code serves the all-in-one, a router and a gateway), the [`Scheduler`] loop (`scheduler.rs`), and the processes' start-up,
//! drain on SIGTERM and self-fence on a lost lease (`serve.rs`), and the registry directory
//! of published packages the engine pins matches to ([`PublishedDir`]). Must not use: any service
//! crate, or know any game by name (the catalog is passed in).
//!
//! Every call a gateway or a scheduler makes to a router carries the W3C trace context of
//! the span it is made in (a gateway's `gateway.command`, a scheduler's `scheduler.fire`),
//! the router's `router.forward` span continues it and carries its own to the node, and the
//! node's `node.call` span continues that (`libs/telemetry`); the actor's `match.command`
//! and `store.commit` follow, and the commit's context travels on with its publications to
//! every gateway's `gateway.deliver`, so one command is one trace across the processes.

pub mod jwks;
mod node;
mod packages;
mod router;
mod scheduler;
mod serve;
pub mod signature;
pub mod webhook_admin;
pub mod webhook_config;
pub mod webhooks;

pub use node::{Nearby, NodeMetrics, NodeService};
pub use packages::PublishedDir;
pub use router::{Forwarder, RetryBudget, RouterCalls, RouterMetrics, RouterService};
pub use scheduler::{Outcome, Scheduler, SchedulerMetrics, SchedulerOptions};
pub use serve::{
    ClientEdgeArgs, EdgeLimitsArgs, GatewayConfig, MIN_SECRET_BYTES, MetricsArgs, NodeConfig, RouterConfig,
    RoutingConfig, SchedulerConfig, TokenArgs, WebhookConfig, ops_routes, register_process_metrics, run_gateway,
    run_node, run_router, run_scheduler,
};
pub use webhooks::{WebhookMetrics, WebhookOptions, Webhooks};
