//! THE behaviour suite every bus backend passes (as `libs/store` runs one suite on every
//! store).
//!
//! Each test is a generic async function over a [`Backend`]; [`bus_suite!`] instantiates all
//! of them for one backend. A new backend gets the whole contract by adding one
//! `bus_suite!` line in `main.rs`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use juegoland_bus::{Bus, BusItem, Delivery, Sink, Watching};
use juegoland_core::Publication;

use crate::support::{assert_quiet, next, publications, random_match, revision, revisions};

/// About how many entries per match a [`Backend::small_bus`] keeps.
pub const SMALL: usize = 16;

/// Two seats and a spectator: several publications share each revision.
const EVERYONE: &[Option<&str>] = &[Some("p0"), Some("p1"), None];

/// A bus backend under test.
#[async_trait::async_trait]
pub trait Backend: Sized + Send {
    /// Checks that what the backend needs is there (a server that is down fails the test).
    async fn start() -> Self;
    /// A bus with the default configuration.
    fn bus(&self) -> Arc<dyn Bus>;
    /// A bus that holds only about [`SMALL`] entries per match, so a subscriber that does not
    /// read falls behind quickly.
    fn small_bus(&self) -> Arc<dyn Bus>;
}

/// Instantiates every behaviour test for one backend type.
#[macro_export]
macro_rules! bus_suite {
    ($backend:ty) => {
        $crate::bus_suite!(@tests $backend;
            round_trip_in_revision_order,
            only_publications_after_subscribing,
            matches_are_independent,
            every_subscriber_gets_everything_from_its_start,
            a_subscriber_that_falls_behind_sees_a_gap_then_catches_up,
            publishing_nothing_or_to_nobody_succeeds,
            trace_contexts_travel_with_their_publications,
            a_watcher_gets_everything_from_its_start_in_order,
            a_dropped_watch_gets_nothing_more,
            watchers_and_subscribers_of_a_match_get_the_same,
        );
    };
    (@tests $backend:ty; $($test:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                let backend = <$backend as $crate::suite::Backend>::start().await;
                $crate::suite::$test(&backend).await;
            }
        )*
    };
}

async fn publish_all(bus: &dyn Bus, revisions: &[Vec<Publication>]) {
    for publications in revisions {
        bus.publish(publications)
            .await
            .unwrap_or_else(|e| panic!("publish revision {}: {e}", publications[0].revision));
    }
}

pub async fn round_trip_in_revision_order<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    let mut sub = bus.subscribe(id).await.unwrap();
    let published = revisions(id, 1..=5, EVERYONE);
    publish_all(&*bus, &published).await;
    let expected: Vec<Publication> = published.concat();
    assert_eq!(publications(&mut sub, expected.len()).await, expected);
    assert_quiet(&mut sub, Duration::from_millis(200)).await;
}

pub async fn only_publications_after_subscribing<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    publish_all(&*bus, &revisions(id, 1..=3, EVERYONE)).await;
    let mut sub = bus.subscribe(id).await.unwrap();
    let later = revisions(id, 4..=5, EVERYONE);
    publish_all(&*bus, &later).await;
    assert_eq!(publications(&mut sub, 6).await, later.concat());
    assert_quiet(&mut sub, Duration::from_millis(300)).await;
}

pub async fn matches_are_independent<B: Backend>(b: &B) {
    let bus = b.bus();
    let (x, y) = (random_match(), random_match());
    let mut sub_x = bus.subscribe(x).await.unwrap();
    let mut sub_y = bus.subscribe(y).await.unwrap();
    let x1 = revision(x, 1, EVERYONE);
    let y1 = revision(y, 1, &[Some("p0")]);
    let x2 = revision(x, 2, EVERYONE);
    publish_all(&*bus, &[x1.clone(), y1.clone(), x2.clone()]).await;
    assert_eq!(publications(&mut sub_x, 6).await, [x1, x2].concat());
    assert_eq!(publications(&mut sub_y, 1).await, y1);
    assert_quiet(&mut sub_x, Duration::from_millis(200)).await;
    assert_quiet(&mut sub_y, Duration::from_millis(10)).await;
}

pub async fn every_subscriber_gets_everything_from_its_start<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    let mut first = bus.subscribe(id).await.unwrap();
    let mut second = bus.subscribe(id).await.unwrap();
    let early = revisions(id, 1..=3, EVERYONE);
    publish_all(&*bus, &early).await;
    // A third subscriber of a match already watched starts where IT subscribed, even if the
    // others have not been handed the earlier revisions yet.
    let mut third = bus.subscribe(id).await.unwrap();
    let late = revision(id, 4, EVERYONE);
    publish_all(&*bus, std::slice::from_ref(&late)).await;
    let everything = [early.concat(), late.clone()].concat();
    assert_eq!(publications(&mut first, everything.len()).await, everything);
    assert_eq!(publications(&mut second, everything.len()).await, everything);
    assert_eq!(publications(&mut third, late.len()).await, late);
    assert_quiet(&mut third, Duration::from_millis(200)).await;
}

pub async fn a_subscriber_that_falls_behind_sees_a_gap_then_catches_up<B: Backend>(b: &B) {
    let bus = b.small_bus();
    let id = random_match();
    let mut sub = bus.subscribe(id).await.unwrap();
    let seats = [Some("p0"), Some("p1")];
    // Ten times what the bus holds, without reading.
    let last = (SMALL * 5) as u64;
    publish_all(&*bus, &revisions(id, 1..=last, &seats)).await;
    let mut gaps = 0;
    let mut previous: Option<(u64, String)> = None;
    loop {
        match next(&mut sub).await {
            BusItem::Gap => gaps += 1,
            BusItem::Publication(p) => {
                let at = (p.revision, p.recipient.clone().expect("a seat"));
                assert!(previous.as_ref().is_none_or(|prev| *prev < at), "{previous:?} then {at:?}: out of order");
                previous = Some(at);
                if p.revision == last && p.recipient.as_deref() == Some("p1") {
                    break;
                }
            }
        }
    }
    assert!(gaps >= 1, "a subscriber that fell {} entries behind saw no gap", last * 2);
    assert_quiet(&mut sub, Duration::from_millis(200)).await;
}

pub async fn publishing_nothing_or_to_nobody_succeeds<B: Backend>(b: &B) {
    let bus = b.bus();
    bus.publish(&[]).await.unwrap();
    let id = random_match();
    publish_all(&*bus, &revisions(id, 1..=2, EVERYONE)).await;
    // Someone watching another match does not change that.
    let mut other = bus.subscribe(random_match()).await.unwrap();
    publish_all(&*bus, &revisions(id, 3..=3, EVERYONE)).await;
    assert_quiet(&mut other, Duration::from_millis(200)).await;
}

/// A publication's trace context reaches subscribers as published, and a publication without
/// one arrives without one (the gateway then starts no delivery span).
pub async fn trace_contexts_travel_with_their_publications<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    let mut sub = bus.subscribe(id).await.unwrap();
    let mut published = revisions(id, 1..=3, EVERYONE);
    for (n, revision) in published.iter_mut().enumerate() {
        // Revision 2 was committed without a trace context.
        let traceparent = (n != 1).then(|| format!("00-4bf92f3577b34da6a3ce929d0e0e473{n}-00f067aa0ba902b{n}-01"));
        for p in revision {
            p.trace_context = traceparent.as_deref().map(Into::into);
        }
    }
    publish_all(&*bus, &published).await;
    let expected: Vec<Publication> = published.concat();
    let got = publications(&mut sub, expected.len()).await;
    assert_eq!(got, expected);
    assert_eq!(got.iter().filter(|p| p.trace_context.is_some()).count(), 2 * EVERYONE.len());
}

/// A sink that queues what the bus hands it, read back like a subscription's stream.
struct Queue(tokio::sync::mpsc::UnboundedSender<BusItem>);

impl Sink for Queue {
    fn deliver(&self, delivery: Delivery<'_>) {
        let item = match delivery {
            Delivery::Publication(p) => BusItem::Publication(Arc::new(p.clone())),
            Delivery::Gap => BusItem::Gap,
            Delivery::Ended => return,
        };
        let _ = self.0.send(item);
    }
}

pub async fn watched(bus: &dyn Bus, match_id: uuid::Uuid) -> (Watching, BoxStream<'static, BusItem>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let watching = bus.watch(match_id, Arc::new(Queue(tx))).await.unwrap();
    (watching, tokio_stream::wrappers::UnboundedReceiverStream::new(rx).boxed())
}

pub async fn a_watcher_gets_everything_from_its_start_in_order<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    publish_all(&*bus, &revisions(id, 1..=2, EVERYONE)).await;
    let (_watching, mut sink) = watched(&*bus, id).await;
    let later = revisions(id, 3..=6, EVERYONE);
    publish_all(&*bus, &later).await;
    // Another match's publications are not this watcher's.
    publish_all(&*bus, &revisions(random_match(), 1..=2, EVERYONE)).await;
    assert_eq!(publications(&mut sink, 12).await, later.concat());
    assert_quiet(&mut sink, Duration::from_millis(200)).await;
}

pub async fn a_dropped_watch_gets_nothing_more<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    let (watching, mut sink) = watched(&*bus, id).await;
    let (_other, mut still) = watched(&*bus, id).await;
    let first = revision(id, 1, EVERYONE);
    publish_all(&*bus, std::slice::from_ref(&first)).await;
    assert_eq!(publications(&mut sink, 3).await, first);
    drop(watching);
    let rest = revisions(id, 2..=3, EVERYONE);
    publish_all(&*bus, &rest).await;
    // The other watcher of the match goes on.
    assert_eq!(publications(&mut still, 9).await, [first, rest.concat()].concat());
    // The dropped one got nothing more: its sink is gone (the stream ends) or silent.
    match tokio::time::timeout(Duration::from_millis(200), sink.next()).await {
        Ok(None) | Err(_) => {}
        Ok(Some(item)) => panic!("a dropped watch still got {item:?}"),
    }
}

pub async fn watchers_and_subscribers_of_a_match_get_the_same<B: Backend>(b: &B) {
    let bus = b.bus();
    let id = random_match();
    let mut sub = bus.subscribe(id).await.unwrap();
    let (_watching, mut sink) = watched(&*bus, id).await;
    let published = revisions(id, 1..=4, EVERYONE).concat();
    for p in published.chunks(3) {
        bus.publish(p).await.unwrap();
    }
    assert_eq!(publications(&mut sub, published.len()).await, published);
    assert_eq!(publications(&mut sink, published.len()).await, published);
}
