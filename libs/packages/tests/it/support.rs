//! A small valid package tree, built in memory, that each rejection test breaks in one place.

use std::collections::BTreeMap;
use std::path::Path;

use juegoland_packages::validate::{self, Available};
use juegoland_packages::{Package, Rejection};
use juegoland_sdk::components::CustomRegistry;
use serde_json::{Value, json};

pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn svg(width: u32, height: u32) -> Vec<u8> {
    format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"><rect width="{width}" height="{height}"/></svg>"#)
        .into_bytes()
}

fn image(id: &str, path: &str, load: &str, width: u32, height: u32) -> Value {
    json!({"id": id, "path": path, "type": "image", "load": load, "required": true,
           "fallback": {"kind": "text", "key": "title"}, "alt": "title", "width": width, "height": height})
}

/// A valid game manifest: one phase, three catalog images, a hidden deck from `cards` drawn by
/// `cards-art/standard`, and an atlas with one region.
pub fn game() -> Value {
    json!({
        "format": "juegoland.package",
        "formatVersion": 1,
        "kind": "game",
        "id": "tiny",
        "version": "1.0.0",
        "engineApiVersion": 1,
        "protocolVersion": 1,
        "authors": ["Juegoland"],
        "license": "Apache-2.0",
        "description": "description",
        "languages": ["es", "en"],
        "category": "cards",
        "tags": [],
        "mode": "competitive",
        "participants": {"min": 2, "max": 2},
        "capabilities": {"hiddenInformation": true, "simultaneousActions": false, "deadlines": false},
        "dependencies": ["cards@1.0.0", "cards-art@1.0.0"],
        "components": [
            {"componentId": "deck", "definition": {"source": "dependency", "packageId": "cards", "export": "deck"}, "hidden": true}
        ],
        "rules": {
            "version": "1.0.0", "stateSchemaVersion": 1, "viewSchemaVersion": 1, "eventSchemaVersion": 1,
            "schemas": {"config": "schemas/config.json", "data": "rules/data.json", "view": "schemas/view.json",
                        "context": "schemas/context.json", "internalEvents": "rules/events.json",
                        "visibleEvents": "schemas/visible-events.json"},
            "phases": [{"id": "playing", "participation": "single", "stages": [{"id": "move", "actions": ["play"]}]}],
            "actions": [{"type": "play", "policy": "match"}]
        },
        "presentation": {
            "apiVersion": 1,
            "bundleVersion": "1.0.0",
            "resources": [
                image("cover", "images/cover.svg", "catalog", 1200, 630),
                image("thumbnail", "images/thumbnail.svg", "catalog", 320, 180),
                image("icon", "images/icon.svg", "catalog", 64, 64),
                {"id": "sprites", "path": "images/sprites.svg", "type": "atlas", "load": "phase", "phase": "playing",
                 "required": false, "width": 100, "height": 50,
                 "regions": [{"id": "a", "x": 0, "y": 0, "width": 50, "height": 50}]}
            ],
            "bindings": [{"componentId": "deck", "resourceSet": {"source": "dependency", "packageId": "cards-art", "export": "standard"}}],
            "catalog": {"cover": "cover", "thumbnail": "thumbnail", "icon": "icon"}
        },
        "translations": {"es": {"description": "Diminuto", "title": "Diminuto"},
                         "en": {"description": "Tiny", "title": "Tiny"}}
    })
}

pub fn game_files(manifest: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert("game.json".into(), serde_json::to_vec_pretty(manifest).unwrap());
    for path in [
        "schemas/config.json",
        "rules/data.json",
        "schemas/view.json",
        "schemas/context.json",
        "rules/events.json",
        "schemas/visible-events.json",
    ] {
        files.insert(path.into(), br#"{"type": "object"}"#.to_vec());
    }
    files.insert("images/cover.svg".into(), svg(1200, 630));
    files.insert("images/thumbnail.svg".into(), svg(320, 180));
    files.insert("images/icon.svg".into(), svg(64, 64));
    files.insert("images/sprites.svg".into(), svg(100, 50));
    files
}

pub fn components_library() -> Value {
    json!({
        "format": "juegoland.package", "formatVersion": 1, "kind": "components", "id": "cards", "version": "1.0.0",
        "authors": ["Juegoland"], "license": "Apache-2.0", "description": "description", "languages": ["en"],
        "exports": {"deck": {"path": "components/deck.json"}},
        "translations": {"en": {"description": "Cards"}}
    })
}

pub fn deck() -> Value {
    json!({"kind": "deck", "cards": [{"id": "AS", "suit": "spades", "rank": 1}, {"id": "2S", "suit": "spades", "rank": 2}]})
}

pub fn assets_library() -> Value {
    json!({
        "format": "juegoland.package", "formatVersion": 1, "kind": "assets", "id": "cards-art", "version": "1.0.0",
        "authors": ["Juegoland"], "license": "Apache-2.0", "description": "description", "languages": ["en"],
        "exports": {"standard": {"path": "sets/standard.json"}},
        "resources": [{"id": "faces", "path": "graphics/faces.js", "type": "graphic", "load": "board", "required": true,
                       "fallback": {"kind": "text", "key": "card"}}],
        "translations": {"en": {"description": "Card art", "card": "card"}}
    })
}

/// A library: its manifest and the files besides it.
pub type Library = (Value, Vec<(&'static str, Vec<u8>)>);

/// An empty asset library `id@version` depending on `dependencies`.
pub fn art_library(id: &str, version: &str, dependencies: &[&str]) -> Library {
    let manifest = json!({
        "format": "juegoland.package", "formatVersion": 1, "kind": "assets", "id": id, "version": version,
        "authors": ["Juegoland"], "license": "Apache-2.0", "description": "description", "languages": ["en"],
        "dependencies": dependencies, "exports": {"set": {"path": "sets/set.json"}},
        "translations": {"en": {"description": "Art"}}
    });
    let set = json!({"format": "juegoland.resource-set", "formatVersion": 1, "aspectRatio": {"width": 1, "height": 1}, "slots": {}});
    (manifest, vec![("sets/set.json", serde_json::to_vec(&set).unwrap())])
}

pub fn resource_set() -> Value {
    json!({"format": "juegoland.resource-set", "formatVersion": 1, "aspectRatio": {"width": 5, "height": 7},
           "slots": {"AS": {"resource": "faces", "slot": "AS"}, "2S": {"resource": "faces", "slot": "2S"}},
           "back": {"resource": "faces", "slot": "back"}})
}

pub fn library_files(manifest: &Value, extra: &[(&str, Vec<u8>)]) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert("package.json".into(), serde_json::to_vec_pretty(manifest).unwrap());
    for (path, bytes) in extra {
        files.insert((*path).into(), bytes.clone());
    }
    files
}

/// The tree's pieces, each editable before the check.
pub struct Fixture {
    pub game: Value,
    pub game_files: BTreeMap<String, Vec<u8>>,
    pub components: Value,
    pub deck: Value,
    pub assets: Value,
    pub set: Value,
    pub customs: CustomRegistry,
    /// More published libraries, as (manifest, files besides it).
    pub extra: Vec<Library>,
}

impl Fixture {
    pub fn new() -> Self {
        Self {
            game: game(),
            game_files: BTreeMap::new(),
            components: components_library(),
            deck: deck(),
            assets: assets_library(),
            set: resource_set(),
            customs: CustomRegistry::new(),
            extra: Vec::new(),
        }
    }

    pub fn remove(doc: &mut Value, pointer: &str) {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        match doc.pointer_mut(parent).unwrap() {
            Value::Object(map) => {
                map.remove(key).unwrap();
            }
            Value::Array(items) => {
                items.remove(key.parse().unwrap());
            }
            _ => panic!("{pointer} is not inside a container"),
        }
    }

    pub fn available(&self) -> Result<Available, Rejection> {
        let mut available = Available::new();
        let js = b"export default { draw() { return '<svg/>'; } };".to_vec();
        for files in [
            library_files(&self.components, &[("components/deck.json", serde_json::to_vec(&self.deck).unwrap())]),
            library_files(
                &self.assets,
                &[("sets/standard.json", serde_json::to_vec(&self.set).unwrap()), ("graphics/faces.js", js)],
            ),
        ]
        .into_iter()
        .chain(self.extra.iter().map(|(manifest, extra)| library_files(manifest, extra)))
        {
            let package = Package::from_files(files)?;
            available.insert(package.key(), package);
        }
        Ok(available)
    }

    /// Runs levels 1-3 on the game and its tree.
    pub fn check(&self) -> Result<(), Rejection> {
        let mut files = game_files(&self.game);
        files.extend(self.game_files.clone());
        let root = Package::from_files(files)?;
        let available = self.available()?;
        let tree = validate::resolve(&root, &available)?;
        validate::check_references(&tree, &self.customs)?;
        validate::check_art(&tree)
    }
}
