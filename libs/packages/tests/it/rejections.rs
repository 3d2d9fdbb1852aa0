//! One test per rejection of validation levels 1-3: a minimal bad change to a valid tree,
//! asserting the error kind, the file and the JSON pointer of the field, which the message
//! names.

use juegoland_packages::Kind;
use juegoland_sdk::components::CustomRegistry;
use serde_json::{Value, json};

use crate::support::{Fixture, art_library};

macro_rules! assert_rejected {
    ($fixture:expr, $kind:pat, $file:expr, $pointer:expr) => {{
        let rejection = $fixture.check().expect_err("the bad package must be rejected");
        assert!(matches!(*rejection.kind, $kind), "wrong kind: {rejection}");
        assert_eq!((rejection.file.as_str(), rejection.pointer.as_str()), ($file, $pointer), "{rejection}");
        assert!(rejection.to_string().contains(&format!("{} at {}", $file, $pointer)), "{rejection}");
    }};
}

const GAME: &str = "tiny@1.0.0/game.json";

#[test]
fn the_fixture_is_valid() {
    Fixture::new().check().unwrap();
}

#[test]
fn unknown_fields() {
    let mut f = Fixture::new();
    f.game["presentation"]["surprise"] = json!(1);
    assert_rejected!(f, Kind::UnknownField { .. }, "game.json", "/presentation/surprise");
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][1]["colour"] = json!("red");
    assert_rejected!(f, Kind::UnknownField { .. }, "game.json", "/presentation/resources/1/colour");
    let mut f = Fixture::new();
    f.set["slots"]["AS"]["angle"] = json!(90);
    assert_rejected!(f, Kind::UnknownField { .. }, "cards-art@1.0.0/sets/standard.json", "/slots/AS/angle");
}

/// The valid fixture with `value` put at `pointer` of the game manifest.
fn with_game(pointer: &str, value: Value) -> Fixture {
    let mut f = Fixture::new();
    *f.game.pointer_mut(pointer).expect("the fixture has the field") = value;
    f
}

#[test]
fn latest() {
    for (pointer, value) in [("/dependencies/0", "cards@latest"), ("/version", "latest")] {
        assert_rejected!(with_game(pointer, json!(value)), Kind::LatestVersion(_), "game.json", pointer);
    }
}

#[test]
fn ranges() {
    for value in ["cards@^1.0.0", "cards@~1.0.0", "cards@>=1.0.0", "cards@1.x"] {
        assert_rejected!(
            with_game("/dependencies/0", json!(value)),
            Kind::VersionRange(_),
            "game.json",
            "/dependencies/0"
        );
    }
}

#[test]
fn partial_versions_like_at_1() {
    for (pointer, value) in [("/dependencies/0", "cards@1"), ("/rules/version", "1.2")] {
        assert_rejected!(with_game(pointer, json!(value)), Kind::PartialVersion(_), "game.json", pointer);
    }
}

#[test]
fn circular_dependencies() {
    let mut f = Fixture::new();
    f.assets["dependencies"] = json!(["art-base@1.0.0"]);
    f.extra.push(art_library("art-base", "1.0.0", &["cards-art@1.0.0"]));
    assert_rejected!(f, Kind::Cycle(_), "art-base@1.0.0/package.json", "/dependencies/0");
    let message = f.check().unwrap_err().to_string();
    assert!(message.contains("cards-art@1.0.0 -> art-base@1.0.0 -> cards-art@1.0.0"), "{message}");
}

#[test]
fn self_references() {
    let mut f = Fixture::new();
    f.game["dependencies"] = json!(["cards@1.0.0", "cards-art@1.0.0", "tiny@1.0.0"]);
    assert_rejected!(f, Kind::SelfReference(_), "game.json", "/dependencies/2");
    let mut f = Fixture::new();
    f.assets["dependencies"] = json!(["cards-art@1.0.0"]);
    let rejection = f.available().expect_err("a library depending on itself is rejected");
    assert!(matches!(*rejection.kind, Kind::SelfReference(_)), "{rejection}");
    assert_eq!(rejection.pointer, "/dependencies/0");
}

#[test]
fn missing_exports() {
    let mut f = Fixture::new();
    f.game["components"][0]["definition"]["export"] = json!("tarot78");
    assert_rejected!(f, Kind::MissingExport { .. }, GAME, "/components/0/definition");
    let mut f = Fixture::new();
    f.game["presentation"]["bindings"][0]["resourceSet"]["export"] = json!("fancy");
    assert_rejected!(f, Kind::MissingExport { .. }, GAME, "/presentation/bindings/0/resourceSet");
}

#[test]
fn implicit_references() {
    let mut f = Fixture::new();
    f.game["components"][0]["definition"]["packageId"] = json!("poker");
    assert_rejected!(f, Kind::UndeclaredDependency(_), GAME, "/components/0/definition");
}

#[test]
fn two_versions_of_one_id_in_a_tree() {
    let mut f = Fixture::new();
    f.assets["dependencies"] = json!(["art-base@1.0.0"]);
    f.game["dependencies"] = json!(["cards@1.0.0", "cards-art@1.0.0", "art-base@2.0.0"]);
    f.extra.push(art_library("art-base", "1.0.0", &[]));
    f.extra.push(art_library("art-base", "2.0.0", &[]));
    assert_rejected!(f, Kind::TwoVersions { .. }, GAME, "/dependencies/2");
    let mut f = Fixture::new();
    f.game["dependencies"] = json!(["cards@1.0.0", "cards-art@1.0.0", "cards@2.0.0"]);
    assert_rejected!(f, Kind::TwoVersions { .. }, "game.json", "/dependencies/2");
}

#[test]
fn missing_dependencies() {
    let mut f = Fixture::new();
    f.game["dependencies"][0] = json!("cards@9.9.9");
    assert_rejected!(f, Kind::MissingDependency(_), GAME, "/dependencies/0");
}

#[test]
fn libraries_depending_across_kinds() {
    // A component library on an asset library: rules would load images.
    let mut f = Fixture::new();
    f.components["dependencies"] = json!(["art-base@1.0.0"]);
    f.extra.push(art_library("art-base", "1.0.0", &[]));
    let file = "cards@1.0.0/package.json";
    assert_rejected!(f, Kind::WrongDependencyKind { from: "components", to: "assets", .. }, file, "/dependencies/0");
    // The reverse: an asset library on a component library.
    let mut f = Fixture::new();
    f.assets["dependencies"] = json!(["cards@1.0.0"]);
    let file = "cards-art@1.0.0/package.json";
    assert_rejected!(f, Kind::WrongDependencyKind { from: "assets", to: "components", .. }, file, "/dependencies/0");
}

#[test]
fn references_to_the_wrong_kind_of_export() {
    let mut f = Fixture::new();
    f.game["components"][0]["definition"] =
        json!({"source": "dependency", "packageId": "cards-art", "export": "standard"});
    assert_rejected!(f, Kind::WrongExportKind { .. }, GAME, "/components/0/definition");
}

fn tarot(_: &serde_json::Value) -> Result<(), String> {
    Ok(())
}

#[test]
fn custom_components_without_a_registered_validator() {
    let mut f = Fixture::new();
    f.deck = json!({"kind": "custom", "typeId": "tarot", "data": {"arcana": 22}});
    assert_rejected!(f, Kind::UnregisteredCustomKind { .. }, "cards@1.0.0/components/deck.json", "/typeId");
    // Registered, the component loads; the deck binding is then the problem (a custom kind
    // has no definitions to draw).
    f.customs = CustomRegistry::new();
    f.customs.register("tarot", tarot).unwrap();
    assert_rejected!(f, Kind::UnbindableComponent { .. }, GAME, "/presentation/bindings/0/componentId");
}

#[test]
fn atlas_regions_outside_their_image() {
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][3]["regions"][0]["x"] = json!(51);
    assert_rejected!(f, Kind::RegionOutside { .. }, GAME, "/presentation/resources/3/regions/0");
    let mut f = Fixture::new();
    f.set["slots"]["AS"] = json!({"resource": "faces"});
    assert_rejected!(f, Kind::Slot(_), "cards-art@1.0.0/sets/standard.json", "/slots/AS");
}

#[test]
fn images_without_dimensions() {
    let mut f = Fixture::new();
    Fixture::remove(&mut f.game, "/presentation/resources/3/width");
    assert_rejected!(f, Kind::MissingDimensions("atlas"), GAME, "/presentation/resources/3");
}

#[test]
fn missing_translations() {
    let mut f = Fixture::new();
    Fixture::remove(&mut f.game, "/translations/en/title");
    assert_rejected!(f, Kind::MissingTranslation { .. }, GAME, "/presentation/resources/0/alt");
    let message = f.check().unwrap_err().to_string();
    assert!(message.contains("\"title\"") && message.contains("\"en\""), "{message}");
    let mut f = Fixture::new();
    Fixture::remove(&mut f.game, "/translations/es");
    assert_rejected!(f, Kind::MissingTranslation { .. }, GAME, "/description");
}

#[test]
fn a_hidden_deck_without_a_back() {
    let mut f = Fixture::new();
    Fixture::remove(&mut f.set, "/back");
    assert_rejected!(f, Kind::HiddenDeckWithoutBack(_), GAME, "/presentation/bindings/0/resourceSet");
    f.game["components"][0]["hidden"] = json!(false);
    f.check().expect("a deck never shown face down needs no back");
}

#[test]
fn a_full_deck_without_a_face_for_every_definition() {
    let mut f = Fixture::new();
    Fixture::remove(&mut f.set, "/slots/2S");
    assert_rejected!(f, Kind::MissingFace { .. }, GAME, "/presentation/bindings/0/resourceSet");
    assert!(f.check().unwrap_err().to_string().contains("\"2S\""));
}

#[test]
fn fallback_chains_that_end_in_nothing_for_a_required_resource() {
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][0]["fallback"] = json!({"kind": "omit"});
    assert_rejected!(f, Kind::FallbackEndsInNothing(_), GAME, "/presentation/resources/0/fallback");
    // Through another resource that has no fallback of its own.
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][0]["fallback"] = json!({"kind": "resource", "id": "sprites"});
    assert_rejected!(f, Kind::FallbackEndsInNothing(_), GAME, "/presentation/resources/0/fallback");
    // Around a loop.
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][0]["fallback"] = json!({"kind": "resource", "id": "icon"});
    f.game["presentation"]["resources"][2]["fallback"] = json!({"kind": "resource", "id": "cover"});
    assert_rejected!(f, Kind::FallbackEndsInNothing(_), GAME, "/presentation/resources/0/fallback");
    // An optional resource may end in nothing.
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][3]["fallback"] = json!({"kind": "omit"});
    f.check().unwrap();
}

#[test]
fn phase_loaded_resources_naming_a_phase_the_game_does_not_have() {
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][3]["phase"] = json!("battle");
    assert_rejected!(f, Kind::UnknownPhase { .. }, GAME, "/presentation/resources/3/phase");
    let mut f = Fixture::new();
    Fixture::remove(&mut f.game, "/presentation/resources/3/phase");
    assert_rejected!(f, Kind::PhaseMissing(_), GAME, "/presentation/resources/3/load");
}

#[test]
fn catalog_images_must_be_required_catalog_resources() {
    let mut f = Fixture::new();
    f.game["presentation"]["catalog"]["icon"] = json!("sprites");
    assert_rejected!(f, Kind::CatalogResource(_), GAME, "/presentation/catalog/icon");
    let mut f = Fixture::new();
    f.game["presentation"]["catalog"]["cover"] = json!("poster");
    assert_rejected!(f, Kind::Unknown { what: "resource", .. }, GAME, "/presentation/catalog/cover");
}

#[test]
fn files_that_are_missing_mistyped_or_of_another_size() {
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][1]["path"] = json!("images/thumb.svg");
    assert_rejected!(f, Kind::MissingFile(_), GAME, "/presentation/resources/1/path");
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][2]["width"] = json!(32);
    f.game["presentation"]["resources"][2]["height"] = json!(32);
    assert_rejected!(f, Kind::DimensionsMismatch { .. }, GAME, "/presentation/resources/2/path");
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][2]["path"] = json!("schemas/view.json");
    assert_rejected!(f, Kind::MediaTypeMismatch { .. }, GAME, "/presentation/resources/2/path");
    let mut f = Fixture::new();
    f.game_files.insert("notes.doc".into(), b"x".to_vec());
    assert_rejected!(f, Kind::UnknownMediaType { .. }, "tiny@1.0.0/notes.doc", "");
}

#[test]
fn private_schemas_stay_under_rules() {
    let mut f = Fixture::new();
    f.game["rules"]["schemas"]["data"] = json!("schemas/view.json");
    assert_rejected!(f, Kind::PublicPrivateSchema("data"), GAME, "/rules/schemas/data");
    let mut f = Fixture::new();
    f.game["rules"]["schemas"]["view"] = json!("rules/data.json");
    assert_rejected!(f, Kind::PrivatePublicSchema("view"), GAME, "/rules/schemas/view");
}

#[test]
fn unnormalized_paths() {
    for path in ["../outside.svg", "/etc/passwd", "images//cover.svg"] {
        let mut f = Fixture::new();
        f.game["presentation"]["resources"][0]["path"] = json!(path);
        assert_rejected!(f, Kind::UnnormalizedPath(_), "game.json", "/presentation/resources/0/path");
    }
}

#[test]
fn duplicate_ids() {
    let mut f = Fixture::new();
    f.game["presentation"]["resources"][3]["id"] = json!("cover");
    assert_rejected!(f, Kind::Duplicate { what: "resource", .. }, "game.json", "/presentation/resources/3");
}
