//! The cluster's roles: the node (match actors behind a gRPC service, owning the matches
//! the ring gives it) and the router (stateless forwarding to the owner with bounded
//! retries, and the platform HTTP API over it).
//!
//! Owns: the node and router gRPC services ([`NodeService`], [`RouterService`]), the
//! [`Forwarder`] (which implements the edge's `Matches`, so the same HTTP code serves the
//! all-in-one and a router), the single mapping between host failures and wire failures
//! (`errors.rs`), and the processes' start-up, drain on SIGTERM and self-fence on a lost
//! lease (`serve.rs`). Must not use: any service crate, or know any game by name (the
//! catalog is passed in).
//!
//! Every call a router forwards carries the W3C trace context of its `router.forward` span
//! in the gRPC metadata, and the node's `node.call` span continues it (`libs/telemetry`), so
//! one command is one trace across the processes.

mod errors;
mod node;
mod router;
mod serve;

pub use errors::{to_host, to_rpc};
pub use node::{NodeMetrics, NodeService};
pub use router::{Calls, Forwarder, Remote, RetryBudget, RouterCalls, RouterMetrics, RouterService};
pub use serve::{GatewayConfig, NodeConfig, RouterConfig, run_gateway, run_node, run_router};
