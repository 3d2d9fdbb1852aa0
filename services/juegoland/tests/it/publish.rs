//! `juegoland publish DIR`: the real binary publishes the shipped libraries and a game into a
//! registry directory, and refuses a missing dependency and a second publication of one
//! version with the step that failed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use juegoland_testkit::TempDir;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn publish(registry: &Path, dir: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .arg("publish")
        .arg(workspace().join(dir))
        .arg("--registry")
        .arg(registry)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run juegoland publish")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn publish_a_game_after_its_libraries_and_never_twice() {
    let temp = TempDir::new("publish");
    let registry = temp.path().join("registry");

    let early = publish(&registry, "libs/games/solitario/package");
    assert!(!early.status.success(), "solitario needs its libraries published first");
    let stderr = text(&early.stderr);
    assert!(stderr.contains("publish step 1") && stderr.contains("playing-cards@1.0.0 is not published"), "{stderr}");

    for library in ["libs/packages/libraries/playing-cards", "libs/packages/libraries/cards-poker"] {
        let out = publish(&registry, library);
        assert!(out.status.success(), "{library}: {}", text(&out.stderr));
    }
    let out = publish(&registry, "libs/games/solitario/package");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("published solitario@1.0.0 (game) in "), "{stdout}");
    let lock_digest =
        stdout.lines().find_map(|l| l.strip_prefix("lock digest    ")).expect("the lock digest is printed");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.join("solitario/1.0.0/publication.json")).unwrap()).unwrap();
    assert_eq!(record["lockDigest"], lock_digest);
    assert!(registry.join("solitario/1.0.0/lock.json").is_file());

    let again = publish(&registry, "libs/games/solitario/package");
    assert!(!again.status.success());
    let stderr = text(&again.stderr);
    assert!(stderr.contains("publish step 7") && stderr.contains("already published"), "{stderr}");
}

/// Brisca, La Oca and Serpientes publish through the binary after their libraries
/// (`spanish-cards` and its art, `cards-spanish`; `board-games`), each checked against the
/// module compiled in.
#[test]
fn publish_the_card_and_dice_games_after_their_component_libraries() {
    let temp = TempDir::new("publish-card-dice");
    let registry = temp.path().join("registry");
    let early = publish(&registry, "libs/games/oca/package");
    assert!(!early.status.success(), "oca needs board-games published first");
    assert!(text(&early.stderr).contains("board-games@1.0.0 is not published"), "{}", text(&early.stderr));
    for library in [
        "libs/packages/libraries/spanish-cards",
        "libs/packages/libraries/cards-spanish",
        "libs/packages/libraries/board-games",
    ] {
        let out = publish(&registry, library);
        assert!(out.status.success(), "{library}: {}", text(&out.stderr));
    }
    for game in ["brisca", "oca", "serpientes"] {
        let out = publish(&registry, &format!("libs/games/{game}/package"));
        assert!(out.status.success(), "{game}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&format!("published {game}@1.0.0 (game) in ")), "{}", text(&out.stdout));
        assert!(registry.join(format!("{game}/1.0.0/lock.json")).is_file());
    }
}

/// `GET /v1/packages/{id}/{version}[/{path}]` serves the public subset of a published lock,
/// and nothing else: not a private rules file, not the lock's record.
#[tokio::test]
async fn the_dev_server_serves_only_public_package_files() {
    let temp = TempDir::new("public-packages");
    let registry = temp.path().join("registry");
    let out = publish(&registry, "libs/games/conecta4/package");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let server = crate::client::Server::start(&["--registry", registry.to_str().unwrap()]);
    let addr = server.addr.to_string();

    let (status, lock) = server.http("GET", "/v1/packages/conecta4/1.0.0", None).await;
    assert_eq!(status, 200, "{lock}");
    let files = lock["packages"][0]["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f["path"] == "images/icon.svg"));
    assert!(files.iter().all(|f| !f["path"].as_str().unwrap().starts_with("rules/")), "{lock}");

    let (status, head, body) =
        crate::client::http_raw(&addr, "GET", "/v1/packages/conecta4/1.0.0/images/icon.svg", b"").await;
    assert_eq!(status, 200);
    assert!(head.contains("content-type: image/svg+xml") && head.contains("immutable"), "{head}");
    let icon = std::fs::read(workspace().join("libs/games/conecta4/package/images/icon.svg")).unwrap();
    assert_eq!(body.as_bytes(), icon.as_slice());

    for path in ["rules/data.json", "lock.json", "publication.json", "images/nope.svg"] {
        let (status, body) = server.http("GET", &format!("/v1/packages/conecta4/1.0.0/{path}"), None).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("NOT_FOUND")), "{path}: {body}");
    }
    let (status, _) = server.http("GET", "/v1/packages/conecta4/9.9.9", None).await;
    assert_eq!(status, 404);
}

/// A match created on a published game pins the lock digest of its publication (the
/// creation answers it, with the rules digest); after a restart the match loads only while
/// that exact publication is in the registry: moved away, the match is refused with a
/// message naming the package; put back, it plays on.
#[tokio::test]
async fn a_match_pins_its_published_package_and_loads_only_with_it() {
    let temp = TempDir::new("pinned-package");
    let registry = temp.path().join("registry");
    let data = temp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let out = publish(&registry, "libs/games/conecta4/package");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.join("conecta4/1.0.0/publication.json")).unwrap()).unwrap();
    let args = ["--registry", registry.to_str().unwrap()];

    let server = crate::client::Server::start_in(&data, &args);
    let (_, games) = server.http("GET", "/v1/games", None).await;
    let rules_digest = games.as_array().unwrap().iter().find(|g| g["id"] == "conecta4").unwrap()["rulesDigest"].clone();
    let seats = serde_json::json!({ "p0": "alice", "p1": "bob" });
    let (status, created) = server
        .http("POST", "/v1/matches", Some(serde_json::json!({ "game": "conecta4", "seats": seats, "config": {} })))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["rulesDigest"], rules_digest);
    assert_eq!(
        created["package"],
        serde_json::json!({ "id": "conecta4", "version": "1.0.0", "lockDigest": record["lockDigest"] })
    );
    let match_id = created["matchId"].as_str().unwrap().to_owned();
    let mut alice = server.connect("alice").await;
    assert_eq!(alice.sync(&match_id, "r1").await["type"], "game.snapshot");
    drop(alice);
    drop(server);

    let moved = temp.path().join("moved");
    std::fs::rename(registry.join("conecta4/1.0.0"), &moved).unwrap();
    let server = crate::client::Server::start_in(&data, &args);
    let mut alice = server.connect("alice").await;
    let refused = alice.sync(&match_id, "r2").await;
    assert_eq!(
        (refused["type"].as_str(), refused["code"].as_str()),
        (Some("game.error"), Some("INTERNAL")),
        "{refused}"
    );
    drop(alice);
    drop(server);

    std::fs::rename(&moved, registry.join("conecta4/1.0.0")).unwrap();
    let server = crate::client::Server::start_in(&data, &args);
    let mut alice = server.connect("alice").await;
    let snapshot = alice.sync(&match_id, "r3").await;
    assert_eq!(
        (snapshot["type"].as_str(), snapshot["revision"].as_u64()),
        (Some("game.snapshot"), Some(0)),
        "{snapshot}"
    );
}
