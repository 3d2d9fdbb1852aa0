//! An identity provider's public keys, read from its JWKS URL ([`JwksKeys`]): fetched at
//! start-up, read again every `refresh` (a provider publishes a new key before it signs with
//! it), and read again at once — at most every [`MIN_REFETCH`] — when a token names a key the
//! set does not hold (a rotation seen before the periodic read). A fetch that fails keeps
//! the keys already held and is logged; the next read tries again.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::{Algorithm, DecodingKey};
use juegoland_edge::KeySet;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// The least time between two reads of the set caused by unknown keys.
pub const MIN_REFETCH: Duration = Duration::from_secs(10);

/// The longest JWKS document read.
const DOCUMENT_LIMIT: usize = 256 * 1024;

/// How long one read may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// A JWKS read from a URL and kept up to date (see the module's doc).
pub struct JwksKeys {
    url: hyper::Uri,
    client: HttpClient,
    keys: parking_lot::RwLock<HashMap<String, (DecodingKey, Algorithm)>>,
    /// When the set was last read because of an unknown key; held while such a read runs, so
    /// that connections naming one new key wait for one read.
    last_refetch: tokio::sync::Mutex<Option<Instant>>,
}

/// Why the set could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("the JWKS URL {0:?} is not a valid http(s) URL")]
    Url(String),
    #[error("no answer from {url} within {FETCH_TIMEOUT:?}")]
    Timeout { url: String },
    #[error("fetch {url}: {source}")]
    Fetch {
        url: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    #[error("{url} answered {status}")]
    Status { url: String, status: hyper::StatusCode },
    #[error("read {url}: the document is over {DOCUMENT_LIMIT} bytes or broke off")]
    Body { url: String },
    #[error("{url} is not a JWKS document: {source}")]
    Document {
        url: String,
        #[source]
        source: serde_json::Error,
    },
}

impl JwksKeys {
    /// Reads the set at `url` (a failure is logged and the set starts empty: tokens are
    /// refused as signed by an unknown key until a read succeeds) and reads it again every
    /// `refresh` for as long as the returned value lives.
    pub async fn start(url: &str, refresh: Duration) -> Result<Arc<JwksKeys>, JwksError> {
        let uri: hyper::Uri = url.parse().map_err(|_| JwksError::Url(url.to_owned()))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(JwksError::Url(url.to_owned()));
        }
        let https =
            hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots().https_or_http().enable_http1().build();
        let keys = Arc::new(JwksKeys {
            url: uri,
            client: Client::builder(TokioExecutor::new()).build(https),
            keys: Default::default(),
            last_refetch: tokio::sync::Mutex::new(None),
        });
        if let Err(e) = keys.read().await {
            warn!(error = %e, "could not read the token keys (JWKS); tokens signed with them are refused until a read succeeds");
        }
        let weak = Arc::downgrade(&keys);
        tokio::spawn(refresh_every(weak, refresh));
        Ok(keys)
    }

    /// Reads the set and replaces the keys held; answers how many it holds.
    async fn read(&self) -> Result<usize, JwksError> {
        let url = self.url.to_string();
        let request = hyper::Request::get(self.url.clone())
            .header(hyper::header::ACCEPT, "application/json")
            .header(hyper::header::USER_AGENT, concat!("juegoland/", env!("CARGO_PKG_VERSION")))
            .body(Empty::new())
            .map_err(|_| JwksError::Url(url.clone()))?;
        let exchange = async {
            let answer =
                self.client.request(request).await.map_err(|source| JwksError::Fetch { url: url.clone(), source })?;
            let status = answer.status();
            let body = Limited::new(answer.into_body(), DOCUMENT_LIMIT).collect().await;
            let body = body.map_err(|_| JwksError::Body { url: url.clone() })?.to_bytes();
            if !status.is_success() {
                return Err(JwksError::Status { url: url.clone(), status });
            }
            Ok(body)
        };
        let body = tokio::time::timeout(FETCH_TIMEOUT, exchange)
            .await
            .map_err(|_| JwksError::Timeout { url: url.clone() })??;
        let set: jsonwebtoken::jwk::JwkSet =
            serde_json::from_slice(&body).map_err(|source| JwksError::Document { url: url.clone(), source })?;
        let keys: HashMap<_, _> =
            juegoland_edge::auth::jwk_keys(&set).into_iter().map(|(kid, key, alg)| (kid, (key, alg))).collect();
        let count = keys.len();
        let kids: Vec<&String> = keys.keys().collect();
        debug!(url = %url, ?kids, "token keys read");
        *self.keys.write() = keys;
        Ok(count)
    }
}

/// Reads the set every `period` while it is in use.
async fn refresh_every(keys: Weak<JwksKeys>, period: Duration) {
    let mut tick = tokio::time::interval_at(Instant::now() + period, period);
    loop {
        tick.tick().await;
        let Some(keys) = keys.upgrade() else { return };
        match keys.read().await {
            Ok(count) => info!(keys = count, "token keys read again"),
            Err(e) => warn!(error = %e, "could not read the token keys again; keeping the ones held"),
        }
    }
}

impl KeySet for JwksKeys {
    fn key(&self, kid: &str) -> Option<(DecodingKey, Algorithm)> {
        self.keys.read().get(kid).cloned()
    }

    fn refresh(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut last = self.last_refetch.lock().await;
            if last.is_some_and(|at| at.elapsed() < MIN_REFETCH) {
                return;
            }
            *last = Some(Instant::now());
            match self.read().await {
                Ok(count) => info!(keys = count, "token keys read again for a key not held"),
                Err(e) => warn!(error = %e, "could not read the token keys again"),
            }
        })
    }
}
