//! Webhooks over the platform feed: every lifecycle event (`GET /v1/feed`, migration 0014)
//! POSTed to each endpoint, at least once, in feed order per endpoint.
//!
//! The endpoints are the store's (migration 0016, [`juegoland_store::WebhookEndpoints`]):
//! those the platform API registered and those of the deliverer's own start-up
//! configuration, which it writes there first ([`crate::webhook_config::write_configured`]);
//! another deliverer's configured endpoints are not its to deliver. A supervisor reads them every
//! `refresh` and runs one delivery loop per endpoint: a new endpoint starts delivering, a
//! changed one (its URL, kinds or secrets) is delivered as changed from its next request, a
//! removed one stops (its lease given up). While a rotated-out secret's overlap lasts, each
//! request carries a signature by each secret.
//!
//! Each endpoint has a durable cursor into the feed and a lease in the store (migration
//! 0015, [`Store::claim_webhook`]). A deliverer — the all-in-one, or every scheduler replica
//! of a cluster — runs one loop per endpoint: it takes or renews the endpoint's lease, reads
//! up to `batch` events after the cursor, POSTs those the endpoint's kinds select as one JSON
//! body, signed ([`crate::signature`]), and moves the cursor past the batch only once the
//! endpoint answered 2xx ([`Store::advance_webhook`], a compare-and-set on the holder and its
//! epoch). A failure — a non-2xx status, no answer within `timeout`, no connection — is
//! retried with the same events after an exponential back-off with jitter, for as long as it
//! takes, renewing the lease meanwhile, so later events never overtake it. A deliverer that
//! dies between a 2xx and its cursor write leaves the cursor where it was: the next holder
//! sends the batch again (at least once; receivers dedupe by event `id`). With several
//! replicas, the others wait for the lease; one that finds it lapsed takes over where the
//! cursor is.
//!
//! | what happened | outcome label | the cursor |
//! |---|---|---|
//! | a 2xx answer | `delivered` | moves past the batch |
//! | another status | `rejected` | stays; retried after a back-off |
//! | no answer within `timeout` | `timeout` | stays; retried |
//! | no connection, TLS or protocol failure | `unreachable` | stays; retried |
//!
//! The request: `POST <url>` with `Content-Type: application/json`, `Juegoland-Webhook:
//! <endpoint id>`, `Juegoland-Signature: t=<unix seconds>,v1=<hex>` and the body
//! `{"webhook": "<endpoint id>", "events": [<FeedEvent>…]}` (1 to `batch` events, oldest
//! first; each with its `id`, `kind`, `at`, `cursor` and the `match` summary).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use juegoland_api::{FeedCursor, FeedEvent};
use juegoland_store::{Store, StoreError, WebhookClaim, WebhookEndpoint, WebhookOrigin};
use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::signature::{SIGNATURE_HEADER, sign_with};
pub use crate::webhook_config::Endpoint;

/// How the deliverer delivers (one set for every endpoint).
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    /// This deliverer's name in the endpoints' leases (a scheduler replica's id).
    pub claimant: String,
    /// The most events one request carries.
    pub batch: u32,
    /// How long one request may take, connection included.
    pub timeout: Duration,
    /// How long a lease keeps other deliverers away; more than `timeout`, renewed before
    /// every attempt and during back-offs.
    pub lease: Duration,
    /// How often a caught-up holder looks for new events, and a waiting deliverer for a
    /// lapsed lease.
    pub poll_interval: Duration,
    /// The first retry's back-off; each failure doubles it, up to `backoff_max`. The sleep
    /// is drawn between half the back-off and all of it.
    pub backoff: Duration,
    pub backoff_max: Duration,
    /// How often the lag gauge is measured.
    pub lag_every: Duration,
    /// How often the endpoints are read from the store (how soon one registered, changed or
    /// removed through the API takes effect).
    pub refresh: Duration,
    /// How long a secret the configuration replaced keeps signing (as an API rotation's
    /// default overlap).
    pub rotation_overlap: Duration,
}

impl WebhookOptions {
    /// The defaults for `claimant`: 100 events a request, 10 s timeout, 30 s leases, a look
    /// every 500 ms, back-off from 500 ms to 60 s, the lag measured every 5 s, the endpoints
    /// read every second, a replaced secret signing for 24 hours.
    pub fn new(claimant: impl Into<String>) -> Self {
        Self {
            claimant: claimant.into(),
            batch: 100,
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(30),
            poll_interval: Duration::from_millis(500),
            backoff: Duration::from_millis(500),
            backoff_max: Duration::from_secs(60),
            lag_every: Duration::from_secs(5),
            refresh: Duration::from_secs(1),
            rotation_overlap: Duration::from_millis(juegoland_api::webhooks::DEFAULT_OVERLAP_MS),
        }
    }

    /// Refuses options that break the lease's promise or deliver nothing.
    pub fn check(&self) -> Result<(), crate::webhook_config::WebhookConfigError> {
        let fail = |why: String| Err(crate::webhook_config::WebhookConfigError::Options(why));
        if self.batch == 0 {
            return fail("the batch must hold at least one event".into());
        }
        if self.lease <= self.timeout * 2 {
            return fail(format!(
                "the lease ({:?}) must be more than twice the request timeout ({:?}): a holder renews it \
                 before each attempt, and must still hold it when the answer comes",
                self.lease, self.timeout
            ));
        }
        if self.backoff.is_zero() || self.backoff_max < self.backoff {
            return fail(format!("back-off {:?} up to {:?}: not a growing back-off", self.backoff, self.backoff_max));
        }
        Ok(())
    }
}

/// What became of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    Rejected,
    Timeout,
    Unreachable,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [Outcome::Delivered, Outcome::Rejected, Outcome::Timeout, Outcome::Unreachable];

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Rejected => "rejected",
            Outcome::Timeout => "timeout",
            Outcome::Unreachable => "unreachable",
        }
    }
}

/// The deliverer's metrics, by endpoint (`webhook`, the endpoint's id).
#[derive(Clone)]
pub struct WebhookMetrics {
    /// Requests by endpoint and outcome ([`Outcome::label`]).
    pub deliveries: IntCounterVec,
    /// Events acknowledged (in 2xx answers) by endpoint.
    pub events: IntCounterVec,
    /// How long ago the oldest event the endpoint has not acknowledged was written (0 when
    /// none waits): every deliverer measures it from the store, holder or not.
    pub lag_seconds: GaugeVec,
    /// 1 while this process holds the endpoint's lease.
    pub held: IntGaugeVec,
}

impl WebhookMetrics {
    pub fn new(registry: &prometheus::Registry) -> prometheus::Result<Self> {
        let deliveries = IntCounterVec::new(
            prometheus::Opts::new("juegoland_webhook_deliveries_total", "Webhook requests, by endpoint and outcome"),
            &["webhook", "outcome"],
        )?;
        let events = IntCounterVec::new(
            prometheus::Opts::new("juegoland_webhook_events_total", "Feed events a webhook endpoint acknowledged"),
            &["webhook"],
        )?;
        let lag_seconds = GaugeVec::new(
            prometheus::Opts::new(
                "juegoland_webhook_lag_seconds",
                "Age of the oldest feed event a webhook endpoint has not acknowledged (0 when none waits)",
            ),
            &["webhook"],
        )?;
        let held = IntGaugeVec::new(
            prometheus::Opts::new("juegoland_webhook_held", "1 while this process holds the webhook endpoint's lease"),
            &["webhook"],
        )?;
        registry.register(Box::new(deliveries.clone()))?;
        registry.register(Box::new(events.clone()))?;
        registry.register(Box::new(lag_seconds.clone()))?;
        registry.register(Box::new(held.clone()))?;
        Ok(Self { deliveries, events, lag_seconds, held })
    }

    /// Every series of `endpoint`, at zero.
    fn declare(&self, endpoint: &str) {
        for outcome in Outcome::ALL {
            self.deliveries.with_label_values(&[endpoint, outcome.label()]);
        }
        self.events.with_label_values(&[endpoint]);
        self.lag_seconds.with_label_values(&[endpoint]).set(0.0);
        self.held.with_label_values(&[endpoint]).set(0);
    }

    /// Drops every series of a removed endpoint.
    fn forget(&self, endpoint: &str) {
        for outcome in Outcome::ALL {
            let _ = self.deliveries.remove_label_values(&[endpoint, outcome.label()]);
        }
        let _ = self.events.remove_label_values(&[endpoint]);
        let _ = self.lag_seconds.remove_label_values(&[endpoint]);
        let _ = self.held.remove_label_values(&[endpoint]);
    }
}

pub(crate) type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The HTTP client of deliveries and pings: HTTP/1.1, plain or TLS (Mozilla's roots).
pub(crate) fn http_client() -> HttpClient {
    let https = hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots().https_or_http().enable_http1().build();
    Client::builder(TokioExecutor::new()).build(https)
}

/// The most of an answer's body read (and thrown away, so the connection can be reused).
const ANSWER_LIMIT: usize = 64 * 1024;

/// An endpoint as a delivery loop sends to it: its row, its URL parsed, its kinds as a set.
pub(crate) struct Live {
    pub row: WebhookEndpoint,
    pub url: hyper::Uri,
    kinds: Option<std::collections::BTreeSet<String>>,
}

impl Live {
    /// The row made ready to send to; refused when its URL does not parse (the API and the
    /// configuration check it, so only a row written by hand can).
    pub(crate) fn of(row: WebhookEndpoint) -> Result<Live, String> {
        let url = crate::webhook_config::check_url(&row.url)?;
        let kinds = row.kinds.as_ref().map(|k| k.iter().cloned().collect());
        Ok(Live { row, url, kinds })
    }

    fn selects(&self, event: &FeedEvent) -> bool {
        self.kinds.as_ref().is_none_or(|kinds| kinds.contains(&event.kind))
    }
}

/// One signed `POST` of `body` to `live`: its outcome, the answer's status when there was
/// one, and what happened, for a log or a person.
pub(crate) async fn post(
    client: &HttpClient,
    live: &Live,
    body: &Bytes,
    timeout: Duration,
) -> (Outcome, Option<u16>, String) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let now_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    let request = hyper::Request::post(live.url.clone())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::USER_AGENT, concat!("juegoland-webhooks/", env!("CARGO_PKG_VERSION")))
        .header("juegoland-webhook", &live.row.id)
        .header(SIGNATURE_HEADER, sign_with(&live.row.signing_secrets(now_ms), now.as_secs(), body))
        .body(Full::new(body.clone()));
    let request = match request {
        Ok(request) => request,
        Err(e) => return (Outcome::Unreachable, None, format!("build the request: {e}")),
    };
    let exchange = async {
        let answer = client.request(request).await?;
        let status = answer.status();
        // Read (a bounded part of) the answer so the connection can serve the next one.
        let _ = Limited::new(answer.into_body(), ANSWER_LIMIT).collect().await;
        Ok::<_, hyper_util::client::legacy::Error>(status)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => (Outcome::Timeout, None, format!("no answer within {timeout:?}")),
        Ok(Err(e)) => (Outcome::Unreachable, None, error_chain(&e)),
        Ok(Ok(status)) if status.is_success() => (Outcome::Delivered, Some(status.as_u16()), status.to_string()),
        Ok(Ok(status)) => (Outcome::Rejected, Some(status.as_u16()), status.to_string()),
    }
}

/// Running webhook deliveries: the supervisor and one task per endpoint.
pub struct Webhooks {
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Webhooks {
    /// Starts delivering the store's endpoints from its feed, after writing `configured`
    /// there (the start-up configuration's endpoints). Refuses options that
    /// [`WebhookOptions::check`] refuses.
    pub fn start(
        store: Arc<dyn Store>,
        configured: Vec<Endpoint>,
        options: WebhookOptions,
        metrics: WebhookMetrics,
    ) -> Result<Webhooks, crate::webhook_config::WebhookConfigError> {
        options.check()?;
        let (stop, tasks) = (CancellationToken::new(), TaskTracker::new());
        let supervisor = Supervisor {
            store,
            configured,
            client: http_client(),
            options,
            metrics,
            stop: stop.clone(),
            tasks: tasks.clone(),
            running: std::collections::BTreeMap::new(),
        };
        tasks.spawn(supervisor.run().instrument(info_span!("webhooks")));
        tasks.close();
        Ok(Webhooks { stop, tasks })
    }

    /// Stops: a request in flight is abandoned (its events go again, by whoever holds the
    /// endpoint next), and each endpoint's lease is given up so another deliverer takes it
    /// at once.
    pub async fn stop(self) {
        self.stop.cancel();
        self.tasks.wait().await;
    }
}

/// Keeps one delivery loop per stored endpoint, and measures their lag.
struct Supervisor {
    store: Arc<dyn Store>,
    configured: Vec<Endpoint>,
    client: HttpClient,
    options: WebhookOptions,
    metrics: WebhookMetrics,
    stop: CancellationToken,
    tasks: TaskTracker,
    /// By endpoint id.
    running: std::collections::BTreeMap<String, Running>,
}

/// A running delivery loop: the row it sends with, where its changes go, and what stops it.
struct Running {
    /// Compared whole: an endpoint removed and registered again between two reads starts
    /// again at version 1.
    row: WebhookEndpoint,
    endpoint: tokio::sync::watch::Sender<Arc<Live>>,
    stop: CancellationToken,
}

impl Supervisor {
    async fn run(mut self) {
        let mut failures = 0u32;
        // The configuration first, so its endpoints are delivered as configured from the start.
        loop {
            let written =
                crate::webhook_config::write_configured(&*self.store, &self.configured, self.options.rotation_overlap)
                    .await;
            match written {
                Ok(()) => break,
                Err(e) => {
                    let pause = backoff(&self.options, failures).max(self.options.poll_interval);
                    failures = failures.saturating_add(1);
                    warn!(error = %e, retry_in_ms = pause.as_millis() as u64, "could not write the configured webhook endpoints");
                    if sleep(&self.stop, pause).await.is_err() {
                        return;
                    }
                }
            }
        }
        // Two clocks: the endpoints read every `refresh`, the lags measured every `lag_every`.
        let now = tokio::time::Instant::now();
        let (mut next_read, mut next_lag) = (now, now);
        loop {
            let now = tokio::time::Instant::now();
            if now >= next_read {
                match self.store.webhook_endpoints().await {
                    Ok(rows) => self.reconcile(rows),
                    Err(e) => warn!(error = %e, "could not read the webhook endpoints; the running ones go on"),
                }
                next_read = now + self.options.refresh;
            }
            if now >= next_lag {
                self.measure_lags().await;
                next_lag = now + self.options.lag_every;
            }
            let pause = next_read.min(next_lag).saturating_duration_since(tokio::time::Instant::now());
            if sleep(&self.stop, pause).await.is_err() {
                break;
            }
        }
        for running in self.running.values() {
            running.stop.cancel();
        }
    }

    /// Starts, changes and stops delivery loops so there is one per row this deliverer
    /// delivers (the API's, and its own configuration's), sending as the row says.
    fn reconcile(&mut self, rows: Vec<WebhookEndpoint>) {
        let mine =
            |row: &WebhookEndpoint| row.origin == WebhookOrigin::Api || self.configured.iter().any(|e| e.id == row.id);
        let rows: Vec<WebhookEndpoint> = rows.into_iter().filter(mine).collect();
        let ids: std::collections::BTreeSet<String> = rows.iter().map(|r| r.id.clone()).collect();
        self.running.retain(|id, running| {
            let keep = ids.contains(id);
            if !keep {
                info!(webhook = %id, "webhook endpoint removed; its delivery stops");
                running.stop.cancel();
                self.metrics.forget(id);
            }
            keep
        });
        for row in rows {
            let (id, version) = (row.id.clone(), row.version);
            if self.running.get(&id).is_some_and(|r| r.row == row) {
                continue;
            }
            let live = match Live::of(row.clone()) {
                Ok(live) => Arc::new(live),
                Err(why) => {
                    warn!(webhook = %id, why, "a stored webhook endpoint cannot be delivered");
                    continue;
                }
            };
            if let Some(running) = self.running.get_mut(&id) {
                info!(webhook = %id, version, "webhook endpoint changed; its next request follows the change");
                running.row = row;
                running.endpoint.send_replace(live);
                continue;
            }
            self.metrics.declare(&id);
            let (endpoint, receiver) = tokio::sync::watch::channel(live);
            let stop = self.stop.child_token();
            let delivery = Delivery {
                store: self.store.clone(),
                id: id.clone(),
                endpoint: receiver,
                client: self.client.clone(),
                options: self.options.clone(),
                metrics: self.metrics.clone(),
                stop: stop.clone(),
            };
            let span = info_span!("webhook", webhook = %id, claimant = %self.options.claimant);
            self.tasks.spawn(delivery.run().instrument(span));
            self.running.insert(id, Running { row, endpoint, stop });
        }
    }

    /// Measures every running endpoint's lag from the store: the age of the first feed event
    /// after its cursor (every deliverer reads the same store, so every replica reports the
    /// same).
    async fn measure_lags(&self) {
        for id in self.running.keys() {
            match self.lag(id).await {
                Ok(lag) => self.metrics.lag_seconds.with_label_values(&[id]).set(lag.as_secs_f64()),
                Err(e) => warn!(webhook = %id, error = %e, "could not measure the webhook lag"),
            }
        }
    }

    async fn lag(&self, endpoint: &str) -> Result<Duration, StoreError> {
        let cursor = self.store.webhook_cursor(endpoint).await?.map(|row| row.cursor).unwrap_or_default();
        let next = self.store.feed(cursor, 1).await?;
        let Some(event) = next.first() else { return Ok(Duration::ZERO) };
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let age_ms = i64::try_from(now_ms).unwrap_or(i64::MAX).saturating_sub(event.at_ms);
        Ok(Duration::from_millis(u64::try_from(age_ms).unwrap_or(0)))
    }
}

/// The back-off after `failures` earlier failures: the base doubled each time up to the
/// maximum, then drawn between its half and all of it.
fn backoff(options: &WebhookOptions, failures: u32) -> Duration {
    let grown = options.backoff.saturating_mul(2u32.saturating_pow(failures.min(30)));
    let ceiling = grown.min(options.backoff_max);
    let mut bytes = [0u8; 4];
    let fraction = match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
        Err(_) => 1.0,
    };
    ceiling.mul_f64(0.5 + 0.5 * fraction)
}

/// Sleeps `pause` unless asked to stop first (`Err`).
async fn sleep(stop: &CancellationToken, pause: Duration) -> Result<(), ()> {
    if stop.is_cancelled() {
        return Err(());
    }
    tokio::select! {
        () = tokio::time::sleep(pause) => Ok(()),
        () = stop.cancelled() => Err(()),
    }
}

/// The delivery loop of one endpoint.
struct Delivery {
    store: Arc<dyn Store>,
    id: String,
    /// The endpoint as it is now (the supervisor sends its changes).
    endpoint: tokio::sync::watch::Receiver<Arc<Live>>,
    client: HttpClient,
    options: WebhookOptions,
    metrics: WebhookMetrics,
    stop: CancellationToken,
}

/// Why a delivery loop step ended without moving the cursor.
enum Interrupted {
    /// The lease went to another deliverer.
    Lost,
    /// The store failed; try again after a pause.
    Store(StoreError),
    /// Asked to stop.
    Stopped,
}

impl Delivery {
    async fn run(self) {
        let mut held: Option<WebhookClaim> = None;
        let mut pause = Duration::ZERO;
        // Consecutive store failures: a store outage is retried with the same back-off as a
        // failing receiver, not every poll.
        let mut store_failures = 0u32;
        info!("webhook delivery starting");
        loop {
            if self.sleep(pause).await.is_err() {
                break;
            }
            pause = self.options.poll_interval;
            let outcome = match self.claim(&mut held).await {
                Ok(Some(claim)) => self.step(claim).await.map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            match outcome {
                Ok(Some((claim, full))) => {
                    held = Some(claim);
                    if full {
                        // More may be waiting right now.
                        pause = Duration::ZERO;
                    }
                }
                Ok(None) => {}
                Err(Interrupted::Lost) => {
                    info!("lost the webhook endpoint's lease to another deliverer");
                    self.set_held(&mut held, None);
                }
                Err(Interrupted::Store(e)) => {
                    pause = self.backoff(store_failures).max(self.options.poll_interval);
                    store_failures = store_failures.saturating_add(1);
                    warn!(error = %e, retry_in_ms = pause.as_millis() as u64, "webhook delivery: the store failed");
                    continue;
                }
                Err(Interrupted::Stopped) => break,
            }
            store_failures = 0;
        }
        if let Some(claim) = held {
            if let Err(e) = self.store.release_webhook(&claim).await {
                warn!(error = %e, "could not release the webhook endpoint; it lapses with its lease");
            }
            self.metrics.held.with_label_values(&[&self.id]).set(0);
        }
        info!("webhook delivery stopped");
    }

    /// Takes or renews the endpoint's lease; `None` while another deliverer holds it.
    async fn claim(&self, held: &mut Option<WebhookClaim>) -> Result<Option<WebhookClaim>, Interrupted> {
        match self.store.claim_webhook(&self.id, &self.options.claimant, self.options.lease).await {
            Ok(Some(claim)) => {
                if held.as_ref().is_none_or(|h| h.epoch != claim.epoch) {
                    info!(epoch = claim.epoch, cursor = %claim.cursor, "holding the webhook endpoint");
                }
                self.set_held(held, Some(claim.clone()));
                Ok(Some(claim))
            }
            Ok(None) => {
                if held.is_some() {
                    info!("the webhook endpoint is another deliverer's now");
                }
                self.set_held(held, None);
                Ok(None)
            }
            Err(e) => Err(Interrupted::Store(e)),
        }
    }

    fn set_held(&self, held: &mut Option<WebhookClaim>, now: Option<WebhookClaim>) {
        self.metrics.held.with_label_values(&[&self.id]).set(i64::from(now.is_some()));
        *held = now;
    }

    /// One batch: reads it after the claim's cursor, delivers what the endpoint selects until
    /// a 2xx, and moves the cursor past it. The claim with its new cursor, and whether the
    /// batch was full.
    async fn step(&self, mut claim: WebhookClaim) -> Result<(WebhookClaim, bool), Interrupted> {
        let events = self.store.feed(claim.cursor, self.options.batch).await.map_err(Interrupted::Store)?;
        let Some(last) = events.last() else { return Ok((claim, false)) };
        let next = FeedCursor::parse(&last.cursor)
            .ok_or_else(|| Interrupted::Store(StoreError::Corrupt(format!("feed cursor {:?}", last.cursor))))?;
        let full = events.len() == self.options.batch as usize;
        let live = self.endpoint.borrow().clone();
        let selected: Vec<&FeedEvent> = events.iter().filter(|e| live.selects(e)).collect();
        if !selected.is_empty() {
            claim = self.deliver(claim, &selected).await?;
        }
        if !self.store.advance_webhook(&claim, next).await.map_err(Interrupted::Store)? {
            return Err(Interrupted::Lost);
        }
        debug!(events = selected.len(), passed = events.len() - selected.len(), cursor = %next, "webhook cursor moved");
        claim.cursor = next;
        Ok((claim, full))
    }

    /// POSTs `events` until the endpoint answers 2xx, renewing the lease before every
    /// attempt; the renewed claim.
    async fn deliver(&self, mut claim: WebhookClaim, events: &[&FeedEvent]) -> Result<WebhookClaim, Interrupted> {
        let body = serde_json::to_vec(&juegoland_api::platform::WebhookBody { webhook: &self.id, events, ping: false })
            .map_err(|e| Interrupted::Store(StoreError::Corrupt(format!("encode feed events: {e}"))))?;
        let body = Bytes::from(body);
        let mut failures = 0u32;
        loop {
            if failures > 0 {
                // The first attempt follows the claim the loop just took or renewed.
                claim = self.renew(&claim).await?;
            }
            // The endpoint as it is now: a change of URL or secrets applies from this attempt.
            let live = self.endpoint.borrow().clone();
            let outcome = tokio::select! {
                outcome = post(&self.client, &live, &body, self.options.timeout) => (outcome.0, outcome.2),
                () = self.stop.cancelled() => return Err(Interrupted::Stopped),
            };
            self.metrics.deliveries.with_label_values(&[&self.id, outcome.0.label()]).inc();
            if outcome.0 == Outcome::Delivered {
                self.metrics.events.with_label_values(&[&self.id]).inc_by(events.len() as u64);
                if failures > 0 {
                    info!(attempts = failures + 1, "webhook delivered after failures");
                }
                return Ok(claim);
            }
            let backoff = self.backoff(failures);
            failures = failures.saturating_add(1);
            warn!(
                outcome = outcome.0.label(),
                detail = %outcome.1,
                attempt = failures,
                retry_in_ms = backoff.as_millis() as u64,
                first_event = %events[0].id,
                "webhook delivery failed; the same events go again"
            );
            claim = self.wait_holding(claim, backoff).await?;
        }
    }

    /// The lease renewed; `Lost` when another deliverer has it.
    async fn renew(&self, claim: &WebhookClaim) -> Result<WebhookClaim, Interrupted> {
        match self.store.claim_webhook(&claim.endpoint, &claim.claimant, self.options.lease).await {
            Ok(Some(renewed)) if renewed.epoch == claim.epoch && renewed.cursor == claim.cursor => Ok(renewed),
            Ok(_) => Err(Interrupted::Lost),
            Err(e) => Err(Interrupted::Store(e)),
        }
    }

    /// Sleeps `pause`, renewing the lease every third of it; `Lost` when it went elsewhere.
    /// A store failure while renewing is only logged: the next attempt renews again.
    async fn wait_holding(&self, mut claim: WebhookClaim, pause: Duration) -> Result<WebhookClaim, Interrupted> {
        let slice = self.options.lease / 3;
        let mut left = pause;
        while !left.is_zero() {
            let nap = left.min(slice);
            self.sleep(nap).await.map_err(|()| Interrupted::Stopped)?;
            left -= nap;
            if !left.is_zero() {
                match self.renew(&claim).await {
                    Ok(renewed) => claim = renewed,
                    Err(Interrupted::Store(e)) => warn!(error = %e, "could not renew the webhook lease"),
                    Err(other) => return Err(other),
                }
            }
        }
        Ok(claim)
    }

    fn backoff(&self, failures: u32) -> Duration {
        backoff(&self.options, failures)
    }

    async fn sleep(&self, pause: Duration) -> Result<(), ()> {
        sleep(&self.stop, pause).await
    }
}

/// An error and its causes, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
