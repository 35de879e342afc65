//! tshark as an independent oracle: per-frame checksum verdicts and protocol decodes of a pcap.
//!
//! # Why
//! The golden model and the hardware are written by the same people from the same notes, so a
//! misreading of a format can hide in both. Wireshark's dissectors are a third, independently
//! written reading of the same formats (DESIGN.md decision 6, STYLE.md "independent oracles"):
//! a test writes what it built or what the simulated NIC emitted as pcap ([`crate::pcap`]) and
//! asks tshark whether the IPv4, TCP, UDP checksums (and the FCS, when present) are right.
//!
//! # How tshark is asked
//! `tshark -n -r FILE -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE
//! -o udp.check_checksum:TRUE -o udp.ignore_ipv6_zero_checksum:FALSE -o eth.fcs:Never|Always
//! -o eth.check_fcs:TRUE -o ip.defragment:FALSE -o ipv6.defragment:FALSE
//! -o tcp.desegment_tcp_streams:FALSE -T fields -e frame.number -e ip.checksum.status
//! -e tcp.checksum.status -e udp.checksum.status -e eth.fcs.status -e frame.protocols
//! -e _ws.expert.severity -e _ws.malformed` (names checked against Debian 12's tshark 4.0 with
//! `tshark -G fields` / `tshark -G defaultprefs`). Reassembly is off so that every frame is
//! judged on its own bytes: a first IP fragment then shows its TCP/UDP checksum as
//! unverified, later fragments show none. tshark's checksum status values are
//! 0 Bad, 1 Good, 2 Unverified, 3 Not present (UDP over IPv4 with checksum 0),
//! 4 Illegal (UDP over IPv6 with checksum 0) — see [`CsumStatus`].
//!
//! # Missing tshark
//! [`tshark_required`] is the gate for tests, like `verilator_required`: with
//! `NICGEN_REQUIRE_TOOLS=1` (CI; [`crate::require`]) a missing tshark is a failure, otherwise
//! the test prints why it is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Errors running tshark or reading its output.
#[derive(Debug, thiserror::Error)]
pub enum TsharkError {
    /// tshark is not installed or does not run.
    #[error("tshark is not usable: {detail} (Debian/Ubuntu: `apt-get install tshark`)")]
    NotFound {
        /// What went wrong.
        detail: String,
    },
    /// tshark ran and failed (bad file, unknown field or preference).
    #[error("`tshark -r {pcap}` failed ({status}): {stderr}")]
    Failed {
        /// The capture.
        pcap: PathBuf,
        /// Exit status.
        status: String,
        /// tshark's stderr.
        stderr: String,
    },
    /// A line of tshark's output could not be understood.
    #[error("tshark output for {pcap}, line {line}: {message}")]
    Parse {
        /// The capture.
        pcap: PathBuf,
        /// 1-based output line.
        line: usize,
        /// Details.
        message: String,
    },
}

/// A checksum status as tshark reports it (the `*.checksum.status` / `eth.fcs.status` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CsumStatus {
    /// 0: checked and wrong.
    Bad,
    /// 1: checked and right.
    Good,
    /// 2: not checked (checking off, or the data is incomplete, e.g. a first fragment).
    Unverified,
    /// 3: the packet says it has no checksum (UDP over IPv4 with checksum 0).
    NotPresent,
    /// 4: a value the protocol forbids (UDP over IPv6 with checksum 0).
    Illegal,
}

impl CsumStatus {
    /// From tshark's numeric value.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => CsumStatus::Bad,
            1 => CsumStatus::Good,
            2 => CsumStatus::Unverified,
            3 => CsumStatus::NotPresent,
            4 => CsumStatus::Illegal,
            _ => return None,
        })
    }

    /// Checked and right.
    pub fn is_good(self) -> bool {
        self == CsumStatus::Good
    }

    /// Checked and wrong, or a forbidden value.
    pub fn is_bad(self) -> bool {
        matches!(self, CsumStatus::Bad | CsumStatus::Illegal)
    }
}

/// Severity of a tshark expert-info item (`_ws.expert.severity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExpertSeverity {
    /// 0x0010_0000.
    Comment,
    /// 0x0020_0000 (e.g. "connection establish request").
    Chat,
    /// 0x0040_0000.
    Note,
    /// 0x0060_0000 (e.g. "IPv6 payload length exceeds framing length").
    Warn,
    /// 0x0080_0000 (bad checksums, bogus lengths, malformed packets).
    Error,
}

impl ExpertSeverity {
    /// From tshark's numeric value.
    pub fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0x0010_0000 => ExpertSeverity::Comment,
            0x0020_0000 => ExpertSeverity::Chat,
            0x0040_0000 => ExpertSeverity::Note,
            0x0060_0000 => ExpertSeverity::Warn,
            0x0080_0000 => ExpertSeverity::Error,
            _ => return None,
        })
    }
}

/// What tshark said about one frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TsharkVerdict {
    /// 0-based frame index (tshark's `frame.number` - 1).
    pub index: usize,
    /// Every IPv4 header checksum tshark decoded in the frame, outermost first (empty when
    /// there is no IPv4 header; IPv6 has no header checksum).
    pub ip: Vec<CsumStatus>,
    /// Every TCP checksum, outermost first.
    pub tcp: Vec<CsumStatus>,
    /// Every UDP checksum, outermost first.
    pub udp: Vec<CsumStatus>,
    /// The FCS status (only with [`Fcs::Present`]).
    pub fcs: Option<CsumStatus>,
    /// `frame.protocols`, e.g. `eth:ethertype:vlan:ethertype:ip:tcp`.
    pub protocols: String,
    /// The most severe expert-info item, if any.
    pub expert: Option<ExpertSeverity>,
    /// tshark flagged the frame as malformed (a dissector ran out of data or hit an exception).
    pub malformed: bool,
}

impl TsharkVerdict {
    /// The outermost IPv4 header checksum status.
    pub fn ip(&self) -> Option<CsumStatus> {
        self.ip.first().copied()
    }

    /// The outermost TCP or UDP checksum status (whichever tshark decoded first; a frame has
    /// at most one of them outside a tunnel).
    pub fn l4(&self) -> Option<CsumStatus> {
        match (self.tcp.first(), self.udp.first()) {
            (Some(&t), None) => Some(t),
            (None, Some(&u)) => Some(u),
            (None, None) => None,
            // Tunnels (VXLAN: UDP then inner TCP): the outer one comes first in the stack.
            (Some(&t), Some(&u)) => {
                let tcp_at = self.protocols.find(":tcp").unwrap_or(usize::MAX);
                let udp_at = self.protocols.find(":udp").unwrap_or(usize::MAX);
                Some(if tcp_at < udp_at { t } else { u })
            }
        }
    }
}

/// Whether the frames in the capture end with a 4-byte FCS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fcs {
    /// No FCS (what [`crate::pcap`] writes and the stream interfaces carry).
    Absent,
    /// Every frame ends with its FCS; tshark checks it.
    Present,
}

fn tshark_command() -> Command {
    Command::new("tshark")
}

fn probe() -> Result<String, TsharkError> {
    let out = tshark_command()
        .arg("--version")
        .output()
        .map_err(|e| TsharkError::NotFound {
            detail: format!("cannot run `tshark --version`: {e}"),
        })?;
    if !out.status.success() {
        return Err(TsharkError::NotFound {
            detail: format!(
                "`tshark --version` exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

/// Is tshark usable on this machine?
pub fn tshark_available() -> bool {
    probe().is_ok()
}

/// The first line of `tshark --version`, or why tshark is unusable.
pub fn tshark_version() -> Result<String, TsharkError> {
    probe()
}

/// Gate for tests that need tshark: `true` when usable; otherwise [`crate::require::require`]
/// decides between failing (under `NICGEN_REQUIRE_TOOLS=1`) and skipping.
///
/// ```no_run
/// if !nicgen_tb::tshark::tshark_required() { return; }
/// ```
pub fn tshark_required() -> bool {
    crate::require::require("tshark", probe().map(|_| ()).map_err(|e| e.to_string()))
}

/// Preferences that make every frame's verdict depend on that frame alone.
const PREFS: &[&str] = &[
    "ip.check_checksum:TRUE",
    "tcp.check_checksum:TRUE",
    "udp.check_checksum:TRUE",
    "udp.ignore_ipv6_zero_checksum:FALSE",
    "ip.defragment:FALSE",
    "ipv6.defragment:FALSE",
    "tcp.desegment_tcp_streams:FALSE",
    "tcp.analyze_sequence_numbers:FALSE",
];

/// Runs tshark in fields mode and returns its stdout lines.
fn fields(pcap: &Path, fcs: Fcs, names: &[&str]) -> Result<Vec<String>, TsharkError> {
    probe()?;
    let mut cmd = tshark_command();
    cmd.arg("-n").arg("-r").arg(pcap);
    for p in PREFS {
        cmd.arg("-o").arg(p);
    }
    match fcs {
        Fcs::Absent => cmd.args(["-o", "eth.fcs:Never"]),
        Fcs::Present => cmd.args(["-o", "eth.fcs:Always", "-o", "eth.check_fcs:TRUE"]),
    };
    cmd.args([
        "-T",
        "fields",
        "-E",
        "header=n",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
        "-E",
        "quote=n",
    ]);
    for n in names {
        cmd.arg("-e").arg(n);
    }
    let out = cmd.output().map_err(|e| TsharkError::NotFound {
        detail: format!("cannot run tshark: {e}"),
    })?;
    if !out.status.success() {
        return Err(TsharkError::Failed {
            pcap: pcap.to_path_buf(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// Checks the IPv4, TCP and UDP checksums of every frame of an Ethernet pcap without FCS.
pub fn check_checksums(pcap: &Path) -> Result<Vec<TsharkVerdict>, TsharkError> {
    check_checksums_with(pcap, Fcs::Absent)
}

/// [`check_checksums`], saying whether the frames carry an FCS (which tshark then checks).
pub fn check_checksums_with(pcap: &Path, fcs: Fcs) -> Result<Vec<TsharkVerdict>, TsharkError> {
    let names = [
        "frame.number",
        "ip.checksum.status",
        "tcp.checksum.status",
        "udp.checksum.status",
        "eth.fcs.status",
        "frame.protocols",
        "_ws.expert.severity",
        "_ws.malformed",
    ];
    let lines = fields(pcap, fcs, &names)?;
    let mut verdicts = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let err = |message: String| TsharkError::Parse {
            pcap: pcap.to_path_buf(),
            line: i + 1,
            message,
        };
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != names.len() {
            return Err(err(format!(
                "{} columns, expected {}: {line:?}",
                cols.len(),
                names.len()
            )));
        }
        let number: usize = cols[0]
            .parse()
            .map_err(|_| err(format!("frame.number {:?}", cols[0])))?;
        if number != i + 1 {
            return Err(err(format!("frame.number {number}, expected {}", i + 1)));
        }
        let statuses = |col: &str, name: &str| -> Result<Vec<CsumStatus>, TsharkError> {
            col.split(',')
                .filter(|s| !s.is_empty())
                .map(|s| {
                    s.parse::<u8>()
                        .ok()
                        .and_then(CsumStatus::from_code)
                        .ok_or_else(|| err(format!("{name} value {s:?}")))
                })
                .collect()
        };
        let fcs = statuses(cols[4], "eth.fcs.status")?;
        let mut expert = None;
        for s in cols[6].split(',').filter(|s| !s.is_empty()) {
            let sev = s
                .parse::<u32>()
                .ok()
                .and_then(ExpertSeverity::from_code)
                .ok_or_else(|| err(format!("_ws.expert.severity value {s:?}")))?;
            expert = expert.max(Some(sev));
        }
        verdicts.push(TsharkVerdict {
            index: i,
            ip: statuses(cols[1], "ip.checksum.status")?,
            tcp: statuses(cols[2], "tcp.checksum.status")?,
            udp: statuses(cols[3], "udp.checksum.status")?,
            fcs: fcs.first().copied(),
            protocols: cols[5].to_string(),
            expert,
            malformed: !cols[7].is_empty(),
        });
    }
    Ok(verdicts)
}

/// One protocol-stack line per frame (tshark's `frame.protocols`, e.g.
/// `eth:ethertype:vlan:ethertype:ip:tcp`), for debugging and coarse checks.
pub fn decode_summary(pcap: &Path) -> Result<Vec<String>, TsharkError> {
    fields(pcap, Fcs::Absent, &["frame.protocols"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes() {
        assert_eq!(CsumStatus::from_code(0), Some(CsumStatus::Bad));
        assert_eq!(CsumStatus::from_code(1), Some(CsumStatus::Good));
        assert_eq!(CsumStatus::from_code(5), None);
        assert!(CsumStatus::Illegal.is_bad() && !CsumStatus::NotPresent.is_bad());
        assert!(ExpertSeverity::Error > ExpertSeverity::Warn);
        assert_eq!(
            ExpertSeverity::from_code(6_291_456),
            Some(ExpertSeverity::Warn)
        );
    }

    #[test]
    fn missing_file_is_an_error_not_a_panic() {
        if !tshark_required() {
            return;
        }
        let err = check_checksums(Path::new("/nonexistent/x.pcap")).unwrap_err();
        assert!(matches!(err, TsharkError::Failed { .. }), "{err}");
    }
}
