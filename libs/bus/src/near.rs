//! [`NearBus`]: the bus of a node that also serves clients. A match's owner node publishes
//! every revision to the remote bus (the gateways' Redis streams) and, in process, to the
//! clients it serves itself; those clients follow the matches their node owns without a
//! stream, and every other match from the remote bus, as a gateway does.
//!
//! Ownership moves (a node joins, leaves or drains): [`NearBus::recheck`] moves every
//! in-process watch of a match this node no longer owns to the remote bus and then tells its
//! sink of a gap, so the subscriber reads a fresh snapshot from the new owner; what the new
//! owner publishes after that read arrives by the remote bus, which the watch already
//! follows. A match that moves TO this node stays on the remote bus for the watches that
//! follow it there (correct, only not the short path) until they watch again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::stream::BoxStream;
use juegoland_core::Publication;
use tracing::warn;
use uuid::Uuid;

use crate::{Bus, BusError, BusItem, Delivery, LocalBus, Sink, Watching};

/// Whether this process owns a match now (its node is the match's owner on the ring).
pub type Owns = Arc<dyn Fn(Uuid) -> bool + Send + Sync>;

/// The in-process bus of an owner node's own clients, in front of the remote bus.
pub struct NearBus {
    local: LocalBus,
    remote: Arc<dyn Bus>,
    owns: Owns,
    near: Arc<Near>,
}

/// The watches served in process (or moved away from it), by id.
#[derive(Default)]
struct Near {
    next_id: AtomicU64,
    watches: Mutex<BTreeMap<u64, NearWatch>>,
}

struct NearWatch {
    match_id: Uuid,
    sink: Arc<dyn Sink>,
    /// The in-process watch, or the remote one once the match moved away.
    watching: Watching,
    moved: bool,
}

impl Near {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, NearWatch>> {
        self.watches.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Forgets a watch when its [`Watching`] is dropped.
struct Forget {
    near: Arc<Near>,
    id: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        // Taken out under the lock, dropped (stopping its deliveries) after.
        let watch = self.near.lock().remove(&self.id);
        drop(watch);
    }
}

impl NearBus {
    /// A bus publishing to `remote` and to this process's own watchers, which follow in
    /// process the matches `owns` says are this node's.
    pub fn new(remote: Arc<dyn Bus>, owns: Owns) -> Self {
        Self { local: LocalBus::default(), remote, owns, near: Arc::default() }
    }

    /// Watches followed in process now.
    #[cfg(test)]
    fn near_watches(&self) -> usize {
        self.near.lock().values().filter(|w| !w.moved).count()
    }

    /// Moves the in-process watches of matches this node no longer owns to the remote bus,
    /// each told of a gap; returns how many moved. A watch the remote bus refuses now (it is
    /// down) stays in process and moves on a later call.
    pub async fn recheck(&self) -> usize {
        let moving: Vec<(u64, Uuid, Arc<dyn Sink>)> = self
            .near
            .lock()
            .iter()
            .filter(|(_, w)| !w.moved && !(self.owns)(w.match_id))
            .map(|(id, w)| (*id, w.match_id, w.sink.clone()))
            .collect();
        let mut moved = 0;
        for (id, match_id, sink) in moving {
            let remote = match self.remote.watch(match_id, sink.clone()).await {
                Ok(remote) => remote,
                Err(e) => {
                    warn!(match_id = %match_id, error = %e, "a watch cannot follow its match to its new owner yet");
                    continue;
                }
            };
            // The in-process watch stops when its `Watching` is dropped, after the lock.
            let replaced = {
                let mut watches = self.near.lock();
                match watches.get_mut(&id) {
                    Some(w) => {
                        w.moved = true;
                        Ok(std::mem::replace(&mut w.watching, remote))
                    }
                    // Forgotten meanwhile: the remote watch is not wanted either.
                    None => Err(remote),
                }
            };
            if replaced.is_ok() {
                drop(replaced);
                sink.deliver(Delivery::Gap);
                moved += 1;
            }
        }
        moved
    }
}

#[async_trait::async_trait]
impl Bus for NearBus {
    /// In process first (this node's own clients), then the remote bus; a remote failure
    /// is the caller's (the outbox publishes again later, and the near watchers drop the
    /// revision they already have).
    async fn publish(&self, publications: &[Publication]) -> Result<(), BusError> {
        self.local.publish(publications).await?;
        self.remote.publish(publications).await
    }

    /// A stream from the remote bus: it does not follow a match that moves (a watch does).
    async fn subscribe(&self, match_id: Uuid) -> Result<BoxStream<'static, BusItem>, BusError> {
        self.remote.subscribe(match_id).await
    }

    async fn watch(&self, match_id: Uuid, sink: Arc<dyn Sink>) -> Result<Watching, BusError> {
        if !(self.owns)(match_id) {
            return self.remote.watch(match_id, sink).await;
        }
        let watching = self.local.watch(match_id, sink.clone()).await?;
        let id = self.near.next_id.fetch_add(1, Ordering::Relaxed);
        self.near.lock().insert(id, NearWatch { match_id, sink, watching, moved: false });
        Ok(Watching { _stop: Box::new(Forget { near: self.near.clone(), id }) })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// What a sink was handed: revisions, `None` for a gap.
    #[derive(Default)]
    struct Seen(Mutex<Vec<Option<u64>>>);

    impl Sink for Seen {
        fn deliver(&self, delivery: Delivery<'_>) {
            let mut seen = self.0.lock().expect("seen");
            match delivery {
                Delivery::Publication(p) => seen.push(Some(p.revision)),
                Delivery::Gap => seen.push(None),
                Delivery::Ended => {}
            }
        }
    }

    impl Seen {
        fn take(&self) -> Vec<Option<u64>> {
            std::mem::take(&mut *self.0.lock().expect("seen"))
        }
    }

    fn publication(match_id: Uuid, revision: u64) -> Publication {
        Publication {
            match_id,
            revision,
            recipient: Some("p0".into()),
            encoded: format!("{{\"revision\":{revision}}}").into(),
            trace_context: None,
        }
    }

    struct Fixture {
        remote: Arc<LocalBus>,
        owned: Arc<AtomicBool>,
        bus: NearBus,
    }

    fn fixture() -> Fixture {
        let remote = Arc::new(LocalBus::default());
        let owned = Arc::new(AtomicBool::new(true));
        let o = owned.clone();
        let bus = NearBus::new(remote.clone(), Arc::new(move |_| o.load(Ordering::SeqCst)));
        Fixture { remote, owned, bus }
    }

    #[tokio::test]
    async fn an_owned_match_is_followed_in_process_and_every_publication_also_goes_remote() {
        let f = fixture();
        let m = Uuid::from_u128(7);
        let near = Arc::new(Seen::default());
        let far = Arc::new(Seen::default());
        let _near = f.bus.watch(m, near.clone()).await.expect("watch");
        let _far = f.remote.watch(m, far.clone()).await.expect("a gateway's watch");
        assert_eq!(f.bus.near_watches(), 1);
        f.bus.publish(&[publication(m, 1)]).await.expect("publish");
        assert_eq!(near.take(), vec![Some(1)]);
        assert_eq!(far.take(), vec![Some(1)], "other gateways still get every revision");
    }

    #[tokio::test]
    async fn a_watch_follows_its_match_to_the_remote_bus_when_it_moves_with_a_gap_first() {
        let f = fixture();
        let m = Uuid::from_u128(8);
        let seen = Arc::new(Seen::default());
        let watching = f.bus.watch(m, seen.clone()).await.expect("watch");
        f.bus.publish(&[publication(m, 1)]).await.expect("publish");
        assert_eq!(f.bus.recheck().await, 0, "nothing moved");
        f.owned.store(false, Ordering::SeqCst);
        assert_eq!(f.bus.recheck().await, 1);
        assert_eq!(f.bus.recheck().await, 0, "a watch moves once");
        assert_eq!(f.bus.near_watches(), 0);
        // The new owner publishes remotely only; this node's stale actor (if any) in process.
        f.remote.publish(&[publication(m, 2)]).await.expect("the new owner's publication");
        f.bus.local.publish(&[publication(m, 9)]).await.expect("a stale in-process publication");
        assert_eq!(seen.take(), vec![Some(1), None, Some(2)], "the gap, then the new owner's revisions only");
        drop(watching);
        f.remote.publish(&[publication(m, 3)]).await.expect("publish");
        assert!(seen.take().is_empty(), "a dropped watch hears nothing more");
    }

    #[tokio::test]
    async fn a_match_owned_elsewhere_is_watched_on_the_remote_bus_and_a_dropped_watch_is_forgotten() {
        let f = fixture();
        let m = Uuid::from_u128(9);
        f.owned.store(false, Ordering::SeqCst);
        let seen = Arc::new(Seen::default());
        let watching = f.bus.watch(m, seen.clone()).await.expect("watch");
        assert_eq!(f.bus.near_watches(), 0);
        f.remote.publish(&[publication(m, 1)]).await.expect("publish");
        assert_eq!(seen.take(), vec![Some(1)]);
        drop(watching);
        f.owned.store(true, Ordering::SeqCst);
        let near = f.bus.watch(m, seen.clone()).await.expect("watch");
        drop(near);
        assert_eq!(f.bus.near.lock().len(), 0, "a dropped in-process watch is forgotten");
    }
}
