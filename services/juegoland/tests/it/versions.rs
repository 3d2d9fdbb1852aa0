//! Versions side by side: Conecta 4's rules 1.0.0 and 1.1.0 (the centre opening rule) in one
//! registry and one package registry. A match created on 1.0.0 keeps its rules and its pinned
//! publication after 1.1.0 is published; a client negotiates complete tuples and gets
//! `INCOMPATIBLE_CLIENT` for a match whose tuple it does not accept.
//!
//! The catalog ships 1.0.0 only (new matches pin the newest registered version by default),
//! so this test runs `juegoland dev` in process with a registry that adds 1.1.0, and
//! publishes the 1.1.0 package made from the shipped 1.0.0 package with its versions bumped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use juegoland::publish::{PublishConfig, RegistryConfig};
use juegoland_testkit::TempDir;
use serde_json::{Value, json};

use crate::client::{Client, http};

fn shipped_package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../libs/games/conecta4/package")
}

/// The rules modules of the test: the catalog's and Conecta 4 1.1.0.
fn registry() -> juegoland_core::Registry {
    let mut registry = juegoland::registry().expect("the catalog");
    registry.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4V11)).expect("register conecta4 1.1.0");
    registry
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The shipped package with its package and rules versions set to 1.1.0.
fn package_1_1(dir: &Path) -> PathBuf {
    let package = dir.join("conecta4-1.1.0");
    copy_dir(&shipped_package(), &package);
    let path = package.join("game.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["version"] = json!("1.1.0");
    manifest["rules"]["version"] = json!("1.1.0");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    package
}

fn publish(registry: &Path, dir: PathBuf) {
    let config = PublishConfig { dir, registry: RegistryConfig { registry: registry.to_owned() } };
    juegoland::publish::run(config, &self::registry()).expect("publish");
}

fn lock_digest(registry: &Path, version: &str) -> Value {
    let record = std::fs::read(registry.join("conecta4").join(version).join("publication.json")).unwrap();
    serde_json::from_slice::<Value>(&record).unwrap()["lockDigest"].clone()
}

/// Starts `juegoland dev` in this process on a free port; its address.
async fn start_dev(data: &Path, packages: &Path) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let args = ["juegoland", "dev", "--http", &addr, "--data-dir", data.to_str().unwrap()];
    let cli = <juegoland::Cli as clap::Parser>::parse_from(
        args.into_iter().chain(["--registry", packages.to_str().unwrap()]),
    );
    let juegoland::Command::Dev(config) = cli.command else { unreachable!("a dev command") };
    tokio::spawn(juegoland::dev(config, registry()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if tokio::net::TcpStream::connect(&addr).await.is_ok() {
            return addr;
        }
        assert!(tokio::time::Instant::now() < deadline, "juegoland dev did not listen on {addr}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn create(addr: &str, rules_version: &str) -> Value {
    let body = json!({ "game": "conecta4", "rulesVersion": rules_version, "seats": { "p0": "alice", "p1": "bob" }, "config": {} });
    let (status, created) = http(addr, "POST", "/v1/matches", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    created
}

async fn connect(addr: &str, principal: &str) -> Client {
    let (status, body) = http(addr, "POST", "/v1/dev/tokens", Some(json!({ "principal": principal }))).await;
    assert_eq!(status, 200, "{body}");
    Client::connect_to(addr, body["token"].as_str().unwrap()).await
}

fn tuple(rules_version: &str) -> Value {
    json!({ "id": "conecta4", "rulesVersion": rules_version, "viewSchemaVersion": 1, "eventSchemaVersion": 1 })
}

async fn sync(client: &mut Client, match_id: &str, request_id: &str, accept: &[&str]) -> Value {
    let accept: Vec<Value> = accept.iter().map(|v| tuple(v)).collect();
    client
        .send(&json!({ "protocolVersion": 1, "type": "game.sync", "requestId": request_id, "matchId": match_id, "accept": accept }))
        .await;
    loop {
        let answer = client.recv().await;
        if answer["requestId"] == request_id {
            return answer;
        }
    }
}

/// Drops `column` as `client`'s move at `revision`; the ack.
async fn drop_disc(client: &mut Client, match_id: &str, revision: u64, column: u64) -> Value {
    client.drop_disc(match_id, &crate::client::uuid(), revision, column).await;
    client.recv_type("game.ack").await.0
}

#[tokio::test]
async fn a_match_keeps_its_rules_version_after_a_newer_one_is_published() {
    let temp = TempDir::new("versions");
    let (packages, data) = (temp.path().join("registry"), temp.path().join("data"));
    std::fs::create_dir_all(&data).unwrap();
    publish(&packages, shipped_package());
    let addr = start_dev(&data, &packages).await;

    let old = create(&addr, "1.0.0").await;
    let old_lock = lock_digest(&packages, "1.0.0");
    assert_eq!(old["package"], json!({ "id": "conecta4", "version": "1.0.0", "lockDigest": old_lock }));
    let old_id = old["matchId"].as_str().unwrap();
    let mut alice = connect(&addr, "alice").await;
    let mut bob = connect(&addr, "bob").await;
    assert_eq!(sync(&mut alice, old_id, "a1", &["1.0.0"]).await["type"], "game.snapshot");
    assert_eq!(sync(&mut bob, old_id, "b1", &["1.0.0"]).await["type"], "game.snapshot");

    // 1.1.0 is published while the 1.0.0 match is being played.
    publish(&packages, package_1_1(temp.path()));
    let new_lock = lock_digest(&packages, "1.1.0");
    assert_ne!(new_lock, old_lock);

    // The 1.0.0 match goes on under 1.0.0: the centre opening is legal there.
    let ack = drop_disc(&mut alice, old_id, 0, 3).await;
    assert_eq!((ack["status"].as_str(), ack["revision"].as_u64()), (Some("applied"), Some(1)), "{ack}");
    let ack = drop_disc(&mut bob, old_id, 1, 3).await;
    assert_eq!(ack["status"], "applied", "{ack}");

    // A match created on 1.1.0 pins 1.1.0's publication and plays its rules.
    let new = create(&addr, "1.1.0").await;
    assert_eq!(new["package"], json!({ "id": "conecta4", "version": "1.1.0", "lockDigest": new_lock }));
    assert_ne!(new["rulesDigest"], old["rulesDigest"]);
    let new_id = new["matchId"].as_str().unwrap();
    // A client that knows only 1.0.0 cannot read a 1.1.0 match; one that lists both tuples
    // reads both.
    let refused = sync(&mut alice, new_id, "a2", &["1.0.0"]).await;
    assert_eq!((refused["type"].as_str(), refused["code"].as_str()), (Some("game.error"), Some("INCOMPATIBLE_CLIENT")));
    assert_eq!(refused["recovery"], "reload-client", "{refused}");
    let refused = sync(&mut alice, old_id, "a3", &["1.1.0"]).await;
    assert_eq!(refused["code"], "INCOMPATIBLE_CLIENT", "{refused}");
    let snapshot = sync(&mut alice, new_id, "a4", &["1.0.0", "1.1.0"]).await;
    assert_eq!(snapshot["type"], "game.snapshot", "{snapshot}");
    let offered: Vec<u64> = snapshot["actions"]
        .as_array()
        .map(|offers| offers.iter().filter_map(|o| o["payload"]["column"].as_u64()).collect())
        .unwrap_or_default();
    assert_eq!(offered, vec![0, 1, 2, 4, 5, 6], "1.1.0 offers no centre opening: {snapshot}");
    let ack = drop_disc(&mut alice, new_id, 0, 3).await;
    assert_eq!((ack["status"].as_str(), ack["code"].as_str()), (Some("rejected"), Some("ILLEGAL_ACTION")), "{ack}");
    let ack = drop_disc(&mut alice, new_id, 0, 2).await;
    assert_eq!(ack["status"], "applied", "{ack}");

    // And the old match still answers a 1.0.0 client, at the revision it reached.
    let snapshot = sync(&mut alice, old_id, "a5", &["1.0.0", "1.1.0"]).await;
    assert_eq!(
        (snapshot["type"].as_str(), snapshot["revision"].as_u64()),
        (Some("game.snapshot"), Some(2)),
        "{snapshot}"
    );
}

/// The state-migration admin operation: a match created and opened in the centre on 1.0.0
/// is migrated to 1.1.0 (validated, pinned to 1.1.0's publication, its backup kept), replays
/// with the rules each revision was decided by, is restored to exactly what it was, and a
/// restore after the match moved on is refused.
#[tokio::test]
async fn an_operator_migrates_a_match_to_1_1_0_and_restores_it() {
    use juegoland_core::{Decision, GameKey, SeatHolder};
    use juegoland_protocol::{Action, CommandEnvelope, Precondition};
    use juegoland_sdk::SplitMix64;
    use juegoland_store::Store;

    let temp = TempDir::new("migrate-match");
    let (packages, data) = (temp.path().join("registry"), temp.path().join("data"));
    publish(&packages, shipped_package());
    publish(&packages, package_1_1(temp.path()));
    let (old_lock, new_lock) = (lock_digest(&packages, "1.0.0"), lock_digest(&packages, "1.1.0"));
    let (old_lock, new_lock) = (old_lock.as_str().unwrap(), new_lock.as_str().unwrap());
    let store = juegoland_store::SqliteStore::open(&data).await.expect("open the store");
    let engine = juegoland::admin::engine(registry(), &RegistryConfig { registry: packages.clone() });

    let id = uuid::Uuid::from_u128(0x4d16_0001);
    let key = GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let seats = [("p0", "alice"), ("p1", "bob")].map(|(s, p)| (s.to_owned(), SeatHolder::Principal(p.to_owned())));
    let (pending, mut live) =
        engine.create(id, &key, seats.into_iter().collect(), &json!({}), 1_000, &mut SplitMix64(1)).unwrap();
    store.commit(&live.advance(pending)).await.unwrap();
    let drop = |live: &juegoland_core::LiveMatch, principal: &str, column: u64| {
        let revision = live.state().revision;
        let envelope = CommandEnvelope {
            match_id: id,
            command_id: uuid::Uuid::from_u128(0xc0de + u128::from(revision)),
            precondition: Precondition::Match { revision },
            action: Action { r#type: "drop".into(), payload: json!({ "column": column }) },
        };
        match engine.command(live, principal, &envelope, None, 2_000, &mut SplitMix64(2)) {
            Decision::Commit(p) if p.commit.state.is_some() => *p,
            _ => panic!("{principal} could not drop in column {column}"),
        }
    };
    let opening = drop(&live, "alice", 3);
    store.commit(&live.advance(opening)).await.unwrap();
    assert_eq!(store.pinned_to(old_lock).await.unwrap(), vec![id]);

    let backup = temp.path().join("backup.json");
    let m = juegoland::admin::migrate_match(&store, &engine, id, "1.1.0", &backup).await.expect("migrate");
    let stored = store.load(id).await.unwrap().expect("the match").snapshot;
    assert_eq!(stored, m.target);
    assert_eq!((stored.game.rules_version.as_str(), stored.revision), ("1.1.0", 1));
    assert_eq!(stored.package.as_ref().map(|p| p.lock_digest.as_str()), Some(new_lock));
    assert_eq!(store.pinned_to(new_lock).await.unwrap(), vec![id]);
    assert!(store.pinned_to(old_lock).await.unwrap().is_empty());
    let log = store.log(id).await.unwrap();
    juegoland_core::replay(&engine.registry, &stored, &log).expect("the migrated match replays");
    let again = juegoland::admin::migrate_match(&store, &engine, id, "1.1.0", &temp.path().join("again.json"))
        .await
        .expect_err("already migrated");
    assert!(again.to_string().contains("is already on rules 1.1.0"), "{again:#}");
    let unknown = temp.path().join("unknown.json");
    let err = juegoland::admin::migrate_match(&store, &engine, id, "2.0.0", &unknown).await.expect_err("no 2.0.0");
    assert!(err.to_string().contains("no rules module conecta4 2.0.0"), "{err:#}");
    assert!(!unknown.exists(), "a refused migration writes no backup");

    juegoland::admin::restore_match(&store, &engine, &backup).await.expect("restore");
    assert_eq!(store.load(id).await.unwrap().expect("the match").snapshot, m.source);
    assert_eq!(store.pinned_to(old_lock).await.unwrap(), vec![id]);

    // Migrated again, the match moves on under 1.1.0: its backup no longer restores it.
    let backup = temp.path().join("backup-2.json");
    juegoland::admin::migrate_match(&store, &engine, id, "1.1.0", &backup).await.expect("migrate again");
    let live = engine.restore(store.load(id).await.unwrap().unwrap()).unwrap();
    let mut live = live;
    let reply = drop(&live, "bob", 2);
    store.commit(&live.advance(reply)).await.unwrap();
    let err = juegoland::admin::restore_match(&store, &engine, &backup).await.expect_err("the match moved on");
    assert!(err.to_string().contains("no longer as it was migrated"), "{err:#}");
}

/// The binary's `migrate-match` runs the same operation over the catalog: Conecta 4 1.1.0 is
/// not in it, so the migration is refused by name, and nothing is written.
#[tokio::test]
async fn the_binary_refuses_a_migration_to_a_rules_version_it_does_not_have() {
    let temp = TempDir::new("migrate-cli");
    let data = temp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let server = crate::client::Server::start_in(&data, &[]);
    let match_id = server.create(json!({ "p0": "alice", "p1": "bob" })).await;
    drop(server);
    let backup = temp.path().join("backup.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_juegoland"))
        .args(["migrate-match", "--match", &match_id, "--rules-version", "1.1.0", "--data-dir"])
        .arg(&data)
        .arg("--backup")
        .arg(&backup)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run juegoland migrate-match");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("no rules module conecta4 1.1.0 is registered"), "{stderr}");
    assert!(!backup.exists());
}
