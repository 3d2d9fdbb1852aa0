//! The HTTP surface: the catalog, the platform's create/withdraw calls, dev tokens, the
//! WebSocket upgrade, the Socket.IO layer, the page, metrics and health, and the public files
//! of published packages.
//!
//! Bodies are strict JSON (unknown fields rejected); every error is a JSON object
//! `{"code": …, "message": …, "field"?: …}` with a fitting status, never a stack trace: the
//! handlers' own refusals ([`Problem`]), an unknown path or method, and every rejection of
//! axum's extractors or the upgrade (rewritten by [`json_errors`]). `field` names the
//! offending part of the request (a JSON path such as `seats.p1`) where there is one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::http::{Method, Uri};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use juegoland_api::{MatchError, Matches};
use juegoland_bus::Bus;
use juegoland_core::{GameKey, LifecycleRequest, SeatHolder};
use juegoland_packages::public::{PublicError, public_file, public_lock};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::auth::Tokens;
use crate::gateway::{Gateway, GatewayConfig};
use crate::metrics::EdgeMetrics;

/// Everything the HTTP surface needs.
#[derive(Clone)]
pub struct EdgeState {
    inner: Arc<Inner>,
}

struct Inner {
    matches: Arc<dyn Matches>,
    tokens: Tokens,
    /// The WebSocket and Socket.IO gateway; `None` where this process serves only the
    /// platform API (a router).
    gateway: Option<Gateway>,
    registry: prometheus::Registry,
    /// Whether the dev-only routes (token minting) are served.
    dev: bool,
    platform_api: bool,
    /// The bearer token the platform back end must present on platform calls; `None` leaves
    /// them open (dev profile only).
    platform_token: Option<String>,
    /// The registry of published packages whose public files are served.
    packages: Option<PathBuf>,
}

/// Options of the edge.
#[derive(Clone, Debug, Default)]
pub struct EdgeOptions {
    pub dev: bool,
    /// Whether the platform's calls (create, withdraw) are served here: by the all-in-one
    /// and the routers, not by gateways.
    pub platform_api: bool,
    pub platform_token: Option<String>,
    pub gateway: GatewayConfig,
    /// Serve the public files of the packages published in this registry directory
    /// (`GET /v1/packages/{id}/{version}` and `…/{path}`); `None` serves none.
    pub packages: Option<PathBuf>,
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
        let gateway = bus.map(|bus| Gateway { matches: matches.clone(), bus, metrics, config: options.gateway });
        Ok(Self {
            inner: Arc::new(Inner {
                matches,
                tokens,
                gateway,
                registry,
                dev: options.dev,
                platform_api: options.platform_api,
                platform_token: options.platform_token,
                packages: options.packages,
            }),
        })
    }
}

/// What the edge serves on: `listener`, each accepted connection with TCP_NODELAY. Without
/// it, a server message written right after another waits for the client's acknowledgement
/// of the first (Nagle), which a client delays by up to 40 ms (delayed ACK): that was most of
/// the all-in-one's move → view p50 (docs/benchmarks.md, issue 18).
pub fn listener(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    fn no_delay(stream: &mut tokio::net::TcpStream) {
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
    }
    axum::serve::ListenerExt::tap_io(listener, no_delay as fn(&mut tokio::net::TcpStream))
}

/// The router of the whole edge.
pub fn router(state: EdgeState) -> Router {
    let mut r = Router::new()
        .route("/", get(page))
        .route("/v1/games", get(games))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }));
    if state.inner.platform_api {
        r = r
            .route("/v1/matches", post(create_match))
            .route("/v1/matches/{id}/withdrawals", post(withdraw))
            .route("/v1/matches/{id}/cancellation", post(cancel));
    }
    if state.inner.gateway.is_some() {
        r = r.route("/v1/ws", get(ws));
    }
    if state.inner.dev {
        r = r.route("/v1/dev/tokens", post(dev_token));
    }
    if state.inner.packages.is_some() {
        r = r
            .route("/v1/packages/{id}/{version}", get(package_lock))
            .route("/v1/packages/{id}/{version}/{*path}", get(package_file));
    }
    // The same protocol over Socket.IO, at socketioxide's default path `/socket.io`.
    let socket_io = state.inner.gateway.clone().map(|gateway| crate::sio::layer(gateway, state.inner.tokens.clone()));
    let r = r
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .with_state(state)
        .layer(axum::middleware::map_response(json_errors));
    match socket_io {
        Some(layer) => r.layer(layer),
        None => r,
    }
}

/// An HTTP error: a status and the JSON body `{"code", "message", "field"?}`, the one shape
/// of every error this surface answers.
#[derive(Debug)]
struct Problem {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The offending part of the request, where there is one.
    field: Option<String>,
}

#[derive(Serialize)]
struct ProblemBody<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = ProblemBody { code: self.code, message: &self.message, field: self.field.as_deref() };
        (self.status, Json(body)).into_response()
    }
}

fn problem(status: StatusCode, code: &'static str, message: impl Into<String>) -> Problem {
    Problem { status, code, message: message.into(), field: None }
}

impl Problem {
    fn at(self, field: impl Into<String>) -> Problem {
        Problem { field: Some(field.into()), ..self }
    }
}

fn strict<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Problem> {
    // serde's messages name the offending field or position, never stored state.
    let invalid = |message: String| problem(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message);
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| match e.path().to_string() {
        path if path == "." => invalid(e.inner().to_string()),
        path => invalid(e.inner().to_string()).at(path),
    })?;
    de.end().map_err(|e| invalid(e.to_string()))?;
    Ok(value)
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
    let body = Json(ProblemBody { code, message: &message, field: None }).into_response();
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
            let p = problem(status, refusal.code(), message);
            match refusal.field() {
                Some(field) => p.at(field),
                None => p,
            }
        }
        MatchError::NotFound => problem(status, code, "no such match"),
        MatchError::NotOwner(_) | MatchError::Unavailable(_) => problem(status, code, "retry later"),
        MatchError::Invalid(m) => problem(status, code, m),
        MatchError::Internal(m) => {
            tracing::error!(match_id = ?match_id, error = %m, "match operation failed");
            problem(status, code, "internal error")
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ")
}

fn platform_authorized(state: &EdgeState, headers: &HeaderMap) -> Result<(), Problem> {
    match &state.inner.platform_token {
        None => Ok(()),
        Some(expected) if bearer(headers) == Some(expected.as_str()) => Ok(()),
        Some(_) => Err(problem(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", "platform token required")),
    }
}

async fn page() -> Html<&'static str> {
    Html(include_str!("../assets/index.html"))
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
    actions: Vec<&'a str>,
}

async fn games(State(state): State<EdgeState>) -> Response {
    let registry = state.inner.matches.registry();
    let entries: Vec<CatalogEntry<'_>> = registry
        .games()
        .map(|g| {
            let d = g.descriptor();
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
                actions: d.actions.iter().map(|a| a.action_type.as_str()).collect(),
            }
        })
        .collect();
    Json(entries).into_response()
}

/// A seat is given to a principal (`"alice"`) or to a built-in bot (`{"bot": "default"}`).
#[derive(Deserialize)]
#[serde(untagged)]
enum SeatSpec {
    Principal(String),
    Bot { bot: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateMatch {
    game: String,
    /// A pinned rules version; the newest registered one by default.
    #[serde(default)]
    rules_version: Option<String>,
    seats: BTreeMap<String, SeatSpec>,
    #[serde(default = "empty_object")]
    config: Value,
}

fn empty_object() -> Value {
    json!({})
}

async fn create_match(State(state): State<EdgeState>, headers: HeaderMap, body: Bytes) -> Result<Response, Problem> {
    platform_authorized(&state, &headers)?;
    let req: CreateMatch = strict(&body)?;
    let matches = &state.inner.matches;
    let registry = matches.registry();
    let game = match &req.rules_version {
        Some(v) => registry.get(&GameKey { id: req.game.clone(), rules_version: v.clone() }),
        None => registry.latest(&req.game),
    };
    let Some(game) = game else {
        let (field, message) = match &req.rules_version {
            Some(v) if registry.latest(&req.game).is_some() => {
                ("rulesVersion", format!("no rules version {v:?} of {:?}", req.game))
            }
            _ => ("game", format!("no game {:?}", req.game)),
        };
        return Err(problem(StatusCode::NOT_FOUND, "UNKNOWN_GAME", message).at(field));
    };
    let seats = req
        .seats
        .into_iter()
        .map(|(seat, spec)| {
            let holder = match spec {
                SeatSpec::Principal(p) => SeatHolder::Principal(p),
                SeatSpec::Bot { bot } => SeatHolder::Bot(bot),
            };
            (seat, holder)
        })
        .collect();
    let created = matches.create_pinned(&game.key(), seats, &req.config).await.map_err(|e| match_problem(e, None))?;
    // What the match pinned: its rules module's digest and, when the game's package is
    // published in the node's registry, that package's lock digest (`package`, else null).
    let package = created.package.map(|p| json!({ "id": p.id, "version": p.version, "lockDigest": p.lock_digest }));
    let body =
        json!({ "matchId": created.match_id, "revision": 0, "rulesDigest": created.rules_digest, "package": package });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Withdraw {
    seat: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Cancel {
    reason_code: String,
}

/// `POST /v1/matches/{id}/withdrawals` `{seat}`: withdraws a seat.
async fn withdraw(
    state: State<EdgeState>,
    id: Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Problem> {
    lifecycle(state, id, &headers, &body, |req: Withdraw| LifecycleRequest::Withdraw { seat: req.seat }).await
}

/// `POST /v1/matches/{id}/cancellation` `{reasonCode}`: cancels the match (no winners).
async fn cancel(
    state: State<EdgeState>,
    id: Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Problem> {
    lifecycle(state, id, &headers, &body, |req: Cancel| LifecycleRequest::Cancel { reason_code: req.reason_code }).await
}

/// A platform lifecycle operation with its JSON body `B`; answers `{revision}` (the revision
/// it produced).
async fn lifecycle<B: for<'de> Deserialize<'de>>(
    State(state): State<EdgeState>,
    Path(id): Path<String>,
    headers: &HeaderMap,
    body: &[u8],
    request: impl FnOnce(B) -> LifecycleRequest,
) -> Result<Response, Problem> {
    platform_authorized(&state, headers)?;
    let not_found = || problem(StatusCode::NOT_FOUND, "MATCH_NOT_FOUND", "no such match");
    let match_id = Uuid::parse_str(&id).map_err(|_| not_found())?;
    let request = request(strict(body)?);
    let revision =
        state.inner.matches.lifecycle(match_id, request).await.map_err(|e| match_problem(e, Some(match_id)))?;
    Ok(Json(json!({ "revision": revision })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenRequest {
    principal: String,
}

async fn dev_token(State(state): State<EdgeState>, body: Bytes) -> Result<Response, Problem> {
    let req: TokenRequest = strict(&body)?;
    if req.principal.is_empty() || req.principal.len() > 128 || req.principal.starts_with("bot:") {
        let message = "1 to 128 characters, not starting with bot:";
        return Err(problem(StatusCode::BAD_REQUEST, "INVALID_PRINCIPAL", message).at("principal"));
    }
    let token = state
        .inner
        .tokens
        .issue(&req.principal)
        .map_err(|_| problem(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error"))?;
    Ok(Json(json!({ "token": token })).into_response())
}

#[derive(Deserialize)]
struct WsQuery {
    access_token: Option<String>,
}

async fn ws(
    State(state): State<EdgeState>,
    headers: HeaderMap,
    Query(q): Query<WsQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let token = bearer(&headers).map(str::to_owned).or(q.access_token);
    let Some(principal) = token.and_then(|t| state.inner.tokens.verify(&t).ok()) else {
        let message = "a valid token is required (Authorization: Bearer or ?access_token=); get a new one";
        return problem(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", message).into_response();
    };
    let Some(gateway) = state.inner.gateway.clone() else {
        return no_route(Method::GET, Uri::from_static("/v1/ws")).await.into_response();
    };
    // Frames up to 1 MiB reach the protocol decoder, which answers anything over its own
    // 64 KiB limit with MESSAGE_TOO_LARGE and keeps the connection; bigger frames close it.
    // Buffers start small: tungstenite's 128 KiB read buffer per connection (allocated
    // up front) made an idle connection cost ≈ 135 KiB (docs/benchmarks.md); the read buffer
    // still grows for a large frame. Writes are buffered up to 16 KiB (the buffer grows as
    // used, not up front) so that the writer's batch of ready frames leaves in one write.
    upgrade
        .max_message_size(1 << 20)
        .max_frame_size(1 << 20)
        .read_buffer_size(4 * 1024)
        .write_buffer_size(16 * 1024)
        .on_upgrade(move |socket| crate::ws::serve(gateway, principal, socket))
}

async fn metrics(State(state): State<EdgeState>) -> Response {
    let families = state.inner.registry.gather();
    let mut out = String::new();
    match prometheus::TextEncoder::new().encode_utf8(&families, &mut out) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], out).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
