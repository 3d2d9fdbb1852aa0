//! A private PostgreSQL server that a test crashes and restarts: `initdb` into a temp dir,
//! `pg_ctl` on a free port (about a second to start).

use std::path::PathBuf;
use std::process::Command;

use crate::{Member, TempDir};

/// A PostgreSQL server of our own, stopped (and its files removed) when dropped.
pub struct ThrowawayPg {
    root: TempDir,
    bin: PathBuf,
    port: u16,
    /// `initdb` and `postgres` refuse to run as root; as root, run them as `postgres`.
    as_postgres: bool,
    /// Where the server runs: the root namespace on 127.0.0.1, or a lab member's namespace
    /// on its address.
    place: Option<Member>,
}

impl ThrowawayPg {
    /// Initializes and starts a server (trust authentication, no fsync) on a free port.
    pub fn start() -> ThrowawayPg {
        Self::start_at(None)
    }

    /// The same, inside a [`crate::NetLab`] member's namespace, listening on its address.
    pub fn start_on(member: &Member) -> ThrowawayPg {
        Self::start_at(Some(member.clone()))
    }

    fn start_at(place: Option<Member>) -> ThrowawayPg {
        let root = TempDir::new("pg");
        let as_postgres = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        if as_postgres {
            run(Command::new("chown").arg("postgres:").arg(root.path()), "chown the temp dir to postgres");
        }
        let pg = ThrowawayPg { bin: pg_bin(), port: free_port(), root, as_postgres, place };
        let data = pg.data();
        run(
            pg.command("initdb").args(["-A", "trust", "-U", "postgres", "-N", "-E", "UTF8", "-D"]).arg(&data),
            "initdb",
        );
        if let Some(member) = &pg.place {
            // initdb trusts loopback only; the lab's clients come from its /24.
            let hba = data.join("pg_hba.conf");
            let mut text = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
            let octets = member.addr().octets();
            text.push_str(&format!("host all all {}.{}.{}.0/24 trust\n", octets[0], octets[1], octets[2]));
            std::fs::write(&hba, text).expect("write pg_hba.conf");
        }
        pg.restart();
        pg
    }

    /// The data directory.
    pub fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// `postgres://postgres@<address>:<port>/postgres` (127.0.0.1, or the lab member's
    /// address).
    pub fn url(&self) -> String {
        format!("postgres://postgres@{}:{}/postgres", self.host(), self.port)
    }

    fn host(&self) -> std::net::Ipv4Addr {
        self.place.as_ref().map_or(std::net::Ipv4Addr::LOCALHOST, Member::addr)
    }

    /// A command running `program` from the server binaries (as `postgres` when root; in
    /// the lab member's namespace when it has one).
    pub fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut c = match &self.place {
            Some(member) => member.command(if self.as_postgres { "runuser".as_ref() } else { program.as_os_str() }),
            None => Command::new(if self.as_postgres { "runuser".as_ref() } else { program.as_os_str() }),
        };
        if self.as_postgres {
            c.args(["-u", "postgres", "--"]).arg(program);
        }
        c
    }

    /// Starts the (stopped or crashed) server again on the same port and waits until it
    /// accepts connections; panics with the server log if it does not.
    pub fn restart(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses={} -c fsync=off -c full_page_writes=off",
            self.port,
            self.root.path().display(),
            self.host(),
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

/// A TCP port on 127.0.0.1 that was free a moment ago, for a server a test may restart on
/// the same port.
pub fn free_port() -> u16 {
    free_port_block(&[0])
}

/// A base port P such that P + offset was free a moment ago for every offset, for a
/// launcher that derives several ports from one (`juegoland cluster --node-port`).
///
/// The ports come from below the kernel's ephemeral range, so an outgoing connection of a
/// concurrent test can never hold a port that a restarted server needs again (which
/// `bind(":0")` allows: its ports are ephemeral ones). Candidates start at a point that
/// differs per call and per process, and are checked by binding.
pub fn free_port_block(offsets: &[u16]) -> u16 {
    use std::hash::{BuildHasher, Hasher};
    const LOW: u16 = 10_000;
    let high = ephemeral_floor().saturating_sub(offsets.iter().copied().max().unwrap_or(0) + 1);
    assert!(high > LOW + 1000, "no room for test ports below the ephemeral range");
    let mut seed = std::collections::hash_map::RandomState::new().build_hasher();
    seed.write_u32(std::process::id());
    let span = u64::from(high - LOW);
    let start = seed.finish() % span;
    (0..span)
        .filter_map(|i| u16::try_from((start + i) % span).ok().map(|at| LOW + at))
        .find(|&base| offsets.iter().all(|o| std::net::TcpListener::bind(("127.0.0.1", base + o)).is_ok()))
        .expect("a free block of ports")
}

/// The first port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_floor() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}
