//! A private `redis-server` on a free port, for tests that kill, freeze and restart it.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Member, TempDir, free_port};

/// PING in the Redis protocol, by hand: the readiness check needs nothing more.
async fn ping(host: std::net::Ipv4Addr, port: u16) -> Result<(), String> {
    let connect = tokio::net::TcpStream::connect((host, port));
    let mut s = tokio::time::timeout(Duration::from_secs(1), connect)
        .await
        .map_err(|_| "no answer to the connection".to_string())?
        .map_err(|e| e.to_string())?;
    s.write_all(b"*1\r\n$4\r\nPING\r\n").await.map_err(|e| e.to_string())?;
    let mut buf = [0u8; 7];
    tokio::time::timeout(Duration::from_secs(1), s.read_exact(&mut buf))
        .await
        .map_err(|_| "no answer to PING".to_string())?
        .map_err(|e| e.to_string())?;
    if &buf == b"+PONG\r\n" { Ok(()) } else { Err(format!("unexpected answer {buf:?}")) }
}

/// A `redis-server` of our own on a free port, for tests that kill it (no persistence, so a
/// restart comes back empty). Killed when dropped.
pub struct PrivateRedis {
    port: u16,
    dir: TempDir,
    child: Option<Child>,
    /// Where the server runs: the root namespace on 127.0.0.1, or a lab member's namespace
    /// on its address.
    place: Option<Member>,
}

impl PrivateRedis {
    pub async fn start() -> PrivateRedis {
        Self::start_at(None).await
    }

    /// The same, inside a [`crate::NetLab`] member's namespace, listening on its address.
    pub async fn start_on(member: &Member) -> PrivateRedis {
        Self::start_at(Some(member.clone())).await
    }

    async fn start_at(place: Option<Member>) -> PrivateRedis {
        let mut server = PrivateRedis { port: free_port(), dir: TempDir::new("redis"), child: None, place };
        server.restart().await;
        server
    }

    pub fn url(&self) -> String {
        format!("redis://{}:{}/", self.host(), self.port)
    }

    fn host(&self) -> std::net::Ipv4Addr {
        self.place.as_ref().map_or(std::net::Ipv4Addr::LOCALHOST, Member::addr)
    }

    /// Starts the (killed) server again on the same port and waits until it answers.
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "the private redis-server is already running");
        let mut command = match &self.place {
            Some(member) => member.command("redis-server"),
            None => Command::new("redis-server"),
        };
        let bind = self.host().to_string();
        let child = command
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                &bind,
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start redis-server ({e}); install it with `apt-get install redis-server`"));
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match ping(self.host(), self.port).await {
                Ok(()) => return,
                Err(e) if tokio::time::Instant::now() > deadline => {
                    panic!("the private redis-server on port {} did not answer within 10 s: {e}", self.port)
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing answers, as on a hung
    /// host.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("the private redis-server is running").id();
        let status = Command::new("kill").arg(signal).arg(pid.to_string()).status().expect("run kill");
        assert!(status.success(), "kill {signal} {pid} failed");
    }

    /// Kills the server (SIGKILL: no clean shutdown, as on a crash).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
