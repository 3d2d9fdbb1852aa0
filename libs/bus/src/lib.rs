//! Fan-out of per-recipient publications from the match owner to the gateways.
//!
//! Owns: the [`Bus`] contract and its two backends. Delivery is at-least-once and in
//! revision order per match while nothing is lost; a subscriber that falls behind or misses
//! an entry sees [`BusItem::Gap`] and must resync — reliability is the protocol's job.
//! Must not use: any service, storage, or rules.
//!
//! Which backend to choose:
//! - one process (the all-in-one `juegoland dev`, tests): [`LocalBus`], a broadcast channel
//!   per watched match; nothing leaves the process and nothing survives it.
//! - a cluster, where the node that commits a match and the gateways that serve its clients
//!   are different processes: [`RedisBus`], one bounded Redis stream per match
//!   (`juegoland:{<match id>}:pub`). Publishing fails fast with [`BusError::Unavailable`]
//!   while Redis is down (the outbox keeps the publications for a later retry), and open
//!   subscriptions see [`BusItem::Gap`] once it is back.

mod redis;

pub use crate::redis::{RedisBus, RedisBusConfig};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::stream::{BoxStream, StreamExt};
use juegoland_core::Publication;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
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

#[async_trait::async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Publishes the publications of one revision of one match.
    async fn publish(&self, publications: &[Publication]) -> Result<(), BusError>;
    /// Everything published for `match_id` from now on (every recipient: the subscriber
    /// filters by its seat).
    async fn subscribe(&self, match_id: Uuid) -> Result<BoxStream<'static, BusItem>, BusError>;
}

/// An in-process bus: one broadcast channel per watched match.
pub struct LocalBus {
    capacity: usize,
    channels: Mutex<BTreeMap<Uuid, broadcast::Sender<Arc<Publication>>>>,
}

impl LocalBus {
    /// `capacity` entries are buffered per match before a slow subscriber sees a gap.
    pub fn new(capacity: usize) -> Self {
        Self { capacity, channels: Mutex::new(BTreeMap::new()) }
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
        let channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = channels.get(&first.match_id) {
            for p in publications {
                // No receiver is not an error: nobody watches this match right now.
                let _ = tx.send(Arc::new(p.clone()));
            }
        }
        Ok(())
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
