//! PostgreSQL outages on a private throwaway server (`initdb` into a temp dir, `pg_ctl` on a
//! free port; about a second), which the test crashes and restarts: a commit that meets an
//! outage is `Unavailable`, leaves nothing half-written, and succeeds when retried.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use juegoland_store::{PgStore, Store, StoreError};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use uuid::Uuid;

use crate::backends::TempDir;
use crate::game::Game;

/// A PostgreSQL server of our own, stopped (and its files removed) when dropped.
struct ThrowawayPg {
    root: TempDir,
    bin: PathBuf,
    port: u16,
    /// `initdb` and `postgres` refuse to run as root; as root, run them as `postgres`.
    as_postgres: bool,
}

impl ThrowawayPg {
    fn start() -> ThrowawayPg {
        let root = TempDir::new("pg");
        let as_postgres = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        if as_postgres {
            run(Command::new("chown").arg("postgres:").arg(root.path()), "chown the temp dir to postgres");
        }
        let pg = ThrowawayPg { bin: pg_bin(), port: free_port(), root, as_postgres };
        let data = pg.data();
        run(
            pg.command("initdb").args(["-A", "trust", "-U", "postgres", "-N", "-E", "UTF8", "-D"]).arg(&data),
            "initdb",
        );
        pg.pg_ctl_start();
        pg
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn pg_ctl_start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            self.port,
            self.root.path().display()
        );
        let log = self.root.path().join("postgres.log");
        let mut c = self.command("pg_ctl");
        c.arg("-D").arg(self.data()).arg("-l").arg(&log).args(["-w", "-t", "30", "-o", &options, "start"]);
        if !c.status().is_ok_and(|s| s.success()) {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("pg_ctl start failed; server log:\n{log}");
        }
    }

    /// Crashes the server (`-m immediate`: no clean shutdown, as on a node failure).
    fn crash(&self) {
        run(self.command("pg_ctl").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]), "pg_ctl stop");
    }
}

impl Drop for ThrowawayPg {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]).output();
    }
}

fn run(c: &mut Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The newest PostgreSQL server binaries on this machine.
fn pg_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("JUEGOLAND_TEST_PG_BIN") {
        return bin.into();
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin; install postgresql or set JUEGOLAND_TEST_PG_BIN")
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

#[track_caller]
fn assert_unavailable<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "expected Unavailable, got {result:?}");
}

#[tokio::test]
async fn outages_are_unavailable_and_leave_nothing_half_committed() {
    let pg = ThrowawayPg::start();
    let options: PgConnectOptions = pg.url().parse().unwrap();
    let pool = PgPoolOptions::new().max_connections(4).acquire_timeout(Duration::from_secs(1));
    let store = PgStore::connect_with(pool, options).await.expect("connect the throwaway server");

    let id = Uuid::from_u128(0x0bad_0474);
    let (mut game, create) = Game::create(id);
    store.commit(&create).await.unwrap();
    let first = game.drop_disc(0);
    store.commit(&first).await.unwrap();
    let stored_before = store.load(id).await.unwrap();
    let undispatched_before = store.undispatched(100).await.unwrap();

    // 1. The server crashes in the MIDDLE of a commit: the state update is done and the
    //    receipt insert waits on a row another transaction holds.
    let pending = game.decide_drop(1);
    let receipt = pending.commit.receipt.clone().unwrap();
    let mut blocker = PgConnection::connect(&pg.url()).await.unwrap();
    sqlx::query("BEGIN").execute(&mut blocker).await.unwrap();
    sqlx::query("INSERT INTO receipts (match_id, principal, command_id, fingerprint, outcome, revision) VALUES ($1, $2, $3, 'x', '{}', 0)")
        .bind(receipt.key.match_id)
        .bind(&receipt.key.principal)
        .bind(receipt.key.command_id)
        .execute(&mut blocker)
        .await
        .unwrap();
    let committing = tokio::spawn({
        let (store, commit) = (store.clone(), pending.commit.clone());
        async move { store.commit(&commit).await }
    });
    let waited = Instant::now();
    loop {
        // The only lock the commit can wait for is the blocker's receipt row (its state
        // update is compatible with the blocker's foreign-key share lock).
        let (waiting,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM pg_locks WHERE NOT granted").fetch_one(&mut blocker).await.unwrap();
        if waiting > 0 {
            break;
        }
        if waited.elapsed() > Duration::from_secs(10) {
            let activity: Vec<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT state, wait_event_type, query FROM pg_stat_activity WHERE backend_type = 'client backend'",
            )
            .fetch_all(&mut blocker)
            .await
            .unwrap();
            panic!(
                "the commit never reached the receipt insert: {activity:#?}; commit finished: {}",
                committing.is_finished()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pg.crash();
    assert_unavailable(committing.await.unwrap());
    drop(blocker);

    // 2. A commit while the server is down.
    assert_unavailable(store.commit(&pending.commit).await);
    assert_unavailable(store.load(id).await);

    // 3. After the restart nothing of either attempt is there, and the same commit succeeds.
    pg.pg_ctl_start();
    assert_eq!(store.load(id).await.unwrap(), stored_before, "half a commit survived");
    assert_eq!(store.receipt(&receipt.key).await.unwrap(), None);
    assert_eq!(store.log(id).await.unwrap().len(), 2);
    assert_eq!(store.undispatched(100).await.unwrap(), undispatched_before);
    store.commit(&pending.commit).await.expect("the retried commit");
    let second = game.advance(pending);
    assert_eq!(store.load(id).await.unwrap().as_ref(), second.state.as_deref());
    assert_eq!(store.receipt(&receipt.key).await.unwrap(), Some(receipt));
    store.close().await;
}
