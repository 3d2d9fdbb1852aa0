//! What the edge bounds against abusive or broken clients, in one value ([`EdgeLimits`]), and
//! the connection count it enforces ([`Connections`]).
//!
//! Each limit answers in a typed way and is counted in `juegoland_edge_refused_total{reason}`
//! ([`Refusal`], a closed set of reasons):
//! - connections per process and per remote address: an upgrade (WebSocket) or a Socket.IO
//!   connect beyond a cap is refused (HTTP 503 with `Retry-After`; Socket.IO `connect_error`);
//! - the HTTP head (request line and headers) must arrive within `head_timeout`, or hyper
//!   closes the connection (slowloris; `server.rs`);
//! - a WebSocket sends a ping every `ping_interval`; one that delivers no complete message (a
//!   pong included) for `idle_timeout` is closed with 1008 (a slowloris on frames too);
//! - each connection's outgoing queue holds `outgoing_queue` messages; a client that lets it
//!   overflow is closed with 1008 (WebSocket) or disconnected (Socket.IO);
//! - a message over `max_message_bytes` (a single frame or a fragmented message as a whole)
//!   closes the WebSocket with 1009; the decoder answers anything above 64 KiB with
//!   MESSAGE_TOO_LARGE and keeps the connection;
//! - each connection may send `messages_per_second` messages on average (`burst` at once);
//!   above it a message is answered RATE_LIMITED and not processed, and a connection that
//!   keeps sending over the rate (its refusals outrun the rate by `sustained_refusals`) is
//!   closed with 1008;
//! - each connection may hold `max_subscriptions` subscriptions; another `game.sync` is
//!   answered RATE_LIMITED (unsubscribe first).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus::IntCounterVec;

/// The edge's limits (defaults in [`EdgeLimits::default`]; flags in `juegoland-roles`'
/// `EdgeLimitsArgs`, Helm values under `gateway.limits`).
#[derive(Clone, Debug)]
pub struct EdgeLimits {
    /// Open client connections (WebSocket and Socket.IO) per process.
    pub max_connections: usize,
    /// Open client connections per remote IP address.
    pub max_connections_per_address: usize,
    /// How long a client may take to send an HTTP request's head.
    pub head_timeout: Duration,
    /// How often the server pings a WebSocket client.
    pub ping_interval: Duration,
    /// How long a WebSocket may go without a complete message (pongs count) before it is
    /// closed; also Socket.IO's ping timeout.
    pub idle_timeout: Duration,
    /// Outgoing messages queued per connection; a client that lets the queue overflow does
    /// not read, and is disconnected.
    pub outgoing_queue: usize,
    /// The largest WebSocket message (a fragmented one counted whole) and frame.
    pub max_message_bytes: usize,
    /// Client messages per second each connection may send on average; above it they are
    /// answered with `RATE_LIMITED` (retry the same command) and not processed.
    pub messages_per_second: u32,
    /// How many messages a connection may send in a burst above the average.
    pub burst: u32,
    /// How far a connection's RATE_LIMITED answers may outrun the rate (each adds one, the
    /// rate takes them away) before the connection is closed.
    pub sustained_refusals: u32,
    /// Live subscriptions (`game.sync`) per connection; another sync is answered
    /// RATE_LIMITED until one is unsubscribed.
    pub max_subscriptions: usize,
}

impl Default for EdgeLimits {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            max_connections_per_address: 1_000,
            head_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            outgoing_queue: 256,
            max_message_bytes: 1 << 20,
            messages_per_second: 50,
            burst: 100,
            sustained_refusals: 1_000,
            max_subscriptions: 64,
        }
    }
}

/// Why the edge refused or closed a client (the label of `juegoland_edge_refused_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A connection beyond the process's cap.
    ProcessCap,
    /// A connection beyond the remote address's cap.
    AddressCap,
    /// An HTTP head not received in time.
    HeadTimeout,
    /// A WebSocket silent (no complete message) for the idle timeout.
    Idle,
    /// A client whose outgoing queue overflowed.
    SlowReader,
    /// A WebSocket message or frame over the size limit.
    TooLarge,
    /// A message over the connection's rate (answered RATE_LIMITED).
    RateLimited,
    /// A connection closed for staying over its rate.
    RateSustained,
    /// A sync beyond the connection's subscriptions (answered RATE_LIMITED).
    Subscriptions,
}

impl Refusal {
    pub const ALL: [Refusal; 9] = [
        Refusal::ProcessCap,
        Refusal::AddressCap,
        Refusal::HeadTimeout,
        Refusal::Idle,
        Refusal::SlowReader,
        Refusal::TooLarge,
        Refusal::RateLimited,
        Refusal::RateSustained,
        Refusal::Subscriptions,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::ProcessCap => "process_cap",
            Refusal::AddressCap => "address_cap",
            Refusal::HeadTimeout => "head_timeout",
            Refusal::Idle => "idle",
            Refusal::SlowReader => "slow_reader",
            Refusal::TooLarge => "too_large",
            Refusal::RateLimited => "rate_limited",
            Refusal::RateSustained => "rate_sustained",
            Refusal::Subscriptions => "subscriptions",
        }
    }

    /// Counts this refusal.
    pub(crate) fn count(self, refused: &IntCounterVec) {
        refused.with_label_values(&[self.as_str()]).inc();
    }
}

/// The remote address of a request's connection, which the edge's server (`server.rs`) puts
/// in every request's extensions; absent where the router is served some other way (then no
/// per-address cap applies).
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub IpAddr);

/// The open client connections of a process, by remote address.
#[derive(Clone, Default)]
pub(crate) struct Connections(Arc<Mutex<Counts>>);

#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// One open connection's place, given back when dropped.
pub(crate) struct Permit {
    connections: Connections,
    address: Option<IpAddr>,
}

impl Connections {
    /// A place for one more connection from `address`, or why there is none.
    pub(crate) fn open(&self, limits: &EdgeLimits, address: Option<IpAddr>) -> Result<Permit, Refusal> {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if counts.total >= limits.max_connections {
            return Err(Refusal::ProcessCap);
        }
        if let Some(address) = address {
            let n = counts.by_address.entry(address).or_default();
            if *n >= limits.max_connections_per_address {
                return Err(Refusal::AddressCap);
            }
            *n += 1;
        }
        counts.total += 1;
        Ok(Permit { connections: self.clone(), address })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.connections.0.lock().unwrap_or_else(|p| p.into_inner());
        counts.total -= 1;
        if let Some(address) = self.address
            && let Some(n) = counts.by_address.get_mut(&address)
        {
            *n -= 1;
            if *n == 0 {
                counts.by_address.remove(&address);
            }
        }
    }
}

/// How many seconds a refused upgrade is told to wait (`Retry-After`).
pub(crate) const RETRY_AFTER_SECONDS: u32 = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caps_hold_and_a_closed_connection_gives_its_place_back() {
        let limits = EdgeLimits { max_connections: 3, max_connections_per_address: 2, ..EdgeLimits::default() };
        let c = Connections::default();
        let (a, b) = (Some(IpAddr::from([10, 0, 0, 1])), Some(IpAddr::from([10, 0, 0, 2])));
        let a1 = c.open(&limits, a).unwrap();
        let _a2 = c.open(&limits, a).unwrap();
        assert_eq!(c.open(&limits, a).err(), Some(Refusal::AddressCap));
        let _b1 = c.open(&limits, b).unwrap();
        assert_eq!(c.open(&limits, b).err(), Some(Refusal::ProcessCap));
        drop(a1);
        assert!(c.open(&limits, a).is_ok());
    }
}
