//! The registry of rules modules: many games, and several versions of one game, side by
//! side, each with its generated schemas compiled once.

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonschema::Validator;
use juegoland_sdk::{Descriptor, ErasedGame, Schemas};
use serde_json::Value;

use crate::check::OutputSchema;
use crate::state::GameKey;

/// A registered game with its compiled schemas: `jsonschema` validators for what comes in as
/// JSON (config, command payloads), streaming [`OutputSchema`]s for the texts the rules' typed
/// outputs are serialized into (data, view, context, visible events, offered payloads).
pub struct LoadedGame {
    pub game: Arc<dyn ErasedGame>,
    /// The module's digest: SHA-256 (hex) of the JCS of its manifest — descriptor and
    /// generated schemas ([`rules_digest`]). A match pins it at creation.
    pub digest: String,
    pub(crate) config: Validator,
    pub(crate) data: OutputSchema,
    pub(crate) view: OutputSchema,
    pub(crate) context: OutputSchema,
    pub(crate) visible_event: OutputSchema,
    /// Command payloads, by action type.
    pub(crate) actions: BTreeMap<String, Validator>,
    /// Offered payloads (the same schemas, checked as texts), by action type.
    pub(crate) offers: BTreeMap<String, OutputSchema>,
}

impl LoadedGame {
    pub fn descriptor(&self) -> &Descriptor {
        self.game.descriptor()
    }

    pub fn key(&self) -> GameKey {
        let d = self.descriptor();
        GameKey { id: d.id.clone(), rules_version: d.rules_version.clone() }
    }

    /// Checks a match's pinned digest against this module's: a different contract under the
    /// same rules version refuses to run the match (an empty pin predates digests).
    pub fn check_pinned(&self, pinned: &str) -> Result<(), String> {
        if pinned.is_empty() || pinned == self.digest {
            return Ok(());
        }
        let d = self.descriptor();
        Err(format!(
            "rules module {} {} has digest {}, but the match was pinned to {pinned}: its contract changed without a new rules version",
            d.id, d.rules_version, self.digest
        ))
    }

    /// Whether `payload` is valid for `action_type` (false for an unknown type).
    pub fn payload_valid(&self, action_type: &str, payload: &Value) -> bool {
        self.actions.get(action_type).is_some_and(|v| v.is_valid(payload))
    }

    /// Whether an offered payload's text is valid for `action_type` (false for an unknown
    /// type).
    pub(crate) fn offered_payload_valid(&self, action_type: &str, payload: &str) -> bool {
        self.offers.get(action_type).is_some_and(|v| v.check(payload).is_ok())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("game {id} {rules_version} is registered twice")]
    Duplicate { id: String, rules_version: String },
    #[error("game {id}: the generated {what} schema does not compile: {message}")]
    BadSchema { id: String, what: String, message: String },
    #[error("game {id}: {message}")]
    BadDescriptor { id: String, message: String },
}

/// Every rules module this process can run.
#[derive(Default)]
pub struct Registry {
    games: BTreeMap<GameKey, Arc<LoadedGame>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a game version; compiles its schemas and checks its descriptor.
    pub fn register(&mut self, game: Arc<dyn ErasedGame>) -> Result<(), RegistryError> {
        let d = game.descriptor().clone();
        let key = GameKey { id: d.id.clone(), rules_version: d.rules_version.clone() };
        if self.games.contains_key(&key) {
            return Err(RegistryError::Duplicate { id: d.id, rules_version: d.rules_version });
        }
        let compile = |what: &str, schema: &Value| {
            jsonschema::validator_for(schema).map_err(|e| RegistryError::BadSchema {
                id: d.id.clone(),
                what: what.to_owned(),
                message: e.to_string(),
            })
        };
        let output = |what: &str, schema: &Value| {
            OutputSchema::compile(schema).map_err(|message| RegistryError::BadSchema {
                id: d.id.clone(),
                what: what.to_owned(),
                message,
            })
        };
        let s = game.schemas();
        let mut actions = BTreeMap::new();
        let mut offers = BTreeMap::new();
        for a in &d.actions {
            let what = format!("action {}", a.action_type);
            actions.insert(a.action_type.clone(), compile(&what, &a.payload_schema)?);
            offers.insert(a.action_type.clone(), output(&what, &a.payload_schema)?);
        }
        let bad = |message: String| RegistryError::BadDescriptor { id: d.id.clone(), message };
        if d.min_seats == 0 || d.min_seats > d.max_seats {
            return Err(bad(format!("seat range {}..={} is empty", d.min_seats, d.max_seats)));
        }
        if let Some(agents) = &d.agents {
            agents.check().map_err(|message| bad(format!("virtual players: {message}")))?;
        }
        let reserved = |b: &str| crate::state::RESERVED_PREFIXES.iter().any(|p| b.starts_with(p));
        if let Some(bot) = d.bots.iter().find(|b| b.is_empty() || reserved(b)) {
            let prefixes = crate::state::RESERVED_PREFIXES.join("\", \"");
            return Err(bad(format!("bot profile {bot:?} is empty or starts with one of \"{prefixes}\"")));
        }
        for phase in &d.phases {
            for stage in &phase.stages {
                if let Some(unknown) = stage.actions.iter().find(|t| d.action(t).is_none()) {
                    return Err(bad(format!("stage {}/{} allows unknown action {unknown}", phase.id, stage.id)));
                }
            }
        }
        let loaded = LoadedGame {
            digest: rules_digest(&d, s),
            config: compile("config", &s.config)?,
            data: output("data", &s.data)?,
            view: output("view", &s.view)?,
            context: output("context", &s.context)?,
            visible_event: output("visible event", &s.visible_event)?,
            actions,
            offers,
            game,
        };
        self.games.insert(key, Arc::new(loaded));
        Ok(())
    }

    /// The exact pinned module.
    pub fn get(&self, key: &GameKey) -> Option<&Arc<LoadedGame>> {
        self.games.get(key)
    }

    /// The newest rules version of game `id` (the one new matches pin by default).
    pub fn latest(&self, id: &str) -> Option<&Arc<LoadedGame>> {
        self.games
            .iter()
            .filter(|(k, _)| k.id == id)
            .max_by(|(a, _), (b, _)| version_parts(&a.rules_version).cmp(&version_parts(&b.rules_version)))
            .map(|(_, g)| g)
    }

    /// Every registered game version, in (id, version) order.
    pub fn games(&self) -> impl Iterator<Item = &Arc<LoadedGame>> {
        self.games.values()
    }
}

/// The digest of a rules module: SHA-256 (hex) of the JCS of `{descriptor, schemas}` — every
/// action, phase, stage, version and generated schema the module declares. In Rust the module
/// is compiled in, so this is the digest of its contract, not of its code: a behaviour change
/// must still bump `rulesVersion` (spec: engine.md, Versions). A contract change without a
/// bump is caught when a pinned match is loaded or replayed.
///
/// The agent declaration (`Descriptor::agents`) is left out: it says who may answer a seat and
/// what an agent is told, not what the rules decide, so its instructions and limits may be
/// improved without stranding the matches pinned to the module (docs/decisions.md, "agent
/// seats").
pub fn rules_digest(descriptor: &Descriptor, schemas: &Schemas) -> String {
    let contract = Descriptor { agents: None, ..descriptor.clone() };
    let manifest = serde_json::json!({
        "descriptor": contract,
        "schemas": {
            "config": schemas.config,
            "data": schemas.data,
            "event": schemas.event,
            "view": schemas.view,
            "context": schemas.context,
            "visibleEvent": schemas.visible_event,
        },
    });
    juegoland_protocol::digest_hex(&manifest)
}

pub(crate) fn version_parts(v: &str) -> Vec<u64> {
    v.split(['.', '-']).map(|p| p.parse().unwrap_or(0)).collect()
}
