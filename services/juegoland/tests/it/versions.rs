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
    package_of(dir, "1.1.0", "1.1.0")
}

/// The shipped package as package `version` over rules `rules_version`.
fn package_of(dir: &Path, version: &str, rules_version: &str) -> PathBuf {
    let package = dir.join(format!("conecta4-{version}"));
    copy_dir(&shipped_package(), &package);
    let path = package.join("game.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["version"] = json!(version);
    manifest["rules"]["version"] = json!(rules_version);
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

/// The platform lists the published versions (`GET /v1/packages/{id}`) and creates matches
/// of the one it chooses (`packageVersion`), or lets the engine choose: the newest
/// publication of the rules asked for (a visual fix 1.0.1 over rules 1.0.0), else of the
/// newest rules it runs. A choice that names nothing is refused with the field it is about.
#[tokio::test]
async fn the_platform_lists_published_versions_and_creates_matches_of_one() {
    let temp = TempDir::new("list-versions");
    let (packages, data) = (temp.path().join("registry"), temp.path().join("data"));
    std::fs::create_dir_all(&data).unwrap();
    publish(&packages, shipped_package());
    let addr = start_dev(&data, &packages).await;
    let listed = |versions: &[(&str, &str)]| {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(v, r)| json!({ "version": v, "kind": "game", "rulesVersion": r, "lockDigest": lock_digest(&packages, v) }))
            .collect();
        json!({ "id": "conecta4", "versions": versions })
    };
    assert_eq!(http(&addr, "GET", "/v1/packages/conecta4", None).await, (200, listed(&[("1.0.0", "1.0.0")])));
    let created = |body: &Value| (body["game"]["rulesVersion"].clone(), body["package"]["version"].clone());
    assert_eq!(created(&create_with(&addr, json!({})).await), (json!("1.0.0"), json!("1.0.0")));

    // A visual fix over the same rules, and the next rules version, are published while the
    // server runs; the list shows them at once, newest first.
    publish(&packages, package_of(temp.path(), "1.0.1", "1.0.0"));
    publish(&packages, package_1_1(temp.path()));
    let all = listed(&[("1.1.0", "1.1.0"), ("1.0.1", "1.0.0"), ("1.0.0", "1.0.0")]);
    assert_eq!(http(&addr, "GET", "/v1/packages/conecta4", None).await, (200, all));

    let cases = [
        (json!({}), ("1.1.0", "1.1.0")),
        (json!({ "rulesVersion": "1.0.0" }), ("1.0.0", "1.0.1")),
        (json!({ "packageVersion": "1.0.0" }), ("1.0.0", "1.0.0")),
        (json!({ "rulesVersion": "1.0.0", "packageVersion": "1.0.1" }), ("1.0.0", "1.0.1")),
    ];
    for (choice, (rules, package)) in cases {
        let body = create_with(&addr, choice.clone()).await;
        assert_eq!(created(&body), (json!(rules), json!(package)), "{choice}: {body}");
        assert_eq!(body["package"]["lockDigest"], lock_digest(&packages, package), "{choice}: {body}");
    }
    let refusals = [
        (json!({ "packageVersion": "9.9.9" }), 404, "UNKNOWN_PACKAGE_VERSION", "packageVersion"),
        (json!({ "rulesVersion": "1.0.0", "packageVersion": "1.1.0" }), 400, "VERSION_MISMATCH", "packageVersion"),
        (json!({ "rulesVersion": "9.9.9" }), 404, "UNKNOWN_RULES_VERSION", "rulesVersion"),
    ];
    for (choice, status, code, field) in refusals {
        let (got, answer) = http(&addr, "POST", "/v1/matches", Some(creation(&choice))).await;
        assert_eq!(
            (got, answer["code"].as_str(), answer["field"].as_str()),
            (status, Some(code), Some(field)),
            "{answer}"
        );
    }
    // The catalog names each rules version by its newest publication.
    let (_, catalog) = http(&addr, "GET", "/v1/games", None).await;
    let entry = |rules: &str| {
        catalog
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == "conecta4" && g["rulesVersion"] == rules)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        (entry("1.0.0")["packageVersion"].as_str(), entry("1.1.0")["packageVersion"].as_str()),
        (Some("1.0.1"), Some("1.1.0"))
    );
    assert_eq!(entry("1.0.0")["names"], json!({ "en": "Connect Four", "es": "Conecta 4" }), "{catalog}");
    let hundido = catalog.as_array().unwrap().iter().find(|g| g["id"] == "hundido").unwrap();
    assert_eq!((&hundido["names"], &hundido["packageVersion"]), (&Value::Null, &Value::Null), "unpublished: {hundido}");
    let (status, answer) = http(&addr, "GET", "/v1/packages/hundido", None).await;
    assert_eq!((status, answer["code"].as_str()), (404, Some("NOT_FOUND")), "an unpublished game lists nothing");
}

/// Creates a Conecta 4 match with the version fields of `choice`; the created answer.
async fn create_with(addr: &str, choice: Value) -> Value {
    let (status, created) = http(addr, "POST", "/v1/matches", Some(creation(&choice))).await;
    assert_eq!(status, 201, "{created}");
    created
}

/// The body of a Conecta 4 creation with the version fields of `choice`.
fn creation(choice: &Value) -> Value {
    let mut body = json!({ "game": "conecta4", "seats": { "p0": "alice", "p1": "bob" } });
    body.as_object_mut().unwrap().extend(choice.as_object().unwrap().clone());
    body
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

/// In the cluster the router lists the registry's versions and forwards the choice; the
/// owning node resolves it against the same registry and pins it (the choice and the
/// created game cross the gRPC hop).
#[tokio::test]
async fn a_cluster_lists_published_versions_and_pins_the_one_chosen() {
    let temp = TempDir::new("cluster-versions");
    let packages = temp.path().join("registry");
    publish(&packages, shipped_package());
    publish(&packages, package_of(temp.path(), "1.0.1", "1.0.0"));
    let registry = packages.to_str().unwrap();
    let cluster = crate::harness::Cluster::start_with_env("versions", 2, 1, &[("JUEGOLAND_REGISTRY", registry)]).await;
    let addr = cluster.routers[0].http.trim_start_matches("http://").to_owned();
    let (status, listed) = http(&addr, "GET", "/v1/packages/conecta4", None).await;
    let versions: Vec<&str> =
        listed["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!((status, versions), (200, vec!["1.0.1", "1.0.0"]), "{listed}");
    for (choice, package) in [(json!({}), "1.0.1"), (json!({ "packageVersion": "1.0.0" }), "1.0.0")] {
        let created = create_with(&addr, choice.clone()).await;
        assert_eq!(created["game"], json!({ "id": "conecta4", "rulesVersion": "1.0.0" }), "{created}");
        assert_eq!(created["package"]["version"], package, "{choice}: {created}");
        assert_eq!(created["package"]["lockDigest"], lock_digest(&packages, package), "{created}");
        // The platform reads it back through the router, from the owning node.
        let path = format!("/v1/matches/{}", created["matchId"].as_str().unwrap());
        let (status, read) = http(&addr, "GET", &path, None).await;
        assert_eq!(status, 200, "{read}");
        assert_eq!((&read["package"], read["gameVersion"].as_str()), (&created["package"], Some(package)), "{read}");
        assert_eq!(read["seats"][1]["controller"], json!({ "kind": "human", "principal": "bob" }), "{read}");
    }
    // The router lists them from the cluster's PostgreSQL, newest first.
    let (status, listed) = http(&addr, "GET", "/v1/matches?principal=alice&game=conecta4", None).await;
    let versions: Vec<&str> = listed["matches"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["gameVersion"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!((status, versions), (200, vec!["1.0.0", "1.0.1"]), "{listed}");
    // The routers' gRPC lists the same as their HTTP.
    let mut client = cluster.client(0).await;
    let request = juegoland_rpc::pb::ListMatchesRequest {
        principal: "alice".into(),
        game: "conecta4".into(),
        ..Default::default()
    };
    let page = juegoland_rpc::match_page(client.list_matches(request).await.expect("ListMatches").into_inner());
    assert_eq!(serde_json::to_value(page.expect("a page")).unwrap(), listed, "gRPC and HTTP list alike");
    let refused = client
        .list_matches(juegoland_rpc::pb::ListMatchesRequest { limit: 500, ..Default::default() })
        .await
        .expect_err("a limit out of range");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    // And the feed tells both creations, from the cluster's PostgreSQL.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let created: Vec<Value> = loop {
        let (status, feed) = http(&addr, "GET", "/v1/feed", None).await;
        assert_eq!(status, 200, "{feed}");
        let events: Vec<Value> = feed["events"].as_array().unwrap().clone();
        if events.len() >= 2 || std::time::Instant::now() > deadline {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let kinds: Vec<(&str, &str)> =
        created.iter().map(|e| (e["kind"].as_str().unwrap(), e["match"]["gameVersion"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("created", "1.0.1"), ("created", "1.0.0")]);
    let read = client.read_feed(juegoland_rpc::pb::ReadFeedRequest::default()).await.expect("ReadFeed");
    let fed = juegoland_rpc::feed_page(read.into_inner()).expect("a feed page");
    assert_eq!(serde_json::to_value(&fed.events).unwrap(), Value::Array(created.clone()), "gRPC and HTTP feed alike");
    let (status, refused) =
        http(&addr, "POST", "/v1/matches", Some(creation(&json!({ "packageVersion": "2.0.0" })))).await;
    assert_eq!((status, refused["code"].as_str()), (404, Some("UNKNOWN_PACKAGE_VERSION")), "{refused}");
    cluster.stop().await;
}
