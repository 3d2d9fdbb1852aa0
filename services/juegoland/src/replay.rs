//! `juegoland replay`: re-runs stored matches from their log and randomness traces with
//! their pinned rules and reports any divergence from the stored state.

use juegoland_core::Registry;
use juegoland_store::audit::{MatchReplay, replay_matches};
use juegoland_store::{Store, StoreError};
use uuid::Uuid;

/// Replays `only` (or every stored match) and returns one line per match.
pub async fn replay(
    store: &dyn Store,
    registry: &Registry,
    only: Option<Uuid>,
) -> Result<Vec<MatchReplay>, StoreError> {
    let ids = match only {
        Some(id) => vec![id],
        None => store.match_ids().await?,
    };
    replay_matches(store, registry, ids).await
}
