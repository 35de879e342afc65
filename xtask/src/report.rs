//! The small formatting the benchmark reports share: medians, thousands separators, an error
//! on one table line, and the date stamp each report carries.

use std::process::Command;

/// The median of `v` (the mean of the middle two for an even count; NaN when empty).
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// `1234567` -> `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let parts: Vec<&str> = s
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap_or("?"))
        .collect();
    parts.join(",")
}

/// An error's first line, with `|` escaped, for a Markdown table cell.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or("")
        .replace('|', "\\|")
}

/// The current UTC date and time (`date -u`), or "?".
pub(crate) fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "?".into())
}
