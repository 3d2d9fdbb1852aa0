//! Server-side CPU and memory of the processes the harness is told about, from `/proc`.
//!
//! A watched group is a label and a selector: one PID, every process with a given command
//! name (`postgres`, `redis-server`), or the PIDs listed in a file the cluster launcher keeps
//! current (`juegoland cluster --pids-file`). CPU is utime + stime + cutime + cstime summed
//! over the group's live processes: a process that exits moves its time into its parent's
//! cutime/cstime, so PostgreSQL backends that come and go are counted through the
//! postmaster, and the difference of two samples is the group's CPU in between. Memory is
//! the proportional set size (PSS, from `smaps_rollup`), so shared memory mapped by many
//! processes — PostgreSQL's shared buffers — is counted once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use serde::Serialize;

#[derive(Clone, Debug)]
pub enum Selector {
    Pid(i32),
    Comm(String),
    PidsFile(PathBuf),
}

/// `label=pid:N`, `label=comm:NAME` or `label=pids-file:PATH`.
#[derive(Clone, Debug)]
pub struct Watch {
    pub label: String,
    pub selector: Selector,
}

impl std::str::FromStr for Watch {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        let (label, selector) =
            s.split_once('=').context("a watch is label=pid:N, label=comm:NAME or label=pids-file:PATH")?;
        let selector = match selector.split_once(':') {
            Some(("pid", n)) => Selector::Pid(n.parse().with_context(|| format!("{n}: not a PID"))?),
            Some(("comm", name)) if !name.is_empty() => Selector::Comm(name.to_owned()),
            Some(("pids-file", path)) if !path.is_empty() => Selector::PidsFile(path.into()),
            _ => bail!("{selector}: use pid:N, comm:NAME or pids-file:PATH"),
        };
        Ok(Watch { label: label.to_owned(), selector })
    }
}

impl Watch {
    fn pids(&self) -> Vec<i32> {
        match &self.selector {
            Selector::Pid(p) => vec![*p],
            Selector::Comm(name) => procfs::process::all_processes()
                .map(|all| {
                    all.filter_map(Result::ok)
                        .filter(|p| p.stat().is_ok_and(|s| &s.comm == name))
                        .map(|p| p.pid)
                        .collect()
                })
                .unwrap_or_default(),
            Selector::PidsFile(path) => pids_file(path),
        }
    }
}

/// The PIDs in a launcher's pids file (`{"node-0": 1234, …}`); empty when unreadable.
pub fn pids_file(path: &std::path::Path) -> Vec<i32> {
    read_pids_file(path).map(|m| m.into_values().collect()).unwrap_or_default()
}

pub fn read_pids_file(path: &std::path::Path) -> anyhow::Result<BTreeMap<String, i32>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))
}

/// One sample of one process: CPU seconds and bytes written to storage so far, and memory now.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    cpu_seconds: f64,
    /// `/proc/PID/io`'s `write_bytes`: what the process caused to be written to storage
    /// (the WAL, the checkpoint), 0 when unreadable.
    written_bytes: u64,
    /// Read only when asked (see [`MEMORY_EVERY`]).
    pss_bytes: Option<u64>,
}

/// Memory is read every `MEMORY_EVERY` samples: `smaps_rollup` walks a process's page tables
/// (all of the shared buffers, for a PostgreSQL backend), and read every second for about 60
/// backends it was 5% of the machine's CPU in a 200-match cluster run.
const MEMORY_EVERY: u64 = 5;

fn sample(pid: i32, ticks: f64, memory: bool) -> Option<Sample> {
    let process = procfs::process::Process::new(pid).ok()?;
    let stat = process.stat().ok()?;
    let cpu = stat.utime as f64 + stat.stime as f64 + stat.cutime.max(0) as f64 + stat.cstime.max(0) as f64;
    let pss_bytes = memory.then(|| pss(&process).unwrap_or(stat.rss * procfs::page_size()));
    let written_bytes = process.io().map(|io| io.write_bytes).unwrap_or(0);
    Some(Sample { cpu_seconds: cpu / ticks, written_bytes, pss_bytes })
}

fn pss(process: &procfs::process::Process) -> Option<u64> {
    let rollup = process.smaps_rollup().ok()?;
    rollup.memory_map_rollup.0.first()?.extension.map.get("Pss").copied()
}

/// A group's figures over the measured window.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupFigures {
    pub cpu_seconds: f64,
    /// Bytes the group's processes wrote to storage during the window (`/proc/PID/io`).
    #[serde(default)]
    pub written_bytes: u64,
    /// Processes seen in the group during the window (a restarted node counts twice).
    pub processes: usize,
    pub start_memory_bytes: u64,
    pub end_memory_bytes: u64,
    pub peak_memory_bytes: u64,
    /// Memory sampled every 5 seconds through the window (for soak runs: flat or growing).
    pub memory_timeline_bytes: Vec<u64>,
}

/// One group through the window: every process's CPU at the start and when last seen. A
/// process that dies (a chaos kill) keeps its last sample, and one that appears (its
/// restart) counts from zero. The only double count: a watched process that exits while a
/// watched parent reaps it (a PostgreSQL backend closing) is counted in both; the pools
/// keep their connections, so that stays small.
struct Group {
    watch: Watch,
    base: BTreeMap<i32, (f64, u64)>,
    last: BTreeMap<i32, (f64, u64)>,
    figures: GroupFigures,
}

impl Group {
    fn tick(&mut self, ticks: f64, first: bool, with_memory: bool) {
        let mut memory = 0;
        for pid in self.watch.pids() {
            let Some(s) = sample(pid, ticks, with_memory) else { continue };
            if first {
                self.base.insert(pid, (s.cpu_seconds, s.written_bytes));
            }
            self.last.insert(pid, (s.cpu_seconds, s.written_bytes));
            memory += s.pss_bytes.unwrap_or(0);
        }
        let f = &mut self.figures;
        if with_memory {
            if first {
                f.start_memory_bytes = memory;
            } else {
                f.memory_timeline_bytes.push(memory);
            }
            f.peak_memory_bytes = f.peak_memory_bytes.max(memory);
            f.end_memory_bytes = memory;
        }
        f.processes = self.last.len();
        let since = |pid: &i32| self.base.get(pid).copied().unwrap_or((0.0, 0));
        let cpu: f64 = self.last.iter().map(|(pid, (cpu, _))| cpu - since(pid).0).sum();
        f.cpu_seconds = (cpu * 1000.0).round() / 1000.0;
        f.written_bytes = self.last.iter().map(|(pid, (_, written))| written.saturating_sub(since(pid).1)).sum();
    }
}

/// Tracks every watched group through the measured window.
pub struct Tracker {
    ticks: f64,
    groups: Vec<Group>,
    samples: u64,
}

impl Tracker {
    pub fn start(watches: Vec<Watch>) -> Self {
        let ticks = procfs::ticks_per_second() as f64;
        let mut groups: Vec<Group> = watches
            .into_iter()
            .map(|watch| Group {
                watch,
                base: BTreeMap::new(),
                last: BTreeMap::new(),
                figures: GroupFigures::default(),
            })
            .collect();
        for g in &mut groups {
            g.tick(ticks, true, true);
        }
        Self { ticks, groups, samples: 0 }
    }

    /// Samples every group's CPU (once a second during the window), and its memory every
    /// `MEMORY_EVERY` calls and when `last`. Blocking file reads: call it off the async
    /// runtime, so the players' connections are not held up meanwhile.
    pub fn tick(&mut self, last: bool) {
        self.samples += 1;
        let with_memory = last || self.samples.is_multiple_of(MEMORY_EVERY);
        for g in &mut self.groups {
            g.tick(self.ticks, false, with_memory);
        }
    }

    /// The groups' figures so far.
    pub fn figures(&self) -> BTreeMap<String, GroupFigures> {
        self.groups.iter().map(|g| (g.watch.label.clone(), g.figures.clone())).collect()
    }
}
