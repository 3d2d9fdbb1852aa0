//! What only the Redis backend has: the stream format, the bounded length, gaps found in the
//! stream itself (trimming, a revision that never arrived), idempotent re-publication and
//! prompt pick-up of new matches by the shared readers, and thousands of watched matches
//! spread over readers with bounded key sets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use juegoland_bus::{Bus, BusError, BusItem, RedisBus, RedisBusConfig};
use redis::streams::StreamRangeReply;
use uuid::Uuid;

use crate::support::{
    assert_quiet, next, next_publication, publications, random_match, redis_url, revision, revisions, shared_redis,
    shuffle,
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
    // Each entry says when it was published (the publisher's clock, microseconds since the
    // epoch), which tools read back per revision.
    let stamps: Vec<String> = entries.ids.iter().map(|e| e.get::<String>("published").unwrap()).collect();
    assert_eq!(stamps[0], stamps[1], "one instant per revision");
    let published = bus.published(id).await.unwrap();
    assert_eq!(published.keys().copied().collect::<Vec<_>>(), [1]);
    let age = std::time::SystemTime::now().duration_since(published[&1]).unwrap();
    assert!(age < Duration::from_secs(10), "published {age:?} ago");
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

/// Matches that publish while a write is on its way share the next one, and each keeps its
/// own answer: a stale re-publication succeeds, a key Redis refuses fails its match alone.
#[tokio::test]
async fn matches_publishing_together_share_writes_and_keep_their_own_answers() {
    let mut redis = shared_redis().await;
    let bus = Arc::new(bus(RedisBusConfig::default()));
    let ids: Vec<Uuid> = (0..64).map(|_| random_match()).collect();
    let first: Vec<_> = ids.iter().map(|&id| revision(id, 1, &[Some("p0"), Some("p1"), None])).collect();
    for publications in &first {
        bus.publish(publications).await.unwrap();
    }
    assert_eq!(bus.publish_writes(), 64, "one at a time, one write each");

    // A key that is not a stream: Redis refuses the entries of that match only.
    let broken = random_match();
    let _: () =
        redis::cmd("SET").arg(RedisBus::stream_key(broken)).arg("not a stream").query_async(&mut redis).await.unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for (i, &id) in ids.iter().enumerate() {
        let bus = bus.clone();
        // Half re-publish revision 1 (stale: already there), half publish revision 2.
        let publications = if i % 2 == 0 { first[i].clone() } else { revision(id, 2, &[Some("p0"), Some("p1"), None]) };
        calls.spawn(async move { (id, bus.publish(&publications).await) });
    }
    let bad = bus.clone();
    calls.spawn(async move { (broken, bad.publish(&revision(broken, 1, &[Some("p0")])).await) });
    while let Some(joined) = calls.join_next().await {
        let (id, result) = joined.unwrap();
        if id == broken {
            assert!(matches!(result, Err(BusError::Unavailable(_))), "the refused match fails: {result:?}");
        } else {
            result.unwrap_or_else(|e| panic!("match {id} failed with its neighbour: {e}"));
        }
    }
    // On the test's one-thread runtime every call is queued before the writer runs again.
    let shared = bus.publish_writes() - 64;
    assert!(shared <= 8, "65 concurrent publishes took {shared} writes");
    for (i, &id) in ids.iter().enumerate() {
        let entries: StreamRangeReply =
            redis::cmd("XRANGE").arg(RedisBus::stream_key(id)).arg("-").arg("+").query_async(&mut redis).await.unwrap();
        let got: Vec<&str> = entries.ids.iter().map(|e| e.id.as_str()).collect();
        let want: &[&str] =
            if i % 2 == 0 { &["1-1", "1-2", "1-3"] } else { &["1-1", "1-2", "1-3", "2-1", "2-2", "2-3"] };
        assert_eq!(got, want, "match {i}: whole revisions, in order, nothing twice");
    }
    let _: () = redis::cmd("DEL").arg(RedisBus::stream_key(broken)).query_async(&mut redis).await.unwrap();
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
    // The watcher's stream ends when the bus lets go of its sink (after telling it `Ended`).
    let (_watching, mut watched) = crate::suite::watched(&bus, random_match()).await;
    drop(bus);
    let end = tokio::time::timeout(Duration::from_secs(5), futures::StreamExt::next(&mut sub)).await;
    assert!(matches!(end, Ok(None)), "the subscription goes on after its bus is gone: {end:?}");
    let end = tokio::time::timeout(Duration::from_secs(5), futures::StreamExt::next(&mut watched)).await;
    assert!(matches!(end, Ok(None)), "the watch goes on after its bus is gone: {end:?}");
}

type Subscription = BoxStream<'static, BusItem>;

/// Publishes the revisions `first..first + count` of every match in `matches`, in a random
/// interleaving (each match's own revisions in order), from four publishers at once; a match
/// belongs to one publisher, so its revisions stay in order.
async fn publish_interleaved(bus: &Arc<RedisBus>, matches: &[(Uuid, u64)], count: u64) {
    let mut publishers = Vec::new();
    for part in 0..4 {
        let mine: Vec<(Uuid, u64)> = matches.iter().skip(part).step_by(4).copied().collect();
        let bus = bus.clone();
        publishers.push(tokio::spawn(async move {
            // Each match `count` times, shuffled; the k-th time it comes up is its k-th revision.
            let mut order: Vec<usize> = (0..mine.len()).flat_map(|i| std::iter::repeat_n(i, count as usize)).collect();
            shuffle(&mut order);
            let mut next: Vec<u64> = mine.iter().map(|(_, first)| *first).collect();
            for i in order {
                bus.publish(&revision(mine[i].0, next[i], SEATS)).await.unwrap();
                next[i] += 1;
            }
        }));
    }
    for p in publishers {
        p.await.unwrap();
    }
}

/// Checks that each subscription receives exactly the revisions `first..first + count` of its
/// match, in order and without a gap, and hands the subscriptions back.
async fn expect_in_order(subs: Vec<(Uuid, u64, Subscription)>, count: u64) -> Vec<(Uuid, Subscription)> {
    let checks: Vec<_> = subs
        .into_iter()
        .map(|(id, first, mut sub)| {
            tokio::spawn(async move {
                let expected = revisions(id, first..=first + count - 1, SEATS).concat();
                assert_eq!(publications(&mut sub, expected.len()).await, expected, "match {id}");
                (id, sub)
            })
        })
        .collect();
    let mut out = Vec::new();
    for c in checks {
        out.push(c.await.unwrap());
    }
    out
}

const SEATS: &[Option<&str>] = &[Some("p0"), Some("p1")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_watched_matches_over_bounded_readers_arrive_in_order() {
    shared_redis().await;
    const MATCHES: usize = 3_000;
    let per_reader = RedisBusConfig::default().streams_per_reader;
    let bus = Arc::new(bus(RedisBusConfig::default()));
    let mut subs = Vec::new();
    for _ in 0..MATCHES {
        let id = random_match();
        subs.push((id, bus.subscribe(id).await.unwrap()));
    }
    assert_eq!(bus.readers(), MATCHES.div_ceil(per_reader), "readers for {MATCHES} matches at {per_reader} each");

    // Two revisions of every match, to random matches in turn.
    let matches: Vec<(Uuid, u64)> = subs.iter().map(|(id, _)| (*id, 1)).collect();
    publish_interleaved(&bus, &matches, 2).await;
    let subs = expect_in_order(subs.into_iter().map(|(id, sub)| (id, 1, sub)).collect(), 2).await;

    // Churn while the readers read: a third of the subscriptions end and a thousand new
    // matches are watched; then two more revisions of every watched match. The survivors go
    // on from revision 3 with nothing lost, the new matches start at revision 1.
    let (kept, dropped): (Vec<_>, Vec<_>) = subs.into_iter().enumerate().partition(|(i, _)| i % 3 != 0);
    drop(dropped);
    let mut watched: Vec<(Uuid, u64, Subscription)> = kept.into_iter().map(|(_, (id, sub))| (id, 3, sub)).collect();
    for _ in 0..1_000 {
        let id = random_match();
        watched.push((id, 1, bus.subscribe(id).await.unwrap()));
    }
    let matches: Vec<(Uuid, u64)> = watched.iter().map(|(id, first, _)| (*id, *first)).collect();
    publish_interleaved(&bus, &matches, 2).await;
    let mut subs = expect_in_order(watched, 2).await;
    for (_, sub) in subs.iter_mut().step_by(97) {
        assert_quiet(sub, Duration::from_millis(20)).await;
    }
    assert!(bus.readers() <= (MATCHES + 1_000).div_ceil(per_reader), "{} readers", bus.readers());
}

/// With a bus secret, a node tags every entry and a gateway delivers only tagged ones: an
/// entry written straight into Redis — a forged next revision with a made-up result, or a
/// genuine one whose message was changed — never reaches a subscriber, which resyncs
/// instead; a reader without the secret (or with another) is no reader of a tagged stream.
#[tokio::test]
async fn a_forged_or_altered_entry_never_reaches_a_subscriber() {
    use juegoland_bus::BusSecret;
    let mut redis = shared_redis().await;
    let secret = BusSecret::new(b"a-bus-secret-nodes-and-gateways-share").unwrap();
    assert!(BusSecret::new(b"short").is_err(), "at least 32 bytes");
    let node = bus(RedisBusConfig { secret: Some(secret.clone()), ..RedisBusConfig::default() });
    let gateway = bus(RedisBusConfig { secret: Some(secret), ..RedisBusConfig::default() });
    let id = random_match();
    let mut sub = gateway.subscribe(id).await.unwrap();
    let one = revision(id, 1, &[Some("p0"), None]);
    node.publish(&one).await.unwrap();
    assert_eq!(publications(&mut sub, 2).await, one, "genuine entries pass");

    // A forged revision 2, shaped like a node's entry (with a tag the forger made up).
    let key = RedisBus::stream_key(id);
    let forged = r#"{"protocolVersion":1,"type":"game.snapshot","revision":2,"result":"forged"}"#;
    for (entry_id, tag) in [("2-1", None), ("3-1", Some("00".repeat(32)))] {
        let revision = &entry_id[..1];
        let mut xadd = redis::cmd("XADD");
        xadd.arg(&key).arg(entry_id).arg("revision").arg(revision).arg("recipient").arg("p0").arg("count").arg(1);
        xadd.arg("encoded").arg(forged).arg("published").arg(0);
        if let Some(tag) = &tag {
            xadd.arg("mac").arg(tag);
        }
        let _: String = xadd.query_async(&mut redis).await.unwrap();
    }
    assert!(matches!(next(&mut sub).await, BusItem::Gap), "the forged entry is dropped: the subscriber resyncs");
    // Whatever else comes is a resync, never a forged publication.
    let until = tokio::time::Instant::now() + Duration::from_millis(300);
    while let Ok(Some(item)) = tokio::time::timeout_at(until, futures::StreamExt::next(&mut sub)).await {
        assert!(matches!(item, BusItem::Gap), "a forged entry was delivered");
    }

    // A reader with another secret delivers nothing the node wrote.
    let other = bus(RedisBusConfig {
        secret: Some(BusSecret::new(b"another-secret-of-thirty-two-bytes!!").unwrap()),
        ..RedisBusConfig::default()
    });
    let id = random_match();
    let mut theirs = other.subscribe(id).await.unwrap();
    node.publish(&revision(id, 1, &[Some("p0")])).await.unwrap();
    assert!(matches!(next(&mut theirs).await, BusItem::Gap), "an entry it cannot verify is no publication");
    assert_quiet(&mut theirs, Duration::from_millis(200)).await;
}
