//! `nicgen sim rx --mtu 1500` on frames built by scapy, independently of the golden model:
//! untagged, one-tag (802.1Q) and two-tag (802.1ad + 802.1Q) IPv4/UDP frames at exactly
//! 14 + 4 × tags + MTU bytes (without FCS) are delivered, one byte longer are dropped as
//! `oversize`; so is an untagged frame carrying 1,508 bytes of L2 payload.

use serde_json::Value;
use std::process::Command;

/// Builds the frames with scapy and writes them to the pcap at argv[1]; prints, one a line,
/// `<length> <tags> <expected action>`.
const SCAPY: &str = r#"
import sys, logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.layers.l2 import Ether, Dot1Q, Dot1AD
from scapy.layers.inet import IP, UDP
from scapy.packet import Raw
from scapy.utils import wrpcap
MTU = 1500
frames = []
for tags in ((), (Dot1Q(vlan=5),), (Dot1AD(vlan=7), Dot1Q(vlan=9))):
    for extra in (0, 1):
        # L2 payload: MTU + extra bytes after the last tag (IP 20 + UDP 8 + data).
        p = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        for t in tags:
            p = p / t
        p = p / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"\x5a" * (MTU + extra - 28))
        frames.append((p, len(tags), "drop" if extra else "deliver"))
p = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"\xa5" * (1508 - 28))
frames.append((p, 0, "drop"))
wrpcap(sys.argv[1], [f[0] for f in frames])
for p, tags, action in frames:
    print(len(bytes(p)), tags, action)
"#;

#[test]
fn scapy_frames_at_the_size_limit_with_0_1_2_tags() {
    if !nicgen_tb::verilator::verilator_required() || !nicgen_tb::require::scapy_required() {
        return;
    }
    let tmp =
        |n: &str| std::env::temp_dir().join(format!("nicgen-oversize-{}-{n}", std::process::id()));
    let (pcap, report) = (tmp("in.pcap"), tmp("report.jsonl"));
    let o = Command::new(nicgen_tb::require::python())
        .args(["-c", SCAPY, pcap.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "scapy: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let want: Vec<(usize, usize, String)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: Vec<&str> = l.split(' ').collect();
            (
                v[0].parse().unwrap(),
                v[1].parse().unwrap(),
                v[2].to_string(),
            )
        })
        .collect();
    // The lengths scapy built: the limits of 1500 + 14, 18 and 22 bytes, one byte over each,
    // and the 1,508-byte payload.
    let lens: Vec<usize> = want.iter().map(|w| w.0).collect();
    assert_eq!(lens, [1514, 1515, 1518, 1519, 1522, 1523, 1522]);
    let o = Command::new(env!("CARGO_BIN_EXE_nicgen"))
        .args([
            "sim",
            "rx",
            "--preset",
            "nic64",
            "--mtu",
            "1500",
            "--pcap-in",
        ])
        .arg(&pcap)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "nicgen sim rx: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got: Vec<Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    for (i, ((len, tags, action), r)) in want.iter().zip(&got).enumerate() {
        let ctx = format!("frame {i}: {len} bytes, {tags} tags: {r}");
        assert_eq!(r["action"], action.as_str(), "{ctx}");
        let reason = if action == "drop" {
            Value::from("oversize")
        } else {
            Value::Null
        };
        assert_eq!(r["drop_reason"], reason, "{ctx}");
    }
    let _ = std::fs::remove_file(&pcap);
    let _ = std::fs::remove_file(&report);
}
