//! What the edge bounds against abusive or broken clients, in one value ([`EdgeLimits`]), and
//! the connection count it enforces ([`Connections`]).
//!
//! Each limit answers in a typed way and is counted in `juegoland_edge_refused_total{reason}`
//! ([`Refusal`], a closed set of reasons):
//! - connections per process and per remote address: an upgrade (WebSocket) or a Socket.IO
//!   connect beyond a cap is refused (HTTP 503 with `Retry-After`; Socket.IO `connect_error`);
//! - new connections per remote address: `upgrades_per_second` on average (`upgrade_burst` at
//!   once); beyond it an upgrade is refused with 429 and `Retry-After` (a client closed for
//!   abuse that reconnects at once, over and over, costs a handshake each time);
//! - the HTTP head (request line and headers) must arrive within `head_timeout`, or hyper
//!   closes the connection (slowloris; `server.rs`);
//! - a WebSocket sends a ping every `ping_interval`; one that delivers no complete message (a
//!   pong included) for `idle_timeout` is closed with 1008 (a slowloris on frames too);
//! - each connection's outgoing queue holds `outgoing_queue` messages; a client that lets it
//!   overflow is closed with 1008 (WebSocket) or disconnected (Socket.IO);
//! - a message over `max_message_bytes` (a single frame or a fragmented message as a whole)
//!   closes the WebSocket with 1009; the decoder answers anything above its own 64 KiB with
//!   MESSAGE_TOO_LARGE and keeps the connection, so the default (128 KiB) is just above it:
//!   what lies between gets the typed answer, and an oversized message costs the server at
//!   most 128 KiB read;
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

use tokio::time::Instant;

use prometheus::IntCounterVec;

/// The edge's limits (defaults in [`EdgeLimits::default`]; flags in `juegoland-roles`'
/// `EdgeLimitsArgs`, Helm values under `gateway.limits`).
#[derive(Clone, Debug)]
pub struct EdgeLimits {
    /// Open client connections (WebSocket and Socket.IO) per process.
    pub max_connections: usize,
    /// Open client connections per remote IP address.
    pub max_connections_per_address: usize,
    /// New client connections per second per remote IP address, on average (0: no limit).
    pub upgrades_per_second: u32,
    /// New client connections a remote IP address may open in a burst above the average.
    pub upgrade_burst: u32,
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
            upgrades_per_second: 100,
            upgrade_burst: 500,
            head_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            outgoing_queue: 256,
            max_message_bytes: 128 << 10,
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
    /// A connection beyond the remote address's rate of new connections.
    AddressRate,
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
    pub const ALL: [Refusal; 10] = [
        Refusal::ProcessCap,
        Refusal::AddressCap,
        Refusal::AddressRate,
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
            Refusal::AddressRate => "address_rate",
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

/// A token bucket: `rate` tokens a second, at most `burst` held (a rate of 0 never runs
/// out). The per-connection message rate (`connection.rs`) and the per-address rate of new
/// connections both use it; `tokio`'s clock, so that tests can pause time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub(crate) fn new(rate: u32, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self { rate: f64::from(rate), burst, tokens: burst, last: now }
    }

    /// Refills up to `now`; answers the tokens the elapsed time was worth (counting any
    /// beyond the burst, which are not kept).
    pub(crate) fn refill(&mut self, now: Instant) -> f64 {
        let worth = now.saturating_duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + worth).min(self.burst);
        self.last = self.last.max(now);
        worth
    }

    /// Takes a token if there is one (after refilling up to `now`).
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.rate == 0.0 {
            return true;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether the bucket is full at `now` (forgetting it changes nothing).
    fn full(&self, now: Instant) -> bool {
        self.rate == 0.0
            || self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * self.rate >= self.burst
    }
}

/// The open client connections of a process, and by remote address their count and the
/// rate of new ones.
#[derive(Clone, Default)]
pub(crate) struct Connections(Arc<Mutex<Counts>>);

#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, Address>,
    /// Connections opened since addresses with nothing to remember were last forgotten.
    since_pruned: usize,
}

/// What is kept of one remote address: while it holds a connection, or until its bucket of
/// new connections is full again.
struct Address {
    open: usize,
    upgrades: TokenBucket,
}

/// Every this many new connections, addresses with no connection and a full bucket are
/// forgotten (a connection's close forgets its own address when it can), so that the map
/// holds the addresses of the last few seconds however many there are.
const PRUNE_EVERY: usize = 4096;

/// One open connection's place, given back when dropped.
pub(crate) struct Permit {
    connections: Connections,
    address: Option<IpAddr>,
}

impl Connections {
    /// A place for one more connection from `address`, or why there is none.
    pub(crate) fn open(&self, limits: &EdgeLimits, address: Option<IpAddr>) -> Result<Permit, Refusal> {
        let now = Instant::now();
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if counts.total >= limits.max_connections {
            return Err(Refusal::ProcessCap);
        }
        if let Some(address) = address {
            counts.since_pruned += 1;
            if counts.since_pruned >= PRUNE_EVERY {
                counts.since_pruned = 0;
                counts.by_address.retain(|_, a| a.open > 0 || !a.upgrades.full(now));
            }
            let a = counts.by_address.entry(address).or_insert_with(|| Address {
                open: 0,
                upgrades: TokenBucket::new(limits.upgrades_per_second, limits.upgrade_burst, now),
            });
            if a.open >= limits.max_connections_per_address {
                return Err(Refusal::AddressCap);
            }
            if !a.upgrades.take(now) {
                return Err(Refusal::AddressRate);
            }
            a.open += 1;
        }
        counts.total += 1;
        Ok(Permit { connections: self.clone(), address })
    }

    /// How many remote addresses are remembered (tests).
    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).by_address.len()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let now = Instant::now();
        let mut counts = self.connections.0.lock().unwrap_or_else(|p| p.into_inner());
        counts.total -= 1;
        if let Some(address) = self.address
            && let Some(a) = counts.by_address.get_mut(&address)
        {
            a.open -= 1;
            if a.open == 0 && a.upgrades.full(now) {
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

    #[tokio::test(start_paused = true)]
    async fn an_address_opening_connections_too_fast_is_refused_until_its_bucket_refills() {
        let limits = EdgeLimits { upgrades_per_second: 10, upgrade_burst: 3, ..EdgeLimits::default() };
        let c = Connections::default();
        let (a, b) = (Some(IpAddr::from([10, 0, 0, 1])), Some(IpAddr::from([10, 0, 0, 2])));
        // Opened and closed at once, as a client closed for abuse reconnects: the burst, then
        // refusals; another address is not affected.
        for _ in 0..3 {
            drop(c.open(&limits, a).unwrap());
        }
        assert_eq!(c.open(&limits, a).err(), Some(Refusal::AddressRate));
        assert!(c.open(&limits, b).is_ok());
        // A tenth of a second is worth one connection at 10 a second.
        tokio::time::advance(Duration::from_millis(100)).await;
        drop(c.open(&limits, a).unwrap());
        assert_eq!(c.open(&limits, a).err(), Some(Refusal::AddressRate));
        // An address whose bucket is full again when its last connection closes is
        // forgotten; one closed sooner (b) is remembered until a pruning.
        tokio::time::advance(Duration::from_secs(1)).await;
        let held = c.open(&limits, a).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(c.addresses(), 2);
        drop(held);
        assert_eq!(c.addresses(), 1);
        // No limit at 0.
        let unlimited = EdgeLimits { upgrades_per_second: 0, upgrade_burst: 1, ..EdgeLimits::default() };
        for _ in 0..1000 {
            drop(c.open(&unlimited, a).unwrap());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn addresses_are_forgotten_once_their_buckets_are_full_however_many_come() {
        let limits = EdgeLimits { upgrades_per_second: 100, upgrade_burst: 10, ..EdgeLimits::default() };
        let c = Connections::default();
        let address = |i: u32| Some(IpAddr::from((i + 1).to_be_bytes()));
        // One address holds a connection; many others connect once each and leave.
        let held = c.open(&limits, address(0)).unwrap();
        for i in 1..PRUNE_EVERY as u32 - 1 {
            drop(c.open(&limits, address(i)).unwrap());
        }
        assert_eq!(c.addresses(), PRUNE_EVERY - 1, "a bucket not yet full is remembered");
        // A second later every bucket is full: the next connection forgets all but the
        // address holding one (and remembers its own).
        tokio::time::advance(Duration::from_secs(1)).await;
        drop(c.open(&limits, address(PRUNE_EVERY as u32)).unwrap());
        assert_eq!(c.addresses(), 2);
        drop(held);
        assert_eq!(c.addresses(), 1);
    }
}
