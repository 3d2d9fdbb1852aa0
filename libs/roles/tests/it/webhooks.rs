//! The webhook deliverer in process, over real stores and a real HTTP receiver on loopback
//! (`juegoland_testkit::WebhookReceiver`): the lifecycle events of real Conecta 4 matches
//! (created, cancelled, finished by a withdrawal) arrive signed, in feed order, each at
//! least once; a receiver that fails (500, hangs, is down) gets the same events again once
//! it recovers and the cursor moves only on a 2xx; a restarted deliverer resumes from the
//! durable cursor; two deliverers on one PostgreSQL never deliver an endpoint at once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use juegoland_actors::{Host, HostConfig, Metrics};
use juegoland_api::{FeedCursor, FeedEvent, Matches};
use juegoland_bus::LocalBus;
use juegoland_core::{Engine, GameKey, LifecycleRequest, Registry, SeatHolder};
use juegoland_roles::signature::{DEFAULT_TOLERANCE, SIGNATURE_HEADER, SignatureError, verify};
use juegoland_roles::webhook_config::{SecretSource, endpoint};
use juegoland_roles::webhooks::Endpoint;
use juegoland_roles::{WebhookMetrics, WebhookOptions, Webhooks};
use juegoland_store::{MemoryStore, PgStore, SqliteStore, Store, WebhookEndpoints};
use juegoland_testkit::{Answer, Received, TempDir, TestSchema, WebhookReceiver};
use serde_json::Value;
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(20);

/// Matches played through a real host over `store`: what writes the feed.
struct Platform {
    host: Host,
}

impl Platform {
    async fn over(store: Arc<dyn Store>) -> Platform {
        let mut registry = Registry::new();
        registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).expect("register conecta4");
        let host = Host::start(
            Arc::new(Engine::new(Arc::new(registry))),
            store,
            Arc::new(LocalBus::default()),
            Metrics::new(&prometheus::Registry::new()).unwrap(),
            HostConfig::default(),
        )
        .await
        .expect("start the host");
        Platform { host }
    }

    async fn create(&self) -> Uuid {
        let seats = BTreeMap::from([
            ("p0".to_owned(), SeatHolder::Principal("alice".into())),
            ("p1".to_owned(), SeatHolder::Principal("bob".into())),
        ]);
        let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
        self.host.create_match(&key, seats, &serde_json::json!({})).await.expect("create a match")
    }

    async fn cancel(&self, id: Uuid) {
        let request = LifecycleRequest::Cancel { reason_code: "platform.abandoned".into() };
        self.host.lifecycle(id, request).await.expect("cancel");
    }

    /// bob withdraws: alice wins, the match is finished.
    async fn finish(&self, id: Uuid) {
        self.host.lifecycle(id, LifecycleRequest::Withdraw { seat: "p1".into() }).await.expect("withdraw");
    }

    async fn stop(self) {
        self.host.stop().await;
    }
}

/// The whole feed as the store has it.
async fn feed(store: &dyn Store) -> Vec<FeedEvent> {
    // PostgreSQL shows an event once every older transaction has ended: wait for quiet.
    let mut last = Vec::new();
    for _ in 0..50 {
        let now = store.feed(FeedCursor::default(), 10_000).await.expect("read the feed");
        if now.len() == last.len() && !now.is_empty() {
            return now;
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    last
}

fn hook(id: &str, url: &str, secret: &str, kinds: Option<&[&str]>) -> Endpoint {
    let kinds: Option<Vec<String>> = kinds.map(|k| k.iter().map(|s| (*s).to_owned()).collect());
    endpoint(id, url, Some(SecretSource::Inline(secret)), kinds.as_deref()).expect("a valid endpoint")
}

/// Quick options for tests: short back-offs and polls, a lease well above the timeout.
fn options(claimant: &str) -> WebhookOptions {
    WebhookOptions {
        batch: 3,
        timeout: Duration::from_millis(400),
        lease: Duration::from_secs(2),
        poll_interval: Duration::from_millis(20),
        backoff: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        lag_every: Duration::from_millis(20),
        ..WebhookOptions::new(claimant)
    }
}

/// The body's `events`, each as JSON.
fn events(r: &Received) -> Vec<Value> {
    let body: Value = serde_json::from_slice(&r.body).expect("a JSON body");
    body["events"].as_array().expect("an events array").clone()
}

fn ids(r: &Received) -> Vec<String> {
    events(r).iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

/// The event ids of the acknowledged requests, in the order they were answered.
fn acknowledged(received: &[Received]) -> Vec<String> {
    received.iter().filter(|r| r.acknowledged()).flat_map(ids).collect()
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The value of the sample of `name` with `labels` in `registry`'s text exposition.
fn sample(registry: &prometheus::Registry, name: &str, labels: &[(&str, &str)]) -> f64 {
    let text = prometheus::TextEncoder::new().encode_to_string(&registry.gather()).expect("encode the metrics");
    let line = text.lines().find(|l| {
        l.strip_prefix(name).is_some_and(|rest| rest.starts_with('{'))
            && labels.iter().all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
    });
    let line = line.unwrap_or_else(|| panic!("no {name}{labels:?} in\n{text}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("a value in {line}"))
}

#[tokio::test]
async fn events_arrive_signed_in_feed_order_and_the_cursor_moves_only_on_a_2xx() {
    let dir = TempDir::new("webhooks-order");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).await.expect("open the store"));
    let platform = Platform::over(store.clone()).await;
    let (first, second) = (platform.create().await, platform.create().await);
    platform.cancel(first).await;
    platform.finish(second).await;
    let fed = feed(&*store).await;
    let kinds: Vec<(Uuid, &str)> = fed.iter().map(|e| (e.summary.match_id, e.kind.as_str())).collect();
    assert_eq!(kinds, [(first, "created"), (second, "created"), (first, "cancelled"), (second, "finished")]);
    let fed_ids: Vec<String> = fed.iter().map(|e| e.id.clone()).collect();

    let receiver = WebhookReceiver::start().await;
    receiver.answer(Answer::Status(500));
    let endpoints = vec![
        hook("all", &receiver.url("/all"), "s3cret", None),
        hook("results", &receiver.url("/results"), "other", Some(&["finished", "cancelled"])),
    ];
    let registry = prometheus::Registry::new();
    let metrics = WebhookMetrics::new(&registry).unwrap();
    let webhooks = Webhooks::start(store.clone(), endpoints, options("all-in-one"), metrics).expect("start");

    // A receiver answering 500: the same first batch again and again, the cursor unmoved.
    let failing = receiver
        .wait_until(WAIT, "three refused attempts at each endpoint", |r| {
            ["/all", "/results"].iter().all(|p| r.iter().filter(|x| x.path == *p).count() >= 3)
        })
        .await;
    for r in failing.iter().filter(|r| r.path == "/all") {
        assert_eq!(ids(r), fed_ids[..3], "a refused batch is sent again as it was");
    }
    assert_eq!(store.webhook_cursor("all").await.unwrap().unwrap().cursor, FeedCursor::default());
    assert!(
        sample(&registry, "juegoland_webhook_deliveries_total", &[("webhook", "all"), ("outcome", "rejected")]) >= 3.0
    );
    assert_eq!(sample(&registry, "juegoland_webhook_held", &[("webhook", "all")]), 1.0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(sample(&registry, "juegoland_webhook_lag_seconds", &[("webhook", "all")]) > 0.0, "events wait");

    // A hung receiver: the request times out, and the batch goes again.
    receiver.answer(Answer::Hang);
    let before = receiver.received().len();
    receiver.wait_until(WAIT, "a hung attempt", |r| r[before..].iter().any(|x| x.answer.is_none())).await;
    let deadline = std::time::Instant::now() + WAIT;
    while sample(&registry, "juegoland_webhook_deliveries_total", &[("webhook", "all"), ("outcome", "timeout")]) < 1.0 {
        assert!(std::time::Instant::now() < deadline, "no timeout counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(store.webhook_cursor("all").await.unwrap().unwrap().cursor, FeedCursor::default());

    // Recovered: every event arrives, in feed order, signed; the cursor is at the feed's end.
    receiver.answer(Answer::Status(204));
    let received = receiver
        .wait_until(WAIT, "every event acknowledged", |r| {
            acknowledged(&r.iter().filter(|x| x.path == "/all").cloned().collect::<Vec<_>>()).len() == fed.len()
                && acknowledged(&r.iter().filter(|x| x.path == "/results").cloned().collect::<Vec<_>>()).len() == 2
        })
        .await;
    let (all, results): (Vec<Received>, Vec<Received>) = received.into_iter().partition(|r| r.path == "/all");
    assert_eq!(acknowledged(&all), fed_ids, "each event once, in feed order");
    assert_eq!(acknowledged(&results), [fed_ids[2].clone(), fed_ids[3].clone()], "only the kinds it asked for");
    for r in &all {
        assert_eq!(r.method, "POST");
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("juegoland-webhook"), Some("all"));
        let signature = r.header(SIGNATURE_HEADER).expect("a signature");
        assert_eq!(verify(b"s3cret", signature, &r.body, now_secs(), DEFAULT_TOLERANCE), Ok(()));
        assert_eq!(
            verify(b"not-the-secret", signature, &r.body, now_secs(), DEFAULT_TOLERANCE),
            Err(SignatureError::Mismatch),
            "a wrong secret fails verification"
        );
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["webhook"], "all");
    }
    let last = all.iter().rev().find(|r| r.acknowledged()).unwrap();
    let event = events(last).pop().unwrap();
    assert_eq!(event["kind"], "finished");
    assert_eq!(event["match"]["result"]["participants"]["p0"]["outcome"], "win", "{event}");
    let signature = results[0].header(SIGNATURE_HEADER).unwrap();
    assert_eq!(verify(b"other", signature, &results[0].body, now_secs(), DEFAULT_TOLERANCE), Ok(()));

    let end = FeedCursor::parse(&fed.last().unwrap().cursor).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while store.webhook_cursor("results").await.unwrap().unwrap().cursor != end
        || store.webhook_cursor("all").await.unwrap().unwrap().cursor != end
    {
        assert!(std::time::Instant::now() < deadline, "the cursors never reached the feed's end");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sample(&registry, "juegoland_webhook_events_total", &[("webhook", "all")]), 4.0);
    assert_eq!(sample(&registry, "juegoland_webhook_events_total", &[("webhook", "results")]), 2.0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sample(&registry, "juegoland_webhook_lag_seconds", &[("webhook", "all")]), 0.0, "nothing waits");

    webhooks.stop().await;
    assert_eq!(store.webhook_cursor("all").await.unwrap().unwrap().claimed_by, None, "released on stop");
    assert_eq!(sample(&registry, "juegoland_webhook_held", &[("webhook", "all")]), 0.0);
    platform.stop().await;
}

#[tokio::test]
async fn a_receiver_that_was_down_gets_every_event_once_it_is_back() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let platform = Platform::over(store.clone()).await;
    let receiver = WebhookReceiver::start().await;
    let url = receiver.url("/hooks");
    let addr = receiver.stop().await;
    let registry = prometheus::Registry::new();
    let metrics = WebhookMetrics::new(&registry).unwrap();
    let webhooks =
        Webhooks::start(store.clone(), vec![hook("down", &url, "k", None)], options("a"), metrics).expect("start");
    let id = platform.create().await;
    platform.cancel(id).await;
    let deadline = std::time::Instant::now() + WAIT;
    while sample(&registry, "juegoland_webhook_deliveries_total", &[("webhook", "down"), ("outcome", "unreachable")])
        < 2.0
    {
        assert!(std::time::Instant::now() < deadline, "no failed connection counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(store.webhook_cursor("down").await.unwrap().unwrap().cursor, FeedCursor::default());

    let receiver = WebhookReceiver::start_at(addr).await;
    let received = receiver.wait_until(WAIT, "both events", |r| acknowledged(r).len() == 2).await;
    assert_eq!(acknowledged(&received), [format!("{id}/0"), format!("{id}/1")]);
    webhooks.stop().await;
    platform.stop().await;
}

/// A deliverer stopped while the receiver holds a request it has read (a crash between the
/// delivery and the cursor write, as far as the cursor knows): after a restart over the
/// reopened store, delivery resumes from the durable cursor — what was acknowledged is not
/// sent again, what was not is.
#[tokio::test]
async fn a_restarted_deliverer_resumes_from_its_durable_cursor() {
    let dir = TempDir::new("webhooks-restart");
    let store = Arc::new(SqliteStore::open(dir.path()).await.expect("open the store"));
    let platform = Platform::over(store.clone()).await;
    let first = platform.create().await;
    let receiver = WebhookReceiver::start().await;
    let endpoints = || vec![hook("ratings", &receiver.url("/hooks"), "k", None)];
    let metrics = WebhookMetrics::new(&prometheus::Registry::new()).unwrap();
    let webhooks = Webhooks::start(store.clone(), endpoints(), options("all-in-one"), metrics).expect("start");
    receiver.wait_until(WAIT, "the first creation", |r| acknowledged(r).len() == 1).await;

    receiver.answer(Answer::Hang);
    platform.cancel(first).await;
    receiver.wait_until(WAIT, "the cancellation, held", |r| r.iter().any(|x| x.answer.is_none())).await;
    webhooks.stop().await;
    platform.stop().await;
    let cursor = store.webhook_cursor("ratings").await.unwrap().unwrap().cursor;
    store.close().await;

    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).await.expect("reopen the store"));
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().cursor, cursor, "durable");
    receiver.answer(Answer::Status(200));
    let metrics = WebhookMetrics::new(&prometheus::Registry::new()).unwrap();
    let webhooks = Webhooks::start(store.clone(), endpoints(), options("all-in-one"), metrics).expect("restart");
    let received = receiver.wait_until(WAIT, "the cancellation again", |r| acknowledged(r).len() == 2).await;
    assert_eq!(acknowledged(&received), [format!("{first}/0"), format!("{first}/1")]);
    let held: Vec<Vec<String>> = received.iter().filter(|r| r.answer.is_none()).map(ids).collect();
    assert!(!held.is_empty() && held.iter().all(|h| *h == [format!("{first}/1")]), "{held:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(acknowledged(&receiver.received()).len(), 2, "nothing acknowledged goes twice");
    webhooks.stop().await;
}

/// Two deliverers (as two scheduler replicas) over one PostgreSQL: the receiver never serves
/// two requests of the endpoint at once, every event is acknowledged once in order, and when
/// the holder stops the other takes the endpoint over where the cursor is.
#[tokio::test]
async fn two_deliverers_on_one_postgres_never_deliver_an_endpoint_at_once() {
    let schema = TestSchema::create("roles", "webhooks_two_deliverers").await;
    let connect = || async {
        PgStore::connect_with(PgStore::pool_options().max_connections(3), schema.options()).await.expect("connect")
    };
    let platform_store: Arc<dyn Store> = Arc::new(connect().await);
    let (a_store, b_store): (Arc<dyn Store>, Arc<dyn Store>) = (Arc::new(connect().await), Arc::new(connect().await));
    let platform = Platform::over(platform_store.clone()).await;
    let receiver = WebhookReceiver::start().await;
    receiver.delay(Duration::from_millis(30));
    let endpoints = || vec![hook("ratings", &receiver.url("/hooks"), "k", None)];
    let start = |store: Arc<dyn Store>, name: &str| {
        let metrics = WebhookMetrics::new(&prometheus::Registry::new()).unwrap();
        Webhooks::start(store, endpoints(), options(name), metrics).expect("start")
    };
    let (a, b) = (start(a_store.clone(), "replica-a"), start(b_store.clone(), "replica-b"));
    let mut matches = Vec::new();
    for k in 0..10 {
        let id = platform.create().await;
        if k % 2 == 0 {
            platform.cancel(id).await;
        }
        matches.push(id);
    }
    let fed: Vec<String> = feed(&*platform_store).await.into_iter().map(|e| e.id).collect();
    assert_eq!(fed.len(), 15);
    let received = receiver.wait_until(WAIT, "every event", |r| acknowledged(r).len() >= fed.len()).await;
    assert_eq!(acknowledged(&received), fed, "each once, in feed order");
    assert_eq!(receiver.most_in_flight(), 1, "one deliverer at a time");

    let holder = platform_store.webhook_cursor("ratings").await.unwrap().unwrap().claimed_by.expect("held");
    let (stopping, staying, other) = if holder == "replica-a" { (a, b, "replica-b") } else { (b, a, "replica-a") };
    stopping.stop().await;
    let later = platform.create().await;
    let received = receiver.wait_until(WAIT, "the next event", |r| acknowledged(r).len() > fed.len()).await;
    assert_eq!(acknowledged(&received)[fed.len()..], [format!("{later}/0")]);
    let row = platform_store.webhook_cursor("ratings").await.unwrap().unwrap();
    assert_eq!(row.claimed_by.as_deref(), Some(other), "the other replica took it over");
    assert_eq!(row.epoch, 2);
    assert_eq!(receiver.most_in_flight(), 1);
    staying.stop().await;
    platform.stop().await;
    for store in [platform_store, a_store, b_store] {
        drop(store);
    }
    schema.drop_schema().await;
}
