//! The HTTP surface: the catalog, the platform's create/withdraw calls, dev tokens, the
//! WebSocket upgrade, the Socket.IO layer, the web client (`assets.rs`), metrics and health, and the public files
//! of published packages.
//!
//! Bodies are strict JSON (unknown fields and repeated keys rejected); every error is a JSON object
//! `{"code": …, "message": …, "field"?: …}` with a fitting status, never a stack trace: the
//! handlers' own refusals ([`Problem`]), an unknown path or method, and every rejection of
//! axum's extractors or the upgrade (rewritten by [`json_errors`]). `field` names the
//! offending part of the request (a JSON path such as `seats.p1`) where there is one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use juegoland_api::platform::{
    AgentGrant, AgentGrantRequest, Cancel, CreateMatch, CreateReplay, CreatedBody, DevTokenRequest, GrantedProfile,
    Problem as ProblemBody, RevisionBody, SeatSpec, SpectatorGrant, TokenBody, Withdraw,
};
use juegoland_api::{Created, MatchDirectory, MatchError, MatchQuery, Matches, WebhookAdmin};
use juegoland_bus::Bus;
use juegoland_core::{CreateOptions, GameChoice, LifecycleRequest, SeatHolder};
use juegoland_packages::public::{PublicError, public_file, public_lock, published_game_manifest, published_versions};
use juegoland_sdk::Handover;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::auth::Tokens;
use crate::gateway::{Gateway, GatewayConfig};
use crate::limits::{EdgeLimits, RETRY_AFTER_SECONDS, Refusal, RemoteAddr};
use crate::metrics::EdgeMetrics;

/// Everything the HTTP surface needs.
#[derive(Clone)]
pub struct EdgeState {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    matches: Arc<dyn Matches>,
    tokens: Tokens,
    /// The WebSocket and Socket.IO gateway; `None` where this process serves only the
    /// platform API (a router).
    gateway: Option<Gateway>,
    registry: prometheus::Registry,
    /// Whether the dev-only routes (token minting) are served.
    dev: bool,
    /// Whether `/metrics` is served here (else on a listener of its own: [`ops_router`]).
    metrics: bool,
    platform_api: bool,
    /// The bearer token the platform back end must present on platform calls; `None` leaves
    /// them open (dev profile only).
    platform_token: Option<String>,
    /// The registry of published packages whose public files are served.
    packages: Option<PathBuf>,
    /// Where `GET /v1/matches` lists matches; `None` serves no listing.
    directory: Option<Arc<dyn MatchDirectory>>,
    /// The webhook endpoints `/v1/webhooks` manages; `None` serves no such route.
    pub(crate) webhooks: Option<Arc<dyn WebhookAdmin>>,
    /// The host names answered (`EdgeOptions::allowed_hosts`).
    allowed_hosts: Option<Arc<[String]>>,
    /// The limits of the gateway's settings (the server's head timeout applies without a
    /// gateway too).
    limits: EdgeLimits,
    /// `juegoland_edge_refused_total`.
    refused: prometheus::IntCounterVec,
}

/// Options of the edge.
#[derive(Clone, Default)]
pub struct EdgeOptions {
    /// Serve `POST /v1/dev/tokens`, which mints a token for any principal: only the
    /// all-in-one's `dev` profile, and never together with a platform token (a server that
    /// guards its platform API hands out no tokens: the route is then not served at all).
    pub dev: bool,
    /// Serve `/metrics` on this listener (behind the platform token when one is set). Off
    /// where the process serves metrics on a listener of its own (`--metrics-http`).
    pub metrics: bool,
    /// Whether the platform's calls (create, withdraw) are served here: by the all-in-one
    /// and the routers, not by gateways.
    pub platform_api: bool,
    pub platform_token: Option<String>,
    pub gateway: GatewayConfig,
    /// Serve the public files of the packages published in this registry directory
    /// (`GET /v1/packages/{id}/{version}` and `…/{path}`); `None` serves none.
    pub packages: Option<PathBuf>,
    /// Where the platform API lists matches (`GET /v1/matches`, with `platform_api`): the
    /// store; `None` serves no listing.
    pub directory: Option<Arc<dyn MatchDirectory>>,
    /// The webhook endpoints the platform API manages (`/v1/webhooks`, with `platform_api`);
    /// `None` serves no such route.
    pub webhooks: Option<Arc<dyn WebhookAdmin>>,
    /// The host names this edge answers (`Host`, without its port; `.example.com` also
    /// answers every name under it); `None` answers any. A developer's server on loopback
    /// answers only its own names, so a web page whose name an attacker points at 127.0.0.1
    /// (DNS rebinding) cannot drive it.
    pub allowed_hosts: Option<Vec<String>>,
}

impl EdgeState {
    /// The edge over `matches`; with a `bus` it also serves the WebSocket gateway.
    pub fn new(
        matches: Arc<dyn Matches>,
        bus: Option<Arc<dyn Bus>>,
        tokens: Tokens,
        registry: prometheus::Registry,
        options: EdgeOptions,
    ) -> prometheus::Result<Self> {
        let metrics = EdgeMetrics::new(&registry)?;
        let (limits, refused) = (options.gateway.limits.clone(), metrics.refused.clone());
        let gateway = bus.map(|bus| Gateway {
            matches: matches.clone(),
            bus,
            metrics,
            config: options.gateway,
            connections: Default::default(),
        });
        Ok(Self {
            inner: Arc::new(Inner {
                matches,
                tokens,
                gateway,
                registry,
                dev: options.dev && options.platform_token.is_none(),
                metrics: options.metrics,
                platform_api: options.platform_api,
                platform_token: options.platform_token,
                packages: options.packages,
                directory: options.directory,
                webhooks: options.webhooks,
                allowed_hosts: options
                    .allowed_hosts
                    .map(|hosts| hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect()),
                limits,
                refused,
            }),
        })
    }

    /// The edge's limits.
    pub(crate) fn limits(&self) -> &EdgeLimits {
        &self.inner.limits
    }

    /// The counter of clients refused or closed by a limit.
    pub(crate) fn refused(&self) -> prometheus::IntCounterVec {
        self.inner.refused.clone()
    }
}

/// The router of the whole edge.
pub fn router(state: EdgeState) -> Router {
    let mut r = Router::new()
        .route("/", get(client_file))
        .route("/assets/{*path}", get(client_file))
        .route("/games/{*path}", get(client_file))
        .route("/v1/games", get(games))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }));
    if state.inner.metrics {
        r = r.route("/metrics", get(metrics));
    }
    if state.inner.platform_api {
        r = r
            .route("/v1/matches", post(create_match).get(list_matches))
            .route("/v1/matches/{id}", get(describe))
            .route("/v1/feed", get(feed))
            .route("/v1/matches/{id}/withdrawals", post(withdraw))
            .route("/v1/matches/{id}/spectators", post(grant_spectator))
            .route("/v1/matches/{id}/replays", post(create_replay))
            .route("/v1/matches/{id}/agents", post(grant_agent))
            .route("/v1/matches/{id}/cancellation", post(cancel));
        if state.inner.webhooks.is_some() {
            r = crate::webhook_routes::routes(r);
        }
    }
    if let Some(gateway) = &state.inner.gateway {
        // The MCP server for AI agents: every request carries an agent's grant.
        let auth = axum::middleware::from_fn_with_state(state.inner.tokens.clone(), crate::mcp::authenticate);
        let mcp = tower::ServiceBuilder::new().layer(auth).service(crate::mcp::service(gateway.clone()));
        r = r.route("/v1/ws", get(ws)).nest_service("/v1/mcp", mcp);
    }
    if state.inner.dev {
        r = r.route("/v1/dev/tokens", post(dev_token));
    }
    if state.inner.packages.is_some() {
        r = r
            .route("/v1/packages/{id}", get(package_versions))
            .route("/v1/packages/{id}/{version}", get(package_lock))
            .route("/v1/packages/{id}/{version}/{*path}", get(package_file));
    }
    // The same protocol over Socket.IO, at socketioxide's default path `/socket.io`.
    let socket_io = state.inner.gateway.clone().map(|gateway| {
        let (limits, refused) = (state.inner.limits.clone(), state.inner.refused.clone());
        (crate::sio::layer(gateway, state.inner.tokens.clone()), limits, refused)
    });
    let allowed_hosts = state.inner.allowed_hosts.clone();
    let r = r
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .with_state(state)
        .layer(axum::extract::DefaultBodyLimit::max(crate::limits::MAX_JSON_BODY))
        .layer(axum::middleware::map_response(json_errors));
    let r = match socket_io {
        Some((layer, limits, refused)) => {
            // Outside the Socket.IO layer: a new session over its address's rate is never
            // allocated.
            let sessions = crate::limits::NewSessions::default();
            r.layer(layer).layer(axum::middleware::from_fn(move |request, next| {
                session_gate(sessions.clone(), limits.clone(), refused.clone(), request, next)
            }))
        }
        None => r,
    };
    // Outermost: a request for another host name reaches nothing, Socket.IO included.
    match allowed_hosts {
        Some(hosts) => {
            r.layer(axum::middleware::from_fn(move |request, next| host_check(hosts.clone(), request, next)))
        }
        None => r,
    }
}

/// Answers `429 RATE_LIMITED` (with `Retry-After`) to a Socket.IO handshake — a request to
/// `/socket.io/` naming no session (`sid`) — beyond its remote address's allowance of new
/// sessions; passes everything else.
async fn session_gate(
    sessions: crate::limits::NewSessions,
    limits: EdgeLimits,
    refused: prometheus::IntCounterVec,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let handshake = request.uri().path().starts_with("/socket.io")
        && !request.uri().query().unwrap_or("").split('&').any(|pair| pair.starts_with("sid="));
    let address = request.extensions().get::<RemoteAddr>().map(|r| r.0);
    if let (true, Some(address)) = (handshake, address)
        && !sessions.admit(&limits, address)
    {
        Refusal::SessionRate.count(&refused);
        let p = problem(
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            "too many new sessions from this address; retry later",
        );
        return ([(header::RETRY_AFTER, RETRY_AFTER_SECONDS.to_string())], p).into_response();
    }
    next.run(request).await
}

/// Answers `421 MISDIRECTED_REQUEST` to a request whose host name (its URI's authority, else
/// its one `Host` header: two are no name) is not one of `hosts`.
async fn host_check(hosts: Arc<[String]>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let named = request.uri().host().map(str::to_owned).or_else(|| {
        let mut given = request.headers().get_all(header::HOST).iter();
        let (host, None) = (given.next()?, given.next()) else { return None };
        Some(host.to_str().ok()?.parse::<axum::http::uri::Authority>().ok()?.host().to_owned())
    });
    let allowed = named.as_deref().is_some_and(|name| host_allowed(&hosts, name));
    if allowed {
        return next.run(request).await;
    }
    let message = format!(
        "this server answers the host names {} only; start it with --allowed-host NAME to answer another",
        hosts.join(", ")
    );
    problem(StatusCode::MISDIRECTED_REQUEST, "MISDIRECTED_REQUEST", message).at("Host").into_response()
}

/// Whether `name` (a host, without port; an IPv6 address in brackets) is one of `hosts`, or
/// under one that starts with a dot.
fn host_allowed(hosts: &[String], name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    hosts.iter().any(|h| *h == name || (h.starts_with('.') && (name.ends_with(h.as_str()) || name == h[1..])))
}

/// An HTTP error: a status and the JSON body `{"code", "message", "field"?}`, the one shape
/// of every error this surface answers.
#[derive(Debug)]
pub(crate) struct Problem {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The offending part of the request, where there is one.
    field: Option<String>,
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = ProblemBody { code: self.code.to_owned(), message: self.message, field: self.field };
        (self.status, Json(body)).into_response()
    }
}

pub(crate) fn problem(status: StatusCode, code: &'static str, message: impl Into<String>) -> Problem {
    Problem { status, code, message: message.into(), field: None }
}

impl Problem {
    pub(crate) fn at(self, field: impl Into<String>) -> Problem {
        Problem { field: Some(field.into()), ..self }
    }
}

pub(crate) fn strict<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Problem> {
    // serde's messages name the offending field or position, never stored state.
    let invalid = |message: String| problem(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message);
    if let Some(path) = crate::duplicate_keys::duplicate_key(body) {
        return Err(invalid(format!("{path}: the key appears twice (a JSON object names each key once)")).at(path));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| match e.path().to_string() {
        // Not valid JSON at all (no field to name: the message says where, line and column).
        path if path == "." || path == "?" => invalid(e.inner().to_string()),
        path => invalid(format!("{path}: {}", e.inner())).at(path),
    })?;
    de.end().map_err(|e| invalid(e.to_string()))?;
    Ok(value)
}

/// A query string decoded strictly: an unknown parameter or a value of the wrong type is
/// `400 INVALID_REQUEST` naming the parameter (`limit: invalid digit found in string`).
fn strict_query<T: for<'de> Deserialize<'de>>(uri: &Uri) -> Result<T, Problem> {
    let query = uri.query().unwrap_or("");
    let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        // serde names an unknown parameter in its message; take its name as the field.
        let unknown = message.strip_prefix("unknown field `").and_then(|rest| rest.split('`').next());
        match unknown {
            Some(name) => problem(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message.clone()).at(name),
            None if path == "." || path == "?" => problem(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message),
            None => problem(StatusCode::BAD_REQUEST, "INVALID_REQUEST", format!("{path}: {message}")).at(path),
        }
    })
}

fn form_urlencoded_parse(query: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(query.as_bytes())
}

/// Runs a public-package read off the async threads (it reads and hashes files) and maps
/// its refusal: anything not public is one 404, a corrupt publication a logged 500.
async fn public_package<T: Send + 'static>(
    state: &EdgeState,
    what: String,
    read: impl FnOnce(&std::path::Path) -> Result<T, PublicError> + Send + 'static,
) -> Result<T, Problem> {
    let registry = state.inner.packages.clone().expect("package routes exist only with a registry");
    let internal = || problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error");
    match tokio::task::spawn_blocking(move || read(&registry)).await.map_err(|_| internal())? {
        Ok(value) => Ok(value),
        Err(PublicError::NotFound) => Err(problem(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no public {what}"))),
        Err(e @ PublicError::Corrupt(_)) => {
            tracing::error!(error = %e, "serve a published package");
            Err(internal())
        }
    }
}

/// `GET /v1/packages/{id}`: the package's published versions, newest first, each with its
/// kind, its rules version (a game's) and the lock digest a match created on it pins.
async fn package_versions(State(state): State<EdgeState>, Path(id): Path<String>) -> Result<Response, Problem> {
    let what = format!("package {id}");
    let versions = public_package(&state, what, {
        let id = id.clone();
        move |registry| published_versions(registry, &id)
    })
    .await?;
    if versions.is_empty() {
        return Err(problem(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no public package {id}")));
    }
    // A new publication changes the list: clients revalidate.
    Ok(([(header::CACHE_CONTROL, "no-cache")], Json(json!({ "id": id, "versions": versions }))).into_response())
}

/// `GET /v1/packages/{id}/{version}`: the package's lock with only its public files.
async fn package_lock(
    State(state): State<EdgeState>,
    Path((id, version)): Path<(String, String)>,
) -> Result<Response, Problem> {
    let what = format!("package {id}@{version}");
    let lock = public_package(&state, what, move |registry| public_lock(registry, &id, &version)).await?;
    Ok(([(header::CACHE_CONTROL, IMMUTABLE)], Json(lock)).into_response())
}

/// `GET /v1/packages/{id}/{version}/{path}`: one public file, as its lock lists it.
async fn package_file(
    State(state): State<EdgeState>,
    Path((id, version, path)): Path<(String, String, String)>,
) -> Result<Response, Problem> {
    let what = format!("file {path} in {id}@{version}");
    let file = public_package(&state, what, move |registry| public_file(registry, &id, &version, &path)).await?;
    let headers = [
        (header::CONTENT_TYPE, file.media_type),
        (header::ETAG, format!("\"{}\"", file.sha256)),
        (header::CACHE_CONTROL, IMMUTABLE.to_owned()),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
    ];
    Ok((headers, file.bytes).into_response())
}

/// A published version never changes, so its files may be cached for good.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// 404 for a path this process does not serve.
async fn no_route(method: Method, uri: Uri) -> Problem {
    problem(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no route for {method} {}", uri.path()))
}

/// 405 for a served path with another method (axum adds the `Allow` header).
async fn no_method(method: Method, uri: Uri) -> Problem {
    problem(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", format!("{method} is not allowed on {}", uri.path()))
}

/// Rewrites any error response that is not already JSON (the rejections of axum's
/// extractors: a body over the limit, a malformed path segment, a plain GET on the
/// WebSocket route…) into the [`Problem`] shape, keeping its status and headers and its
/// text as the message.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Rejection texts are short; a body that is not is not read.
    let text = axum::body::to_bytes(body, 4096).await.map(|b| String::from_utf8_lossy(&b).trim().to_owned());
    let message = match text {
        Ok(text) if !text.is_empty() => text,
        _ => status.canonical_reason().unwrap_or("error").to_lowercase(),
    };
    let code = match status {
        StatusCode::BAD_REQUEST => "INVALID_REQUEST",
        StatusCode::UNAUTHORIZED => "UNAUTHENTICATED",
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::METHOD_NOT_ALLOWED => "METHOD_NOT_ALLOWED",
        StatusCode::PAYLOAD_TOO_LARGE => "PAYLOAD_TOO_LARGE",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "UNSUPPORTED_MEDIA_TYPE",
        StatusCode::UPGRADE_REQUIRED => "UPGRADE_REQUIRED",
        StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
        s if s.is_server_error() => "INTERNAL",
        _ => "INVALID_REQUEST",
    };
    let body = Json(ProblemBody { code: code.to_owned(), message, field: None }).into_response();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    Response::from_parts(parts, body.into_body())
}

/// A failure of the match API as the platform API tells it: the status of
/// [`MatchError::wire`], its code, and the field a refusal is about.
fn match_problem(e: MatchError, match_id: Option<Uuid>) -> Problem {
    let status = StatusCode::from_u16(e.wire().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let code = e.code();
    match e {
        MatchError::Refused { refusal, message } => {
            let field = refusal.field().map(|field| specific_field(field, &message));
            let p = problem(status, refusal.code(), message);
            match field {
                Some(field) => p.at(field),
                None => p,
            }
        }
        MatchError::NotFound => problem(status, code, "no such match"),
        MatchError::NotOwner(_) | MatchError::Unavailable(_) | MatchError::RateLimited(_) => {
            problem(status, code, "retry later")
        }
        MatchError::Invalid(m) => problem(status, code, m),
        MatchError::Internal(m) => {
            tracing::error!(match_id = ?match_id, error = %m, "match operation failed");
            problem(status, code, "internal error")
        }
    }
}

/// The part of `field` a refusal's message names, where it starts with its path
/// (`config.rows: 12 is …` → `config.rows`, `seats.p1: …` → `seats.p1`), else `field`.
fn specific_field(field: &str, message: &str) -> String {
    match message.split_once(": ") {
        Some((path, _))
            if path.strip_prefix(field).is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
                && !path.contains(' ') =>
        {
            path.to_owned()
        }
        _ => field.to_owned(),
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ")
}

/// A platform call's credential, checked before anything else of the request is read: the
/// platform token as a bearer (`Authorization: Bearer <token>`) where one is set; anyone
/// otherwise (the dev profile). Refused: `401 UNAUTHENTICATED`.
pub(crate) struct Platform;

impl FromRequestParts<EdgeState> for Platform {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &EdgeState) -> Result<Self, Problem> {
        platform_authorized(state, &parts.headers).map(|()| Platform)
    }
}

fn platform_authorized(state: &EdgeState, headers: &HeaderMap) -> Result<(), Problem> {
    match &state.inner.platform_token {
        None => Ok(()),
        Some(expected) if bearer(headers).is_some_and(|b| same_secret(b, expected)) => Ok(()),
        Some(_) => Err(problem(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "this call needs the platform token (Authorization: Bearer <platform token>)",
        )),
    }
}

/// Whether `given` is `expected`, in a time that does not depend on where they differ.
pub fn same_secret(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// A request body the JSON routes accept: one declared `application/json` (parameters such
/// as `charset` allowed), or an empty one without a content type (a POST with no body). Any
/// other content type — a form, `text/plain`, a body without one — is `415
/// UNSUPPORTED_MEDIA_TYPE`, before the body is read: a cross-site form or a simple
/// `fetch` can never call the platform API.
pub(crate) struct JsonBody(pub(crate) Bytes);

impl FromRequest<EdgeState> for JsonBody {
    type Rejection = Response;

    async fn from_request(request: axum::extract::Request, state: &EdgeState) -> Result<Self, Response> {
        let declared = request.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().map(is_json_media_type));
        if matches!(declared, Some(Ok(false) | Err(_))) {
            return Err(unsupported_media_type().into_response());
        }
        // The body within its own time (after the head's), so a client trickling a large one
        // cannot hold the server's memory and a connection for ever.
        let read = Bytes::from_request(request, state);
        let body = match tokio::time::timeout(state.limits().body_timeout, read).await {
            Ok(body) => body.map_err(IntoResponse::into_response)?,
            Err(_) => {
                crate::limits::Refusal::BodyTimeout.count(&state.inner.refused);
                let message = "the request's body did not arrive in time";
                return Err(problem(StatusCode::REQUEST_TIMEOUT, "REQUEST_TIMEOUT", message).into_response());
            }
        };
        if declared.is_none() && !body.is_empty() {
            return Err(unsupported_media_type().into_response());
        }
        Ok(JsonBody(body))
    }
}

/// Whether a `Content-Type` value is JSON's media type (`application/json`, any case, any
/// parameters).
fn is_json_media_type(value: &str) -> bool {
    value.split(';').next().is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

fn unsupported_media_type() -> Problem {
    let message = "the body must be JSON, sent with Content-Type: application/json";
    problem(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", message).at("Content-Type")
}

/// The web client's embedded files (`assets.rs`): `/`, `/assets/…`, `/games/…`.
async fn client_file(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    match crate::assets::serve(uri.path(), &headers) {
        Some(response) => response,
        None => no_route(method, uri).await.into_response(),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CatalogEntry<'a> {
    id: &'a str,
    version: &'a str,
    rules_version: &'a str,
    /// What a match created now pins: the module's digest.
    rules_digest: &'a str,
    view_schema_version: u32,
    event_schema_version: u32,
    min_seats: u32,
    max_seats: u32,
    bots: &'a [String],
    /// The seats AI agents may play (profiles, modes, difficulties, limits, instructions);
    /// `null` when the game declares none.
    agents: Option<&'a juegoland_sdk::VirtualPlayers>,
    /// Whether the game defines a spectator projection (so the platform may grant spectators,
    /// `POST /v1/matches/{id}/spectators`).
    spectators: bool,
    /// Who plays a seat whose human is away, unless a creation says otherwise (`handover`).
    handover: Handover,
    actions: Vec<&'a str>,
    /// The JSON Schema a creation's `config` must match.
    config_schema: &'a Value,
    /// What an empty `config` means (`null` when the game requires some of it).
    default_config: Value,
    /// The game's name by language (`game.title` of the newest package published for these
    /// rules), and that package's version; `null` and `null` when none is published here.
    names: Option<BTreeMap<String, String>>,
    package_version: Option<String>,
}

/// `GET /v1/games`: every registered rules version, with what the platform needs to offer it
/// (seats, bots, the config's schema and defaults, the published names).
async fn games(State(state): State<EdgeState>) -> Result<Response, Problem> {
    let registry = state.inner.matches.registry().clone();
    let packages = state.inner.packages.clone();
    // Reading the registry directory is file IO: off the async threads.
    let published = tokio::task::spawn_blocking(move || {
        registry
            .games()
            .map(|g| {
                let d = g.descriptor();
                let newest = packages.as_deref().and_then(|dir| newest_title(dir, &d.id, &d.rules_version));
                ((d.id.clone(), d.rules_version.clone()), newest)
            })
            .collect::<BTreeMap<_, _>>()
    })
    .await
    .map_err(|_| problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error"))?;
    let registry = state.inner.matches.registry();
    let entries: Vec<CatalogEntry<'_>> = registry
        .games()
        .map(|g| {
            let d = g.descriptor();
            let (names, package_version) = match published.get(&(d.id.clone(), d.rules_version.clone())) {
                Some(Some((version, names))) => (Some(names.clone()), Some(version.clone())),
                _ => (None, None),
            };
            CatalogEntry {
                id: &d.id,
                version: &d.version,
                rules_version: &d.rules_version,
                rules_digest: &g.digest,
                view_schema_version: d.view_schema_version,
                event_schema_version: d.event_schema_version,
                min_seats: d.min_seats,
                max_seats: d.max_seats,
                bots: &d.bots,
                agents: d.agents.as_ref(),
                spectators: g.game.spectators(),
                handover: g.game.handover(),
                actions: d.actions.iter().map(|a| a.action_type.as_str()).collect(),
                config_schema: &g.game.schemas().config,
                default_config: g.game.decode_config(&json!({})).unwrap_or(Value::Null),
                names,
                package_version,
            }
        })
        .collect();
    Ok(Json(entries).into_response())
}

/// A published package version and its game's title by language.
type Titled = (String, BTreeMap<String, String>);

/// The newest package of `id` published for `rules_version` in `registry`: its version and
/// its `game.title` by language. A registry that cannot be read names nothing (logged).
fn newest_title(registry: &std::path::Path, id: &str, rules_version: &str) -> Option<Titled> {
    let read = || -> Result<Option<Titled>, PublicError> {
        let versions = published_versions(registry, id)?;
        let Some(newest) = versions.into_iter().find(|v| v.rules_version.as_deref() == Some(rules_version)) else {
            return Ok(None);
        };
        let manifest = published_game_manifest(registry, id, &newest.version)?;
        let names = manifest
            .translations
            .iter()
            .filter_map(|(language, texts)| Some((language.clone(), texts.get("game.title")?.clone())))
            .collect();
        Ok(Some((newest.version, names)))
    };
    match read() {
        Ok(found) => found,
        Err(PublicError::NotFound) => None,
        Err(e) => {
            tracing::error!(error = %e, game = id, "read the published package for the catalog");
            None
        }
    }
}

async fn create_match(
    State(state): State<EdgeState>,
    _: Platform,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    let req: CreateMatch = strict(&body)?;
    let game = GameChoice { id: req.game, rules_version: req.rules_version, package_version: req.package_version };
    let seats = req
        .seats
        .into_iter()
        .map(|(seat, spec)| {
            let holder = match spec {
                SeatSpec::Principal(p) => SeatHolder::Principal(p),
                SeatSpec::Bot { bot } => SeatHolder::Bot(bot),
                SeatSpec::Agent { agent } => SeatHolder::Agent(agent),
            };
            (seat, holder)
        })
        .collect();
    let created = state
        .inner
        .matches
        .create_pinned(game, seats, &req.config, CreateOptions { handover: req.handover, expiry: req.expiry })
        .await
        .map_err(|e| match_problem(e, None))?;
    Ok((StatusCode::CREATED, Json(created_body(created))).into_response())
}

/// The answer to a creation: the match's id and what it pinned — its rules module's digest
/// and, when the game's package is published in the node's registry, that package's lock
/// digest (`package`, else null) — and, when its owner node serves clients itself, where
/// (`clientUrl`, as in `GET /v1/matches/{id}`).
fn created_body(created: Created) -> CreatedBody {
    CreatedBody {
        match_id: created.match_id,
        revision: 0,
        game: created.game,
        rules_digest: created.rules_digest,
        package: created.package,
        client_url: created.client_url,
        replay_of: None,
    }
}

/// `POST /v1/matches/{id}/replays`: a NEW match that plays the stored match `{id}`'s
/// decisions back at `speedPercent` of their pace, with that match's randomness, so dealt and
/// rolled games replay too ("watch this match again"). Its seats are played by the replay
/// script; spectators follow it like any match (`POST /v1/matches/{new}/spectators`).
async fn create_replay(
    State(state): State<EdgeState>,
    _: Platform,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    let source = match_id(&id)?;
    let req: CreateReplay = if body.is_empty() { CreateReplay { speed_percent: 100 } } else { strict(&body)? };
    let created = state
        .inner
        .matches
        .create_replay(source, req.speed_percent)
        .await
        .map_err(|e| match_problem(e, Some(source)))?;
    let replay_of = Some(juegoland_core::ReplayOf { source, speed_percent: req.speed_percent });
    Ok((StatusCode::CREATED, Json(CreatedBody { replay_of, ..created_body(created) })).into_response())
}

/// `GET /v1/matches/{id}`: the match as the platform reads it without a seat — status,
/// seats and their controllers, revision, result, pinned versions; never its position.
async fn describe(State(state): State<EdgeState>, _: Platform, Path(id): Path<String>) -> Result<Response, Problem> {
    let match_id = match_id(&id)?;
    let summary = state.inner.matches.describe(match_id).await.map_err(|e| match_problem(e, Some(match_id)))?;
    Ok(Json(summary).into_response())
}

/// The query of `GET /v1/matches`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    principal: Option<String>,
    game: Option<String>,
    status: Option<String>,
    after: Option<String>,
    limit: Option<u32>,
}

/// `GET /v1/matches?principal=&game=&status=active|finished&after=&limit=`: the matches that
/// fit, newest first, `limit` (1..=100, default 20) a page, and `next`, the `after` of the
/// following page while a page is full.
async fn list_matches(State(state): State<EdgeState>, _: Platform, uri: Uri) -> Result<Response, Problem> {
    let Some(directory) = state.inner.directory.clone() else {
        return Err(problem(StatusCode::NOT_FOUND, "NOT_FOUND", "this process lists no matches"));
    };
    let q: ListQuery = strict_query(&uri)?;
    let query = MatchQuery::parse(q.principal, q.game, q.status.as_deref(), q.after.as_deref(), q.limit)
        .map_err(invalid_field)?;
    let page = directory.list(&query).await.map_err(|e| match_problem(e, None))?;
    Ok(Json(page).into_response())
}

/// The query of `GET /v1/feed`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedQuery {
    after: Option<String>,
    limit: Option<u32>,
}

/// `GET /v1/feed?after=&limit=`: the platform's durable feed of match lifecycle events
/// (created, seatChanged, finished, cancelled), oldest first, `limit` (1..=100, default 100) a
/// page; `next` is where to resume. At least once: an event keeps its `id` on every delivery.
async fn feed(State(state): State<EdgeState>, _: Platform, uri: Uri) -> Result<Response, Problem> {
    let Some(directory) = state.inner.directory.clone() else {
        return Err(problem(StatusCode::NOT_FOUND, "NOT_FOUND", "this process serves no feed"));
    };
    let q: FeedQuery = strict_query(&uri)?;
    let (after, limit) = juegoland_api::feed_query(q.after.as_deref(), q.limit).map_err(invalid_field)?;
    let page = directory.feed(after, limit).await.map_err(|e| match_problem(e, None))?;
    Ok(Json(page).into_response())
}

/// A query field that does not parse: `400 INVALID_REQUEST` naming it.
fn invalid_field(e: juegoland_api::InvalidField) -> Problem {
    problem(StatusCode::BAD_REQUEST, "INVALID_REQUEST", e.message).at(e.field)
}

/// A match id in a path; anything but a UUID is no match.
fn match_id(id: &str) -> Result<Uuid, Problem> {
    Uuid::parse_str(id).map_err(|_| problem(StatusCode::NOT_FOUND, "MATCH_NOT_FOUND", "no such match"))
}

/// `POST /v1/matches/{id}/withdrawals` `{seat}`: withdraws a seat.
async fn withdraw(
    state: State<EdgeState>,
    _: Platform,
    id: Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    lifecycle(state, id, &body, |req: Withdraw| LifecycleRequest::Withdraw { seat: req.seat }).await
}

/// `POST /v1/matches/{id}/cancellation` `{reasonCode}`: cancels the match (no winners).
async fn cancel(
    state: State<EdgeState>,
    _: Platform,
    id: Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    lifecycle(state, id, &body, |req: Cancel| LifecycleRequest::Cancel { reason_code: req.reason_code }).await
}

/// A platform lifecycle operation with its JSON body `B` (the caller checked the platform
/// token); answers `{revision}` (the revision it produced).
async fn lifecycle<B: for<'de> Deserialize<'de>>(
    State(state): State<EdgeState>,
    Path(id): Path<String>,
    body: &[u8],
    request: impl FnOnce(B) -> LifecycleRequest,
) -> Result<Response, Problem> {
    let match_id = match_id(&id)?;
    let request = request(strict(body)?);
    let revision =
        state.inner.matches.lifecycle(match_id, request).await.map_err(|e| match_problem(e, Some(match_id)))?;
    Ok(Json(RevisionBody { revision }).into_response())
}

/// `POST /v1/matches/{id}/spectators` (platform-authorized, body `{}` or none): the
/// platform's grant of a spectator seat-less view of ONE match. Answers `201`
/// `{"matchId", "token", "seat": null}`: a token whose `spectate` claim names the match
/// (`auth.rs`), to connect with over WebSocket or Socket.IO and `game.sync` that match as a
/// spectator. Refused with `409 SPECTATORS_NOT_ALLOWED` when the match's game defines no
/// spectator projection, `404 MATCH_NOT_FOUND` for no such match, and `501
/// TOKENS_NOT_MINTED_HERE` where this process only verifies tokens (a public key): there the
/// platform's identity service mints the same claim itself.
async fn grant_spectator(
    State(state): State<EdgeState>,
    _: Platform,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Grant {}
    let match_id = match_id(&id)?;
    if !body.is_empty() {
        let Grant {} = strict(&body)?;
    }
    if !state.inner.tokens.can_issue() {
        let message = "this process only verifies tokens: mint the grant with a `spectate` claim naming the match";
        return Err(problem(StatusCode::NOT_IMPLEMENTED, "TOKENS_NOT_MINTED_HERE", message));
    }
    let summary = state.inner.matches.describe(match_id).await.map_err(|e| match_problem(e, Some(match_id)))?;
    let spectators = state.inner.matches.registry().get(&summary.game).is_some_and(|g| g.game.spectators());
    if !spectators {
        let message = format!("{} defines no spectator projection", summary.game.id);
        return Err(problem(StatusCode::CONFLICT, "SPECTATORS_NOT_ALLOWED", message));
    }
    let token = state
        .inner
        .tokens
        .issue_spectator(match_id)
        .map_err(|_| problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error"))?;
    Ok((StatusCode::CREATED, Json(SpectatorGrant { match_id, token, seat: None })).into_response())
}

/// `POST /v1/matches/{id}/agents` (platform-authorized) `{"seat": "p1"}`: the platform's grant
/// of ONE agent seat of ONE match to an AI agent. Answers `201` with a token whose `agent`
/// claim names the match and the seat (principal `agent:<seat>`, `auth.rs`), to play that seat
/// over WebSocket, Socket.IO or the MCP server (`/v1/mcp`, the token as its bearer), with the
/// game's declared instructions, the seat's profile and its limits. Refused: `404
/// MATCH_NOT_FOUND`, `409 UNKNOWN_SEAT` (no such seat), `409 NOT_AN_AGENT_SEAT` (the seat is a
/// human's or a bot's), `409 MATCH_FINISHED`, and `501 TOKENS_NOT_MINTED_HERE` where this
/// process only verifies tokens (there the platform's identity service mints the same claim).
async fn grant_agent(
    State(state): State<EdgeState>,
    _: Platform,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    let match_id = match_id(&id)?;
    let AgentGrantRequest { seat } = strict(&body)?;
    if !state.inner.tokens.can_issue() {
        let message =
            "this process only verifies tokens: mint the grant with an `agent` claim naming the match and seat";
        return Err(problem(StatusCode::NOT_IMPLEMENTED, "TOKENS_NOT_MINTED_HERE", message));
    }
    let summary = state.inner.matches.describe(match_id).await.map_err(|e| match_problem(e, Some(match_id)))?;
    let Some(held) = summary.seats.iter().find(|s| s.seat == seat) else {
        let message = format!("match {match_id} has no seat {seat:?}");
        return Err(problem(StatusCode::CONFLICT, "UNKNOWN_SEAT", message).at("seat"));
    };
    let juegoland_api::Controller::Agent { profile } = &held.controller else {
        let message = format!("seat {seat} is played by a {}, not by an agent", held.controller.kind().as_str());
        return Err(problem(StatusCode::CONFLICT, "NOT_AN_AGENT_SEAT", message).at("seat"));
    };
    if summary.status != juegoland_api::MatchStatus::Active {
        return Err(problem(StatusCode::CONFLICT, "MATCH_FINISHED", "the match is over"));
    }
    let registry = state.inner.matches.registry();
    let declared = registry.get(&summary.game).and_then(|g| {
        let agents = g.descriptor().agents.as_ref()?;
        Some((agents.instructions.clone(), agents.profile(profile)?.clone()))
    });
    let Some((instructions, profile)) = declared else {
        // Creation checked the profile against this very module.
        tracing::error!(match_id = %match_id, seat, "an agent seat whose profile its game does not declare");
        return Err(problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error"));
    };
    let token = state
        .inner
        .tokens
        .issue_agent(match_id, &seat)
        .map_err(|_| problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error"))?;
    let body = AgentGrant {
        match_id,
        principal: crate::auth::agent_principal(&seat),
        seat,
        token,
        expires_in: state.inner.tokens.ttl_secs(),
        game: summary.game,
        profile: GrantedProfile {
            id: profile.id,
            display_name: profile.display_name,
            modes: profile.modes,
            difficulties: profile.difficulties,
        },
        limits: profile.limits,
        instructions,
        mcp: "/v1/mcp".to_owned(),
        websocket: "/v1/ws".to_owned(),
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

async fn dev_token(State(state): State<EdgeState>, JsonBody(body): JsonBody) -> Result<Response, Problem> {
    let req: DevTokenRequest = strict(&body)?;
    if let Err(why) = juegoland_core::check_principal(&req.principal) {
        return Err(problem(StatusCode::BAD_REQUEST, "INVALID_PRINCIPAL", format!("principal: {why}")).at("principal"));
    }
    let token = state
        .inner
        .tokens
        .issue(&req.principal)
        .map_err(|_| problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error"))?;
    Ok(Json(TokenBody { token }).into_response())
}

#[derive(Deserialize)]
struct WsQuery {
    access_token: Option<String>,
}

async fn ws(
    State(state): State<EdgeState>,
    headers: HeaderMap,
    Query(q): Query<WsQuery>,
    remote: Option<axum::Extension<RemoteAddr>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let token = bearer(&headers).map(str::to_owned).or(q.access_token);
    let verified = match &token {
        Some(token) => state.inner.tokens.authenticate(token).await.map_err(Some),
        None => Err(None),
    };
    let bearer = match verified {
        Ok(bearer) => bearer,
        Err(refused) => return unauthenticated(refused).into_response(),
    };
    let Some(gateway) = state.inner.gateway.clone() else {
        return no_route(Method::GET, Uri::from_static("/v1/ws")).await.into_response();
    };
    let limits = &gateway.config.limits;
    let permit = match gateway.connections.open(limits, remote.map(|r| r.0.0), bearer.connection_key().as_deref()) {
        Ok(permit) => permit,
        Err(refusal) => {
            refusal.count(&gateway.metrics.refused);
            let p = match refusal {
                Refusal::AbusiveAddress => problem(
                    StatusCode::TOO_MANY_REQUESTS,
                    "RATE_LIMITED",
                    "connections from this address were closed for abuse too often; retry later",
                ),
                Refusal::AddressCap => problem(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "too many connections from this address; retry later",
                ),
                Refusal::PrincipalCap => problem(
                    StatusCode::TOO_MANY_REQUESTS,
                    "RATE_LIMITED",
                    "too many connections for this principal; close one first",
                ),
                _ => problem(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", "this gateway is full; retry later"),
            };
            return ([(header::RETRY_AFTER, RETRY_AFTER_SECONDS.to_string())], p).into_response();
        }
    };
    // Messages up to `max_message_bytes` (128 KiB; a fragmented message counted whole) reach
    // the protocol decoder, which answers anything over its own 64 KiB limit with
    // MESSAGE_TOO_LARGE and keeps the connection; bigger ones close it with 1009.
    // Buffers start small: tungstenite's 128 KiB read buffer per connection (allocated
    // up front) made an idle connection cost ≈ 135 KiB (docs/benchmarks.md); the read buffer
    // still grows for a large frame. Writes are buffered up to 16 KiB (the buffer grows as
    // used, not up front) so that the writer's batch of ready frames leaves in one write.
    upgrade
        .max_message_size(limits.max_message_bytes)
        .max_frame_size(limits.max_message_bytes)
        .read_buffer_size(4 * 1024)
        .write_buffer_size(16 * 1024)
        .on_upgrade(move |socket| crate::ws::serve(gateway, bearer, socket, permit))
}

/// `401 UNAUTHENTICATED` for a connection without a valid token: the message says why (the
/// reason class of [`TokenError`], or that there was none), and so does `WWW-Authenticate`
/// (RFC 6750: `Bearer error="invalid_token", error_description="expired"`), so a client can
/// tell an expired token, to renew, from a misconfigured one.
fn unauthenticated(refused: Option<crate::auth::TokenError>) -> Response {
    let (message, challenge) = match refused {
        Some(e) => (
            format!("{e} ({}): get a new token", e.reason()),
            format!("Bearer error=\"invalid_token\", error_description=\"{}\"", e.reason()),
        ),
        None => ("a token is required (Authorization: Bearer or ?access_token=)".to_owned(), "Bearer".to_owned()),
    };
    let mut response = problem(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", message).into_response();
    if let Ok(value) = header::HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `GET /metrics` (where this listener serves them): the process's metrics, behind the
/// platform token when one is set.
async fn metrics(State(state): State<EdgeState>, _: Platform) -> Response {
    let families = state.inner.registry.gather();
    let mut out = String::new();
    match prometheus::TextEncoder::new().encode_utf8(&families, &mut out) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], out).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
