//! The committed JSON Schemas must be exactly what the Rust types generate.

use juegoland_protocol::schema::schema_files;

use crate::support::crate_dir;

/// Fails when a file under `schemas/` is missing, stale or unexpected. With
/// `UPDATE_SCHEMAS=1` it rewrites the directory instead.
#[test]
fn committed_schemas_are_fresh() {
    let files: Vec<(String, String)> = schema_files().iter().map(|f| (f.file_name.clone(), f.render())).collect();
    juegoland_testkit::check_generated(
        &crate_dir().join("schemas"),
        &files,
        true,
        "UPDATE_SCHEMAS=1 cargo test -p juegoland-protocol",
    );
}

#[test]
fn schemas_are_valid_2020_12_with_urn_ids() {
    for file in schema_files() {
        assert!(jsonschema::meta::is_valid(&file.schema), "{} is not a valid schema", file.file_name);
        assert_eq!(file.schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{}", file.file_name);
        assert_eq!(file.schema["$id"], file.id.as_str());
        assert!(file.id.starts_with("urn:juegoland:protocol:") && file.id.ends_with(":1"), "{}", file.id);
    }
}
