//! Test support shared by the integration tests of the crates that store to PostgreSQL.
//!
//! Owns: [`TempDir`], the freshness check of committed generated files ([`check_generated`]),
//! the shared test server ([`pg_url`], [`pg_admin`]), a unique schema per
//! test on it ([`TestSchema`]), and private servers that a test crashes and restarts
//! ([`ThrowawayPg`]), a webhook receiver on loopback ([`WebhookReceiver`]), and the network lab of the partition
//! tests ([`NetLab`]). Used only
//! under `[dev-dependencies]`.
//! Must not use: any other workspace crate (it sits below the crates whose tests use it,
//! so `juegoland-store` can dev-depend on it without a cycle), or any service.
//!
//! Which to choose:
//! - a test that needs PostgreSQL to be up and shared by many tests: [`TestSchema`] on the
//!   real server at `postgres://postgres@127.0.0.1:5432/test` (`JUEGOLAND_TEST_DATABASE_URL`
//!   overrides). A server that is down FAILS the test with the command that starts it: the
//!   tests never skip.
//! - a test that kills the server: [`ThrowawayPg`], started with the binaries under
//!   `/usr/lib/postgresql/*/bin` (`JUEGOLAND_TEST_PG_BIN` overrides); for Redis,
//!   [`PrivateRedis`] (`redis-server` on a free port).
//! - a test that partitions processes: [`NetLab`], one network namespace per process on a
//!   bridge of its own, with cuts that drop packets silently (root only: without it the test
//!   FAILS with what to do); [`ThrowawayPg::start_on`] and [`PrivateRedis::start_on`] put the
//!   servers in a lab [`Member`].

mod generated;
mod netlab;
mod pg;
mod process;
mod redis;
mod throwaway;
mod webhook;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub use generated::{UPDATE_ENV, check_generated};
pub use netlab::{Member, NetLab};
pub use pg::{DEFAULT_PG_URL, TestSchema, pg_admin, pg_url};
pub use process::announced_line;
pub use redis::PrivateRedis;
pub use throwaway::{ThrowawayPg, free_port, free_port_block, pg_bin, run};
pub use webhook::{Answer, Received, WebhookReceiver};

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory, `juegoland-<label>-<pid>-<n>`.
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "juegoland-{label}-{}-{}",
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
