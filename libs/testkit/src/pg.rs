//! The shared PostgreSQL test server and a unique schema per test on it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

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

/// A schema of its own on the test server ([`pg_url`]), so tests run in parallel.
///
/// [`TestSchema::drop_schema`] removes it at the end of a test that passed; a failed test
/// never gets there and keeps its schema (`<prefix>_<test>_<pid>_…`) for inspection.
pub struct TestSchema {
    admin: PgConnection,
    name: String,
    options: PgConnectOptions,
}

impl TestSchema {
    /// Creates `<prefix>_<test>_<pid>_<n>_<nanos>` on the test server (failing, with how to
    /// start it, when the server is down).
    pub async fn create(prefix: &str, test: &str) -> TestSchema {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let url = pg_url();
        let mut admin = pg_admin(&url).await;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let short: String = test.chars().take(28).collect();
        let name = format!("{prefix}_{short}_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
            .execute(&mut admin)
            .await
            .expect("create the test schema");
        let options = url.parse::<PgConnectOptions>().expect("a postgres url").options([("search_path", &name)]);
        TestSchema { admin, name, options }
    }

    /// A database URL that selects this schema (for processes started by the test, such
    /// as `juegoland dev --database-url`).
    pub fn url(&self) -> String {
        let base = pg_url();
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}options[search_path]={}", self.name)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connection options whose `search_path` is this schema.
    pub fn options(&self) -> PgConnectOptions {
        self.options.clone()
    }

    /// Drops the schema and everything in it; call it last, once the test has passed (close
    /// the pools using it first).
    pub async fn drop_schema(mut self) {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA \"{}\" CASCADE", self.name)))
            .execute(&mut self.admin)
            .await
            .expect("drop the test schema");
        let _ = self.admin.close().await;
    }
}
