//! What only the Redis backend has: the stream format, the bounded length, gaps found in the
//! stream itself (trimming, a revision that never arrived), idempotent re-publication and
//! prompt pick-up of new matches by the shared reader.

use std::time::{Duration, Instant};

use juegoland_bus::{Bus, BusError, BusItem, RedisBus, RedisBusConfig};
use redis::streams::StreamRangeReply;

use crate::support::{
    assert_quiet, next, next_publication, publications, random_match, redis_url, revision, revisions, shared_redis,
};

fn bus(config: RedisBusConfig) -> RedisBus {
    RedisBus::new(&redis_url(), config).expect("a redis bus")
}

#[tokio::test]
async fn entries_carry_revision_recipient_and_payload_under_a_hash_tagged_key() {
    let mut redis = shared_redis().await;
    let bus = bus(RedisBusConfig::default());
    let id = random_match();
    let published = revision(id, 1, &[Some("p0"), None]);
    bus.publish(&published).await.unwrap();

    let key = format!("juegoland:{{{id}}}:pub");
    assert_eq!(RedisBus::stream_key(id), key);
    let entries: StreamRangeReply =
        redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query_async(&mut redis).await.unwrap();
    let ids: Vec<&str> = entries.ids.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["1-1", "1-2"], "entry ids are <revision>-<n>");
    for (entry, p) in entries.ids.iter().zip(&published) {
        assert_eq!(entry.get::<String>("revision").as_deref(), Some("1"));
        assert_eq!(entry.get::<String>("recipient"), Some(p.recipient.clone().unwrap_or_default()));
        assert_eq!(entry.get::<String>("count").as_deref(), Some("2"));
        assert_eq!(entry.get::<String>("encoded").as_deref(), Some(&*p.encoded));
    }
    let ttl: i64 = redis::cmd("TTL").arg(&key).query_async(&mut redis).await.unwrap();
    assert!(ttl > 0, "the stream expires after its last publication (TTL {ttl})");
}

#[tokio::test]
async fn the_stream_stays_bounded() {
    let mut redis = shared_redis().await;
    let max_len = 16;
    let bus = bus(RedisBusConfig { max_len, ..RedisBusConfig::default() });
    let id = random_match();
    for publications in revisions(id, 1..=300, &[Some("p0"), Some("p1")]) {
        bus.publish(&publications).await.unwrap();
    }
    let key = RedisBus::stream_key(id);
    let len: usize = redis::cmd("XLEN").arg(&key).query_async(&mut redis).await.unwrap();
    // `MAXLEN ~` trims whole radix-tree nodes, so up to one node more than asked stays.
    let (_, node): (String, usize) =
        redis::cmd("CONFIG").arg("GET").arg("stream-node-max-entries").query_async(&mut redis).await.unwrap();
    assert!((max_len..=max_len + node).contains(&len), "600 entries published, {len} kept; MAXLEN ~ {max_len}");
    let last: StreamRangeReply =
        redis::cmd("XREVRANGE").arg(&key).arg("+").arg("-").arg("COUNT").arg(1).query_async(&mut redis).await.unwrap();
    assert_eq!(last.ids[0].id, "300-2");
}

#[tokio::test]
async fn a_reader_behind_the_trim_sees_a_gap() {
    shared_redis().await;
    // A large in-process buffer: the gap can only come from the trimmed stream.
    let bus = bus(RedisBusConfig { max_len: 16, subscriber_buffer: 4096, ..RedisBusConfig::default() });
    let id = random_match();
    let seats = [Some("p0"), Some("p1")];
    let mut sub = bus.subscribe(id).await.unwrap();
    let first = revision(id, 1, &seats);
    bus.publish(&first).await.unwrap();
    assert_eq!(publications(&mut sub, 2).await, first);
    // Revisions 2..=300 in ONE call, hence one MULTI: the stream is trimmed far past
    // revision 1 before the reader can see any of them.
    let burst: Vec<_> = revisions(id, 2..=300, &seats).concat();
    bus.publish(&burst).await.unwrap();
    assert!(matches!(next(&mut sub).await, BusItem::Gap), "the reader missed trimmed entries");
    let resumed = next_publication(&mut sub).await;
    assert!(resumed.revision > 2, "resumed at revision {}", resumed.revision);
    // From there on, in order and without holes, up to the end.
    let mut at = (resumed.revision, resumed.recipient.clone());
    while at != (300, Some("p1".to_owned())) {
        let p = next_publication(&mut sub).await;
        let expected = match at.1.as_deref() {
            Some("p0") => (at.0, Some("p1".to_owned())),
            _ => (at.0 + 1, Some("p0".to_owned())),
        };
        assert_eq!((p.revision, p.recipient.clone()), expected);
        at = expected;
    }
    assert_quiet(&mut sub, Duration::from_millis(200)).await;
}

#[tokio::test]
async fn a_revision_missing_from_the_stream_is_a_gap() {
    shared_redis().await;
    let bus = bus(RedisBusConfig::default());
    let id = random_match();
    let mut sub = bus.subscribe(id).await.unwrap();
    let (one, three) = (revision(id, 1, &[Some("p0"), None]), revision(id, 3, &[Some("p0"), None]));
    // Revision 2's publish failed (Redis was down) and the sweeper has not resent it yet.
    bus.publish(&one).await.unwrap();
    bus.publish(&three).await.unwrap();
    assert_eq!(publications(&mut sub, 2).await, one);
    assert!(matches!(next(&mut sub).await, BusItem::Gap));
    assert_eq!(publications(&mut sub, 2).await, three);
}

#[tokio::test]
async fn republishing_adds_nothing() {
    let mut redis = shared_redis().await;
    let bus = bus(RedisBusConfig::default());
    let id = random_match();
    let mut sub = bus.subscribe(id).await.unwrap();
    let [one, two, three] = [1, 2, 3].map(|r| revision(id, r, &[Some("p0"), Some("p1")]));
    // The sweeper resends what the actor published but could not mark, and a revision that
    // a later one overtook: both succeed and add nothing.
    for publications in [&one, &two, &one, &two, &three, &two] {
        bus.publish(publications).await.unwrap();
    }
    assert_eq!(publications(&mut sub, 6).await, [one, two, three].concat());
    assert_quiet(&mut sub, Duration::from_millis(200)).await;
    let len: usize = redis::cmd("XLEN").arg(RedisBus::stream_key(id)).query_async(&mut redis).await.unwrap();
    assert_eq!(len, 6);
}

#[tokio::test]
async fn a_newly_watched_match_is_read_at_once() {
    shared_redis().await;
    // A long block: without waking the reader, the second match would wait for it.
    let read_block = Duration::from_secs(20);
    let bus = bus(RedisBusConfig { read_block, response_timeout: Duration::from_secs(1), ..RedisBusConfig::default() });
    let (x, y) = (random_match(), random_match());
    let mut sub_x = bus.subscribe(x).await.unwrap();
    // Let the reader block on match x alone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut sub_y = bus.subscribe(y).await.unwrap();
    let started = Instant::now();
    let y1 = revision(y, 1, &[Some("p0")]);
    bus.publish(&y1).await.unwrap();
    assert_eq!(publications(&mut sub_y, 1).await, y1);
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?} (block time {read_block:?})", started.elapsed());
    let x1 = revision(x, 1, &[Some("p0")]);
    bus.publish(&x1).await.unwrap();
    assert_eq!(publications(&mut sub_x, 1).await, x1);
}

#[tokio::test]
async fn a_bad_configuration_is_refused() {
    let refused = |r: Result<RedisBus, BusError>| matches!(r, Err(BusError::InvalidConfig(_)));
    assert!(refused(RedisBus::new("not a url", RedisBusConfig::default())));
    assert!(refused(RedisBus::new(&redis_url(), RedisBusConfig { max_len: 0, ..RedisBusConfig::default() })));
    assert!(refused(RedisBus::new(&redis_url(), RedisBusConfig { subscriber_buffer: 0, ..RedisBusConfig::default() })));
}

#[tokio::test]
async fn dropping_the_bus_ends_its_subscriptions() {
    shared_redis().await;
    let bus = bus(RedisBusConfig::default());
    let mut sub = bus.subscribe(random_match()).await.unwrap();
    drop(bus);
    let end = tokio::time::timeout(Duration::from_secs(5), futures::StreamExt::next(&mut sub)).await;
    assert!(matches!(end, Ok(None)), "the subscription goes on after its bus is gone: {end:?}");
}
