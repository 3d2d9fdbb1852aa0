//! The backends the suite runs against, and where their data lives during a test.
//!
//! PostgreSQL tests use the REAL server at `postgres://postgres@127.0.0.1:5432/test`
//! (`JUEGOLAND_TEST_DATABASE_URL` overrides); each test gets its own schema, so tests run
//! in parallel and leave nothing behind when they pass (a failed test keeps its schema,
//! `store_<test>_<pid>_…`, for inspection). A server that is down fails the
//! tests with the command that starts it: they never skip.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use juegoland_store::{MemoryStore, PgStore, SqliteStore, Store};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

use crate::suite::Backend;

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "juegoland-store-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct MemoryBackend(Arc<MemoryStore>);

#[async_trait::async_trait]
impl Backend for MemoryBackend {
    async fn start(_test: &str) -> Self {
        MemoryBackend(Arc::new(MemoryStore::new()))
    }

    fn store(&self) -> Arc<dyn Store> {
        self.0.clone()
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

    async fn reopen(&mut self) {
        self.store.close().await;
        self.store = Arc::new(SqliteStore::open(self.dir.path()).await.expect("reopen the sqlite store"));
    }

    async fn finish(self) {
        self.store.close().await;
    }
}

pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The server the PostgreSQL tests use.
pub fn pg_url() -> String {
    std::env::var("JUEGOLAND_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_string())
}

/// Connects to the test server, or fails the test saying how to start it.
pub async fn pg_admin(url: &str) -> PgConnection {
    match tokio::time::timeout(Duration::from_secs(10), PgConnection::connect(url)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => panic!(
            "the PostgreSQL tests need a running server at {url} ({e}).\n\
             Start the local one with:\n    pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n\
             check it with `pg_isready -h 127.0.0.1` and `psql -h 127.0.0.1 -U postgres -d test -c 'select 1'`,\n\
             create the database if it is missing with `createdb -h 127.0.0.1 -U postgres test`,\n\
             or point JUEGOLAND_TEST_DATABASE_URL at another server"
        ),
        Err(_) => panic!("connecting to PostgreSQL at {url} took over 10 s; is the server healthy?"),
    }
}

pub struct PgBackend {
    admin: PgConnection,
    schema: String,
    options: PgConnectOptions,
    store: Arc<PgStore>,
}

impl PgBackend {
    async fn connect(options: &PgConnectOptions) -> PgStore {
        let pool = PgPoolOptions::new().max_connections(8).acquire_timeout(Duration::from_secs(10));
        PgStore::connect_with(pool, options.clone()).await.expect("connect the pg store")
    }
}

#[async_trait::async_trait]
impl Backend for PgBackend {
    async fn start(test: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let url = pg_url();
        let mut admin = pg_admin(&url).await;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let short: String = test.chars().take(28).collect();
        let schema = format!("store_{short}_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
            .execute(&mut admin)
            .await
            .expect("create the test schema");
        let options = url.parse::<PgConnectOptions>().expect("a postgres url").options([("search_path", &schema)]);
        let store = Arc::new(Self::connect(&options).await);
        PgBackend { admin, schema, options, store }
    }

    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    async fn reopen(&mut self) {
        self.store.close().await;
        self.store = Arc::new(Self::connect(&self.options).await);
    }

    async fn finish(mut self) {
        self.store.close().await;
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA \"{}\" CASCADE", self.schema)))
            .execute(&mut self.admin)
            .await
            .expect("drop the test schema");
        let _ = self.admin.close().await;
    }
}
