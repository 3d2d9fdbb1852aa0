//! `juegoland-loadtest report`: the side-by-side table of several summaries (ours and the
//! peers'), printed and optionally written into a markdown file between markers.

use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::Context;

use crate::Summary;

#[derive(clap::Args, Debug)]
pub struct ReportOptions {
    /// Summary files (JSON), in the order of the table's rows.
    #[arg(required = true)]
    summaries: Vec<PathBuf>,
    /// Replace the text between `<!-- loadtest:NAME:begin -->` and `<!-- loadtest:NAME:end -->`
    /// in this markdown file (appended when the markers are missing).
    #[arg(long)]
    write: Option<PathBuf>,
    /// The NAME of the markers.
    #[arg(long, default_value = "comparison")]
    section: String,
    /// A line written above the table (machine, versions, command).
    #[arg(long, default_value = "")]
    note: String,
}

/// `t` as an RFC 3339 UTC timestamp. Hand-rolled (days-from-civil, a dozen lines) because
/// the harness needs nothing else from a date crate.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn fmt_int(n: f64) -> String {
    let s = format!("{:.0}", n);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

pub fn table(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "| server | version | scenario | matches | moves/s | server CPU s | moves per server CPU-s | move→view p50 / p99 ms | server memory peak MiB | KB written per move | errors | audit |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in summaries {
        let view = s.latency_ms.get("commandToView").cloned().unwrap_or_default();
        let errors: u64 = s.errors.values().sum();
        // The peers keep nothing on storage and do not report it.
        let written = match s.server_written_bytes_per_move {
            0.0 => "—".to_owned(),
            b => format!("{:.1}", b / 1000.0),
        };
        let audit = match &s.audit {
            Some(a) if a.passed => format!("passed ({} matches)", a.matches),
            Some(a) => format!("FAILED ({} problems)", a.problems.len()),
            None => "—".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1} | **{}** | {:.2} / **{:.2}** | {:.0} | {} | {} | {} |\n",
            s.server,
            s.version,
            s.scenario,
            s.matches,
            fmt_int(s.moves_per_second),
            s.server_cpu_seconds,
            fmt_int(s.moves_per_server_cpu_second),
            view.p50,
            view.p99,
            s.server_peak_rss_bytes as f64 / (1024.0 * 1024.0),
            written,
            errors,
            audit
        ));
    }
    out
}

pub fn report(options: ReportOptions) -> anyhow::Result<()> {
    let mut summaries = Vec::new();
    for path in &options.summaries {
        let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        let summary: Summary = serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))?;
        summaries.push(summary);
    }
    let mut block = String::new();
    if !options.note.is_empty() {
        block.push_str(&options.note);
        block.push_str("\n\n");
    }
    block.push_str(&table(&summaries));
    print!("{block}");
    if let Some(file) = &options.write {
        let (begin, end) = (
            format!("<!-- loadtest:{}:begin -->", options.section),
            format!("<!-- loadtest:{}:end -->", options.section),
        );
        let text = std::fs::read_to_string(file).with_context(|| format!("read {}", file.display()))?;
        let replaced = match (text.find(&begin), text.find(&end)) {
            (Some(b), Some(e)) if b < e => format!("{}{begin}\n{block}{}", &text[..b], &text[e..]),
            _ => format!("{text}\n{begin}\n{block}{end}\n"),
        };
        std::fs::write(file, replaced).with_context(|| format!("write {}", file.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_thousands() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_910_400 + 3_661);
        assert_eq!(rfc3339(t), "2026-11-29T01:01:01Z");
        let leap = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
        assert_eq!(fmt_int(1_234_567.4), "1,234,567");
        assert_eq!(fmt_int(999.0), "999");
    }
}
