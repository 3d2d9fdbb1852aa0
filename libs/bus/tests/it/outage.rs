//! Redis outages on a private `redis-server`: calls fail fast while it is down or hung, an
//! open subscription (and a watcher) sees a gap once it is back (not before), and deliveries
//! resume.

use std::time::{Duration, Instant};

use juegoland_bus::{Bus, BusError, BusItem, RedisBus, RedisBusConfig};

use crate::support::{PATIENCE, PrivateRedis, assert_quiet, next, publications, random_match, revision};

/// How long a call may take while Redis is down: the configured bound plus scheduling slack.
const FAIL_FAST: Duration = Duration::from_secs(3);

/// Short bounds, so the tests see them expire.
fn config() -> RedisBusConfig {
    RedisBusConfig {
        call_timeout: Duration::from_secs(1),
        connect_timeout: Duration::from_millis(500),
        response_timeout: Duration::from_millis(500),
        read_block: Duration::from_millis(500),
        ..RedisBusConfig::default()
    }
}

#[tokio::test]
async fn calls_fail_fast_while_redis_is_down_and_subscriptions_resync_after() {
    let mut server = PrivateRedis::start().await;
    let bus = RedisBus::new(&server.url(), config()).unwrap();
    bus.ping().await.unwrap();
    let id = random_match();
    let seats = [Some("p0"), Some("p1")];
    let mut sub = bus.subscribe(id).await.unwrap();
    let (_watching, mut watched) = crate::suite::watched(&bus, id).await;
    let one = revision(id, 1, &seats);
    bus.publish(&one).await.unwrap();
    assert_eq!(publications(&mut sub, 2).await, one);
    assert_eq!(publications(&mut watched, 2).await, one);

    server.kill();
    let two = revision(id, 2, &seats);
    let started = Instant::now();
    let failed = bus.publish(&two).await;
    assert!(matches!(failed, Err(BusError::Unavailable(_))), "publish while down: {failed:?}");
    assert!(started.elapsed() < FAIL_FAST, "publish took {:?} to fail", started.elapsed());
    let started = Instant::now();
    let failed = bus.subscribe(random_match()).await.map(|_| ());
    assert!(matches!(failed, Err(BusError::Unavailable(_))), "subscribe while down: {failed:?}");
    assert!(started.elapsed() < FAIL_FAST, "subscribe took {:?} to fail", started.elapsed());
    assert!(matches!(bus.ping().await, Err(BusError::Unavailable(_))));
    // Nothing can be said while Redis is down: the gap comes when it is back.
    assert_quiet(&mut sub, Duration::from_millis(500)).await;
    assert_quiet(&mut watched, Duration::from_millis(10)).await;

    server.restart().await;
    assert!(matches!(next(&mut sub).await, BusItem::Gap), "a gap once redis is back");
    assert!(matches!(next(&mut watched).await, BusItem::Gap), "the watcher's gap once redis is back");
    // The sweeper resends revision 2 (the first attempts may meet a connection that is still
    // coming back), then the actor publishes revision 3: delivered in order.
    let deadline = Instant::now() + PATIENCE;
    while let Err(e) = bus.publish(&two).await {
        assert!(Instant::now() < deadline, "publish still failing after redis came back: {e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let three = revision(id, 3, &seats);
    bus.publish(&three).await.unwrap();
    assert_eq!(publications(&mut sub, 4).await, [two.clone(), three.clone()].concat());
    assert_eq!(publications(&mut watched, 4).await, [two, three].concat());
    assert_quiet(&mut sub, Duration::from_millis(200)).await;
    assert_quiet(&mut watched, Duration::from_millis(10)).await;
}

#[tokio::test]
async fn calls_to_a_hung_redis_time_out_and_subscriptions_resync_after() {
    let server = PrivateRedis::start().await;
    let bus = RedisBus::new(&server.url(), config()).unwrap();
    let id = random_match();
    let seats = [Some("p0"), Some("p1")];
    let mut sub = bus.subscribe(id).await.unwrap();
    let one = revision(id, 1, &seats);
    bus.publish(&one).await.unwrap();
    assert_eq!(publications(&mut sub, 2).await, one);

    server.freeze();
    let two = revision(id, 2, &seats);
    let started = Instant::now();
    let failed = bus.publish(&two).await;
    assert!(matches!(failed, Err(BusError::Unavailable(_))), "publish to a hung redis: {failed:?}");
    assert!(started.elapsed() < FAIL_FAST, "publish took {:?} to fail", started.elapsed());
    // Redis did not answer: the next publishes do not wait on it again (a silent Redis must
    // not add its timeout to every commit's answer); the outbox keeps them for the sweeper.
    let again = bus.publish(&two).await;
    assert!(
        matches!(&again, Err(BusError::Unavailable(m)) if m.contains("not waiting on it")),
        "the publish after an unanswered one waited on redis again: {again:?}"
    );
    // Long enough for the reader's own read to time out (block time plus reply bound).
    assert_quiet(&mut sub, Duration::from_secs(2)).await;

    server.thaw();
    assert!(matches!(next(&mut sub).await, BusItem::Gap), "a gap once redis answers again");
    // The timed-out publish may still have landed when the server woke up; the sweeper's
    // resend is then a no-op. Either way revision 3 follows, with nothing out of order.
    let deadline = Instant::now() + PATIENCE;
    while let Err(e) = bus.publish(&two).await {
        assert!(Instant::now() < deadline, "publish still failing after redis woke up: {e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let three = revision(id, 3, &seats);
    bus.publish(&three).await.unwrap();
    let mut seen = Vec::new();
    while seen.last() != Some(&(3, Some("p1".to_owned()))) {
        match next(&mut sub).await {
            BusItem::Publication(p) => seen.push((p.revision, p.recipient.clone())),
            BusItem::Gap => panic!("a second gap after {seen:?}"),
        }
    }
    let p = |r: u64, seat: &str| (r, Some(seat.to_owned()));
    let expected = [vec![p(3, "p0"), p(3, "p1")], vec![p(2, "p0"), p(2, "p1"), p(3, "p0"), p(3, "p1")]];
    assert!(expected.contains(&seen), "delivered after the gap: {seen:?}");
}
