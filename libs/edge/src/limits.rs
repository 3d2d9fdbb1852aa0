//! What the edge bounds against abusive or broken clients, in one value ([`EdgeLimits`]), and
//! the connection count it enforces ([`Connections`]).
//!
//! Each limit answers in a typed way and is counted in `juegoland_edge_refused_total{reason}`
//! ([`Refusal`], a closed set of reasons):
//! - connections per process, per remote address and per principal (one token's holder, or
//!   one agent seat; spectators' grants are bounded by address only): an upgrade (WebSocket)
//!   or a Socket.IO connect beyond a cap is refused (HTTP 503 with `Retry-After`; Socket.IO
//!   `connect_error`);
//! - closes for abuse per remote address: a connection closed for an oversized message or for
//!   staying over its rate counts against its address, `abusive_closes_per_minute` on average
//!   (`abusive_close_burst` at once); an address beyond it has its new connections refused
//!   with 429 and `Retry-After` until it is back under (a client closed for abuse that
//!   reconnects at once, over and over, costs a handshake and a read each time; honest
//!   clients, which are never closed for abuse, are never refused for it);
//! - the HTTP head (request line and headers) must arrive within `head_timeout`, or hyper
//!   closes the connection (slowloris; `server.rs`); a JSON body within `body_timeout` of
//!   its head, or the request is answered 408; a JSON body holds at most `MAX_JSON_BODY`
//!   (413); a remote address holds at most `max_http_connections_per_address` HTTP
//!   connections at once (one more is closed at once, before a byte is read); an address
//!   opens at most `sessions_per_second` new Socket.IO sessions (`session_burst` at once;
//!   429 before one is allocated), and a session that joins no namespace is closed after
//!   `head_timeout`;
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
    /// Open client connections per principal (an agent seat counts as one; spectators are
    /// not counted here): a player's tabs and devices, not a flood from one stolen token.
    pub max_connections_per_principal: usize,
    /// Connections of a remote IP address closed for abuse (an oversized message, a
    /// sustained rate) per minute, on average, before the address's new connections are
    /// refused (0: never refused for it).
    pub abusive_closes_per_minute: u32,
    /// Connections of a remote IP address closed for abuse at once before its new connections
    /// are refused.
    pub abusive_close_burst: u32,
    /// How long a client may take to send an HTTP request's head.
    pub head_timeout: Duration,
    /// How long a client may take to send a JSON body once its head arrived.
    pub body_timeout: Duration,
    /// Open HTTP connections per remote IP address (an upgraded one leaves this count for
    /// the client connections' own).
    pub max_http_connections_per_address: usize,
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
    /// New engine.io sessions (Socket.IO handshakes) per second per remote IP address, on
    /// average; above it a handshake is answered 429. A session is allocated before its
    /// token is read, and one that joins no namespace is closed after `head_timeout`: the
    /// two bound what a flood of handshakes holds.
    pub sessions_per_second: u32,
    /// New engine.io sessions per remote address at once.
    pub session_burst: u32,
}

impl Default for EdgeLimits {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            max_connections_per_address: 1_000,
            max_connections_per_principal: 32,
            abusive_closes_per_minute: 6,
            abusive_close_burst: 10,
            head_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_http_connections_per_address: 256,
            ping_interval: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            outgoing_queue: 256,
            max_message_bytes: 128 << 10,
            messages_per_second: 50,
            burst: 100,
            sustained_refusals: 1_000,
            max_subscriptions: 64,
            sessions_per_second: 10,
            session_burst: 50,
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
    /// A connection beyond its principal's cap.
    PrincipalCap,
    /// A connection from an address recently closed for abuse too often.
    AbusiveAddress,
    /// An HTTP head not received in time.
    HeadTimeout,
    /// A JSON body not received in time.
    BodyTimeout,
    /// An HTTP connection beyond its remote address's cap.
    HttpAddressCap,
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
    /// A new engine.io session over its remote address's rate (answered 429).
    SessionRate,
}

impl Refusal {
    pub const ALL: [Refusal; 14] = [
        Refusal::ProcessCap,
        Refusal::AddressCap,
        Refusal::PrincipalCap,
        Refusal::AbusiveAddress,
        Refusal::HeadTimeout,
        Refusal::BodyTimeout,
        Refusal::HttpAddressCap,
        Refusal::Idle,
        Refusal::SlowReader,
        Refusal::TooLarge,
        Refusal::RateLimited,
        Refusal::RateSustained,
        Refusal::Subscriptions,
        Refusal::SessionRate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::ProcessCap => "process_cap",
            Refusal::AddressCap => "address_cap",
            Refusal::PrincipalCap => "principal_cap",
            Refusal::AbusiveAddress => "abusive_address",
            Refusal::HeadTimeout => "head_timeout",
            Refusal::BodyTimeout => "body_timeout",
            Refusal::HttpAddressCap => "http_address_cap",
            Refusal::Idle => "idle",
            Refusal::SlowReader => "slow_reader",
            Refusal::TooLarge => "too_large",
            Refusal::RateLimited => "rate_limited",
            Refusal::RateSustained => "rate_sustained",
            Refusal::Subscriptions => "subscriptions",
            Refusal::SessionRate => "session_rate",
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
/// out). The per-connection message rate (`connection.rs`) and the per-address allowance of
/// closes for abuse both use it; `tokio`'s clock, so that tests can pause time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub(crate) fn new(rate: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self { rate, burst, tokens: burst, last: now }
    }

    /// Refills up to `now`; answers the tokens the elapsed time was worth (counting any
    /// beyond the burst, which are not kept).
    pub(crate) fn refill(&mut self, now: Instant) -> f64 {
        let worth = now.saturating_duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + worth).min(self.burst);
        self.last = self.last.max(now);
        worth
    }

    /// Whether a token is there to take (after refilling up to `now`).
    pub(crate) fn available(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.rate == 0.0 || self.tokens >= 1.0
    }

    /// Takes a token if there is one (after refilling up to `now`).
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        if !self.available(now) {
            return false;
        }
        if self.rate != 0.0 {
            self.tokens -= 1.0;
        }
        true
    }

    /// Whether the bucket is full at `now` (forgetting it changes nothing).
    fn full(&self, now: Instant) -> bool {
        self.rate == 0.0
            || self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * self.rate >= self.burst
    }
}

/// The open client connections of a process, and by remote address their count and its
/// allowance of closes for abuse.
#[derive(Clone, Default)]
pub(crate) struct Connections(Arc<Mutex<Counts>>);

#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, Address>,
    /// Open connections by principal (only while it holds one).
    by_principal: HashMap<Arc<str>, usize>,
    /// Connections opened since addresses with nothing to remember were last forgotten.
    since_pruned: usize,
}

/// What is kept of one remote address: while it holds a connection, or until its allowance
/// of closes for abuse is whole again.
struct Address {
    open: usize,
    abuse: TokenBucket,
}

/// Every this many new connections, addresses with no connection and a whole allowance are
/// forgotten (a connection's close forgets its own address when it can), so that the map
/// holds the addresses of the last few minutes however many there are.
const PRUNE_EVERY: usize = 4096;

/// One open connection's place, given back when dropped.
pub(crate) struct Permit {
    connections: Connections,
    address: Option<IpAddr>,
    principal: Option<Arc<str>>,
}

impl Connections {
    /// A place for one more connection from `address` by `principal` (`None`: not counted
    /// by principal), or why there is none.
    pub(crate) fn open(
        &self,
        limits: &EdgeLimits,
        address: Option<IpAddr>,
        principal: Option<&str>,
    ) -> Result<Permit, Refusal> {
        let now = Instant::now();
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if counts.total >= limits.max_connections {
            return Err(Refusal::ProcessCap);
        }
        if let Some(principal) = principal
            && counts.by_principal.get(principal).is_some_and(|open| *open >= limits.max_connections_per_principal)
        {
            return Err(Refusal::PrincipalCap);
        }
        if let Some(address) = address {
            counts.since_pruned += 1;
            if counts.since_pruned >= PRUNE_EVERY {
                counts.since_pruned = 0;
                counts.by_address.retain(|_, a| a.open > 0 || !a.abuse.full(now));
            }
            let rate = f64::from(limits.abusive_closes_per_minute) / 60.0;
            let a = counts
                .by_address
                .entry(address)
                .or_insert_with(|| Address { open: 0, abuse: TokenBucket::new(rate, limits.abusive_close_burst, now) });
            if a.open >= limits.max_connections_per_address {
                return Err(Refusal::AddressCap);
            }
            if !a.abuse.available(now) {
                return Err(Refusal::AbusiveAddress);
            }
            a.open += 1;
        }
        let principal: Option<Arc<str>> = principal.map(Arc::from);
        if let Some(principal) = &principal {
            *counts.by_principal.entry(principal.clone()).or_default() += 1;
        }
        counts.total += 1;
        Ok(Permit { connections: self.clone(), address, principal })
    }

    /// How many remote addresses are remembered (tests).
    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).by_address.len()
    }
}

impl Permit {
    /// This connection is being closed for abuse: it counts against its address's allowance.
    pub(crate) fn abused(&self) {
        let now = Instant::now();
        let mut counts = self.connections.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(address) = self.address
            && let Some(a) = counts.by_address.get_mut(&address)
        {
            a.abuse.take(now);
        }
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
            if a.open == 0 && a.abuse.full(now) {
                counts.by_address.remove(&address);
            }
        }
        if let Some(principal) = &self.principal
            && let Some(open) = counts.by_principal.get_mut(principal)
        {
            *open -= 1;
            if *open == 0 {
                counts.by_principal.remove(principal);
            }
        }
    }
}

/// The allowance of new engine.io sessions by remote address (`sio.rs`).
#[derive(Clone, Default)]
pub(crate) struct NewSessions(Arc<Mutex<SessionCounts>>);

#[derive(Default)]
struct SessionCounts {
    by_address: HashMap<IpAddr, TokenBucket>,
    since_pruned: usize,
}

impl NewSessions {
    /// Whether `address` may open one more session now (taking it from its allowance).
    pub(crate) fn admit(&self, limits: &EdgeLimits, address: IpAddr) -> bool {
        let now = Instant::now();
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        counts.since_pruned += 1;
        if counts.since_pruned >= PRUNE_EVERY {
            counts.since_pruned = 0;
            counts.by_address.retain(|_, bucket| !bucket.full(now));
        }
        let rate = f64::from(limits.sessions_per_second);
        counts.by_address.entry(address).or_insert_with(|| TokenBucket::new(rate, limits.session_burst, now)).take(now)
    }
}

/// The most bytes of a JSON body the platform API reads (a creation's config included);
/// more is `413 PAYLOAD_TOO_LARGE`.
pub const MAX_JSON_BODY: usize = 256 << 10;

/// The open HTTP connections by remote address (`server.rs`); a place is given back when its
/// [`HttpPermit`] is dropped.
#[derive(Clone, Default)]
pub(crate) struct HttpConnections(Arc<Mutex<HashMap<IpAddr, usize>>>);

pub(crate) struct HttpPermit {
    connections: HttpConnections,
    address: IpAddr,
}

impl HttpConnections {
    /// A place for one more connection from `address`, if it holds fewer than `cap`.
    pub(crate) fn open(&self, address: IpAddr, cap: usize) -> Option<HttpPermit> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(address).or_default();
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(HttpPermit { connections: self.clone(), address })
    }
}

impl Drop for HttpPermit {
    fn drop(&mut self) {
        let mut open = self.connections.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
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
        let a1 = c.open(&limits, a, None).unwrap();
        let _a2 = c.open(&limits, a, None).unwrap();
        assert_eq!(c.open(&limits, a, None).err(), Some(Refusal::AddressCap));
        let _b1 = c.open(&limits, b, None).unwrap();
        assert_eq!(c.open(&limits, b, None).err(), Some(Refusal::ProcessCap));
        drop(a1);
        assert!(c.open(&limits, a, None).is_ok());
    }

    #[test]
    fn a_principal_holds_its_cap_of_connections_from_any_address() {
        let limits = EdgeLimits { max_connections_per_principal: 2, ..EdgeLimits::default() };
        let c = Connections::default();
        let (a, b) = (Some(IpAddr::from([10, 0, 0, 1])), Some(IpAddr::from([10, 0, 0, 2])));
        let first = c.open(&limits, a, Some("alice")).unwrap();
        let _second = c.open(&limits, b, Some("alice")).unwrap();
        assert_eq!(c.open(&limits, a, Some("alice")).err(), Some(Refusal::PrincipalCap));
        assert!(c.open(&limits, a, Some("bob")).is_ok(), "another principal");
        assert!(c.open(&limits, a, None).is_ok(), "a spectator is not counted by principal");
        drop(first);
        assert!(c.open(&limits, a, Some("alice")).is_ok(), "a closed connection gives its place back");
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_closed_for_abuse_too_often_is_refused_until_its_allowance_refills() {
        let limits = EdgeLimits { abusive_closes_per_minute: 60, abusive_close_burst: 3, ..EdgeLimits::default() };
        let c = Connections::default();
        let (a, b) = (Some(IpAddr::from([10, 0, 0, 1])), Some(IpAddr::from([10, 0, 0, 2])));
        // Connections that are not closed for abuse come and go as they please.
        for _ in 0..100 {
            drop(c.open(&limits, a, None).unwrap());
        }
        // Three closed for abuse use the allowance up: the address's next connection is
        // refused, its open one is kept, another address is not affected.
        let kept = c.open(&limits, a, None).unwrap();
        for _ in 0..3 {
            let p = c.open(&limits, a, None).unwrap();
            p.abused();
        }
        assert_eq!(c.open(&limits, a, None).err(), Some(Refusal::AbusiveAddress));
        assert!(c.open(&limits, b, None).is_ok());
        // A second is worth one more at 60 a minute.
        tokio::time::advance(Duration::from_secs(1)).await;
        c.open(&limits, a, None).unwrap().abused();
        assert_eq!(c.open(&limits, a, None).err(), Some(Refusal::AbusiveAddress));
        // An address is remembered while it holds a connection or its allowance is not
        // whole (b, never closed for abuse, was forgotten at its close).
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(c.addresses(), 1);
        drop(kept);
        assert_eq!(c.addresses(), 0);
        // Never refused at 0.
        let never = EdgeLimits { abusive_closes_per_minute: 0, abusive_close_burst: 1, ..EdgeLimits::default() };
        for _ in 0..100 {
            c.open(&never, a, None).unwrap().abused();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn addresses_are_forgotten_once_their_allowance_is_whole_however_many_come() {
        let limits = EdgeLimits { abusive_closes_per_minute: 60, abusive_close_burst: 10, ..EdgeLimits::default() };
        let c = Connections::default();
        let address = |i: u32| Some(IpAddr::from((i + 1).to_be_bytes()));
        // One address holds a connection; many others are closed for abuse once each.
        let held = c.open(&limits, address(0), None).unwrap();
        for i in 1..PRUNE_EVERY as u32 - 1 {
            c.open(&limits, address(i), None).unwrap().abused();
        }
        assert_eq!(c.addresses(), PRUNE_EVERY - 1, "an allowance not yet whole is remembered");
        // A second later every allowance is whole: the next connection forgets all but the
        // address holding one (and remembers its own until it is whole again).
        tokio::time::advance(Duration::from_secs(1)).await;
        c.open(&limits, address(PRUNE_EVERY as u32), None).unwrap().abused();
        assert_eq!(c.addresses(), 2);
        drop(held);
        assert_eq!(c.addresses(), 1);
    }
}
