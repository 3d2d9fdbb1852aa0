//! `/v1/webhooks`: the platform API's calls that manage webhook endpoints, each behind the
//! platform token, with strict JSON bodies (`http.rs`), over the edge's [`WebhookAdmin`].
//!
//! | call | does |
//! |---|---|
//! | `POST /v1/webhooks` | registers an endpoint (201, its secret shown once) |
//! | `GET /v1/webhooks` | lists them |
//! | `GET /v1/webhooks/{id}` | one, with where its delivery stands |
//! | `PATCH /v1/webhooks/{id}` | changes its URL or kinds |
//! | `DELETE /v1/webhooks/{id}` | removes it (204) |
//! | `POST /v1/webhooks/{id}/rotation` | a new secret; the old one signs too for an overlap |
//! | `POST /v1/webhooks/{id}/replay` | delivers again from a feed cursor |
//! | `POST /v1/webhooks/{id}/ping` | sends one signed request with no events now |

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use juegoland_api::webhooks::{ChangeWebhook, RegisterWebhook, ReplayWebhook, RotateSecret};
use juegoland_api::{WebhookAdmin, WebhookError};

use crate::http::{EdgeState, JsonBody, Platform, Problem, problem, strict};

/// `r` with the webhook routes.
pub(crate) fn routes(r: Router<EdgeState>) -> Router<EdgeState> {
    r.route("/v1/webhooks", post(register).get(list))
        .route("/v1/webhooks/{id}", get(describe).patch(change).delete(remove))
        .route("/v1/webhooks/{id}/rotation", post(rotate))
        .route("/v1/webhooks/{id}/replay", post(replay))
        .route("/v1/webhooks/{id}/ping", post(ping))
}

fn admin(state: &EdgeState) -> Result<Arc<dyn WebhookAdmin>, Problem> {
    state.inner.webhooks.clone().ok_or_else(|| problem(StatusCode::NOT_FOUND, "NOT_FOUND", "no webhooks here"))
}

/// A webhook failure as the HTTP API answers it.
fn webhook_problem(e: WebhookError) -> Problem {
    let status = StatusCode::from_u16(e.http()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if status.is_server_error() {
        tracing::warn!(error = %e, "a webhook call failed");
    }
    let answer = problem(status, e.code(), e.to_string());
    match e.field() {
        Some(field) => answer.at(field),
        None => answer,
    }
}

async fn register(State(state): State<EdgeState>, _: Platform, JsonBody(body): JsonBody) -> Result<Response, Problem> {
    let request: RegisterWebhook = strict(&body)?;
    let registered = admin(&state)?.register(request).await.map_err(webhook_problem)?;
    Ok((StatusCode::CREATED, Json(registered)).into_response())
}

async fn list(State(state): State<EdgeState>, _: Platform) -> Result<Response, Problem> {
    Ok(Json(admin(&state)?.list().await.map_err(webhook_problem)?).into_response())
}

async fn describe(State(state): State<EdgeState>, _: Platform, Path(id): Path<String>) -> Result<Response, Problem> {
    Ok(Json(admin(&state)?.describe(&id).await.map_err(webhook_problem)?).into_response())
}

async fn change(
    State(state): State<EdgeState>,
    _: Platform,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    let change: ChangeWebhook = strict(&body)?;
    Ok(Json(admin(&state)?.change(&id, change).await.map_err(webhook_problem)?).into_response())
}

async fn remove(State(state): State<EdgeState>, _: Platform, Path(id): Path<String>) -> Result<Response, Problem> {
    admin(&state)?.remove(&id).await.map_err(webhook_problem)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn rotate(
    State(state): State<EdgeState>,
    _: Platform,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    let request: RotateSecret = if body.is_empty() { RotateSecret::default() } else { strict(&body)? };
    Ok(Json(admin(&state)?.rotate(&id, request).await.map_err(webhook_problem)?).into_response())
}

async fn replay(
    State(state): State<EdgeState>,
    _: Platform,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> Result<Response, Problem> {
    let request: ReplayWebhook = strict(&body)?;
    Ok(Json(admin(&state)?.replay(&id, request).await.map_err(webhook_problem)?).into_response())
}

async fn ping(State(state): State<EdgeState>, _: Platform, Path(id): Path<String>) -> Result<Response, Problem> {
    Ok(Json(admin(&state)?.ping(&id).await.map_err(webhook_problem)?).into_response())
}
