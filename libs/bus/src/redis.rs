//! The Redis streams backend: one bounded stream per match, `juegoland:{<match id>}:pub`
//! (the braces are the Redis Cluster hash tag, so a match's stream stays on one shard).
//!
//! Writing. [`Bus::publish`] appends a revision's publications with explicit entry ids
//! `<revision>-<n>`, n = 1, 2, … within the revision, and the fields `revision`, `recipient`
//! (`""` for spectators), `count` (how many entries the revision has), `encoded` (the
//! recipient's `game.snapshot` text) and `published` (the publisher's wall clock when it sent
//! the revision, in microseconds since the Unix epoch: readers ignore it; tools and the
//! fan-out benchmark read it back with [`RedisBus::published`] to measure how long entries
//! take to reach clients), and, only when the publication has one, `traceparent` (the W3C
//! trace context of the commit that produced it, [`Publication::trace_context`], so that the
//! gateway's delivery continues the command's trace). All entries of one match go in one MULTI/EXEC with
//! `XADD … MAXLEN ~ N`, followed by `EXPIRE`, so a reader sees a revision's entries together;
//! the transactions of every match that publishes while a write is on its way share the next
//! write ([`publisher`]).
//! Explicit ids make a re-publication idempotent: Redis refuses an id at or below the
//! stream's top, so the outbox sweeper re-sending a revision that is already on the stream
//! (or that a later revision superseded) adds nothing and counts as done. This rests on what
//! the store guarantees: a match's revisions only grow, and a match id is never reused.
//!
//! Reading. A [`RedisBus`] reads with reader tasks, each on a connection of its own (a blocked
//! `XREAD` holds its connection) and each multiplexing at most
//! [`RedisBusConfig::streams_per_reader`] watched matches in one `XREAD BLOCK`. A newly
//! watched match goes to the first reader with room, and a new reader starts when every one
//! is full; a match nobody watches any more leaves its reader's set at that reader's next
//! round. The bound is what makes reading scale: a blocked `XREAD` returns as soon as ONE of
//! its streams has news, and the next round sends, parses and blocks on every key again, so
//! one read over all of 10,000 watched streams costs Redis and the reader O(10,000) per
//! publication. Bounded sets keep a round cheap and let rounds of different readers overlap.
//! After a read that returned entries the reader pauses [`RedisBusConfig::read_pause`]
//! before the next one, so that on a busy gateway a read finds several publications waiting
//! instead of blocking (and being woken) once per publication.
//! Connections grow with watched matches / `streams_per_reader` (157 for 10,000 matches at
//! the default 64), not with subscriptions: all in-process subscribers of one match share one
//! registration (a broadcast channel for [`Bus::subscribe`]'s streams, and the sinks of
//! [`Bus::watch`], which the reader calls itself as it hands entries over, with no task or
//! channel per watcher). A reader whose matches are all gone keeps its connection and waits
//! for the next match placed on it.
//!
//! A subscription's start is resolved before [`Bus::subscribe`] returns (the id of the
//! stream's last entry, which is what `$` means, made concrete), so nothing published after
//! it returns can be missed however late the reader includes the new key. To make that
//! prompt, the reader's blocked `XREAD` is woken with `CLIENT UNBLOCK` from the publishing
//! connection; without it a new match would wait up to one block period. Each watched stream
//! keeps the id of the last entry read, so a key joining or leaving a reader's set loses
//! nothing of the other streams.
//!
//! Gaps. Entry ids are dense: after `<r>-<k>` of a revision of `count` entries the next entry
//! must be `<r>-<k+1>` when `k < count`, else `<r+1>-1`. The reader therefore knows the exact
//! id that must come next; any other id means entries were trimmed away before it read them
//! (or a revision never reached the stream), and its subscribers get [`BusItem::Gap`] before
//! the reader carries on with what is there. This needs no extra round trip and also catches
//! a trim in the middle of a revision. When a reader's connection drops, every match it serves
//! gets a `Gap` once Redis answers again and continues from its stream's end then.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use ::redis::streams::{StreamId, StreamRangeReply, StreamReadReply};
use ::redis::{AsyncConnectionConfig, Client, RedisError, RedisResult};
use futures::stream::{BoxStream, StreamExt};
use juegoland_core::Publication;
use tokio::sync::{Notify, broadcast};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tracing::{Instrument, debug, info, info_span, warn};
use uuid::Uuid;

use crate::{Bus, BusError, BusItem, Delivery as SinkDelivery, Sink, Watching};
use publisher::Publisher;

mod publisher;

const FIELD_REVISION: &str = "revision";
const FIELD_RECIPIENT: &str = "recipient";
const FIELD_COUNT: &str = "count";
const FIELD_ENCODED: &str = "encoded";
const FIELD_PUBLISHED: &str = "published";
const FIELD_TRACEPARENT: &str = "traceparent";
/// The entry's authentication tag, with a [`BusSecret`].
const FIELD_MAC: &str = "mac";

/// The key nodes and gateways share to authenticate stream entries: a node tags each entry
/// with an HMAC-SHA256 of everything a reader uses (match, entry id, revision, count,
/// recipient, trace context, the message), and a reader drops an entry whose tag is missing
/// or wrong — a forged next revision never reaches a player — and resyncs its subscribers
/// from the match. It authenticates, it does not hide: keep Redis private (ACL credentials,
/// TLS, the network policy).
#[derive(Clone)]
pub struct BusSecret(Arc<[u8]>);

impl BusSecret {
    /// At least 32 bytes.
    pub fn new(secret: &[u8]) -> Result<Self, BusError> {
        if secret.len() < 32 {
            return Err(BusError::InvalidConfig(format!(
                "the bus secret is at least 32 bytes, this one is {}",
                secret.len()
            )));
        }
        Ok(Self(secret.into()))
    }

    fn mac(&self, entry: &Tagged<'_>) -> Hmac {
        use hmac::{KeyInit, Mac};
        let mut mac = <Hmac as KeyInit>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        let Tagged { match_id, id, count, recipient, traceparent, encoded } = entry;
        let head = format!("{match_id}\n{id}\n{}\n{count}\n{recipient}\n{traceparent}\n", id.revision);
        mac.update(head.as_bytes());
        mac.update(encoded.as_bytes());
        mac
    }

    /// The tag of an entry, in hex.
    fn tag(&self, entry: &Tagged<'_>) -> String {
        use hmac::Mac;
        hex::encode(self.mac(entry).finalize().into_bytes())
    }

    /// Whether `tag` is the entry's, compared in constant time.
    fn verifies(&self, tag: &str, entry: &Tagged<'_>) -> bool {
        use hmac::Mac;
        let Ok(tag) = hex::decode(tag) else { return false };
        self.mac(entry).verify_slice(&tag).is_ok()
    }
}

/// What an entry's tag covers: everything a reader uses of it.
struct Tagged<'a> {
    match_id: Uuid,
    id: EntryId,
    count: u64,
    recipient: &'a str,
    traceparent: &'a str,
    encoded: &'a str,
}

impl std::fmt::Debug for BusSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BusSecret(…)")
    }
}

type Hmac = hmac::Hmac<sha2::Sha256>;

/// The first pause before the reader reconnects; it doubles up to [`RECONNECT_MAX`].
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(2);
/// How soon a `CLIENT UNBLOCK` is repeated when the read it targets was not blocked yet.
const UNBLOCK_RETRY: Duration = Duration::from_millis(10);

/// How a [`RedisBus`] writes, reads and gives up. The defaults suit production; tests shrink
/// the bounds.
#[derive(Clone, Debug)]
pub struct RedisBusConfig {
    /// Authenticates stream entries (nodes tag, gateways check); `None` neither tags nor
    /// checks (a bus inside a trusted network only).
    pub secret: Option<BusSecret>,
    /// The approximate number of entries a match's stream keeps (`XADD … MAXLEN ~`); a
    /// reader further behind than that sees a gap. Default 1024.
    pub max_len: usize,
    /// How long a stream outlives its last publication (`EXPIRE`); `None` keeps it until it
    /// is deleted. Default 10 minutes: a stream only carries live publications to gateways
    /// (a subscriber that finds it gone resyncs from the store), and every finished match
    /// leaves its stream behind — tens of kilobytes each, so a day's worth of finished
    /// matches would fill Redis (the 10-minute soak in docs/benchmarks.md saw it grow 77 MiB
    /// a minute at 27 finished matches a second).
    pub stream_ttl: Option<Duration>,
    /// The bound on one `publish` or `subscribe` call, reconnecting included: past it the
    /// call fails with [`BusError::Unavailable`]. Default 2 s.
    pub call_timeout: Duration,
    /// The bound on one connection attempt. Default 1 s.
    pub connect_timeout: Duration,
    /// After a publish that Redis did not answer (a timeout, a lost connection), how long
    /// later publishes fail at once instead of waiting out `call_timeout` each: a silent
    /// Redis must not add its timeout to every commit's answer (the actor publishes before it
    /// answers, and the outbox keeps what was not published for the sweeper). When the pause
    /// runs out, a `PING` in the background (on no commit's path) asks Redis again; publishes
    /// keep failing at once until it is answered. Default 1 s; zero always waits.
    pub publish_pause: Duration,
    /// The bound on one reply (the reader adds its block time). Default 1 s.
    pub response_timeout: Duration,
    /// How long one `XREAD` blocks when nothing arrives. Default 2 s.
    pub read_block: Duration,
    /// The most entries one `XREAD` returns per stream. Default 512.
    pub read_count: usize,
    /// The most watched matches one reader serves (the keys of one `XREAD`); past it a new
    /// reader, with a connection of its own, starts. Default 64: Redis spends a few
    /// microseconds per key each time a blocked read returns and is sent again, so a smaller
    /// set costs it less per publication, at one connection per 64 watched matches
    /// (`docs/benchmarks.md`, issue 6, has the measurements).
    pub streams_per_reader: usize,
    /// Entries buffered per watched match in this process before a subscriber that does not
    /// keep up sees a gap. Default 1024.
    pub subscriber_buffer: usize,
    /// How long a reader waits after a read that returned entries before it reads again, so
    /// that the next read finds several publications waiting instead of blocking for each
    /// one. A blocked `XREAD` costs Redis a few microseconds per key to block and again to
    /// wake, so on a busy gateway reading back to back made each publication cost Redis one
    /// blocked read of every key of its reader; the pause bounds the reads per reader to
    /// about one per pause (`docs/benchmarks.md`, issue 19, has the measurements). It adds at
    /// most that much to a delivery's latency. Default 2 ms; zero reads back to back.
    pub read_pause: Duration,
}

impl Default for RedisBusConfig {
    fn default() -> Self {
        Self {
            secret: None,
            max_len: 1024,
            stream_ttl: Some(Duration::from_secs(10 * 60)),
            call_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
            publish_pause: Duration::from_secs(1),
            response_timeout: Duration::from_secs(1),
            read_block: Duration::from_secs(2),
            read_count: 512,
            streams_per_reader: 64,
            subscriber_buffer: 1024,
            read_pause: Duration::from_millis(2),
        }
    }
}

impl RedisBusConfig {
    fn validate(&self) -> Result<(), BusError> {
        let invalid = |what: &str| Err(BusError::InvalidConfig(format!("{what} must be positive")));
        if self.max_len == 0 {
            return invalid("max_len");
        }
        if self.read_count == 0 {
            return invalid("read_count");
        }
        if self.streams_per_reader == 0 {
            return invalid("streams_per_reader");
        }
        if self.subscriber_buffer == 0 {
            return invalid("subscriber_buffer");
        }
        if self.read_block.as_millis() == 0 {
            return invalid("read_block (in whole milliseconds)");
        }
        if self.stream_ttl.is_some_and(|ttl| ttl.as_secs() == 0) {
            return invalid("stream_ttl (in whole seconds)");
        }
        Ok(())
    }
}

/// The publication bus on Redis streams; see the module documentation for the entry format,
/// the reader and how gaps are found.
///
/// Dropping it stops its reader tasks, which ends every subscription stream it serves.
pub struct RedisBus {
    config: RedisBusConfig,
    /// What the readers open their connections with.
    client: Client,
    /// Publishing and the one-off reads of `subscribe` (it reconnects by itself).
    publisher: ConnectionManager,
    shared: Arc<Shared>,
    /// The id of the next watcher.
    next_sink: AtomicU64,
    /// The reader tasks started so far; aborted when the bus is dropped.
    readers: Mutex<Vec<JoinHandle<()>>>,
    /// Appends publications, many matches' in one write.
    publishing: Publisher,
}

impl RedisBus {
    /// A bus on the Redis server at `url` (`redis://host:port/db`). It connects lazily and
    /// never fails because Redis is down: calls fail with [`BusError::Unavailable`] until it
    /// is up. Reader tasks start with the first subscriptions (inside the caller's runtime).
    pub fn new(url: &str, config: RedisBusConfig) -> Result<RedisBus, BusError> {
        config.validate()?;
        let client = Client::open(url).map_err(|e| BusError::InvalidConfig(format!("redis url {url:?}: {e}")))?;
        // One quick retry inside the manager: the caller's own retry (the outbox sweeper, a
        // client's resubscription) is the real one, and `call_timeout` bounds everything.
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.response_timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let publisher = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)
            .map_err(|e| BusError::InvalidConfig(format!("redis connection manager: {e}")))?;
        let shared = Arc::new(Shared { state: Mutex::new(Watches::default()), secret: config.secret.clone() });
        Ok(RedisBus {
            publishing: Publisher::new(publisher.clone(), config.clone()),
            config,
            client,
            publisher,
            shared,
            next_sink: AtomicU64::new(0),
            readers: Mutex::new(Vec::new()),
        })
    }

    /// How many writes (round trips to Redis) publishing took so far: each carries every match
    /// that published while the previous one was on its way.
    pub fn publish_writes(&self) -> u64 {
        self.publishing.writes()
    }

    /// How many reader tasks (and reading connections) the bus runs now.
    pub fn readers(&self) -> usize {
        self.readers.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Starts the reader of index `index`, which [`Watches::place`] has just added.
    fn start_reader(&self, index: usize, wake: Arc<Notify>) {
        let reader = Reader {
            index,
            wake,
            client: self.client.clone(),
            unblocker: self.publisher.clone(),
            shared: self.shared.clone(),
            config: self.config.clone(),
        };
        let task = tokio::spawn(reader.run().instrument(info_span!("redis_bus_reader", reader = index)));
        self.readers.lock().unwrap_or_else(|p| p.into_inner()).push(task);
        debug!(reader = index, "stream reader started");
    }

    /// The key of a match's stream: `juegoland:{<match id>}:pub`.
    pub fn stream_key(match_id: Uuid) -> String {
        format!("juegoland:{{{match_id}}}:pub")
    }

    /// Checks that Redis answers (for readiness probes).
    pub async fn ping(&self) -> Result<(), BusError> {
        let mut conn = self.publisher.clone();
        let pong: String =
            bounded(self.config.call_timeout, "ping redis", ::redis::cmd("PING").query_async(&mut conn)).await?;
        debug!(reply = %pong, "redis answered");
        Ok(())
    }

    /// When each revision of `match_id` still on its stream was published: the `published`
    /// field of the revision's first entry (revisions written without it are left out). For
    /// tools and benchmarks that measure how long publications take to reach clients.
    pub async fn published(&self, match_id: Uuid) -> Result<BTreeMap<u64, SystemTime>, BusError> {
        let mut conn = self.publisher.clone();
        let entries: StreamRangeReply = bounded(
            self.config.call_timeout,
            "read the match stream",
            ::redis::cmd("XRANGE").arg(Self::stream_key(match_id)).arg("-").arg("+").query_async(&mut conn),
        )
        .await?;
        Ok(entries
            .ids
            .iter()
            .filter_map(|entry| {
                let id = EntryId::parse(&entry.id).filter(|id| id.seq == 1)?;
                let micros: u64 = entry.get::<String>(FIELD_PUBLISHED)?.parse().ok()?;
                Some((id.revision, UNIX_EPOCH + Duration::from_micros(micros)))
            })
            .collect())
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        for reader in self.readers.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            reader.abort();
        }
        self.shared.end();
    }
}

#[async_trait::async_trait]
impl Bus for RedisBus {
    /// Publications are expected in revision order; those of one match go in one
    /// transaction (different matches may live on different shards).
    async fn publish(&self, publications: &[Publication]) -> Result<(), BusError> {
        self.publishing.publish(publications).await
    }

    async fn subscribe(&self, match_id: Uuid) -> Result<BoxStream<'static, BusItem>, BusError> {
        self.join(match_id, |watch, start| follow(watch.tx.subscribe(), start)).await
    }

    /// The reader calls the sink itself, right where it hands entries to the subscriptions'
    /// channels: no task and no channel per watcher.
    async fn watch(&self, match_id: Uuid, sink: Arc<dyn Sink>) -> Result<Watching, BusError> {
        let id = self.next_sink.fetch_add(1, Ordering::Relaxed);
        self.join(match_id, |watch, start| watch.sinks.push(Watcher { id, start, sink })).await?;
        Ok(Watching { _stop: Box::new(Unwatch { shared: Arc::downgrade(&self.shared), match_id, id }) })
    }
}

impl RedisBus {
    /// Follows `match_id` from its stream's end: `add` joins the follower to the match's
    /// watch (new, or the one its other followers share) with that end as its start. The
    /// start is resolved before this returns, so nothing published afterwards can be missed
    /// however late the reader includes the new key.
    async fn join<R>(&self, match_id: Uuid, add: impl FnOnce(&mut Watch, EntryId) -> R) -> Result<R, BusError> {
        let key = Self::stream_key(match_id);
        let mut conn = self.publisher.clone();
        let end: StreamRangeReply = bounded(
            self.config.call_timeout,
            "read the end of the match stream",
            ::redis::cmd("XREVRANGE").arg(&key).arg("+").arg("-").arg("COUNT").arg(1).query_async(&mut conn),
        )
        .await?;
        let tail = end.ids.first().map_or(Tail::START, Tail::at);
        let (joined, placed) = {
            let mut state = self.shared.state();
            match state.watch_mut(match_id) {
                // The reader is at or before `tail` for this match; each follower drops what
                // lies between.
                Some(watch) => (add(watch, tail.id), None),
                None => {
                    let tx = broadcast::channel(self.config.subscriber_buffer).0;
                    let mut watch = Watch { key, tx, sinks: Vec::new(), tail, stale: false };
                    let joined = add(&mut watch, tail.id);
                    (joined, Some(state.place(match_id, watch, &self.config)))
                }
            }
        };
        match placed {
            Some(Placed { index, wake, new_reader: true }) => self.start_reader(index, wake),
            // Wake the reader so that its next read includes the new stream.
            Some(Placed { wake, .. }) => wake.notify_one(),
            None => {}
        }
        Ok(joined)
    }
}

/// Removes a watcher from its match when its [`Watching`] is dropped. It does not keep the
/// shared state alive: the bus's end ends every subscription.
struct Unwatch {
    shared: Weak<Shared>,
    match_id: Uuid,
    id: u64,
}

impl Drop for Unwatch {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade()
            && let Some(watch) = shared.state().watch_mut(self.match_id)
        {
            watch.sinks.retain(|w| w.id != self.id);
        }
    }
}

/// A subscription from `start`: what the reader hands over for entries after it (a match
/// already watched may still be handing over earlier ones), and a gap when the subscriber
/// does not keep up with its buffer.
fn follow(rx: broadcast::Receiver<Delivery>, start: EntryId) -> BoxStream<'static, BusItem> {
    BroadcastStream::new(rx)
        .filter_map(move |delivery| {
            std::future::ready(match delivery {
                Ok(Delivery { id, item }) => (id > start).then_some(item),
                Err(BroadcastStreamRecvError::Lagged(_)) => Some(BusItem::Gap),
            })
        })
        .boxed()
}

/// Runs `call` within `limit`, mapping both a Redis error and the timeout to
/// [`BusError::Unavailable`] that names `what` was being done.
async fn bounded<T>(limit: Duration, what: &str, call: impl Future<Output = RedisResult<T>>) -> Result<T, BusError> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(BusError::Unavailable(format!("{what}: {e}"))),
        Err(_) => Err(BusError::Unavailable(format!("{what}: no answer from redis within {limit:?}"))),
    }
}

/// Redis refused an entry id at or below the stream's top: the entry is already there, or a
/// later revision was published first.
fn is_stale_id(e: &RedisError) -> bool {
    e.detail().is_some_and(|d| d.contains("equal or smaller than the target stream top item"))
}

/// A stream entry id, `<ms>-<seq>`; this backend writes `<revision>-<n>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EntryId {
    revision: u64,
    seq: u64,
}

impl EntryId {
    const ZERO: EntryId = EntryId { revision: 0, seq: 0 };
    /// Sorts after every real entry: a gap that concerns every subscriber.
    const MAX: EntryId = EntryId { revision: u64::MAX, seq: u64::MAX };

    fn parse(text: &str) -> Option<EntryId> {
        let (revision, seq) = text.split_once('-')?;
        Some(EntryId { revision: revision.parse().ok()?, seq: seq.parse().ok()? })
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.revision, self.seq)
    }
}

/// Where a watched stream has been read up to, and which entry must come next.
#[derive(Clone, Copy, Debug)]
struct Tail {
    /// The last entry read (`0-0` before any).
    id: EntryId,
    /// The id the next entry must have; `None` when only "the first entry of a revision"
    /// is known (an empty stream, or an entry this backend did not write).
    next: Option<EntryId>,
}

impl Tail {
    const START: Tail = Tail { id: EntryId::ZERO, next: None };

    /// The tail after `entry`, as read by `XREVRANGE` or `XREAD`.
    fn at(entry: &StreamId) -> Tail {
        let id = EntryId::parse(&entry.id).unwrap_or(EntryId::ZERO);
        let count = entry.get::<String>(FIELD_COUNT).and_then(|c| c.parse().ok());
        Tail::after(id, count)
    }

    /// The tail after the entry `id` of a revision of `count` entries.
    fn after(id: EntryId, count: Option<u64>) -> Tail {
        let next = count.and_then(|count| {
            if id.seq < count {
                Some(EntryId { revision: id.revision, seq: id.seq + 1 })
            } else {
                Some(EntryId { revision: id.revision.checked_add(1)?, seq: 1 })
            }
        });
        Tail { id, next }
    }

    /// Whether `id` comes right after this tail, nothing lost in between.
    fn admits(&self, id: EntryId) -> bool {
        match self.next {
            Some(next) => id == next,
            None => id.seq == 1,
        }
    }
}

/// What the reader hands to a match's subscribers: an item and the entry id it belongs to,
/// so each subscription drops what precedes its start.
#[derive(Clone, Debug)]
struct Delivery {
    id: EntryId,
    item: BusItem,
}

/// A watched match: its stream, its followers (subscriptions through `tx`, watchers called
/// by the reader), and how far the reader got.
struct Watch {
    key: String,
    tx: broadcast::Sender<Delivery>,
    sinks: Vec<Watcher>,
    tail: Tail,
    /// The reader lost its connection since `tail` was read: on reconnection the match jumps
    /// to its stream's end and its subscribers get a gap.
    stale: bool,
}

impl Watch {
    fn followed(&self) -> bool {
        self.tx.receiver_count() > 0 || !self.sinks.is_empty()
    }

    /// Hands `item` (of entry `id`) to every follower whose start precedes it: sent to the
    /// subscriptions now, and added to `calls` for the watchers (called once the shared state
    /// is unlocked, so a sink may drop its own watch).
    fn hand(&self, id: EntryId, item: BusItem, calls: &mut Vec<(Arc<dyn Sink>, BusItem)>) {
        calls.extend(self.sinks.iter().filter(|w| id > w.start).map(|w| (w.sink.clone(), item.clone())));
        // A send fails only when nobody listens; the reader forgets the match soon.
        let _ = self.tx.send(Delivery { id, item });
    }
}

/// A [`Bus::watch`]er: its sink, and the entry its watch started after.
struct Watcher {
    id: u64,
    start: EntryId,
    sink: Arc<dyn Sink>,
}

/// Calls the watchers' sinks, in order, outside the shared state's lock.
fn call(calls: Vec<(Arc<dyn Sink>, BusItem)>) {
    for (sink, item) in calls {
        match item {
            BusItem::Publication(p) => sink.deliver(SinkDelivery::Publication(&p)),
            BusItem::Gap => sink.deliver(SinkDelivery::Gap),
        }
    }
}

/// The state the bus and its readers share.
struct Shared {
    state: Mutex<Watches>,
    /// Checks each entry's tag, when set.
    secret: Option<BusSecret>,
}

/// Every watched match, by the reader that serves it.
#[derive(Default)]
struct Watches {
    /// The reader serving each watched match.
    reader_of: BTreeMap<Uuid, usize>,
    /// The matches of each reader, by its index.
    readers: Vec<ReaderSet>,
}

/// The matches one reader serves, and how to wake it.
#[derive(Default)]
struct ReaderSet {
    watches: BTreeMap<Uuid, Watch>,
    /// Wakes the reader when a match joins its set.
    wake: Arc<Notify>,
}

/// Where [`Watches::place`] put a new watch.
struct Placed {
    index: usize,
    wake: Arc<Notify>,
    /// The reader is new: the caller starts it.
    new_reader: bool,
}

impl Watches {
    fn watch_mut(&mut self, match_id: Uuid) -> Option<&mut Watch> {
        let index = *self.reader_of.get(&match_id)?;
        self.readers[index].watches.get_mut(&match_id)
    }

    /// Adds the watch of a match nobody watches yet to the first reader with room, or to a new
    /// reader when all are full.
    fn place(&mut self, match_id: Uuid, watch: Watch, config: &RedisBusConfig) -> Placed {
        let room = self.readers.iter().position(|r| r.watches.len() < config.streams_per_reader);
        let (index, new_reader) = match room {
            Some(index) => (index, false),
            None => {
                self.readers.push(ReaderSet::default());
                (self.readers.len() - 1, true)
            }
        };
        self.readers[index].watches.insert(match_id, watch);
        self.reader_of.insert(match_id, index);
        Placed { index, wake: self.readers[index].wake.clone(), new_reader }
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, Watches> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The streams reader `index` reads and where from, after forgetting its matches nobody
    /// watches now.
    fn batch(&self, index: usize) -> Vec<(String, EntryId)> {
        let mut state = self.state();
        let Watches { reader_of, readers } = &mut *state;
        let set = &mut readers[index].watches;
        set.retain(|match_id, w| {
            let watched = w.followed();
            if !watched {
                reader_of.remove(match_id);
            }
            watched
        });
        set.values().map(|w| (w.key.clone(), w.tail.id)).collect()
    }

    /// Reader `index` lost its connection: every match it serves may miss entries from now on.
    fn mark_stale(&self, index: usize) {
        for watch in self.state().readers[index].watches.values_mut() {
            watch.stale = true;
        }
    }

    /// Hands what one `XREAD` of reader `index` returned to the subscribers, a gap first
    /// wherever entries are missing.
    fn deliver(&self, index: usize, reply: StreamReadReply) {
        let mut calls = Vec::new();
        let mut state = self.state();
        let watches = &mut state.readers[index].watches;
        for stream in reply.keys {
            let Some(match_id) = match_id_of(&stream.key) else { continue };
            // A match forgotten since the read was sent (and maybe watched anew, on another
            // reader, from a fresh start) is not this reader's any more.
            let Some(watch) = watches.get_mut(&match_id) else { continue };
            for entry in &stream.ids {
                let Some(id) = EntryId::parse(&entry.id) else { continue };
                if id <= watch.tail.id {
                    continue;
                }
                let continuous = watch.tail.admits(id);
                let decoded = decode(match_id, id, entry, self.secret.as_ref());
                watch.tail = Tail::after(id, decoded.as_ref().ok().map(|(_, count)| *count));
                if !continuous {
                    debug!(match_id = %match_id, entry = %id, "entries missing before this one; subscribers resync");
                    watch.hand(id, BusItem::Gap, &mut calls);
                }
                match decoded {
                    Ok((publication, _)) => watch.hand(id, BusItem::Publication(Arc::new(publication)), &mut calls),
                    Err(e) => {
                        warn!(match_id = %match_id, entry = %id, error = %e, "malformed stream entry; subscribers resync");
                        if continuous {
                            watch.hand(id, BusItem::Gap, &mut calls);
                        }
                    }
                }
            }
        }
        drop(state);
        call(calls);
    }

    /// Tells every watcher the bus has stopped: nothing more comes.
    fn end(&self) {
        let sinks: Vec<Arc<dyn Sink>> = self
            .state()
            .readers
            .iter_mut()
            .flat_map(|r| r.watches.values_mut())
            .flat_map(|w| w.sinks.drain(..).map(|w| w.sink))
            .collect();
        for sink in sinks {
            sink.deliver(SinkDelivery::Ended);
        }
    }
}

/// The match id in a stream key, the inverse of [`RedisBus::stream_key`].
fn match_id_of(key: &str) -> Option<Uuid> {
    key.strip_prefix("juegoland:{")?.strip_suffix("}:pub")?.parse().ok()
}

/// Why a stream entry is not a publication this backend wrote.
#[derive(Debug, thiserror::Error)]
enum MalformedEntry {
    #[error("field `{0}` is missing or not text")]
    Missing(&'static str),
    #[error("field `{0}` is not a number")]
    NotANumber(&'static str),
    #[error("the id does not fit revision {revision} of {count} entries")]
    Inconsistent { revision: u64, count: u64 },
    #[error("its authentication tag is missing or wrong: not written by a node holding the bus secret")]
    Unauthenticated,
}

/// The publication in a stream entry, with the number of entries of its revision.
fn decode(
    match_id: Uuid,
    id: EntryId,
    entry: &StreamId,
    secret: Option<&BusSecret>,
) -> Result<(Publication, u64), MalformedEntry> {
    let text = |field: &'static str| entry.get::<String>(field).ok_or(MalformedEntry::Missing(field));
    let number = |field: &'static str| text(field)?.parse::<u64>().map_err(|_| MalformedEntry::NotANumber(field));
    let revision = number(FIELD_REVISION)?;
    let count = number(FIELD_COUNT)?;
    if revision != id.revision || id.seq == 0 || id.seq > count {
        return Err(MalformedEntry::Inconsistent { revision, count });
    }
    let recipient = text(FIELD_RECIPIENT)?;
    let encoded = text(FIELD_ENCODED)?;
    // Optional: entries of a commit without a trace context have none.
    let traceparent = entry.get::<String>(FIELD_TRACEPARENT);
    if let Some(secret) = secret {
        let tag = text(FIELD_MAC).map_err(|_| MalformedEntry::Unauthenticated)?;
        let traced = traceparent.as_deref().unwrap_or("");
        let tagged = Tagged { match_id, id, count, recipient: &recipient, traceparent: traced, encoded: &encoded };
        if !secret.verifies(&tag, &tagged) {
            return Err(MalformedEntry::Unauthenticated);
        }
    }
    let recipient = (!recipient.is_empty()).then_some(recipient);
    let trace_context = traceparent.map(Into::into);
    Ok((Publication { match_id, revision, recipient, encoded: encoded.into(), trace_context }, count))
}

/// A task that reads the streams of its set of watched matches and feeds their subscribers.
struct Reader {
    /// Its index in [`Watches::readers`].
    index: usize,
    /// Notified when a match joins its set.
    wake: Arc<Notify>,
    client: Client,
    /// Sends `CLIENT UNBLOCK` to the reader's own blocked read (the publishing connection).
    unblocker: ConnectionManager,
    shared: Arc<Shared>,
    config: RedisBusConfig,
}

impl Reader {
    /// Connects, reads until the connection fails, and starts again, for as long as the bus
    /// lives (its owner aborts the task).
    async fn run(self) {
        let mut pause = RECONNECT_MIN;
        let mut connected_before = false;
        loop {
            match self.connect().await {
                Ok((conn, client_id)) => {
                    if connected_before {
                        info!("stream reader reconnected to redis");
                    }
                    connected_before = true;
                    pause = RECONNECT_MIN;
                    let e = self.read(conn, client_id).await;
                    warn!(error = %e, "stream reader lost its redis connection; watched matches will resync");
                }
                Err(e) => debug!(error = %e, "stream reader cannot reach redis"),
            }
            self.shared.mark_stale(self.index);
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RECONNECT_MAX);
        }
    }

    /// A fresh reading connection, its client id, and every stale match of the reader moved
    /// to its stream's end (with a gap for its subscribers).
    async fn connect(&self) -> RedisResult<(MultiplexedConnection, i64)> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.config.connect_timeout))
            .set_response_timeout(Some(self.config.read_block + self.config.response_timeout));
        let mut conn = self.client.get_multiplexed_async_connection_with_config(&config).await?;
        let client_id: i64 = ::redis::cmd("CLIENT").arg("ID").query_async(&mut conn).await?;
        let () = ::redis::cmd("CLIENT").arg("SETNAME").arg("juegoland-bus-reader").query_async(&mut conn).await?;
        self.recover(&mut conn).await?;
        Ok((conn, client_id))
    }

    /// Moves every stale match of the reader to its stream's end and tells its subscribers to
    /// resync: whatever was published while the reader was away may be gone.
    async fn recover(&self, conn: &mut MultiplexedConnection) -> RedisResult<()> {
        let stale: Vec<(Uuid, String)> = self.shared.state().readers[self.index]
            .watches
            .iter()
            .filter(|(_, w)| w.stale)
            .map(|(id, w)| (*id, w.key.clone()))
            .collect();
        if stale.is_empty() {
            return Ok(());
        }
        let mut pipe = ::redis::pipe();
        for (_, key) in &stale {
            pipe.cmd("XREVRANGE").arg(key).arg("+").arg("-").arg("COUNT").arg(1);
        }
        let ends: Vec<StreamRangeReply> = pipe.query_async(conn).await?;
        let mut calls = Vec::new();
        let mut state = self.shared.state();
        let watches = &mut state.readers[self.index].watches;
        for ((match_id, _), end) in stale.iter().zip(ends) {
            if let Some(watch) = watches.get_mut(match_id)
                && watch.stale
            {
                watch.tail = end.ids.first().map_or(Tail::START, Tail::at);
                watch.stale = false;
                watch.hand(EntryId::MAX, BusItem::Gap, &mut calls);
            }
        }
        drop(state);
        call(calls);
        debug!(matches = stale.len(), "watched matches resume from their streams' ends");
        Ok(())
    }

    /// Reads until the connection fails; returns why.
    async fn read(&self, mut conn: MultiplexedConnection, client_id: i64) -> RedisError {
        let block_ms = self.config.read_block.as_millis();
        loop {
            let batch = self.shared.batch(self.index);
            if batch.is_empty() {
                // Nothing to read: wait for a subscription rather than hold a read open.
                self.wake.notified().await;
                continue;
            }
            let mut xread = ::redis::cmd("XREAD");
            xread.arg("COUNT").arg(self.config.read_count).arg("BLOCK").arg(block_ms).arg("STREAMS");
            for (key, _) in &batch {
                xread.arg(key);
            }
            for (_, id) in &batch {
                xread.arg(id.to_string());
            }
            match self.wakeable(xread.query_async::<Option<StreamReadReply>>(&mut conn), client_id).await {
                Ok(Some(reply)) => {
                    self.shared.deliver(self.index, reply);
                    if !self.config.read_pause.is_zero() {
                        tokio::time::sleep(self.config.read_pause).await;
                    }
                }
                // The block time passed, or a new match woke the read.
                Ok(None) => {}
                Err(e) => return e,
            }
        }
    }

    /// Awaits the blocked `read`, waking it with `CLIENT UNBLOCK` when a new match is watched
    /// so the next read includes it. The unblock is repeated while it finds the read not yet
    /// blocked (the command may still be on its way to the server).
    async fn wakeable<T>(&self, read: impl Future<Output = RedisResult<T>>, client_id: i64) -> RedisResult<T> {
        let mut read = std::pin::pin!(read);
        let mut woken = false;
        let mut retry = false;
        loop {
            tokio::select! {
                biased;
                result = &mut read => return result,
                () = self.wake.notified(), if !woken => woken = true,
                () = tokio::time::sleep(UNBLOCK_RETRY), if retry => {}
            }
            let mut conn = self.unblocker.clone();
            let mut unblock = ::redis::cmd("CLIENT");
            unblock.arg("UNBLOCK").arg(client_id);
            let unblock = unblock.query_async::<i64>(&mut conn);
            // 0: the read is not blocked yet; 1: it returns now. An error (such as a server
            // that disables CLIENT) leaves the read to end by its block time.
            retry = matches!(tokio::time::timeout(self.config.response_timeout, unblock).await, Ok(Ok(0)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_match_as_hash_tag_and_parse_back() {
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let key = RedisBus::stream_key(id);
        assert_eq!(key, "juegoland:{01234567-89ab-cdef-0123-456789abcdef}:pub");
        assert_eq!(match_id_of(&key), Some(id));
        assert_eq!(match_id_of("juegoland:{nope}:pub"), None);
    }

    #[test]
    fn entry_ids_order_and_round_trip() {
        let a = EntryId::parse("7-2").unwrap();
        assert_eq!(a, EntryId { revision: 7, seq: 2 });
        assert_eq!(a.to_string(), "7-2");
        assert!(EntryId::parse("8-1").unwrap() > a);
        assert!(EntryId::MAX > a && EntryId::ZERO < a);
        assert_eq!(EntryId::parse("7"), None);
        assert_eq!(EntryId::parse("x-1"), None);
    }

    fn publication(revision: u64) -> BusItem {
        let encoded = format!("{{\"revision\":{revision}}}");
        BusItem::Publication(Arc::new(Publication {
            match_id: Uuid::nil(),
            revision,
            recipient: None,
            encoded: encoded.into(),
            trace_context: None,
        }))
    }

    fn revision_of(item: &BusItem) -> Option<u64> {
        match item {
            BusItem::Publication(p) => Some(p.revision),
            BusItem::Gap => None,
        }
    }

    #[tokio::test]
    async fn a_subscription_drops_what_precedes_its_start() {
        let (tx, rx) = broadcast::channel(16);
        let mut sub = follow(rx, EntryId { revision: 2, seq: 1 });
        // The reader was still handing over revisions 1 and 2 of a match already watched.
        for (revision, seq) in [(1, 1), (2, 1), (3, 1)] {
            tx.send(Delivery { id: EntryId { revision, seq }, item: publication(revision) }).unwrap();
        }
        tx.send(Delivery { id: EntryId { revision: 2, seq: 1 }, item: BusItem::Gap }).unwrap();
        tx.send(Delivery { id: EntryId::MAX, item: BusItem::Gap }).unwrap();
        drop(tx);
        let items: Vec<_> = sub.by_ref().collect().await;
        assert_eq!(items.iter().map(revision_of).collect::<Vec<_>>(), [Some(3), None]);
    }

    #[tokio::test]
    async fn a_subscriber_behind_its_buffer_sees_a_gap() {
        let (tx, rx) = broadcast::channel(2);
        let sub = follow(rx, EntryId::ZERO);
        for revision in 1..=5 {
            tx.send(Delivery { id: EntryId { revision, seq: 1 }, item: publication(revision) }).unwrap();
        }
        drop(tx);
        let items: Vec<_> = sub.collect().await;
        assert_eq!(items.iter().map(revision_of).collect::<Vec<_>>(), [None, Some(4), Some(5)]);
    }

    fn watch(id: Uuid) -> (Watch, broadcast::Receiver<Delivery>) {
        let (tx, rx) = broadcast::channel(4);
        (Watch { key: RedisBus::stream_key(id), tx, sinks: Vec::new(), tail: Tail::START, stale: false }, rx)
    }

    #[test]
    fn matches_nobody_watches_are_no_longer_read() {
        let shared = Shared { state: Mutex::new(Watches::default()), secret: None };
        let config = RedisBusConfig::default();
        let (watched, unwatched) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut receivers = Vec::new();
        for id in [watched, unwatched] {
            let (watch, rx) = watch(id);
            receivers.push(rx);
            shared.state().place(id, watch, &config);
        }
        drop(receivers.pop());
        assert_eq!(shared.batch(0), [(RedisBus::stream_key(watched), EntryId::ZERO)]);
        let state = shared.state();
        assert_eq!(state.readers[0].watches.keys().copied().collect::<Vec<_>>(), [watched]);
        assert_eq!(state.reader_of.keys().copied().collect::<Vec<_>>(), [watched]);
    }

    #[test]
    fn readers_serve_bounded_sets_and_reuse_freed_room() {
        let shared = Shared { state: Mutex::new(Watches::default()), secret: None };
        let config = RedisBusConfig { streams_per_reader: 2, ..RedisBusConfig::default() };
        let mut receivers = Vec::new();
        let mut placed = Vec::new();
        for n in 1..=5 {
            let (watch, rx) = watch(Uuid::from_u128(n));
            receivers.push(rx);
            let p = shared.state().place(Uuid::from_u128(n), watch, &config);
            placed.push((p.index, p.new_reader));
        }
        assert_eq!(placed, [(0, true), (0, false), (1, true), (1, false), (2, true)]);
        // Match 1 is no longer watched: its reader drops it at its next round, and the next
        // new match takes its place instead of starting a fourth reader.
        drop(receivers.remove(0));
        assert_eq!(shared.batch(0).len(), 1);
        let (watch, _rx) = watch(Uuid::from_u128(6));
        let p = shared.state().place(Uuid::from_u128(6), watch, &config);
        assert_eq!((p.index, p.new_reader), (0, false));
        let state = shared.state();
        assert_eq!(state.readers.iter().map(|r| r.watches.len()).collect::<Vec<_>>(), [2, 2, 1]);
        assert_eq!(state.reader_of.get(&Uuid::from_u128(6)), Some(&0));
        assert_eq!(state.reader_of.get(&Uuid::from_u128(1)), None);
    }

    #[test]
    fn the_tail_admits_exactly_the_next_entry() {
        let id = |revision, seq| EntryId { revision, seq };
        // Entry 2 of a revision of 3: only entry 3 of it may follow.
        let mid = Tail::after(id(5, 2), Some(3));
        assert!(mid.admits(id(5, 3)));
        assert!(!mid.admits(id(6, 1)));
        // The last entry of revision 5: only the first of revision 6 may follow.
        let last = Tail::after(id(5, 3), Some(3));
        assert!(last.admits(id(6, 1)));
        assert!(!last.admits(id(7, 1)), "a whole revision is missing");
        assert!(!last.admits(id(6, 2)), "the start of a revision was trimmed");
        // Nothing known yet: any first entry of a revision.
        assert!(Tail::START.admits(id(9, 1)));
        assert!(!Tail::START.admits(id(9, 2)));
    }
}
