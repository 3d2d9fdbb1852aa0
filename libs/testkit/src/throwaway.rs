//! A private PostgreSQL server that a test crashes and restarts: `initdb` into a temp dir,
//! `pg_ctl` on a free port (about a second to start).

use std::path::PathBuf;
use std::process::Command;

use crate::TempDir;

/// A PostgreSQL server of our own, stopped (and its files removed) when dropped.
pub struct ThrowawayPg {
    root: TempDir,
    bin: PathBuf,
    port: u16,
    /// `initdb` and `postgres` refuse to run as root; as root, run them as `postgres`.
    as_postgres: bool,
}

impl ThrowawayPg {
    /// Initializes and starts a server (trust authentication, no fsync) on a free port.
    pub fn start() -> ThrowawayPg {
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
        pg.restart();
        pg
    }

    /// The data directory.
    pub fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A command running `program` from the server binaries (as `postgres` when root).
    pub fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Starts the (stopped or crashed) server again on the same port and waits until it
    /// accepts connections; panics with the server log if it does not.
    pub fn restart(&self) {
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
    pub fn crash(&self) {
        run(self.command("pg_ctl").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]), "pg_ctl stop");
    }
}

impl Drop for ThrowawayPg {
    fn drop(&mut self) {
        let _ = self.command("pg_ctl").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]).output();
    }
}

/// Runs `c` to completion; panics with its output, naming `what`, when it fails.
pub fn run(c: &mut Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The newest PostgreSQL server binaries on this machine (`JUEGOLAND_TEST_PG_BIN` overrides).
pub fn pg_bin() -> PathBuf {
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

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}
