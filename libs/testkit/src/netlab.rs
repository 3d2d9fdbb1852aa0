//! A network laboratory for partition tests: one Linux network namespace per process under
//! test, each joined to a bridge of the lab's own by a veth pair, so a test can cut the link
//! between two members (both directions), cut one member from everything, and heal.
//!
//! The lab uses iproute2 alone (`ip netns`, `ip link`, `tc`), so it needs root and nothing
//! else: no nftables or iptables. A cut drops packets SILENTLY, as a real partition does: the
//! cut member's veth gets an HTB root qdisc whose class `1:9` ends in a `pfifo` of length 0,
//! and a `u32` filter per cut destination sends that destination's IP packets there. Nothing
//! answers, no error reaches the sender: a new connection hangs in SYN retransmits, an open
//! one stops moving, exactly as behind a broken switch (a `blackhole` route would fail a
//! sender's `connect` at once, which is a gentler fault). ARP is never filtered, so a heal
//! is instant. (This kernel has no `netem`, `prio` or `gact`; HTB, `pfifo` and `u32` are
//! built in.)
//!
//! Addresses: a lab takes a /24 `10.X.Y.0/24`, X in 100..=199, claimed by creating the bridge
//! `jlXXYY` (hex; creating a link that exists fails, so two labs never share a subnet, in one
//! process or in parallel test processes). The bridge itself holds `10.X.Y.1`, so the test
//! process (in the root namespace) reaches every member; member i is `10.X.Y.(10 + i)` in the
//! namespace `jlXXYY-<name>`, on the veth `jlXXYYh<i>` (host side, enslaved to the bridge)
//! and `eth0` (inside). Every interface name fits IFNAMSIZ (15 bytes).
//!
//! Lifetime: dropping the lab (also while a test panics) kills whatever still runs in its
//! namespaces, deletes them (which deletes their veths) and the bridge. A lab that was never
//! dropped (a killed test process) is found by the next lab through the bridge's alias,
//! `juegoland-netlab pid=<pid>`, and removed once that process is gone.

use std::net::Ipv4Addr;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// The alias every lab's bridge carries, followed by the owning process's id.
const ALIAS: &str = "juegoland-netlab pid=";
/// The HTB class whose `pfifo` of length 0 drops everything classified into it.
const DROP_CLASS: &str = "1:9";
/// The filter priority of "this member is cut from everything" (per destination cuts use
/// `FIRST_PAIR_PRIO + the destination's index`).
const ISOLATE_PRIO: u32 = 1;
const FIRST_PAIR_PRIO: u32 = 10;

/// One process's place in a lab: its namespace and its address.
#[derive(Clone, Debug)]
pub struct Member {
    name: String,
    namespace: String,
    host_veth: String,
    addr: Ipv4Addr,
}

impl Member {
    /// The member's name, as given to [`NetLab::new`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The member's network namespace (`ip netns` name).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The member's address on the lab's bridge.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// A command running `program` inside the member's namespace (`ip netns exec`, which
    /// execs the program: the child's pid is the program's).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.namespace]).arg(program);
        c
    }
}

/// A bridge and one namespace per member; see the module's documentation.
pub struct NetLab {
    id: String,
    subnet: (u8, u8),
    members: Vec<Member>,
}

impl NetLab {
    /// A lab with one member per name (distinct names of at most 40 bytes: letters, digits,
    /// `-`). Panics with what to do when network namespaces cannot be made here (not root,
    /// no iproute2): the partition tests FAIL then, they never skip.
    pub fn new(names: &[&str]) -> NetLab {
        check_available();
        remove_leftovers();
        let mut names_seen = std::collections::BTreeSet::new();
        for name in names {
            assert!(
                !name.is_empty()
                    && name.len() <= 40
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && names_seen.insert(*name),
                "NetLab member names are distinct, 1-40 letters, digits or '-': {name:?}"
            );
        }
        assert!(names.len() <= 200, "a NetLab holds at most 200 members");
        let (id, subnet) = claim_subnet();
        let mut lab = NetLab { id, subnet, members: Vec::new() };
        // From here on, Drop removes whatever was made, also when a step below panics.
        let bridge = lab.id.clone();
        ip(&["link", "set", &bridge, "alias", &format!("{ALIAS}{}", std::process::id())]);
        ip(&["addr", "add", &format!("{}/24", lab.host_addr()), "dev", &bridge]);
        ip(&["link", "set", &bridge, "up"]);
        for (i, name) in names.iter().enumerate() {
            let member = Member {
                name: (*name).to_owned(),
                namespace: format!("{}-{name}", lab.id),
                host_veth: format!("{}h{i}", lab.id),
                addr: Ipv4Addr::new(10, lab.subnet.0, lab.subnet.1, 10 + i as u8),
            };
            let inner = format!("{}v{i}", lab.id);
            ip(&["netns", "add", &member.namespace]);
            lab.members.push(member.clone());
            ip(&["link", "add", &member.host_veth, "type", "veth", "peer", "name", &inner]);
            ip(&["link", "set", &inner, "netns", &member.namespace]);
            ip(&["link", "set", &member.host_veth, "master", &bridge]);
            ip(&["link", "set", &member.host_veth, "up"]);
            let ns = member.namespace.as_str();
            ip(&["-n", ns, "link", "set", &inner, "name", "eth0"]);
            ip(&["-n", ns, "addr", "add", &format!("{}/24", member.addr), "dev", "eth0"]);
            ip(&["-n", ns, "link", "set", "eth0", "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
            // The drop class on both ends of the pair: filters pick what goes into it.
            for (netns, dev) in [(Some(ns), "eth0"), (None, member.host_veth.as_str())] {
                tc(netns, &["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb"]);
                tc(netns, &["class", "add", "dev", dev, "parent", "1:", "classid", DROP_CLASS, "htb", "rate", "1gbit"]);
                tc(netns, &["qdisc", "add", "dev", dev, "parent", DROP_CLASS, "handle", "9:", "pfifo", "limit", "0"]);
            }
        }
        lab
    }

    /// The lab's name (`jlXXYY`): its bridge's, and the prefix of its namespaces.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The test process's own address on the lab (the bridge's): members reach the root
    /// namespace there.
    pub fn host_addr(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, self.subnet.0, self.subnet.1, 1)
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> &Member {
        self.members
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no member {name:?} in the lab {}", self.id))
    }

    /// Every member, in the order they were named.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The address of the member called `name`.
    pub fn addr(&self, name: &str) -> Ipv4Addr {
        self.member(name).addr
    }

    /// A command running `program` inside the namespace of the member called `name`.
    pub fn command(&self, name: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.member(name).command(program)
    }

    fn index(&self, name: &str) -> usize {
        self.members
            .iter()
            .position(|m| m.name == name)
            .unwrap_or_else(|| panic!("no member {name:?} in the lab {}", self.id))
    }

    /// Cuts the link between `a` and `b`, both directions: every IP packet either sends the
    /// other is dropped without a word. Panics when they are already cut.
    pub fn cut(&self, a: &str, b: &str) {
        assert_ne!(a, b, "a member cannot be cut from itself");
        for (from, to) in [(a, b), (b, a)] {
            let (m, prio) = (self.member(from), FIRST_PAIR_PRIO + self.index(to) as u32);
            let dst = format!("{}/32", self.addr(to));
            filter_add(Some(&m.namespace), "eth0", prio, &dst);
        }
    }

    /// Restores the link `cut` took between `a` and `b`. Panics when it was not cut.
    pub fn heal(&self, a: &str, b: &str) {
        for (from, to) in [(a, b), (b, a)] {
            let (m, prio) = (self.member(from), FIRST_PAIR_PRIO + self.index(to) as u32);
            filter_del(Some(&m.namespace), "eth0", prio);
        }
    }

    /// Cuts `name` from everything: other members and the test process alike, both
    /// directions (its own veth drops what it sends, the bridge's end what it would receive).
    pub fn isolate(&self, name: &str) {
        let m = self.member(name);
        filter_add(Some(&m.namespace), "eth0", ISOLATE_PRIO, "0.0.0.0/0");
        filter_add(None, &m.host_veth, ISOLATE_PRIO, "0.0.0.0/0");
    }

    /// Ends `isolate`. Panics when the member was not isolated.
    pub fn rejoin(&self, name: &str) {
        let m = self.member(name);
        filter_del(Some(&m.namespace), "eth0", ISOLATE_PRIO);
        filter_del(None, &m.host_veth, ISOLATE_PRIO);
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        for m in &self.members {
            kill_inside(&m.namespace);
            let _ = Command::new("ip").args(["netns", "del", &m.namespace]).output();
        }
        let _ = Command::new("ip").args(["link", "del", &self.id]).output();
    }
}

/// Fails with what to do when this process cannot make network namespaces.
fn check_available() {
    let uid = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let probe = Command::new("ip").args(["netns", "list"]).output();
    match (uid, probe) {
        (_, Err(e)) => panic!(
            "the partition tests need iproute2's `ip` ({e}): install it with `apt-get install iproute2`; \
             these tests never skip"
        ),
        (Ok(uid), Ok(_)) if uid != "0" => panic!(
            "the partition tests make network namespaces and veth pairs, which needs root (uid {uid}): \
             run them as root (in CI, the container runs as root with CAP_NET_ADMIN); these tests never skip"
        ),
        (_, Ok(out)) if !out.status.success() => panic!(
            "`ip netns list` failed ({}): network namespaces are not available here; the partition tests \
             need a kernel with CONFIG_NET_NS and CAP_SYS_ADMIN + CAP_NET_ADMIN; these tests never skip",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        _ => {}
    }
}

/// Claims a /24 by creating its bridge: returns the bridge's name and (X, Y).
fn claim_subnet() -> (String, (u8, u8)) {
    use std::hash::{BuildHasher, Hasher};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut seed = std::collections::hash_map::RandomState::new().build_hasher();
    seed.write_u32(std::process::id());
    seed.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    let start = seed.finish() % (100 * 256);
    let taken = String::from_utf8_lossy(&ip(&["-o", "-4", "addr", "show"]).stdout).into_owned();
    for i in 0..100 * 256 {
        let n = (start + i) % (100 * 256);
        let (x, y) = (100 + (n / 256) as u8, (n % 256) as u8);
        if taken.contains(&format!(" 10.{x}.{y}.")) {
            continue;
        }
        let id = format!("jl{x:02x}{y:02x}");
        let made = Command::new("ip").args(["link", "add", &id, "type", "bridge"]).output().expect("run ip");
        if made.status.success() {
            return (id, (x, y));
        }
    }
    panic!("no free 10.X.Y.0/24 for a NetLab (X in 100..=199)")
}

/// Removes the labs whose owning process is gone (a test process that was killed).
fn remove_leftovers() {
    let links = String::from_utf8_lossy(&ip(&["-o", "link", "show", "type", "bridge"]).stdout).into_owned();
    let namespaces = String::from_utf8_lossy(&ip(&["netns", "list"]).stdout).into_owned();
    for line in links.lines() {
        let Some(pid) = line.split(ALIAS).nth(1).and_then(|rest| rest.split_whitespace().next()) else { continue };
        if std::path::Path::new("/proc").join(pid).exists() {
            continue;
        }
        let Some(bridge) = line.split(": ").nth(1).map(|n| n.split('@').next().unwrap_or(n)) else { continue };
        if !is_lab_id(bridge) {
            continue;
        }
        for ns in namespaces.lines().filter_map(|l| l.split_whitespace().next()) {
            if ns.strip_prefix(bridge).is_some_and(|rest| rest.starts_with('-')) {
                kill_inside(ns);
                let _ = Command::new("ip").args(["netns", "del", ns]).output();
            }
        }
        let _ = Command::new("ip").args(["link", "del", bridge]).output();
    }
}

fn is_lab_id(name: &str) -> bool {
    name.len() == 6 && name.starts_with("jl") && name[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// SIGKILLs every process still running in the namespace `ns` (processes a test started
/// there and did not stop: its servers, after a panic).
fn kill_inside(ns: &str) {
    let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() else { return };
    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", pid]).output();
    }
}

fn filter_add(netns: Option<&str>, dev: &str, prio: u32, dst: &str) {
    let prio = prio.to_string();
    tc(
        netns,
        &[
            "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", &prio, "u32", "match", "ip", "dst",
            dst, "flowid", DROP_CLASS,
        ],
    );
}

fn filter_del(netns: Option<&str>, dev: &str, prio: u32) {
    let prio = prio.to_string();
    let shown = tc(netns, &["filter", "show", "dev", dev, "parent", "1:", "prio", &prio]);
    assert!(!shown.stdout.is_empty(), "nothing to heal: no cut with priority {prio} on {dev}");
    tc(netns, &["filter", "del", "dev", dev, "parent", "1:", "prio", &prio]);
}

/// Runs `ip args`; panics with its output when it fails.
fn ip(args: &[&str]) -> Output {
    checked(Command::new("ip").args(args), &format!("ip {}", args.join(" ")))
}

/// Runs `tc args` in `netns` (the root namespace for `None`); panics when it fails.
fn tc(netns: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new("tc");
    if let Some(ns) = netns {
        c.args(["-n", ns]);
    }
    c.args(args);
    checked(&mut c, &format!("tc {}", args.join(" ")))
}

fn checked(c: &mut Command, what: &str) -> Output {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::process::{Child, Stdio};
    use std::time::Duration;

    use super::*;

    /// An echo server (socat) on `port` inside `member`, killed when dropped.
    struct Echo(Child);

    impl Echo {
        fn start(member: &Member, port: u16) -> Echo {
            let listen = format!("TCP-LISTEN:{port},bind={},reuseaddr,fork", member.addr());
            let child = member
                .command("socat")
                .args([listen.as_str(), "EXEC:cat"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start socat (apt-get install socat)");
            Echo(child)
        }
    }

    impl Drop for Echo {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// Whether a line sent to `to` comes back within a second, from the root namespace.
    fn echoes_from_host(to: SocketAddr) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&to, Duration::from_secs(1)) else { return false };
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0u8; 3];
        s.write_all(b"hi\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"hi\n"
    }

    /// Whether a line sent from inside `from` to `to` comes back within a second.
    fn echoes_between(from: &Member, to: SocketAddr) -> bool {
        let target = format!("TCP:{to},connect-timeout=1");
        let out = from
            .command("timeout")
            .args(["2", "socat", "-T1", "-", target.as_str()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().expect("piped").write_all(b"hi\n")?;
                c.wait_with_output()
            })
            .expect("run socat in the namespace");
        out.stdout == b"hi\n"
    }

    /// Waits (up to 5 s) until the echo server answers from the root namespace.
    fn wait_for(to: SocketAddr) {
        for _ in 0..50 {
            if echoes_from_host(to) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the echo server at {to} never answered");
    }

    #[test]
    fn members_reach_each_other_until_cut_and_again_after_the_heal() {
        let lab = NetLab::new(&["a", "b", "c"]);
        let (a, b, c) = (lab.member("a"), lab.member("b"), lab.member("c"));
        assert_ne!(a.addr(), b.addr());
        assert_eq!(lab.host_addr().octets()[..3], a.addr().octets()[..3]);
        let _echo_b = Echo::start(b, 7000);
        let _echo_c = Echo::start(c, 7000);
        let (at_b, at_c) = (SocketAddr::from((b.addr(), 7000)), SocketAddr::from((c.addr(), 7000)));
        wait_for(at_b);
        wait_for(at_c);
        assert!(echoes_between(a, at_b) && echoes_between(a, at_c));

        lab.cut("a", "b");
        assert!(!echoes_between(a, at_b), "a still reaches b after the cut");
        assert!(echoes_between(a, at_c), "the cut between a and b also cut a from c");
        assert!(echoes_from_host(at_b), "the cut between a and b also cut b from the test process");
        let at_a = SocketAddr::from((a.addr(), 7001));
        let _echo_a = Echo::start(a, 7001);
        wait_for(at_a);
        assert!(!echoes_between(b, at_a), "b still reaches a after the cut: it must hold both ways");

        lab.heal("a", "b");
        assert!(echoes_between(a, at_b) && echoes_between(b, at_a), "the heal did not restore the link");
    }

    #[test]
    fn an_isolated_member_reaches_nobody_and_nobody_reaches_it_until_it_rejoins() {
        let lab = NetLab::new(&["lonely", "other"]);
        let (lonely, other) = (lab.member("lonely"), lab.member("other"));
        let _echo = Echo::start(lonely, 7000);
        let _echo_other = Echo::start(other, 7000);
        let (at_lonely, at_other) = (SocketAddr::from((lonely.addr(), 7000)), SocketAddr::from((other.addr(), 7000)));
        wait_for(at_lonely);
        wait_for(at_other);

        lab.isolate("lonely");
        assert!(!echoes_from_host(at_lonely), "the test process still reaches an isolated member");
        assert!(!echoes_between(other, at_lonely), "another member still reaches an isolated one");
        assert!(!echoes_between(lonely, at_other), "an isolated member still reaches another one");
        assert!(echoes_from_host(at_other), "isolating one member cut another");

        lab.rejoin("lonely");
        assert!(echoes_from_host(at_lonely) && echoes_between(other, at_lonely));
    }

    #[test]
    #[should_panic(expected = "nothing to heal")]
    fn healing_what_was_not_cut_is_a_mistake_the_lab_reports() {
        let lab = NetLab::new(&["a", "b"]);
        lab.heal("a", "b");
    }

    #[test]
    fn a_dropped_lab_leaves_nothing_behind_and_a_crashed_one_is_swept_by_the_next() {
        let lab = NetLab::new(&["x"]);
        let (id, ns) = (lab.id().to_owned(), lab.member("x").namespace().to_owned());
        // A process left running inside is killed with the lab.
        let mut sleeper = lab.command("x", "sleep").arg("600").spawn().expect("start sleep in the namespace");
        // `ip netns exec` enters the namespace after the spawn returns: wait until it is in.
        let pid = sleeper.id().to_string();
        let inside =
            || String::from_utf8_lossy(&ip(&["netns", "pids", &ns]).stdout).split_whitespace().any(|p| p == pid);
        let entered = std::time::Instant::now();
        while !inside() {
            assert!(entered.elapsed() < Duration::from_secs(10), "sleep never entered the namespace");
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(lab);
        let killed = std::time::Instant::now();
        let status = loop {
            if let Some(status) = sleeper.try_wait().expect("wait for sleep") {
                break Some(status);
            }
            if killed.elapsed() > Duration::from_secs(10) {
                let _ = sleeper.kill();
                let _ = sleeper.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.is_some_and(|s| !s.success()), "the process inside was not killed with the lab");
        assert!(!exists_link(&id) && !exists_netns(&ns), "{id} or {ns} survived the drop");

        // A lab of a process that is gone (made by hand here, as a killed test leaves it).
        let (dead_id, _) = claim_subnet();
        let dead_ns = format!("{dead_id}-gone");
        ip(&["link", "set", &dead_id, "alias", &format!("{ALIAS}{}", u32::MAX - 1)]);
        ip(&["netns", "add", &dead_ns]);
        let fresh = NetLab::new(&["y"]);
        assert!(!exists_link(&dead_id) && !exists_netns(&dead_ns), "the leftover lab {dead_id} was not swept");
        assert!(exists_link(fresh.id()), "the new lab's own bridge is there");
    }

    fn exists_link(name: &str) -> bool {
        Command::new("ip").args(["link", "show", name]).output().is_ok_and(|o| o.status.success())
    }

    fn exists_netns(name: &str) -> bool {
        let out = ip(&["netns", "list"]);
        String::from_utf8_lossy(&out.stdout).lines().any(|l| l.split_whitespace().next() == Some(name))
    }
}
