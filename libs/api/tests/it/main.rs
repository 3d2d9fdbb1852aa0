//! The platform HTTP API's committed JSON Schemas (`libs/api/schemas/`) are exactly what its
//! Rust types generate, and valid. This test reads and, with `UPDATE_SCHEMAS=1`, writes them:
//! that IO is its point.

use juegoland_api::platform::schema_files;

fn schemas_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

/// Fails when a file under `schemas/` is missing, stale or unexpected. With
/// `UPDATE_SCHEMAS=1` it rewrites the directory instead.
#[test]
fn committed_schemas_are_fresh() {
    let files: Vec<(String, String)> = schema_files().iter().map(|f| (f.file_name.clone(), f.render())).collect();
    juegoland_testkit::check_generated(&schemas_dir(), &files, true, "UPDATE_SCHEMAS=1 cargo test -p juegoland-api");
}

#[test]
fn schemas_are_valid_2020_12_with_urn_ids() {
    for file in schema_files() {
        assert!(jsonschema::meta::is_valid(&file.schema), "{} is not a valid schema", file.file_name);
        assert_eq!(file.schema["$id"], file.id.as_str());
        assert!(file.id.starts_with("urn:juegoland:api:") && file.id.ends_with(":1"), "{}", file.id);
    }
}

/// What the server answers fits its schema: a creation's answer, a summary with every kind of
/// controller and a result, an error.
#[test]
fn the_schemas_accept_what_the_server_sends_and_refuse_what_it_never_does() {
    let schema = |name: &str| {
        let file = schema_files().into_iter().find(|f| f.file_name == format!("{name}.json")).expect("a schema");
        jsonschema::validator_for(&file.schema).expect("a schema compiles")
    };
    let create = schema("create-match");
    let ok = serde_json::json!({"game": "conecta4", "seats": {"p0": "alice", "p1": {"bot": "default"}, "p2": {"agent": "default"}},
                                "handover": {"kind": "forfeit", "afterMs": 30000}, "expiry": {"unjoinedMs": 0, "idleMs": 3600000}});
    assert!(create.is_valid(&ok), "{:?}", create.iter_errors(&ok).map(|e| e.to_string()).collect::<Vec<_>>());
    assert!(!create.is_valid(&serde_json::json!({"game": "conecta4", "seats": {}, "colour": "red"})));
    let problem = schema("problem");
    assert!(
        problem.is_valid(&serde_json::json!({"code": "INVALID_SEATS", "message": "seats.p1: …", "field": "seats.p1"}))
    );
    assert!(!problem.is_valid(&serde_json::json!({"code": "X"})));
    let summary = schema("match-summary");
    let finished = serde_json::json!({
        "matchId": "0b6e9c1e-7a4e-4c55-9a3e-2f1d3c4b5a69", "game": {"id": "conecta4", "rulesVersion": "1.0.0"},
        "gameVersion": "1.0.0", "rulesDigest": "d", "package": null, "status": "finished", "revision": 9,
        "seats": [
            {"seat": "p0", "controller": {"kind": "human", "principal": "alice"}, "status": "active", "moves": {"own": 4, "standIn": 0}},
            {"seat": "p1", "controller": {"kind": "handover", "principal": "bob", "profile": "default"}, "status": "active",
             "moves": {"own": 2, "standIn": 3}}
        ],
        "result": {"kind": "completed", "reasonCode": "line", "participants": {"p0": {"outcome": "win"}, "p1": {"outcome": "loss"}}},
        "createdMs": 1_796_551_200_000_i64
    });
    assert!(
        summary.is_valid(&finished),
        "{:?}",
        summary.iter_errors(&finished).map(|e| e.to_string()).collect::<Vec<_>>()
    );
}
