//! Child processes under test: waiting for the line a server announces itself with.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::time::Duration;

/// The first stdout line of `child` containing `marker` (waiting up to a minute). The rest of
/// its stdout keeps draining to this process's stderr, so the child never writes into a full
/// or closed pipe.
pub fn announced_line(child: &mut Child, marker: &'static str) -> String {
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            match tx.take() {
                Some(first) if line.contains(marker) => drop(first.send(line)),
                keep => {
                    tx = keep;
                    eprintln!("{line}");
                }
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|e| panic!("no line with {marker:?} on stdout: {e}"))
}
