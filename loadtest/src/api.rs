//! The platform HTTP API as the harness uses it: the catalog (contract tuples to accept),
//! match creation, and dev tokens; plus the client tokens the players connect with.
//!
//! HTTP/1.1 over hyper's connection API, one kept-alive connection per caller: a match slot
//! creates its next match on the connection it already has.

use std::time::Duration;

use anyhow::{Context, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use juegoland_protocol::ContractTuple;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use uuid::Uuid;

/// An HTTP API endpoint (`http://host:port`) and the platform token it may require.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub authority: String,
    pub platform_token: Option<String>,
}

impl Endpoint {
    pub fn parse(url: &str, platform_token: Option<String>) -> anyhow::Result<Self> {
        let authority = url
            .strip_prefix("http://")
            .with_context(|| format!("{url}: the API URL must start with http://"))?
            .trim_end_matches('/')
            .to_owned();
        if authority.is_empty() || authority.contains('/') {
            bail!("{url}: give the API as http://host:port");
        }
        Ok(Self { authority, platform_token })
    }
}

/// Why a call failed: the server's status and problem code, or the transport.
#[derive(Debug)]
pub enum ApiError {
    Status { status: u16, code: String },
    Transport(String),
}

impl ApiError {
    /// The key under which the harness counts this error.
    pub fn key(&self) -> String {
        match self {
            ApiError::Status { status, code } => format!("http {status} {code}"),
            ApiError::Transport(_) => "http transport".to_owned(),
        }
    }

    /// Whether trying again later may succeed.
    pub fn retryable(&self) -> bool {
        match self {
            ApiError::Status { status, .. } => *status >= 500 || *status == 429,
            ApiError::Transport(_) => true,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Status { status, code } => write!(f, "HTTP {status} {code}"),
            ApiError::Transport(e) => write!(f, "{e}"),
        }
    }
}

/// One caller's connection to the API, opened on first use and reopened after a failure.
pub struct Api {
    endpoint: Endpoint,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Api {
    pub fn new(endpoint: Endpoint) -> Self {
        Self { endpoint, sender: None }
    }

    async fn sender(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, ApiError> {
        let reusable = self.sender.as_ref().is_some_and(|s| !s.is_closed());
        if !reusable {
            let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&self.endpoint.authority))
                .await
                .map_err(|_| ApiError::Transport("connect timed out".into()))?
                .map_err(|e| ApiError::Transport(format!("connect {}: {e}", self.endpoint.authority)))?;
            stream.set_nodelay(true).map_err(|e| ApiError::Transport(e.to_string()))?;
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| ApiError::Transport(format!("handshake: {e}")))?;
            tokio::spawn(connection);
            self.sender = Some(sender);
        }
        Ok(self.sender.as_mut().expect("just opened"))
    }

    /// One request; the JSON body of a 2xx answer, or the error.
    pub async fn call(&mut self, method: &str, path: &str, body: Option<Value>) -> Result<Value, ApiError> {
        let result = self.call_once(method, path, body).await;
        if matches!(result, Err(ApiError::Transport(_))) {
            self.sender = None;
        }
        result
    }

    async fn call_once(&mut self, method: &str, path: &str, body: Option<Value>) -> Result<Value, ApiError> {
        let authority = self.endpoint.authority.clone();
        let token = self.endpoint.platform_token.clone();
        let sender = self.sender().await?;
        sender.ready().await.map_err(|e| ApiError::Transport(e.to_string()))?;
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = request.body(Full::new(Bytes::from(body))).map_err(|e| ApiError::Transport(e.to_string()))?;
        let response = tokio::time::timeout(Duration::from_secs(30), sender.send_request(request))
            .await
            .map_err(|_| ApiError::Transport("request timed out".into()))?
            .map_err(|e| ApiError::Transport(e.to_string()))?;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| ApiError::Transport(format!("read the body: {e}")))?
            .to_bytes();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            Ok(value)
        } else {
            let code = value["code"].as_str().unwrap_or("-").to_owned();
            Err(ApiError::Status { status, code })
        }
    }

    /// The contract tuples of every game the server runs.
    pub async fn catalog(&mut self) -> Result<Vec<ContractTuple>, ApiError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Entry {
            id: String,
            rules_version: String,
            view_schema_version: u32,
            event_schema_version: u32,
        }
        let value = self.call("GET", "/v1/games", None).await?;
        let entries: Vec<Entry> =
            serde_json::from_value(value).map_err(|e| ApiError::Transport(format!("the catalog: {e}")))?;
        Ok(entries
            .into_iter()
            .map(|e| ContractTuple {
                id: e.id,
                rules_version: e.rules_version,
                view_schema_version: e.view_schema_version,
                event_schema_version: e.event_schema_version,
            })
            .collect())
    }

    /// Creates a match of `game` between `principals` (seats p0, p1, …); answers its id and
    /// where its owner serves it without a hop (`clientUrl`), if it says.
    pub async fn create_match(
        &mut self,
        game: &str,
        principals: &[String],
        config: &Value,
    ) -> Result<(Uuid, Option<String>), ApiError> {
        let seats: serde_json::Map<String, Value> =
            principals.iter().enumerate().map(|(i, p)| (format!("p{i}"), json!(p))).collect();
        let body = json!({ "game": game, "seats": seats, "config": config });
        let value = self.call("POST", "/v1/matches", Some(body)).await?;
        let id = value["matchId"]
            .as_str()
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| ApiError::Transport(format!("no matchId in {value}")))?;
        Ok((id, value["clientUrl"].as_str().map(str::to_owned)))
    }
}

/// Where players' client tokens come from.
pub enum TokenSource {
    /// Signed here with the gateways' shared secret (HS256), as the platform would.
    Secret(Box<juegoland_edge::Tokens>),
    /// Asked of the all-in-one's dev endpoint (`POST /v1/dev/tokens`).
    Dev(Endpoint),
}

impl TokenSource {
    pub async fn token(&self, principal: &str) -> Result<String, ApiError> {
        match self {
            TokenSource::Secret(tokens) => tokens.issue(principal).map_err(|e| ApiError::Transport(e.to_string())),
            TokenSource::Dev(endpoint) => {
                let mut api = Api::new(endpoint.clone());
                let value = match api.call("POST", "/v1/dev/tokens", Some(json!({ "principal": principal }))).await {
                    // A server with a platform token mints no dev tokens: sign them here.
                    Err(ApiError::Status { status: 404, .. }) => {
                        return Err(ApiError::Transport(
                            "the server mints no dev tokens (it has a platform token): give the harness its \
                             --jwt-secret to sign players' tokens itself"
                                .to_owned(),
                        ));
                    }
                    other => other?,
                };
                value["token"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::Transport(format!("no token in {value}")))
            }
        }
    }
}
