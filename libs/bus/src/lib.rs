//! Fan-out of per-recipient publications from the match owner to the gateways.
//!
//! Owns: the [`Bus`] contract and its two backends. Delivery is at-least-once and in
//! revision order per match while nothing is lost; a subscriber that falls behind or misses
//! an entry sees [`BusItem::Gap`] and must resync — reliability is the protocol's job.
//! Must not use: any service, storage, or rules.
//!
//! Two ways to follow a match: [`Bus::subscribe`], a stream the subscriber polls in a task of
//! its own, and [`Bus::watch`], a [`Sink`] the bus calls on the task that delivers — the
//! publisher's in one process, a stream reader's on Redis — so a publication reaches its
//! subscribers without a task hop per subscriber (a backend without such a path forwards its
//! stream to the sink from a task: the trait's default).
//!
//! Which backend to choose:
//! - one process (the all-in-one `juegoland dev`, tests): [`LocalBus`], a broadcast channel
//!   per watched match; nothing leaves the process and nothing survives it.
//! - a cluster, where the node that commits a match and the gateways that serve its clients
//!   are different processes: [`RedisBus`], one bounded Redis stream per match
//!   (`juegoland:{<match id>}:pub`). Publishing fails fast with [`BusError::Unavailable`]
//!   while Redis is down (the outbox keeps the publications for a later retry), and open
//!   subscriptions see [`BusItem::Gap`] once it is back.
//! - a node that also serves clients: [`NearBus`], which publishes to the remote bus and, in
//!   process, to its own clients' watches of the matches the node owns.

mod near;
mod redis;

pub use crate::near::{NearBus, Owns};
pub use crate::redis::{BusSecret, RedisBus, RedisBusConfig};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::{BoxStream, StreamExt};
use juegoland_core::Publication;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use uuid::Uuid;

#[derive(Clone, Debug, thiserror::Error)]
pub enum BusError {
    /// The bus cannot be reached now; retry later.
    #[error("bus unavailable: {0}")]
    Unavailable(String),
    /// The bus was configured wrongly (a bad URL, a zero capacity); retrying does not help.
    #[error("invalid bus configuration: {0}")]
    InvalidConfig(String),
}

/// What a subscriber receives.
#[derive(Clone, Debug)]
pub enum BusItem {
    Publication(Arc<Publication>),
    /// Entries were lost (the subscriber lagged or the bus restarted): resync.
    Gap,
}

/// What a bus hands a [`Sink`].
#[derive(Clone, Copy, Debug)]
pub enum Delivery<'a> {
    Publication(&'a Publication),
    /// Entries were lost (the subscriber lagged or the bus restarted): resync.
    Gap,
    /// The bus ended the subscription (it is shutting down): nothing more comes.
    Ended,
}

/// A subscriber the bus calls directly ([`Bus::watch`]), in publication order, on the task
/// that delivers: `deliver` must not block or await (it queues, or wakes a task of its own).
pub trait Sink: Send + Sync + 'static {
    fn deliver(&self, delivery: Delivery<'_>);
}

/// A [`Bus::watch`] in force; dropping it stops the deliveries (one already under way may
/// still reach the sink).
#[must_use = "dropping a Watching stops the deliveries"]
pub struct Watching {
    _stop: Box<dyn Send + Sync>,
}

/// Aborts a forwarding task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[async_trait::async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Publishes the publications of one revision of one match.
    async fn publish(&self, publications: &[Publication]) -> Result<(), BusError>;
    /// Everything published for `match_id` from now on (every recipient: the subscriber
    /// filters by its seat).
    async fn subscribe(&self, match_id: Uuid) -> Result<BoxStream<'static, BusItem>, BusError>;

    /// Everything published for `match_id` from now on, handed to `sink` as it arrives, until
    /// the [`Watching`] is dropped. By default a task forwards [`Bus::subscribe`]'s stream
    /// (and ends with [`Delivery::Ended`] when the stream does); a backend that can call the
    /// sink where it delivers does so instead.
    async fn watch(&self, match_id: Uuid, sink: Arc<dyn Sink>) -> Result<Watching, BusError> {
        let mut stream = self.subscribe(match_id).await?;
        let forward = tokio::spawn(async move {
            while let Some(item) = stream.next().await {
                match item {
                    BusItem::Publication(p) => sink.deliver(Delivery::Publication(&p)),
                    BusItem::Gap => sink.deliver(Delivery::Gap),
                }
            }
            sink.deliver(Delivery::Ended);
        });
        Ok(Watching { _stop: Box::new(AbortOnDrop(forward)) })
    }
}

/// An in-process bus: one broadcast channel per subscribed match, and the sinks of each
/// watched match, called by `publish` itself.
pub struct LocalBus {
    capacity: usize,
    channels: Mutex<BTreeMap<Uuid, broadcast::Sender<Arc<Publication>>>>,
    sinks: Arc<Sinks>,
}

/// The sinks of every watched match. A match's list is replaced, never changed in place, so
/// `publish` takes it under the lock and calls the sinks after releasing it: a sink added
/// meanwhile misses only publications committed before it was added, which the snapshot its
/// subscriber reads next already covers.
#[derive(Default)]
struct Sinks {
    next_id: AtomicU64,
    by_match: Mutex<BTreeMap<Uuid, SinkList>>,
}

/// The sinks of one match, each with the id its [`Watching`] removes it by.
type SinkList = Arc<[(u64, Arc<dyn Sink>)]>;

impl Sinks {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Uuid, SinkList>> {
        self.by_match.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn of(&self, match_id: Uuid) -> Option<SinkList> {
        self.lock().get(&match_id).cloned()
    }

    fn add(&self, match_id: Uuid, sink: Arc<dyn Sink>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut by_match = self.lock();
        let list: Vec<(u64, Arc<dyn Sink>)> =
            by_match.get(&match_id).into_iter().flat_map(|l| l.iter().cloned()).chain([(id, sink)]).collect();
        by_match.insert(match_id, list.into());
        id
    }

    fn remove(&self, match_id: Uuid, id: u64) {
        let mut by_match = self.lock();
        let Some(list) = by_match.get(&match_id) else { return };
        let rest: Vec<(u64, Arc<dyn Sink>)> = list.iter().filter(|(i, _)| *i != id).cloned().collect();
        if rest.is_empty() {
            by_match.remove(&match_id);
        } else {
            by_match.insert(match_id, rest.into());
        }
    }
}

/// Removes a sink from its match when dropped.
struct Unwatch {
    sinks: Arc<Sinks>,
    match_id: Uuid,
    id: u64,
}

impl Drop for Unwatch {
    fn drop(&mut self) {
        self.sinks.remove(self.match_id, self.id);
    }
}

impl LocalBus {
    /// `capacity` entries are buffered per match before a slow subscriber sees a gap.
    pub fn new(capacity: usize) -> Self {
        Self { capacity, channels: Mutex::new(BTreeMap::new()), sinks: Arc::default() }
    }

    /// A new receiver of `match_id`'s channel. It subscribes under the lock: a receiver taken
    /// after it is released could find its channel dropped meanwhile (as nobody's, by another
    /// subscribe's clean-up), and see its stream end at once.
    fn receiver(&self, match_id: Uuid) -> broadcast::Receiver<Arc<Publication>> {
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        // Drop channels nobody listens to any more, so watched-then-forgotten matches do
        // not accumulate.
        channels.retain(|id, tx| *id == match_id || tx.receiver_count() > 0);
        channels.entry(match_id).or_insert_with(|| broadcast::channel(self.capacity).0).subscribe()
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new(1024)
    }
}

#[async_trait::async_trait]
impl Bus for LocalBus {
    async fn publish(&self, publications: &[Publication]) -> Result<(), BusError> {
        let Some(first) = publications.first() else { return Ok(()) };
        if let Some(sinks) = self.sinks.of(first.match_id) {
            for p in publications {
                for (_, sink) in sinks.iter() {
                    sink.deliver(Delivery::Publication(p));
                }
            }
        }
        let channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = channels.get(&first.match_id) {
            for p in publications {
                // No receiver is not an error: nobody watches this match right now.
                let _ = tx.send(Arc::new(p.clone()));
            }
        }
        Ok(())
    }

    async fn watch(&self, match_id: Uuid, sink: Arc<dyn Sink>) -> Result<Watching, BusError> {
        let id = self.sinks.add(match_id, sink);
        Ok(Watching { _stop: Box::new(Unwatch { sinks: self.sinks.clone(), match_id, id }) })
    }

    async fn subscribe(&self, match_id: Uuid) -> Result<BoxStream<'static, BusItem>, BusError> {
        let rx = self.receiver(match_id);
        Ok(BroadcastStream::new(rx)
            .map(|item| match item {
                Ok(p) => BusItem::Publication(p),
                Err(BroadcastStreamRecvError::Lagged(_)) => BusItem::Gap,
            })
            .boxed())
    }
}
