//! Webhooks over the platform feed: every lifecycle event (`GET /v1/feed`, migration 0014)
//! POSTed to each configured endpoint, at least once, in feed order per endpoint.
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
use juegoland_store::{Store, StoreError, WebhookClaim};
use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::signature::{SIGNATURE_HEADER, sign};
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
}

impl WebhookOptions {
    /// The defaults for `claimant`: 100 events a request, 10 s timeout, 30 s leases, a look
    /// every 500 ms, back-off from 500 ms to 60 s, the lag measured every 5 s.
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
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The most of an answer's body read (and thrown away, so the connection can be reused).
const ANSWER_LIMIT: usize = 64 * 1024;

/// Running webhook deliveries: one task per endpoint and one measuring the lag.
pub struct Webhooks {
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Webhooks {
    /// Starts delivering `endpoints` from `store`'s feed. Refuses options that
    /// [`WebhookOptions::check`] refuses.
    pub fn start(
        store: Arc<dyn Store>,
        endpoints: Vec<Endpoint>,
        options: WebhookOptions,
        metrics: WebhookMetrics,
    ) -> Result<Webhooks, crate::webhook_config::WebhookConfigError> {
        options.check()?;
        let https =
            hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots().https_or_http().enable_http1().build();
        let client: HttpClient = Client::builder(TokioExecutor::new()).build(https);
        let (stop, tasks) = (CancellationToken::new(), TaskTracker::new());
        let endpoints: Vec<Arc<Endpoint>> = endpoints.into_iter().map(Arc::new).collect();
        for endpoint in &endpoints {
            metrics.declare(&endpoint.id);
            let delivery = Delivery {
                store: store.clone(),
                endpoint: endpoint.clone(),
                client: client.clone(),
                options: options.clone(),
                metrics: metrics.clone(),
                stop: stop.clone(),
            };
            let span = info_span!("webhook", webhook = %endpoint.id, claimant = %options.claimant);
            tasks.spawn(delivery.run().instrument(span));
        }
        if !endpoints.is_empty() {
            let lag = Lag { store, endpoints, options, metrics, stop: stop.clone() };
            tasks.spawn(lag.run().instrument(info_span!("webhook.lag")));
        }
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

/// The delivery loop of one endpoint.
struct Delivery {
    store: Arc<dyn Store>,
    endpoint: Arc<Endpoint>,
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
            self.metrics.held.with_label_values(&[&self.endpoint.id]).set(0);
        }
        info!("webhook delivery stopped");
    }

    /// Takes or renews the endpoint's lease; `None` while another deliverer holds it.
    async fn claim(&self, held: &mut Option<WebhookClaim>) -> Result<Option<WebhookClaim>, Interrupted> {
        match self.store.claim_webhook(&self.endpoint.id, &self.options.claimant, self.options.lease).await {
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
        self.metrics.held.with_label_values(&[&self.endpoint.id]).set(i64::from(now.is_some()));
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
        let selected: Vec<&FeedEvent> = events
            .iter()
            .filter(|e| self.endpoint.kinds.as_ref().is_none_or(|kinds| kinds.contains(&e.kind)))
            .collect();
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
        let body = serde_json::to_vec(&juegoland_api::platform::WebhookBody { webhook: &self.endpoint.id, events })
            .map_err(|e| Interrupted::Store(StoreError::Corrupt(format!("encode feed events: {e}"))))?;
        let body = Bytes::from(body);
        let mut failures = 0u32;
        loop {
            if failures > 0 {
                // The first attempt follows the claim the loop just took or renewed.
                claim = self.renew(&claim).await?;
            }
            let outcome = tokio::select! {
                outcome = self.attempt(&body) => outcome,
                () = self.stop.cancelled() => return Err(Interrupted::Stopped),
            };
            self.metrics.deliveries.with_label_values(&[&self.endpoint.id, outcome.0.label()]).inc();
            if outcome.0 == Outcome::Delivered {
                self.metrics.events.with_label_values(&[&self.endpoint.id]).inc_by(events.len() as u64);
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

    /// One request: the outcome and what happened, for the log.
    async fn attempt(&self, body: &Bytes) -> (Outcome, String) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let request = hyper::Request::post(self.endpoint.url.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::USER_AGENT, concat!("juegoland-webhooks/", env!("CARGO_PKG_VERSION")))
            .header("juegoland-webhook", &self.endpoint.id)
            .header(SIGNATURE_HEADER, sign(&self.endpoint.secret, now, body))
            .body(Full::new(body.clone()));
        let request = match request {
            Ok(request) => request,
            Err(e) => return (Outcome::Unreachable, format!("build the request: {e}")),
        };
        let exchange = async {
            let answer = self.client.request(request).await?;
            let status = answer.status();
            // Read (a bounded part of) the answer so the connection can serve the next one.
            let _ = Limited::new(answer.into_body(), ANSWER_LIMIT).collect().await;
            Ok::<_, hyper_util::client::legacy::Error>(status)
        };
        match tokio::time::timeout(self.options.timeout, exchange).await {
            Err(_) => (Outcome::Timeout, format!("no answer within {:?}", self.options.timeout)),
            Ok(Err(e)) => (Outcome::Unreachable, error_chain(&e)),
            Ok(Ok(status)) if status.is_success() => (Outcome::Delivered, status.to_string()),
            Ok(Ok(status)) => (Outcome::Rejected, status.to_string()),
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

    /// The back-off after `failures` earlier failures: the base doubled each time up to the
    /// maximum, then drawn between its half and all of it.
    fn backoff(&self, failures: u32) -> Duration {
        let grown = self.options.backoff.saturating_mul(2u32.saturating_pow(failures.min(30)));
        let ceiling = grown.min(self.options.backoff_max);
        let mut bytes = [0u8; 4];
        let fraction = match getrandom::fill(&mut bytes) {
            Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
            Err(_) => 1.0,
        };
        ceiling.mul_f64(0.5 + 0.5 * fraction)
    }

    /// Sleeps `pause` unless asked to stop first (`Err`).
    async fn sleep(&self, pause: Duration) -> Result<(), ()> {
        if self.stop.is_cancelled() {
            return Err(());
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => Ok(()),
            () = self.stop.cancelled() => Err(()),
        }
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

/// Measures every endpoint's lag from the store: the age of the first feed event after its
/// cursor (every deliverer reads the same store, so every replica reports the same).
struct Lag {
    store: Arc<dyn Store>,
    endpoints: Vec<Arc<Endpoint>>,
    options: WebhookOptions,
    metrics: WebhookMetrics,
    stop: CancellationToken,
}

impl Lag {
    async fn run(self) {
        loop {
            for endpoint in &self.endpoints {
                match self.measure(&endpoint.id).await {
                    Ok(lag) => self.metrics.lag_seconds.with_label_values(&[&endpoint.id]).set(lag.as_secs_f64()),
                    Err(e) => warn!(webhook = %endpoint.id, error = %e, "could not measure the webhook lag"),
                }
            }
            tokio::select! {
                () = tokio::time::sleep(self.options.lag_every) => {}
                () = self.stop.cancelled() => return,
            }
        }
    }

    async fn measure(&self, endpoint: &str) -> Result<Duration, StoreError> {
        let cursor = self.store.webhook_cursor(endpoint).await?.map(|row| row.cursor).unwrap_or_default();
        let next = self.store.feed(cursor, 1).await?;
        let Some(event) = next.first() else { return Ok(Duration::ZERO) };
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let age_ms = i64::try_from(now_ms).unwrap_or(i64::MAX).saturating_sub(event.at_ms);
        Ok(Duration::from_millis(u64::try_from(age_ms).unwrap_or(0)))
    }
}
