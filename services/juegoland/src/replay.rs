//! `juegoland replay`: re-runs stored matches from their log and randomness traces with
//! their pinned rules and reports any divergence from the stored state.

use juegoland_core::{Registry, ReplayError};
use juegoland_store::{Store, StoreError};
use uuid::Uuid;

/// The outcome of replaying one match.
#[derive(Debug)]
pub struct MatchReplay {
    pub match_id: Uuid,
    pub revision: u64,
    pub result: Result<(), ReplayError>,
}

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
    let mut out = Vec::with_capacity(ids.len());
    for match_id in ids {
        let Some(state) = store.load(match_id).await? else {
            out.push(MatchReplay { match_id, revision: 0, result: Err(ReplayError::NoCreate) });
            continue;
        };
        let log = store.log(match_id).await?;
        let result = juegoland_core::replay(registry, &state, &log);
        out.push(MatchReplay { match_id, revision: state.revision, result });
    }
    Ok(out)
}
