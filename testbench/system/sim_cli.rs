//! `nicgen sim rx` on frames built by an independent oracle (scapy, `testbench/oracles`):
//! the command's report agrees with scapy's verdicts frame by frame, reproduces the Microsoft
//! RSS verification hashes, accounts for every frame, and fails clearly on bad input.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const MS_KEY: &str =
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa";

fn nicgen(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_nicgen"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// `tshark -T fields` with `fields`, one row per frame.
fn tshark_fields(file: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(file).args(["-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let o = cmd.output().expect("tshark");
    assert!(
        o.status.success(),
        "tshark on {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nicgen-sim-cli-{}-{name}", std::process::id()))
}

/// Run the scapy oracle once per test binary; `None` (skip) without Verilator or python3/scapy
/// unless `NICGEN_REQUIRE_TOOLS=1` requires them.
fn oracle_frames() -> Option<(PathBuf, Vec<Value>)> {
    static ORACLE: std::sync::OnceLock<(PathBuf, Vec<Value>)> = std::sync::OnceLock::new();
    if !nicgen_tb::verilator::verilator_required() || !nicgen_tb::require::scapy_required() {
        return None;
    }
    Some(
        ORACLE
            .get_or_init(|| {
                let script = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../testbench/oracles/make_frames.py");
                let (pcap, side) = (tmp("oracle.pcap"), tmp("oracle.jsonl"));
                let py = nicgen_tb::require::python();
                let o = Command::new(&py)
                    .arg(&script)
                    .arg(&pcap)
                    .arg(&side)
                    .output()
                    .expect("python3");
                assert!(
                    o.status.success(),
                    "make_frames.py failed (is scapy installed?):\n{}",
                    String::from_utf8_lossy(&o.stderr)
                );
                let rows = std::fs::read_to_string(&side)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                (pcap, rows)
            })
            .clone(),
    )
}

/// One JSON value per line of `text`.
fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `nicgen sim rx` on nic64 with the Microsoft RSS key and `extra` options, frames from `pcap`,
/// the report to `report`: its standard output and the report (panics when the command fails).
fn sim_rx(pcap: &Path, report: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec![
        "sim",
        "rx",
        "--preset",
        "nic64",
        "--pcap-in",
        pcap.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--rss-key",
        MS_KEY,
    ];
    args.extend_from_slice(extra);
    let (ok, out, err) = nicgen(&args);
    assert!(ok, "nicgen sim rx {extra:?} failed:\n{err}");
    (out, std::fs::read_to_string(report).unwrap())
}

/// Limits of the parser that make it decline (never wrongly accept) what scapy verifies.
fn parser_limited(ours: &Value, theirs: &Value) -> bool {
    let kind = theirs["kind"].as_str().unwrap_or("");
    let m = ours["malformed"].as_str().unwrap_or("");
    kind.contains("atomic_frag")
        || [
            "ext_header_beyond_window",
            "l4_header_beyond_window",
            "too_many_ext_headers",
        ]
        .contains(&m)
}

#[test]
fn sim_rx_agrees_with_scapy_and_reproduces_the_microsoft_rss_vectors() {
    let Some((pcap, side)) = oracle_frames() else {
        return;
    };
    let report = tmp("report.jsonl");
    let delivered_pcap = tmp("delivered.pcap");
    let (out, text) = sim_rx(
        &pcap,
        &report,
        &["--pcap-out", delivered_pcap.to_str().unwrap()],
    );
    // The documented fields, in the documented order, on every line.
    let keys = [
        "index",
        "action",
        "drop_reason",
        "vlan",
        "l3",
        "l4",
        "l3_csum_ok",
        "l4_csum_ok",
        "csum",
        "malformed",
        "rss_type",
        "rss_hash",
        "queue",
    ];
    for line in text.lines() {
        let at: Vec<usize> = keys
            .iter()
            .map(|k| line.find(&format!("\"{k}\":")).expect(k))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "field order: {line}");
    }
    let ours = jsonl(&text);
    assert_eq!(ours.len(), side.len(), "one report per input frame");
    assert!(out.contains(&format!("frames_in {}", side.len())), "{out}");
    let mut ms = 0;
    let mut limited = 0;
    for (i, (o, s)) in ours.iter().zip(&side).enumerate() {
        assert_eq!(o["index"], i, "reports are in input order");
        assert_eq!(
            o["action"], "deliver",
            "frame {i}: nothing here should be dropped: {o}"
        );
        assert_eq!(o["vlan"], s["vlan"], "frame {i} vlan: ours {o} scapy {s}");
        assert_eq!(o["l3"], s["l3"], "frame {i} l3: ours {o} scapy {s}");
        if parser_limited(o, s) {
            limited += 1;
            for k in ["l3_csum_ok", "l4_csum_ok"] {
                assert!(
                    !(o[k] == true && s[k] != true),
                    "frame {i}: {k} reported good where scapy does not: {o} {s}"
                );
            }
            continue;
        }
        if s["malformed"].is_null() {
            assert!(
                o["malformed"].is_null(),
                "frame {i}: flagged malformed: ours {o} scapy {s}"
            );
            for k in ["l4", "csum", "l3_csum_ok", "l4_csum_ok"] {
                assert_eq!(o[k], s[k], "frame {i} {k}: ours {o} scapy {s}");
            }
        } else {
            assert!(
                !o["malformed"].is_null(),
                "frame {i}: malformed frame not flagged: ours {o} scapy {s}"
            );
            // Nothing at or above the malformed layer is reported good (an intact IPv4 header
            // under a broken TCP/UDP header still verifies).
            let l4_level =
                ["truncated_l4", "bad_l4_header"].contains(&o["malformed"].as_str().unwrap());
            assert_ne!(
                o["l4_csum_ok"], true,
                "frame {i}: malformed frame reported l4_csum_ok good: {o} {s}"
            );
            if !l4_level {
                assert_ne!(
                    o["l3_csum_ok"], true,
                    "frame {i}: malformed frame reported l3_csum_ok good: {o} {s}"
                );
            }
        }
        if let Some(want) = s.get("rss_ms").filter(|v| !v.is_null()) {
            ms += 1;
            let t = o["rss_type"].as_str().unwrap();
            let want = if t.starts_with("TCP") {
                &want["tcp"]
            } else {
                &want["ip"]
            };
            assert_eq!(
                &o["rss_hash"], want,
                "frame {i}: Microsoft RSS vector ({t})"
            );
        }
    }
    assert_eq!(ms, 8, "all eight Microsoft flows were checked");
    // --pcap-out: the delivered frames, in order, as the host gets them: the outer VLAN tag
    // gone where the report says it was stripped, the rest as it came in.
    let input = nicgen_tb::pcap::read_pcap(&pcap).unwrap();
    let delivered = nicgen_tb::pcap::read_pcap(&delivered_pcap).unwrap();
    let kept: Vec<(&Vec<u8>, &Value)> = input
        .iter()
        .zip(&ours)
        .filter(|(_, o)| o["action"] == "deliver")
        .collect();
    assert_eq!(
        delivered.len(),
        kept.len(),
        "one frame per delivered record"
    );
    let mut stripped = 0;
    for ((f, o), d) in kept.iter().zip(&delivered) {
        if o["vlan"].is_null() {
            assert_eq!(d, *f, "record {}: delivered unchanged", o["index"]);
        } else {
            stripped += 1;
            assert_eq!(d[..12], f[..12], "record {}: addresses", o["index"]);
            assert_eq!(d[12..], f[16..], "record {}: the tag stripped", o["index"]);
        }
    }
    assert!(stripped > 0, "no tagged frame among the vectors");
    if nicgen_tb::tshark::tshark_required() {
        let rows = tshark_fields(&delivered_pcap, &["frame.number"]);
        assert_eq!(
            rows.len(),
            delivered.len(),
            "tshark reads every delivered frame"
        );
    }
    assert!(
        limited < side.len() / 10,
        "{limited} frames hit the parser's limits"
    );
}

#[test]
fn sim_rx_errors_name_the_problem() {
    let bad = tmp("garbage.pcap");
    std::fs::write(&bad, b"this is not a pcap").unwrap();
    let (ok, _, err) = nicgen(&[
        "sim",
        "rx",
        "--pcap-in",
        bad.to_str().unwrap(),
        "--report",
        "/tmp/x.jsonl",
    ]);
    assert!(
        !ok && err.contains("cannot read") && err.contains("garbage.pcap"),
        "{err}"
    );
    let big = tmp("big.pcap");
    nicgen_tb::pcap::write_pcap(&big, &[vec![0u8; 60], vec![0u8; 20000]]).unwrap();
    let (ok, _, err) = nicgen(&[
        "sim",
        "rx",
        "--pcap-in",
        big.to_str().unwrap(),
        "--report",
        "/tmp/x.jsonl",
    ]);
    assert!(
        !ok && err.contains("frame 1") && err.contains("20000 bytes"),
        "{err}"
    );
    let (ok, _, err) = nicgen(&[
        "sim",
        "rx",
        "--pcap-in",
        big.to_str().unwrap(),
        "--report",
        "/tmp/x.jsonl",
        "--rss-key",
        "abcd",
    ]);
    assert!(!ok && err.contains("--rss-key must be 40 bytes"), "{err}");
}

/// Every frame `nicgen sim tx --csum l3,l4` sends validates in tshark with IP/TCP/UDP checksum
/// validation on: whatever the host left in the checksum fields (the oracle set has many wrong
/// ones), well-formed headers leave with correct checksums. Fragments (no L4 work), frames the
/// oracle marks malformed, and headers beyond the parser's window are exempt from the L4 check.
#[test]
fn sim_tx_output_validates_in_tshark() {
    let Some((pcap, side)) = oracle_frames() else {
        return;
    };
    if !nicgen_tb::tshark::tshark_required() {
        return;
    }
    let out = tmp("tx-out.pcap");
    let (ok, stdout, err) = nicgen(&[
        "sim",
        "tx",
        "--preset",
        "nic64",
        "--pcap-in",
        pcap.to_str().unwrap(),
        "--pcap-out",
        out.to_str().unwrap(),
        "--csum",
        "l3,l4",
    ]);
    assert!(ok, "nicgen sim tx failed:\n{err}");
    assert!(
        stdout.contains(&format!("frames_out {}", side.len())),
        "{stdout}"
    );
    let verdicts = nicgen_tb::tshark::check_checksums(&out).unwrap();
    assert_eq!(verdicts.len(), side.len());
    let mut checked = 0;
    for (v, s) in verdicts.iter().zip(&side) {
        let i = v.index;
        if !s["malformed"].is_null() {
            continue;
        }
        if let Some(ip) = v.ip() {
            assert!(
                ip.is_good(),
                "frame {i} ({}): IPv4 header checksum {ip:?} after TX",
                s["kind"]
            );
        }
        let kind = s["kind"].as_str().unwrap_or("");
        let l4_exempt = s["fragment"] == true
            || kind.contains("atomic_frag")
            || kind.contains("hbh_dst_rt_dst")
            || kind.contains("hbh_rt");
        if let (Some(l4), false) = (v.l4(), l4_exempt) {
            assert!(
                !l4.is_bad(),
                "frame {i} ({kind}): L4 checksum {l4:?} after TX"
            );
            checked += 1;
        }
    }
    assert!(
        checked > side.len() / 2,
        "only {checked} L4 checksums were checked"
    );
}

#[test]
fn sim_tx_inserts_the_vlan_tag_and_pads() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let inp = tmp("tx-small.pcap");
    let frames = vec![vec![0xAAu8; 20], vec![0x55u8; 100]];
    nicgen_tb::pcap::write_pcap(&inp, &frames).unwrap();
    let out = tmp("tx-small-out.pcap");
    let (ok, stdout, err) = nicgen(&[
        "sim",
        "tx",
        "--pcap-in",
        inp.to_str().unwrap(),
        "--pcap-out",
        out.to_str().unwrap(),
        "--vlan-insert",
        "100",
        "--json",
    ]);
    assert!(ok, "{err}");
    // --json: one object on stdout with the figures the text gives.
    let s: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(s["preset"], "nic64");
    assert_eq!(
        (s["frames_in"].as_u64(), s["frames_out"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(s["vlan_inserted"], 2);
    assert!(s["cycles"].as_u64().unwrap() > 0);
    let got = nicgen_tb::pcap::read_pcap(&out).unwrap();
    assert_eq!(got[0].len(), 60, "padded to 60");
    assert_eq!(&got[0][12..16], &[0x81, 0x00, 0x00, 100]);
    assert_eq!(got[1].len(), 104);
    // The same frames as pcapng (what Wireshark and dumpcap write) give the same output.
    let inp_ng = tmp("tx-small.pcapng");
    let mut ng = nicgen_tb::pcap::PcapNgCapture::create(&inp_ng, "eth0").unwrap();
    for f in &frames {
        ng.write(
            nicgen_tb::pcap::Direction::Outbound,
            std::time::Duration::ZERO,
            f,
            false,
        )
        .unwrap();
    }
    ng.finish().unwrap();
    let out_ng = tmp("tx-small-out-ng.pcap");
    let (ok, _, err) = nicgen(&[
        "sim",
        "tx",
        "--pcap-in",
        inp_ng.to_str().unwrap(),
        "--pcap-out",
        out_ng.to_str().unwrap(),
        "--vlan-insert",
        "100",
    ]);
    assert!(ok, "pcapng input: {err}");
    assert_eq!(nicgen_tb::pcap::read_pcap(&out_ng).unwrap(), got);
    let (ok, _, err) = nicgen(&[
        "sim",
        "tx",
        "--pcap-in",
        inp.to_str().unwrap(),
        "--pcap-out",
        out.to_str().unwrap(),
        "--csum",
        "l5",
    ]);
    assert!(!ok && err.contains("--csum takes"), "{err}");
}

/// `nicgen sim loopback --json`: one JSON object with the text's figures, every frame back and
/// none different from the golden model; Mpps and Gb/s are the frames and bytes over the
/// simulated cycles at the preset clock (nic64: 156.25 MHz), the simulation speeds agree with
/// each other, and the DMA latency is the default 1 µs.
#[test]
fn sim_loopback_prints_one_json_object() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let (ok, stdout, err) = nicgen(&[
        "sim", "loopback", "--frames", "40", "--queues", "2", "--seed", "5", "--json",
    ]);
    assert!(ok, "{err}");
    let s: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(s["frames"], 40, "{s}");
    assert_eq!(s["errors"], 0, "{s}");
    assert_eq!(s["dma_latency_ns"], 1000, "{s}");
    for k in [
        "bytes",
        "frames_per_second",
        "cycles",
        "sim_cycles_per_s",
        "sim_frames_per_s",
    ] {
        assert!(s[k].as_u64().unwrap() > 0, "{k}: {s}");
    }
    let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k}: {s}"));
    let seconds = f("cycles") / 156.25e6;
    assert!((f("mpps") - 40.0 / seconds / 1e6).abs() < 0.001, "{s}");
    assert!(
        (f("gbps") - f("bytes") * 8.0 / seconds / 1e9).abs() < 0.001,
        "{s}"
    );
    assert!((f("simulated_gbps") - f("gbps")).abs() < 0.006, "{s}");
    assert!(f("bytes") >= 40.0 * 60.0 && f("gbps") > 0.0, "{s}");
    // Both speeds come from the same wall-clock time.
    let ratio = f("sim_cycles_per_s") / f("sim_frames_per_s");
    let want = f("cycles") / 40.0;
    assert!((ratio - want).abs() / want < 0.05, "{s}");
    let (ok, text, err) = nicgen(&[
        "sim", "loopback", "--frames", "40", "--queues", "2", "--seed", "5",
    ]);
    assert!(ok, "{err}");
    for k in ["frames", "bytes", "errors", "cycles"] {
        let line = format!("{k} {}", s[k]);
        assert!(
            text.lines().any(|l| l == line),
            "text lacks `{line}`:\n{text}"
        );
    }
}

/// `nicgen sim loopback --min-len --max-len --dma-latency-ns`: the bytes back are within the
/// lengths, and a longer DMA latency makes the same frames take more simulated cycles.
#[test]
fn sim_loopback_takes_frame_lengths_and_dma_latency() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let run = |latency: &str| {
        let (ok, stdout, err) = nicgen(&[
            "sim",
            "loopback",
            "--frames",
            "30",
            "--queues",
            "2",
            "--min-len",
            "1000",
            "--max-len",
            "1200",
            "--dma-latency-ns",
            latency,
            "--json",
        ]);
        assert!(ok, "{err}");
        let s: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
        assert_eq!(
            (s["frames"].as_u64(), s["errors"].as_u64()),
            (Some(30), Some(0)),
            "{s}"
        );
        assert_eq!(s["dma_latency_ns"].to_string(), latency, "{s}");
        let bytes = s["bytes"].as_u64().unwrap();
        // A VLAN tag the NIC inserted on the way out may come back in the frame: 4 bytes.
        assert!((30 * 1000..=30 * 1204).contains(&bytes), "{s}");
        s["cycles"].as_u64().unwrap()
    };
    let (near, far) = (run("200"), run("3000"));
    assert!(
        far > near,
        "3 us of DMA latency took {far} cycles, 200 ns took {near}"
    );
}

/// `nicgen sim loopback --tx-mode`: small frames (60 to 100 bytes; random headers may make one
/// up to 74 bytes at least) all come back in every mode, and with one frame in flight (each
/// send's latency adds up) BlueFlame + inline (`bf`), which makes no DMA read for a send, is
/// faster than `inline` (a read of the WQE), which is faster than `plain` (the WQE, then the
/// frame). Under load the send engine overlaps those reads with other frames' and BlueFlame
/// pays the driver's BAR writes instead, so the modes' throughput is results/HOST.md's, not
/// this test's.
#[test]
fn sim_loopback_tx_mode_bf_beats_plain_on_small_frames() {
    if !nicgen_tb::verilator::verilator_required() {
        return;
    }
    let run = |mode: &str| {
        let (ok, stdout, err) = nicgen(&[
            "sim",
            "loopback",
            "--frames",
            "40",
            "--min-len",
            "60",
            "--max-len",
            "100",
            "--tx-mode",
            mode,
            "--in-flight",
            "1",
            "--json",
        ]);
        assert!(ok, "{mode}: {err}");
        let s: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
        assert_eq!(
            (s["frames"].as_u64(), s["errors"].as_u64()),
            (Some(40), Some(0)),
            "{mode}: {s}"
        );
        s["cycles"].as_u64().unwrap()
    };
    let (plain, inline, bf) = (run("plain"), run("inline"), run("bf"));
    assert!(
        bf < inline && inline < plain,
        "40 frames one at a time took {bf} cycles in bf mode, {inline} inline, {plain} plain"
    );
}

/// `nicgen sim loopback --pcap-wire`: tshark reads the capture; every frame is in it once
/// going out of the NIC and once coming back in (`epb_flags` direction), none with a CRC
/// error, and the times (the simulated cycles) never go backwards.
#[test]
fn sim_loopback_captures_the_wire_both_ways() {
    if !nicgen_tb::verilator::verilator_required() || !nicgen_tb::tshark::tshark_required() {
        return;
    }
    let cap = tmp("loopback-wire.pcapng");
    let (ok, stdout, err) = nicgen(&[
        "sim",
        "loopback",
        "--frames",
        "30",
        "--queues",
        "2",
        "--pcap-wire",
        cap.to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{err}");
    let s: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(
        (s["frames"].as_u64(), s["errors"].as_u64()),
        (Some(30), Some(0)),
        "{s}"
    );
    let rows = tshark_fields(
        &cap,
        &[
            "frame.packet_flags_direction",
            "frame.packet_flags_crc_error",
            "frame.time_epoch",
            "frame.len",
        ],
    );
    let dir = |r: &Vec<String>| u32::from_str_radix(r[0].trim_start_matches("0x"), 16).unwrap();
    let (out, inb): (Vec<_>, Vec<_>) = rows.iter().partition(|r| dir(r) == 2);
    assert!(inb.iter().all(|r| dir(r) == 1), "directions: {rows:?}");
    assert_eq!((out.len(), inb.len()), (30, 30), "frames each way");
    assert!(rows.iter().all(|r| r[1] == "0"), "a CRC error: {rows:?}");
    let t: Vec<f64> = rows.iter().map(|r| r[2].parse().unwrap()).collect();
    assert!(
        t[0] > 0.0 && t.windows(2).all(|w| w[0] <= w[1]),
        "times: {t:?}"
    );
    let lens = |v: &[&Vec<String>]| {
        let mut l: Vec<u32> = v.iter().map(|r| r[3].parse().unwrap()).collect();
        l.sort();
        l
    };
    assert_eq!(lens(&out), lens(&inb), "the same frames come back");
    let _ = std::fs::remove_file(&cap);
}

/// `nicgen sim tx --tso mss=N --encap vxlan:...`: TCP super-frames (IPv4, IPv6, and one the host
/// already put in VXLAN) leave as the golden model's segments (`nicgen_model::tx::tx_frames`),
/// each in the NIC's outer headers, byte for byte; a frame that is not TCP is refused and
/// counted; tshark, checksum validation on, finds every IPv4, TCP and UDP checksum of every
/// frame good, outer and inner.
#[test]
fn sim_tx_segments_and_encapsulates_super_frames() {
    use nicgen_model::encap::{encap, EncapKind};
    use nicgen_model::tcp::Flags;
    use nicgen_model::tx::{tx_frames, TxRequest};
    use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip};
    if !nicgen_tb::verilator::verilator_required() || !nicgen_tb::tshark::tshark_required() {
        return;
    }
    let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0);
    let ip = |v6| Ip { v6, ident: 0x1234 };
    let frames = vec![
        tcp_frame(ip(false), false, 7, flags, &pattern(5000)),
        tcp_frame(ip(true), true, 8, flags, &pattern(3333)),
        encap(
            &tcp_frame(ip(false), false, 9, flags, &pattern(2500)),
            &ctx(false, false, EncapKind::vxlan(42)),
            0x2000,
        )
        .unwrap(),
        nicgen::traffic::udp_frame(300, 1),
    ];
    let spec = "vxlan:vni=77,src=192.0.2.1,dst=192.0.2.2,smac=02:00:00:00:00:01,dmac=02:00:00:00:00:02,udp-csum";
    let nic_ctx = nicgen::tx_opts::parse_encap(spec).unwrap();
    let mut id = 0u16;
    let want: Vec<Vec<u8>> = frames
        .iter()
        .flat_map(|f| {
            let req = TxRequest {
                mss: Some(1000),
                encap: Some(nic_ctx),
                ..TxRequest::default()
            };
            tx_frames(f, &req, 128, &mut id).unwrap_or_default()
        })
        .map(|w| w[..w.len() - 4].to_vec())
        .collect();
    assert_eq!(want.len(), 5 + 4 + 3);
    let inp = tmp("tso-in.pcap");
    nicgen_tb::pcap::write_pcap(&inp, &frames).unwrap();
    let out = tmp("tso-out.pcap");
    let (ok, stdout, err) = nicgen(&[
        "sim",
        "tx",
        "--pcap-in",
        inp.to_str().unwrap(),
        "--pcap-out",
        out.to_str().unwrap(),
        "--tso",
        "mss=1000",
        "--encap",
        spec,
        "--json",
    ]);
    assert!(ok, "{err}");
    let s: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
    assert_eq!(
        (&s["frames_out"], &s["lso_sends"], &s["lso_refused"]),
        (&Value::from(want.len()), &Value::from(3), &Value::from(1)),
        "{s}"
    );
    assert_eq!(s["encapsulated"], want.len(), "{s}");
    let got = nicgen_tb::pcap::read_pcap(&out).unwrap();
    assert!(got == want, "the segments differ from the model's");
    let verdicts = nicgen_tb::tshark::check_checksums(&out).unwrap();
    assert_eq!(verdicts.len(), want.len());
    for v in &verdicts {
        for c in v.ip.iter().chain(&v.tcp).chain(&v.udp) {
            assert!(!c.is_bad(), "frame {}: {v:?}", v.index);
        }
        assert!(!v.tcp.is_empty() && !v.udp.is_empty(), "{v:?}");
    }
    // Bad option values say what was wrong.
    for (opt, val, says) in [
        ("--tso", "mss=0", "--tso `mss=0`"),
        ("--encap", "vxlan:vni=1", "needs"),
    ] {
        let (ok, _, err) = nicgen(&[
            "sim",
            "tx",
            "--pcap-in",
            inp.to_str().unwrap(),
            "--pcap-out",
            out.to_str().unwrap(),
            opt,
            val,
        ]);
        assert!(!ok && err.contains(says), "{opt} {val}: {err}");
    }
}

/// The frames of [`sim_rx_inner_offloads_report_both_header_sets`], built by scapy: `python3 -
/// OUT_DIR` writes `inner.pcap` (VXLAN and NVGRE over IPv4 and IPv6 outers around IPv4 and IPv6
/// TCP/UDP inner frames, two of them with a corrupted inner TCP checksum under a correct outer
/// one) and `expect.jsonl` (per frame: the tunnel, the outer and inner types, whether the inner
/// L4 checksum is good, and the inner flow's addresses and ports).
const SCAPY_INNER: &str = r#"
import json, sys
from scapy.all import Ether, IP, IPv6, UDP, TCP, GRE, Raw, wrpcap
from scapy.layers.vxlan import VXLAN
out = sys.argv[1]
cases = [
    ("vxlan", False, False, "tcp", False),
    ("vxlan", True, True, "udp", False),
    ("nvgre", False, False, "tcp", False),
    ("nvgre", True, False, "udp", False),
    ("vxlan", False, False, "tcp", True),
    ("nvgre", False, True, "tcp", True),
    ("vxlan", True, False, "tcp", False),
]
frames, expect = [], []
for i, (kind, ov6, iv6, l4, bad) in enumerate(cases):
    if iv6:
        src, dst = "fd00::%x" % (i + 1), "fd00::1:%x" % (i + 1)
        l3 = IPv6(src=src, dst=dst)
    else:
        src, dst = "10.0.0.%d" % (i + 1), "10.0.1.%d" % (i + 1)
        l3 = IP(src=src, dst=dst)
    sport, dport = 1000 + 17 * i, 80 + i
    hdr = TCP(sport=sport, dport=dport, flags="PA") if l4 == "tcp" else UDP(sport=sport, dport=dport)
    inner = bytearray(bytes(Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") / l3 / hdr
                            / Raw(bytes(range(40 + 10 * i)))))
    if bad:
        inner[14 + (40 if iv6 else 20) + 16] ^= 0x55
    outer = Ether(src="02:00:00:00:01:01", dst="02:00:00:00:01:02") / \
        (IPv6(src="fd01::1", dst="fd01::2") if ov6 else IP(src="192.0.2.1", dst="192.0.2.2"))
    if kind == "vxlan":
        f = outer / UDP(sport=50000 + i, dport=4789) / VXLAN(vni=100 + i) / Raw(bytes(inner))
    else:
        f = outer / GRE(key_present=1, proto=0x6558, key=((100 + i) << 8) | i) / Raw(bytes(inner))
    frames.append(f)
    expect.append({"tunnel": kind, "l3": "ipv6" if ov6 else "ipv4",
                   "l4": "udp" if kind == "vxlan" else None,
                   "inner_l3": "ipv6" if iv6 else "ipv4", "inner_l4": l4,
                   "inner_l4_ok": not bad, "src": src, "dst": dst, "sport": sport, "dport": dport})
wrpcap(out + "/inner.pcap", frames)
with open(out + "/expect.jsonl", "w") as fh:
    for e in expect:
        fh.write(json.dumps(e) + "\n")
"#;

/// `sim rx --inner`: VXLAN and NVGRE frames built by scapy, delivered whole with the inner
/// offloads, report the outer headers' types and verdicts, the inner headers' types and
/// verdicts (a corrupted inner TCP checksum under good outer ones reads
/// `inner_l4_csum_ok: false`), and the Toeplitz hash (Microsoft key) of the inner flow;
/// `--inner vxlan` gives them to VXLAN only; a bad kind is a usage error naming the allowed
/// values.
#[test]
fn sim_rx_inner_offloads_report_both_header_sets() {
    use nicgen_model::toeplitz::hash_flow;
    use std::net::IpAddr;
    // A bad value: exit 2, the allowed values named (before any frame is read).
    let o = Command::new(env!("CARGO_BIN_EXE_nicgen"))
        .args(["sim", "rx", "--pcap-in", "/nonexistent.pcap", "--report"])
        .arg(tmp("inner-bad.jsonl"))
        .args(["--inner", "vxlan,geneve"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`geneve`") && err.contains("vxlan, nvgre and all"),
        "{err}"
    );
    if !nicgen_tb::verilator::verilator_required() || !nicgen_tb::require::scapy_required() {
        return;
    }
    let dir = tmp("inner");
    std::fs::create_dir_all(&dir).unwrap();
    if let Err(e) = nicgen_tb::require::run_python(SCAPY_INNER, &[dir.as_os_str()]) {
        panic!("scapy: {e}");
    }
    let expect = jsonl(&std::fs::read_to_string(dir.join("expect.jsonl")).unwrap());
    let key: Vec<u8> = (0..40)
        .map(|i| u8::from_str_radix(&MS_KEY[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let key: [u8; 40] = key.try_into().unwrap();
    let pcap = dir.join("inner.pcap");
    for inner in ["all", "vxlan"] {
        let report = dir.join(format!("report-{inner}.jsonl"));
        let ours = jsonl(&sim_rx(&pcap, &report, &["--inner", inner]).1);
        assert_eq!(ours.len(), expect.len(), "one report per input frame");
        for (i, (o, e)) in ours.iter().zip(&expect).enumerate() {
            let ctx = format!("--inner {inner}, frame {i}: ours {o}, scapy {e}");
            let outer_l4_ok = if e["l4"].is_null() {
                Value::Null
            } else {
                Value::Bool(true)
            };
            // The outer headers, whatever the inner offloads.
            assert_eq!(o["action"], "deliver", "{ctx}");
            assert_eq!(
                (&o["tunnel"], &o["decap"]),
                (&e["tunnel"], &Value::Bool(false)),
                "{ctx}"
            );
            assert_eq!((&o["l3"], &o["l4"]), (&e["l3"], &e["l4"]), "{ctx}");
            assert_eq!(
                (&o["l3_csum_ok"], &o["l4_csum_ok"]),
                (&Value::Bool(true), &outer_l4_ok),
                "{ctx}"
            );
            let on = inner == "all" || e["tunnel"] == "vxlan";
            if !on {
                for k in [
                    "inner_l3",
                    "inner_l4",
                    "inner_l3_csum_ok",
                    "inner_l4_csum_ok",
                ] {
                    assert!(o[k].is_null(), "{ctx}: {k}");
                }
                continue;
            }
            assert_eq!(
                (&o["inner_l3"], &o["inner_l4"]),
                (&e["inner_l3"], &e["inner_l4"]),
                "{ctx}"
            );
            assert_eq!(
                (&o["inner_l3_csum_ok"], &o["inner_l4_csum_ok"]),
                (&Value::Bool(true), &e["inner_l4_ok"]),
                "{ctx}"
            );
            // RSS hashed the inner 4-tuple.
            let ip = |k: &str| e[k].as_str().unwrap().parse::<IpAddr>().unwrap();
            let port = |k: &str| e[k].as_u64().unwrap() as u16;
            let h = hash_flow(
                &key,
                ip("src"),
                ip("dst"),
                Some((port("sport"), port("dport"))),
            );
            assert_eq!(o["rss_hash"], format!("0x{h:08x}"), "{ctx}");
            let t = format!(
                "{}_{}",
                e["inner_l4"].as_str().unwrap(),
                e["inner_l3"].as_str().unwrap()
            );
            assert_eq!(o["rss_type"], t.to_uppercase(), "{ctx}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
