//! The packages the project ships: every catalog game's and the libraries'. They validate at
//! levels 1-3 (files exist, with their media types and sizes), their schema files are what
//! the compiled modules generate, and the shared deck files are the SDK's definitions.

use std::path::PathBuf;
use std::sync::Arc;

use juegoland_packages::manifest::{Manifest, PackageKind};
use juegoland_packages::plan::{EffectRegistry, PresentationPlan};
use juegoland_packages::rules::{check_module, check_schemas, schema_texts};
use juegoland_packages::validate::{self, Available};
use juegoland_packages::{Package, Rejection};
use juegoland_sdk::ErasedGame;
use juegoland_sdk::components::{ComponentDefinition, CustomRegistry, DiceDefinition, poker52, spanish40};

use crate::support::crate_dir;

/// The ids of the games the catalog compiles in, sorted.
pub fn games() -> Vec<String> {
    let mut ids: Vec<String> =
        juegoland_catalog::registry().unwrap().games().map(|g| g.descriptor().id.clone()).collect();
    ids.sort();
    ids.dedup();
    ids
}
pub const LIBRARIES: [&str; 5] = ["playing-cards", "spanish-cards", "cards-poker", "cards-spanish", "board-games"];

pub fn game_dir(game: &str) -> PathBuf {
    crate_dir().join("../games").join(game).join("package")
}

pub fn library_dir(library: &str) -> PathBuf {
    crate_dir().join("libraries").join(library)
}

pub fn module(id: &str, rules_version: &str) -> Arc<dyn ErasedGame> {
    let registry = juegoland_catalog::registry().unwrap();
    let found = registry.games().find(|g| g.descriptor().id == id && g.descriptor().rules_version == rules_version);
    found.map(|g| g.game.clone()).unwrap_or_else(|| panic!("no module {id} {rules_version} in the catalog"))
}

fn libraries() -> Available {
    let mut available = Available::new();
    for library in LIBRARIES {
        let package = Package::read_dir(&library_dir(library)).unwrap_or_else(|e| panic!("{library}: {e}"));
        available.insert(package.key(), package);
    }
    available
}

fn check(package: &Package, available: &Available) -> Result<(), Rejection> {
    let tree = validate::resolve(package, available)?;
    validate::check_references(&tree, &CustomRegistry::new())?;
    validate::check_art(&tree)
}

#[test]
fn every_library_validates() {
    let available = libraries();
    let kinds: Vec<(String, PackageKind)> =
        available.values().map(|p| (p.key().to_string(), p.manifest.kind())).collect();
    assert_eq!(
        kinds,
        [
            ("board-games@1.0.0".to_owned(), PackageKind::Components),
            ("cards-poker@1.0.0".to_owned(), PackageKind::Assets),
            ("cards-spanish@1.0.0".to_owned(), PackageKind::Assets),
            ("playing-cards@1.0.0".to_owned(), PackageKind::Components),
            ("spanish-cards@1.0.0".to_owned(), PackageKind::Components),
        ]
    );
    for package in available.values() {
        check(package, &available).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn the_shared_decks_are_the_sdk_definitions() {
    let available = libraries();
    let get = |id: &str| available.values().find(|p| p.manifest.id() == id).unwrap();
    let poker: ComponentDefinition = get("playing-cards").parse_file("components/poker52.json", "").unwrap();
    assert_eq!(poker, ComponentDefinition::Deck(poker52()));
    let spanish: ComponentDefinition = get("spanish-cards").parse_file("components/spanish40.json", "").unwrap();
    assert_eq!(spanish, ComponentDefinition::Deck(spanish40()));
    let Manifest::Library(art) = &get("cards-poker").manifest else { panic!("cards-poker is a library") };
    assert_eq!(art.resources.len(), 1, "one graphic resource draws all 52 faces and the back");
    let Manifest::Library(art) = &get("cards-spanish").manifest else { panic!("cards-spanish is a library") };
    assert_eq!(art.resources.len(), 1, "one graphic resource draws all 40 faces and the back");
}

/// Brisca's deck is drawn by `cards-spanish/standard`: a slot for each of the 40
/// `spanish40` cards, by its definition id, and a back (the deck is hidden), all drawn by the
/// library's one graphic.
#[test]
fn brisca_binds_its_deck_to_the_spanish_art() {
    let available = libraries();
    let get = |id: &str| available.values().find(|p| p.manifest.id() == id).unwrap();
    let set: juegoland_packages::resource::ResourceSet =
        get("cards-spanish").parse_file("sets/standard.json", "").unwrap();
    let ids: Vec<String> = spanish40().cards.into_iter().map(|c| c.id).collect();
    let mut slots: Vec<String> = set.slots.keys().cloned().collect();
    slots.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(slots, want, "a face for every card");
    assert!(set.slots.iter().all(|(id, s)| s.resource == "spanish-graphic" && s.slot.as_deref() == Some(id.as_str())));
    assert_eq!(set.back.as_ref().map(|b| b.slot.as_deref()), Some(Some("back")));
    let brisca = Package::read_dir(&game_dir("brisca")).unwrap();
    let Manifest::Game(game) = &brisca.manifest else { panic!("brisca is a game") };
    let binding = serde_json::to_value(&game.presentation.bindings).unwrap();
    assert_eq!(
        binding,
        serde_json::json!([{"componentId": "mainDeck", "resourceSet": {"source": "dependency", "packageId": "cards-spanish", "export": "standard"}}])
    );
}

/// The `board-games` library's files are the SDK definitions the dice games' rules load
/// (`juegoland_oca::oca63`, `juegoland_serpientes::serpientes100`, a fair d6). With
/// `UPDATE_SCHEMAS=1` they are rewritten instead.
#[test]
fn the_board_games_library_holds_the_rules_boards_and_die() {
    let render = |d: ComponentDefinition| serde_json::to_string_pretty(&d).unwrap() + "\n";
    let files = vec![
        ("d6.json".to_owned(), render(ComponentDefinition::Dice(DiceDefinition::fair(6)))),
        ("oca63.json".to_owned(), render(ComponentDefinition::Board(juegoland_oca::oca63()))),
        ("serpientes100.json".to_owned(), render(ComponentDefinition::Board(juegoland_serpientes::serpientes100()))),
    ];
    juegoland_testkit::check_generated(&library_dir("board-games").join("components"), &files, true, crate::REGENERATE);
    // And each game declares exactly those components.
    for (game, components) in [("oca", juegoland_oca::components()), ("serpientes", juegoland_serpientes::components())]
    {
        let d: Vec<(String, ComponentDefinition)> =
            components.into_iter().map(|c| (c.component_id, c.definition)).collect();
        assert_eq!(d.len(), 2, "{game}");
        assert_eq!(d[1].1, ComponentDefinition::Dice(DiceDefinition::fair(6)), "{game}");
    }
}

/// Every game the catalog compiles in ships its package in `libs/games/<id>/package/`, for
/// one of the rules versions the catalog registers; and every package there is a catalog
/// game's (one that is not could not be published: its rules are not compiled in).
#[test]
fn every_catalog_game_ships_a_package() {
    let registry = juegoland_catalog::registry().unwrap();
    for id in games() {
        let package = Package::read_dir(&game_dir(&id))
            .unwrap_or_else(|e| panic!("the catalog game {id} ships no package in {}: {e}", game_dir(&id).display()));
        let Manifest::Game(manifest) = &package.manifest else { panic!("{id}'s package is not a game") };
        assert_eq!(manifest.id, id, "the package in libs/games/{id}/package is another game's");
        let versions: Vec<&str> = registry
            .games()
            .filter(|g| g.descriptor().id == id)
            .map(|g| g.descriptor().rules_version.as_str())
            .collect();
        assert!(
            versions.contains(&manifest.rules.version.as_str()),
            "{id}'s package names rules {}, but the catalog registers {versions:?}",
            manifest.rules.version
        );
    }
    let mut packaged: Vec<String> = std::fs::read_dir(crate_dir().join("../games"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|dir| dir.join("package").is_dir())
        .map(|dir| dir.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    packaged.sort();
    assert_eq!(packaged, games(), "libs/games/*/package against juegoland_catalog::registry()");
}

#[test]
fn every_catalog_game_validates_with_its_module() {
    let available = libraries();
    for game in games() {
        let package = Package::read_dir(&game_dir(&game)).unwrap_or_else(|e| panic!("{game}: {e}"));
        check(&package, &available).unwrap_or_else(|e| panic!("{e}"));
        let Manifest::Game(manifest) = &package.manifest else { panic!("{game} is a game") };
        let module = module(&manifest.id, &manifest.rules.version);
        check_module(&package, manifest, module.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        check_schemas(&package, manifest, module.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        for (i, path) in manifest.presentation.plans.iter().enumerate() {
            let plan: PresentationPlan = package.parse_file(path, &format!("/presentation/plans/{i}")).unwrap();
            plan.validate(&package.label(path), &EffectRegistry::standard()).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The plans the catalog packages ship (each what the web client's module builds for a
/// sample transition: `clients/web/test/package-plans.test.ts`) use every effect the
/// registry knows, and every game declares some: the registry and the client's modules
/// describe the same effects.
#[test]
fn the_catalog_plans_use_every_registered_effect() {
    let mut used = std::collections::BTreeSet::new();
    for game in games() {
        let package = Package::read_dir(&game_dir(&game)).unwrap();
        let Manifest::Game(manifest) = &package.manifest else { panic!("{game} is a game") };
        assert!(!manifest.presentation.plans.is_empty(), "{game} declares no presentation plan");
        for path in &manifest.presentation.plans {
            let plan: PresentationPlan = package.parse_file(path, "").unwrap();
            used.extend(plan.steps.into_iter().map(|s| s.effect));
        }
    }
    let registered: std::collections::BTreeSet<String> =
        EffectRegistry::standard().names().map(str::to_owned).collect();
    assert_eq!(used, registered);
}

#[test]
fn the_conecta4_drop_plan_has_an_impact_marker_an_optional_sound_and_a_win_highlight() {
    let package = Package::read_dir(&game_dir("conecta4")).unwrap();
    let plan: PresentationPlan = package.parse_file("plans/drop.plan.json", "").unwrap();
    let drop = plan.steps.iter().find(|s| s.effect == "piece.drop").unwrap();
    assert_eq!(drop.markers, ["impact"]);
    let sound = plan.steps.iter().find(|s| s.effect == "sound.play").unwrap();
    assert!(!sound.blocking, "the sound never holds the turn");
    let resource = package.manifest.resources().iter().find(|r| r.id == sound.params["resource"]).unwrap();
    assert!(!resource.required, "the sound is optional");
    assert!(plan.steps.iter().any(|s| s.effect == "cells.highlight"));
}

/// The schema files under each game's package are what its module generates. With
/// `UPDATE_SCHEMAS=1` they are rewritten instead.
#[test]
fn game_schema_files_are_fresh() {
    for game in games() {
        let dir = game_dir(&game);
        let text = std::fs::read(dir.join("game.json")).unwrap();
        let (manifest, _) =
            juegoland_packages::parse_document::<juegoland_packages::manifest::GameManifest>("game.json", &text)
                .unwrap();
        let module = module(&manifest.id, &manifest.rules.version);
        let files: Vec<(String, String)> =
            schema_texts(&manifest, module.as_ref()).into_iter().map(|(_, path, text)| (path, text)).collect();
        juegoland_testkit::check_generated(&dir, &files, false, crate::REGENERATE);
    }
}
