//! `juegoland cluster`: a local cluster on loopback for manual use and tests — nodes,
//! routers, gateways and deadline schedulers as child processes of this binary, each
//! restarted when it exits on its own (a node that lost its lease exits to come back as a
//! new incarnation); Ctrl-C or SIGTERM sends SIGTERM to every child, so nodes drain, and
//! waits for them.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::process::{Child, Command};
use tracing::{info, warn};

/// Settings of the local cluster launcher.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterConfig {
    /// PostgreSQL URL shared by every node, router and scheduler.
    #[arg(long, env = "JUEGOLAND_DATABASE_URL", default_value = "postgres://postgres@127.0.0.1:5432/test")]
    pub database_url: String,
    /// How many nodes to start.
    #[arg(long, default_value_t = 3)]
    pub nodes: u16,
    /// How many routers to start.
    #[arg(long, default_value_t = 2)]
    pub routers: u16,
    /// Node i listens for gRPC on 127.0.0.1:(node_port + i) and serves metrics on
    /// (node_port + 100 + i).
    #[arg(long, default_value_t = 7100)]
    pub node_port: u16,
    /// Router i serves gRPC on 127.0.0.1:(router_port + i) and HTTP on
    /// (router_http_port + i).
    #[arg(long, default_value_t = 7000)]
    pub router_port: u16,
    #[arg(long, default_value_t = 8080)]
    pub router_http_port: u16,
    /// How many gateways to start; gateway i serves the protocol on 127.0.0.1:(gateway_port + i).
    #[arg(long, default_value_t = 1)]
    pub gateways: u16,
    #[arg(long, default_value_t = 8090)]
    pub gateway_port: u16,
    /// Node i also serves clients itself on 127.0.0.1:(node_edge_port + i) (`juegoland node
    /// --edge-http`): the matches it owns without a hop or a stream. Off when unset.
    #[arg(long)]
    pub node_edge_port: Option<u16>,
    /// How many deadline scheduler replicas to start; replica i serves metrics on
    /// 127.0.0.1:(scheduler_http_port + i).
    #[arg(long, default_value_t = 1)]
    pub schedulers: u16,
    #[arg(long, default_value_t = 9200)]
    pub scheduler_http_port: u16,
    /// Redis URL of the publication streams (nodes publish, gateways read).
    #[arg(long, env = "JUEGOLAND_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// Secret of client tokens (HS256); a random one by default. The launcher prints a token
    /// for `alice` and one for `bob` to play with.
    #[arg(long, env = "JUEGOLAND_JWT_SECRET")]
    pub jwt_secret: Option<String>,
    /// The cluster secret the roles stamp their gRPC calls with (at least 32 bytes); a random
    /// one by default. Give it to play through the routers' gRPC from outside
    /// (`juegoland-loadtest run --grpc … --cluster-secret …`).
    #[arg(long, env = "JUEGOLAND_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// Keep this file current with every child's PID as JSON (`{"node-0": 1234, …}`),
    /// rewritten whenever a child restarts: the load-test harness reads it to measure the
    /// engine's CPU and to kill a node in its chaos scenario.
    #[arg(long)]
    pub pids_file: Option<std::path::PathBuf>,
}

struct Role {
    name: String,
    args: Vec<String>,
    /// The token secret, given to the child in its environment (`JUEGOLAND_JWT_SECRET`),
    /// which only its user reads, never on its command line, which every local user reads.
    secret: String,
    /// The streams' secret (`JUEGOLAND_BUS_SECRET`) and the cluster secret of the gRPC calls
    /// (`JUEGOLAND_CLUSTER_SECRET`), made for this cluster, given the same way.
    bus_secret: String,
    cluster_secret: String,
    child: Option<Child>,
}

impl Role {
    fn start(&mut self, exe: &std::path::Path) -> anyhow::Result<()> {
        let child = Command::new(exe)
            .args(&self.args)
            .env("JUEGOLAND_JWT_SECRET", &self.secret)
            .env("JUEGOLAND_BUS_SECRET", &self.bus_secret)
            .env("JUEGOLAND_CLUSTER_SECRET", &self.cluster_secret)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("start {}", self.name))?;
        info!(role = %self.name, pid = child.id(), "started");
        self.child = Some(child);
        Ok(())
    }
}

fn roles(config: &ClusterConfig, secret: &str, bus_secret: &str, cluster_secret: &str) -> Vec<Role> {
    let (bus_secret, cluster_secret) = (bus_secret.to_owned(), cluster_secret.to_owned());
    let url = config.database_url.clone();
    let mut roles = Vec::new();
    for i in 0..config.nodes {
        let mut args: Vec<String> = vec![
            "node".into(),
            "--node-id".into(),
            format!("node-{i}"),
            "--grpc".into(),
            format!("127.0.0.1:{}", config.node_port + i),
            "--http".into(),
            format!("127.0.0.1:{}", config.node_port + 100 + i),
            "--database-url".into(),
            url.clone(),
            "--redis-url".into(),
            config.redis_url.clone(),
        ];
        if let Some(port) = config.node_edge_port {
            args.extend(["--edge-http".into(), format!("127.0.0.1:{}", port + i)]);
        }
        roles.push(Role {
            name: format!("node-{i}"),
            args,
            secret: secret.to_owned(),
            bus_secret: bus_secret.clone(),
            cluster_secret: cluster_secret.clone(),
            child: None,
        });
    }
    for i in 0..config.routers {
        let args = vec![
            "router".into(),
            "--grpc".into(),
            format!("127.0.0.1:{}", config.router_port + i),
            "--http".into(),
            format!("127.0.0.1:{}", config.router_http_port + i),
            "--database-url".into(),
            url.clone(),
        ];
        roles.push(Role {
            name: format!("router-{i}"),
            args,
            secret: secret.to_owned(),
            bus_secret: bus_secret.clone(),
            cluster_secret: cluster_secret.clone(),
            child: None,
        });
    }
    let routers: Vec<String> =
        (0..config.routers).map(|i| format!("http://127.0.0.1:{}", config.router_port + i)).collect();
    for i in 0..config.gateways {
        let args = vec![
            "gateway".into(),
            "--http".into(),
            format!("127.0.0.1:{}", config.gateway_port + i),
            "--database-url".into(),
            url.clone(),
            "--redis-url".into(),
            config.redis_url.clone(),
        ];
        roles.push(Role {
            name: format!("gateway-{i}"),
            args,
            secret: secret.to_owned(),
            bus_secret: bus_secret.clone(),
            cluster_secret: cluster_secret.clone(),
            child: None,
        });
    }
    for i in 0..config.schedulers {
        let args = vec![
            "scheduler".into(),
            "--http".into(),
            format!("127.0.0.1:{}", config.scheduler_http_port + i),
            "--routers".into(),
            routers.join(","),
            "--database-url".into(),
            url.clone(),
            "--replica-id".into(),
            format!("scheduler-{i}"),
        ];
        roles.push(Role {
            name: format!("scheduler-{i}"),
            args,
            secret: secret.to_owned(),
            bus_secret: bus_secret.clone(),
            cluster_secret: cluster_secret.clone(),
            child: None,
        });
    }
    roles
}

/// Writes every running child's PID to `path` (whole file replaced at once).
fn write_pids(path: &std::path::Path, roles: &[Role]) -> anyhow::Result<()> {
    let pids: std::collections::BTreeMap<&str, u32> =
        roles.iter().filter_map(|r| Some((r.name.as_str(), r.child.as_ref()?.id()?))).collect();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&pids)?).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("write {}", path.display()))
}

fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        // SAFETY-free: `kill` through the command line tool keeps this crate free of unsafe.
        let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    }
}

pub async fn run(config: ClusterConfig) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("find this binary")?;
    let secret = match &config.jwt_secret {
        Some(s) => {
            anyhow::ensure!(
                s.len() >= juegoland_roles::MIN_SECRET_BYTES,
                "--jwt-secret: an HS256 secret is at least {} bytes, this one is {}",
                juegoland_roles::MIN_SECRET_BYTES,
                s.len()
            );
            s.clone()
        }
        None => {
            let mut bytes = [0u8; 24];
            getrandom::fill(&mut bytes).context("generate a token secret")?;
            hex::encode(bytes)
        }
    };
    let tokens = juegoland_edge::Tokens::new(secret.as_bytes(), 86_400).context("token keys")?;
    let (mut bus_secret, mut random) = ([0u8; 32], [0u8; 32]);
    getrandom::fill(&mut bus_secret).context("generate the streams' secret")?;
    getrandom::fill(&mut random).context("generate the cluster secret")?;
    let cluster_secret = config.cluster_secret.clone().unwrap_or_else(|| hex::encode(random));
    anyhow::ensure!(
        cluster_secret.len() >= 32,
        "--cluster-secret: the cluster secret is at least 32 bytes, this one is {}",
        cluster_secret.len()
    );
    let mut roles = roles(&config, &secret, &hex::encode(bus_secret), &cluster_secret);
    for role in &mut roles {
        role.start(&exe)?;
    }
    if let Some(path) = &config.pids_file {
        write_pids(path, &roles)?;
    }
    println!(
        "local cluster: {} nodes, {} routers, {} gateways, {} schedulers; platform API at http://127.0.0.1:{}/, \
         protocol at ws://127.0.0.1:{}/v1/ws (Ctrl-C drains and stops)",
        config.nodes, config.routers, config.gateways, config.schedulers, config.router_http_port, config.gateway_port
    );
    for principal in ["alice", "bob"] {
        println!("token for {principal}: {}", tokens.issue(principal).context("issue a token")?);
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
            _ = tick.tick() => {
                let mut restarted = false;
                for role in &mut roles {
                    let exited = match role.child.as_mut() {
                        Some(c) => c.try_wait()?,
                        None => None,
                    };
                    if let Some(status) = exited {
                        warn!(role = %role.name, %status, "exited; restarting");
                        role.start(&exe)?;
                        restarted = true;
                    }
                }
                if restarted && let Some(path) = &config.pids_file {
                    write_pids(path, &roles)?;
                }
            }
        }
    }
    info!("stopping the local cluster");
    for role in &roles {
        if let Some(c) = &role.child {
            terminate(c);
        }
    }
    for role in &mut roles {
        if let Some(c) = role.child.as_mut() {
            let _ = tokio::time::timeout(Duration::from_secs(15), c.wait()).await;
        }
    }
    Ok(())
}
