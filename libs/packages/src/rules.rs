//! The game's manifest against its compiled rules module (publish steps 4 and 5).
//!
//! In Rust the rules are compiled in: the "server artifact" is the module registered under
//! the manifest's id and `rules.version`, which the service passes in as the SDK's
//! [`ErasedGame`]. Its descriptor must declare exactly the manifest's flow, and the schema
//! files the package ships must be exactly what the module's types generate.

use juegoland_protocol::schema::SchemaFile;
use juegoland_sdk::{Descriptor, ErasedGame, Participation};
use serde_json::Value;

use crate::error::{Kind, Rejection};
use crate::manifest::GameManifest;
use crate::package::Package;

/// Step 4: ids, versions, participants, phases, stages and actions agree with the module.
pub fn check_module(package: &Package, game: &GameManifest, module: &dyn ErasedGame) -> Result<(), Rejection> {
    let d: &Descriptor = module.descriptor();
    let label = package.manifest_label();
    let mismatch = |pointer: &str, what: &'static str, manifest: String, module: String| {
        Err(Rejection::new(&label, pointer, Kind::RulesMismatch { what, manifest, module }))
    };
    let r = &game.rules;
    let versions = [
        ("/id", "the id", game.id.clone(), d.id.clone()),
        ("/rules/version", "the rules version", r.version.clone(), d.rules_version.clone()),
        ("/rules/stateSchemaVersion", "the state schema version", n(r.state_schema_version), n(d.state_schema_version)),
        ("/rules/viewSchemaVersion", "the view schema version", n(r.view_schema_version), n(d.view_schema_version)),
        ("/rules/eventSchemaVersion", "the event schema version", n(r.event_schema_version), n(d.event_schema_version)),
        (
            "/participants",
            "the participant range",
            range(game.participants.min, game.participants.max),
            range(d.min_seats, d.max_seats),
        ),
    ];
    for (pointer, what, manifest, module) in versions {
        if manifest != module {
            return mismatch(pointer, what, manifest, module);
        }
    }
    let manifest_phases: Vec<String> = game
        .rules
        .phases
        .iter()
        .map(|p| phase_text(&p.id, p.participation, p.stages.iter().map(|s| (s.id.as_str(), s.actions.as_slice()))))
        .collect();
    let module_phases: Vec<String> = d
        .phases
        .iter()
        .map(|p| phase_text(&p.id, p.participation, p.stages.iter().map(|s| (s.id.as_str(), s.actions.as_slice()))))
        .collect();
    if let Some(i) =
        (0..manifest_phases.len().max(module_phases.len())).find(|&i| manifest_phases.get(i) != module_phases.get(i))
    {
        let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "nothing".into());
        return mismatch(
            &format!("/rules/phases/{i}"),
            "the phases and their stages",
            show(manifest_phases.get(i)),
            show(module_phases.get(i)),
        );
    }
    let manifest_actions: Vec<String> =
        game.rules.actions.iter().map(|a| format!("{} ({:?})", a.action_type, a.policy)).collect();
    let module_actions: Vec<String> = d.actions.iter().map(|a| format!("{} ({:?})", a.action_type, a.policy)).collect();
    if manifest_actions != module_actions {
        return mismatch("/rules/actions", "the actions", manifest_actions.join(", "), module_actions.join(", "));
    }
    Ok(())
}

fn n(version: u32) -> String {
    version.to_string()
}

fn range(min: u32, max: u32) -> String {
    format!("{min}..={max}")
}

fn phase_text<'a>(
    id: &str,
    participation: Participation,
    stages: impl Iterator<Item = (&'a str, &'a [String])>,
) -> String {
    let stages: Vec<String> = stages.map(|(id, actions)| format!("{id}[{}]", actions.join(" "))).collect();
    format!("{id} ({participation:?}): {}", stages.join(", "))
}

/// The schema files a game's package ships, as the module generates them: (manifest field,
/// path in the package, file text). Texts are rendered like every committed schema
/// ([`SchemaFile::render`]: pretty, keys sorted).
pub fn schema_texts(game: &GameManifest, module: &dyn ErasedGame) -> Vec<(&'static str, String, String)> {
    let s = module.schemas();
    let p = &game.rules.schemas;
    let render = |path: &str, schema: &Value| {
        SchemaFile { file_name: path.to_owned(), id: String::new(), schema: schema.clone() }.render()
    };
    [
        ("config", &p.config, &s.config),
        ("data", &p.data, &s.data),
        ("view", &p.view, &s.view),
        ("context", &p.context, &s.context),
        ("internalEvents", &p.internal_events, &s.event),
        ("visibleEvents", &p.visible_events, &s.visible_event),
    ]
    .into_iter()
    .map(|(name, path, schema)| (name, path.clone(), render(path, schema)))
    .collect()
}

/// Step 5 (the part a publisher can decide): the package's schema files are exactly what the
/// module's types generate.
pub fn check_schemas(package: &Package, game: &GameManifest, module: &dyn ErasedGame) -> Result<(), Rejection> {
    for (name, path, text) in schema_texts(game, module) {
        if package.files.get(&path).map(Vec::as_slice) != Some(text.as_bytes()) {
            return Err(Rejection::new(
                package.manifest_label(),
                format!("/rules/schemas/{name}"),
                Kind::SchemaMismatch(name),
            ));
        }
    }
    Ok(())
}
