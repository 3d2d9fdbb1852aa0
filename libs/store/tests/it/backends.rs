//! The backends the suite runs against, and where their data lives during a test.
//!
//! PostgreSQL tests use the REAL server at `postgres://postgres@127.0.0.1:5432/test`
//! (`JUEGOLAND_TEST_DATABASE_URL` overrides); each test gets its own schema, so tests run
//! in parallel and leave nothing behind when they pass (a failed test keeps its schema,
//! `store_<test>_<pid>_…`, for inspection). A server that is down fails the
//! tests with the command that starts it: they never skip.

use std::sync::Arc;
use std::time::Duration;

use juegoland_store::{MemoryStore, PgStore, SqliteStore, Store};
use juegoland_testkit::{TempDir, TestSchema};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::suite::Backend;

pub struct MemoryBackend(Arc<MemoryStore>);

#[async_trait::async_trait]
impl Backend for MemoryBackend {
    async fn start(_test: &str) -> Self {
        MemoryBackend(Arc::new(MemoryStore::new()))
    }

    fn store(&self) -> Arc<dyn Store> {
        self.0.clone()
    }

    fn owned(&self, owner: &str) -> Arc<dyn Store> {
        Arc::new(MemoryStore::clone(&self.0).owned_by(owner))
    }

    async fn reopen(&mut self) {
        unreachable!("the memory store is not durable; it runs only `store_suite!`")
    }

    async fn finish(self) {}
}

pub struct SqliteBackend {
    dir: TempDir,
    store: Arc<SqliteStore>,
}

impl SqliteBackend {
    /// The database file.
    pub fn path(&self) -> &std::path::Path {
        self.store.path()
    }
}

#[async_trait::async_trait]
impl Backend for SqliteBackend {
    async fn start(test: &str) -> Self {
        let dir = TempDir::new(&format!("sqlite-{test}"));
        let store = SqliteStore::open(dir.path()).await.expect("open the sqlite store");
        assert!(store.path().starts_with(dir.path()));
        SqliteBackend { dir, store: Arc::new(store) }
    }

    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    fn owned(&self, owner: &str) -> Arc<dyn Store> {
        Arc::new(SqliteStore::clone(&self.store).owned_by(owner))
    }

    async fn reopen(&mut self) {
        self.store.close().await;
        self.store = Arc::new(SqliteStore::open(self.dir.path()).await.expect("reopen the sqlite store"));
    }

    async fn finish(self) {
        self.store.close().await;
    }
}

pub struct PgBackend {
    schema: TestSchema,
    store: Arc<PgStore>,
}

impl PgBackend {
    async fn connect(options: &PgConnectOptions) -> PgStore {
        let pool = PgPoolOptions::new().max_connections(8).acquire_timeout(Duration::from_secs(10));
        PgStore::connect_with(pool, options.clone()).await.expect("connect the pg store")
    }

    /// A handle owned by `owner` sharing this store's pool and group committer.
    pub fn owned_pg(&self, owner: &str) -> PgStore {
        PgStore::clone(&self.store).owned_by(owner)
    }

    /// Connection options for this test's schema (for a connection of the test's own).
    pub fn options(&self) -> PgConnectOptions {
        self.schema.options()
    }
}

#[async_trait::async_trait]
impl Backend for PgBackend {
    async fn start(test: &str) -> Self {
        let schema = TestSchema::create("store", test).await;
        let store = Arc::new(Self::connect(&schema.options()).await);
        PgBackend { schema, store }
    }

    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    fn owned(&self, owner: &str) -> Arc<dyn Store> {
        Arc::new(self.owned_pg(owner))
    }

    async fn reopen(&mut self) {
        self.store.close().await;
        self.store = Arc::new(Self::connect(&self.schema.options()).await);
    }

    async fn finish(self) {
        self.store.close().await;
        self.schema.drop_schema().await;
    }
}
