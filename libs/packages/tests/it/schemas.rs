//! The committed JSON Schemas must be exactly what the Rust types generate, checked like the
//! protocol's (`juegoland_testkit::check_generated`).

use juegoland_packages::schema::schema_files;

use crate::support::{self, crate_dir};

/// Fails when a file under `schemas/` is missing, stale or unexpected. With
/// `UPDATE_SCHEMAS=1` it rewrites the directory instead.
#[test]
fn committed_schemas_are_fresh() {
    let files: Vec<(String, String)> = schema_files().iter().map(|f| (f.file_name.clone(), f.render())).collect();
    juegoland_testkit::check_generated(&crate_dir().join("schemas"), &files, true, super::REGENERATE);
}

#[test]
fn schemas_are_valid_2020_12_with_urn_ids() {
    let names: Vec<String> = schema_files().into_iter().map(|f| f.file_name).collect();
    assert_eq!(names, ["package.json", "component.json", "resource-set.json", "lock.json", "presentation-plan.json"]);
    for file in schema_files() {
        assert!(jsonschema::meta::is_valid(&file.schema), "{} is not a valid schema", file.file_name);
        assert_eq!(file.schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{}", file.file_name);
        let name = file.file_name.trim_end_matches(".json");
        assert_eq!(file.schema["$id"], format!("urn:juegoland:{name}:1"));
    }
}

/// The schemas accept the fixtures the types accept, and refuse an unknown field as the
/// types do.
#[test]
fn schemas_agree_with_the_types_on_the_fixtures() {
    let schema = |name: &str| {
        let file = schema_files().into_iter().find(|f| f.file_name == format!("{name}.json")).unwrap();
        jsonschema::validator_for(&file.schema).unwrap()
    };
    let package = schema("package");
    for manifest in [support::game(), support::components_library(), support::assets_library()] {
        let errors: Vec<String> = package.iter_errors(&manifest).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }
    let mut bad = support::game();
    bad["presentation"]["surprise"] = serde_json::json!(true);
    assert!(!package.is_valid(&bad));
    assert!(schema("component").is_valid(&support::deck()));
    assert!(schema("resource-set").is_valid(&support::resource_set()));
}
