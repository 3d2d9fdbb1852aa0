//! Opening the embedded store: what is created, what is refused, and the data directory's
//! lock (one serving process per directory; readers beside it). The same lock between real
//! processes, including one that was killed, is tested on the binary
//! (`services/juegoland/tests/it/data_dir.rs`).

use juegoland_store::{LOCK_FILE, OpenError, PgStore, SQLITE_FILE, SqliteStore, Store};
use juegoland_testkit::{TempDir, TestSchema};
use uuid::Uuid;

use crate::game::Game;

#[tokio::test]
async fn opening_existing_data_creates_nothing_and_names_what_is_missing() {
    let dir = TempDir::new("open-existing");
    let typo = dir.path().join("typo");
    for err in
        [SqliteStore::open_existing(&typo).await.unwrap_err(), SqliteStore::open_reader(&typo).await.unwrap_err()]
    {
        assert!(matches!(err, OpenError::NoStore { why: "no such directory", .. }), "{err}");
        assert!(err.to_string().contains(&typo.display().to_string()), "the message names the path: {err}");
    }
    assert!(!typo.exists(), "nothing was created");

    let err = SqliteStore::open_existing(dir.path()).await.unwrap_err();
    assert!(matches!(err, OpenError::NoStore { why: "no database file", .. }), "{err}");
    assert!(!dir.path().join(SQLITE_FILE).exists());

    // A database file that is not a Juegoland store.
    rusqlite::Connection::open(dir.path().join(SQLITE_FILE)).unwrap().execute_batch("CREATE TABLE other (x)").unwrap();
    let err = SqliteStore::open_existing(dir.path()).await.unwrap_err();
    assert!(matches!(err, OpenError::NoStore { why: "no Juegoland schema", .. }), "{err}");

    // A real one opens, with what it holds.
    let store_dir = TempDir::new("open-existing-real");
    let store = SqliteStore::open(store_dir.path()).await.unwrap();
    let (_, create) = Game::create(Uuid::from_u128(7));
    store.commit(&create).await.unwrap();
    store.close().await;
    let again = SqliteStore::open_existing(store_dir.path()).await.unwrap();
    assert_eq!(again.match_ids().await.unwrap(), [Uuid::from_u128(7)]);
}

#[tokio::test]
async fn one_process_serves_a_data_directory_and_readers_read_beside_it() {
    let dir = TempDir::new("open-lock");
    let serving = SqliteStore::open(dir.path()).await.unwrap();
    for err in
        [SqliteStore::open(dir.path()).await.unwrap_err(), SqliteStore::open_existing(dir.path()).await.unwrap_err()]
    {
        match &err {
            OpenError::Locked { lock, holder, .. } => {
                assert_eq!(lock, &dir.path().join(LOCK_FILE));
                assert!(holder.starts_with(&format!("pid {} ", std::process::id())), "names the holder: {holder}");
            }
            other => panic!("expected Locked, got {other}"),
        }
        assert!(err.to_string().contains("in use by another process"), "{err}");
    }

    // A reader sees what the serving handle committed, and cannot write.
    let (mut game, create) = Game::create(Uuid::from_u128(8));
    serving.commit(&create).await.unwrap();
    let reader = SqliteStore::open_reader(dir.path()).await.unwrap();
    assert_eq!(reader.load(game.match_id()).await.unwrap().unwrap().revision(), 0);
    let commit = game.drop_disc(3);
    assert!(reader.commit(&commit).await.is_err(), "a reader does not commit");
    assert!(reader.claim_deadlines("r", i64::MAX, std::time::Duration::from_secs(1), 10).await.is_err());
    assert_eq!(serving.load(game.match_id()).await.unwrap().unwrap().revision(), 0);

    // Closing releases the lock; so does dropping the last clone.
    serving.close().await;
    let next = SqliteStore::open(dir.path()).await.expect("open after close");
    let clone = next.clone();
    drop(next);
    assert!(matches!(SqliteStore::open(dir.path()).await, Err(OpenError::Locked { .. })), "a clone still holds it");
    drop(clone);
    SqliteStore::open(dir.path()).await.expect("open after the last clone is dropped");
}

#[tokio::test]
async fn a_database_without_the_schema_is_not_a_store() {
    let schema = TestSchema::create("store", "connect_existing").await;
    let err = PgStore::connect_existing(&schema.url()).await.unwrap_err();
    assert!(matches!(err, OpenError::NoStore { .. }), "{err}");
    assert!(err.to_string().contains("no Juegoland schema"), "{err}");
    // Once migrated, it opens.
    PgStore::connect(&schema.url()).await.unwrap().close().await;
    PgStore::connect_existing(&schema.url()).await.unwrap().close().await;
    schema.drop_schema().await;
}
