//! Linux through the RTL: two network namespaces joined only by `nicgen sim tap` (the whole
//! NIC, its wire side on a TAP in one namespace, its host side through the real driver on a TAP
//! in the other). Ping both ways, then a 4 MiB TCP transfer checked by SHA-256.
//!
//! The wire TAP exists before the run (persistent and addressed, as a user would set it up)
//! and must still be there, with its address, afterwards; the host TAP is one `sim tap`
//! creates, and must be gone afterwards. Everything the test made (namespaces, TAPs, the
//! simulator) is removed at the end, also on failure.
//!
//! Needs root, `/dev/net/tun`, `ip`, `ping` and python3: under `NICGEN_REQUIRE_TOOLS=1` (CI,
//! `cargo xtask test`) a missing one fails the test; elsewhere it is skipped with a message.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn sh(args: &[&str]) -> std::process::Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("running {args:?}: {e}"))
}

fn ok(args: &[&str]) -> String {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into()
}

/// Root, /dev/net/tun, `ip`, `ping`, python3 (the TCP ends) and ethtool: missing, the test fails under
/// `NICGEN_REQUIRE_TOOLS=1` and skips otherwise (`nicgen_tb::require`).
fn can_run() -> bool {
    nicgen_tb::require::root_required(&["ip", "ping", "python3", "ethtool"])
}

/// The wire TAP's MAC address (set before the run, so the overlay peer can be told it).
const WIRE_MAC: &str = "02:00:00:00:99:01";

/// Whether `ethtool -k DEV` in namespace `ns` shows `feature` on.
fn offload_on(ns: &str, dev: &str, feature: &str) -> bool {
    run_in(ns, &["ethtool", "-k", dev])
        .lines()
        .any(|l| l.trim_start().starts_with(&format!("{feature}: on")))
}

/// Frames of the capture `cap` leaving the NIC (direction 2) whose IPv4, TCP or UDP checksum
/// tshark finds bad, at any depth (inner headers of a tunnel too), with checksum validation
/// on.
fn bad_checksums_out(cap: &std::path::Path) -> usize {
    let o = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(cap)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            "frame.packet_flags_direction == 2 && (ip.checksum.status == 0 || tcp.checksum.status == 0 || udp.checksum.status == 0)",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().count()
}

/// What the test made; removed on drop.
struct Setup {
    ns: [String; 2],
    sim: Option<Child>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(mut c) = self.sim.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let _ = c.wait();
        }
        // Deleting a namespace removes the TAPs in it.
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// `args` run inside namespace `ns`.
fn in_ns(ns: &str, args: &[&str]) -> Vec<String> {
    ["ip", "netns", "exec", ns]
        .iter()
        .chain(args)
        .map(|s| s.to_string())
        .collect()
}

fn run_in(ns: &str, args: &[&str]) -> String {
    let v = in_ns(ns, args);
    ok(&v.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Whether interface `dev` exists in namespace `ns`.
fn link_exists(ns: &str, dev: &str) -> bool {
    let v = in_ns(ns, &["ip", "link", "show", dev]);
    sh(&v.iter().map(String::as_str).collect::<Vec<_>>())
        .status
        .success()
}

/// A running `nicgen sim tap` between namespace `a` (its wire TAP `wt`, made persistent and
/// addressed 10.99.0.1/24 before the run) and namespace `b` (its host TAP `ht`, which the run
/// creates; addressed 10.99.0.2/24 here).
struct Run {
    a: String,
    b: String,
    wt: String,
    ht: String,
    cap: std::path::PathBuf,
    s: Setup,
    log: std::thread::JoinHandle<String>,
    /// The run's tag, for the benchmark lines.
    mode: String,
}

/// Namespaces and TAPs named after `tag` and this process, and `nicgen sim tap` between them
/// with `extra` arguments, once it says it is running.
fn start(tag: &str, extra: &[&str]) -> Run {
    let id = std::process::id() % 100_000;
    let (a, b) = (format!("ngw{tag}{id}"), format!("ngh{tag}{id}"));
    let (wt, ht) = (format!("ngtw{tag}{id}"), format!("ngth{tag}{id}"));
    let mut s = Setup {
        ns: [a.clone(), b.clone()],
        sim: None,
    };
    ok(&["ip", "netns", "add", &a]);
    ok(&["ip", "netns", "add", &b]);
    // The wire side: a persistent TAP, addressed and up before nicgen starts.
    run_in(&a, &["ip", "tuntap", "add", "dev", &wt, "mode", "tap"]);
    run_in(&a, &["ip", "link", "set", &wt, "address", WIRE_MAC]);
    run_in(&a, &["ip", "addr", "add", "10.99.0.1/24", "dev", &wt]);
    run_in(&a, &["ip", "link", "set", &wt, "up"]);
    run_in(&a, &["ip", "link", "set", "lo", "up"]);
    assert!(!link_exists(&b, &ht));
    let cap = std::env::temp_dir().join(format!("nicgen-tap-wire-{tag}{id}.pcapng"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_nicgen"))
        .args([
            "sim",
            "tap",
            "--preset",
            "nic64",
            "--wire-tap",
            &format!("{wt}@{a}"),
            "--host-tap",
            &format!("{ht}@{b}"),
            "--seconds",
            "1800",
            "--pcap-wire",
            cap.to_str().unwrap(),
            "--json",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting nicgen sim tap");
    // Pass nicgen's log through, and tell when it says the NIC is running (the first run
    // builds the NIC model, minutes on a small machine).
    let (ready_tx, ready) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if line.contains("sim tap running") {
                let _ = ready_tx.send(line.clone());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    s.sim = Some(child);
    let line = ready
        .recv_timeout(Duration::from_secs(1500))
        .expect("nicgen sim tap never said it was running");
    assert!(
        line.contains(&format!("wire TAP `{wt}` in namespace `{a}` (attached)"))
            && line.contains(&format!("host TAP `{ht}` in namespace `{b}` (created)")),
        "{line}"
    );
    assert!(link_exists(&b, &ht), "the host TAP was created in {b}");
    assert!(!link_exists(&a, &ht) && !link_exists(&b, &wt));
    run_in(&b, &["ip", "addr", "add", "10.99.0.2/24", "dev", &ht]);
    run_in(&b, &["ip", "link", "set", &ht, "up"]);
    run_in(&b, &["ip", "link", "set", "lo", "up"]);
    Run {
        a,
        b,
        wt,
        ht,
        cap,
        s,
        log,
        mode: tag.to_string(),
    }
}

/// 4 MiB over TCP from namespace `from` to a server at `to_ip` in namespace `to`, checked by
/// SHA-256; returns the bytes. Prints a `goodput` line (`what`, bytes, wall-clock seconds of
/// the client's send) for `cargo xtask bench-tap`; nothing is asserted of the time.
fn transfer(from: &str, to: &str, to_ip: &str, tag: &str, what: &str) -> usize {
    let data: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let want = format!("{:x}", Sha256::digest(&data));
    let dir = std::env::temp_dir().join(format!("nicgen-tap-{tag}{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("data.bin");
    std::fs::write(&file, &data).unwrap();
    let server = format!(
        "import socket,hashlib\n\
         s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
         s.bind(('{to_ip}',5001)); s.listen(1); s.settimeout(300)\n\
         c,_=s.accept(); c.settimeout(300); h=hashlib.sha256(); n=0\n\
         while True:\n    b=c.recv(65536)\n    if not b: break\n    h.update(b); n+=len(b)\n\
         print(n, h.hexdigest(), flush=True)\n"
    );
    let mut srv = Command::new("ip")
        .args(["netns", "exec", to, "python3", "-c", &server])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let client = format!(
        "import socket\ns=socket.create_connection(('{to_ip}',5001),timeout=300)\n\
         s.sendall(open('{}','rb').read()); s.close()\n",
        file.display()
    );
    let t0 = Instant::now();
    run_in(from, &["python3", "-c", &client]);
    let mut line = String::new();
    BufReader::new(srv.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = srv.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        line.trim(),
        format!("{} {want}", data.len()),
        "what the server received"
    );
    println!(
        "goodput\t{what}\t{}\t{:.3}",
        data.len(),
        t0.elapsed().as_secs_f64()
    );
    data.len()
}

/// Per frame of the capture `cap` (those matching the display filter, if one), its direction
/// (`frame.packet_flags_direction`, hex) and `tcp.len`, as tshark prints them.
fn tshark_rows(cap: &std::path::Path, filter: Option<&str>) -> Vec<Vec<String>> {
    let o = Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(cap)
        .args(filter.map(|f| ["-Y", f]).into_iter().flatten())
        .args([
            "-T",
            "fields",
            "-e",
            "frame.packet_flags_direction",
            "-e",
            "tcp.len",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

impl Run {
    /// Stops the simulator with SIGTERM; its summary (--json: one object).
    fn stop(&mut self) -> Value {
        let mut c = self.s.sim.take().unwrap();
        ok(&["kill", "-TERM", &c.id().to_string()]);
        let mut out = String::new();
        c.stdout.as_mut().unwrap().read_to_string(&mut out).unwrap();
        let status = c.wait().unwrap();
        let log = std::mem::replace(&mut self.log, std::thread::spawn(String::new))
            .join()
            .unwrap();
        assert!(
            status.success(),
            "nicgen sim tap exited badly: {out}\n{log}"
        );
        let sum: Value = serde_json::from_str(out.trim()).expect("one JSON object on stdout");
        println!(
            "tap-run\t{}\t{}\t{}",
            self.mode, sum["sim_cycles"], sum["seconds"]
        );
        sum
    }
}

#[test]
fn linux_namespaces_ping_and_move_4_mib_of_tcp_through_the_rtl() {
    if !nicgen_tb::verilator::verilator_required() || !can_run() {
        return;
    }
    let mut r = start("", &[]);
    let (a, b, wt, ht, cap) = (
        r.a.clone(),
        r.b.clone(),
        r.wt.clone(),
        r.ht.clone(),
        r.cap.clone(),
    );

    // Ping both ways (the first may wait for ARP through the RTL).
    run_in(&b, &["ping", "-c", "3", "-W", "10", "10.99.0.1"]);
    run_in(&a, &["ping", "-c", "3", "-W", "10", "10.99.0.2"]);

    // The host TAP offers TSO: the kernel hands the driver super-frames, sent as LSO.
    assert!(offload_on(&b, &ht, "tcp-segmentation-offload"));
    // 4 MiB over TCP from the host side to the wire side, checked by SHA-256.
    let sent = transfer(&b, &a, "10.99.0.1", "", "plain TCP, host to wire");
    let sum = r.stop();
    assert!(sum["lso_sends"].as_u64().unwrap() > 10, "{sum}");
    assert_eq!(sum["gso_in_software"], 0, "{sum}");
    assert_eq!(sum["host_frames_dropped"], 0, "{sum}");
    assert!(sum["host_to_wire"].as_u64().unwrap() > 2800, "{sum}");
    assert!(sum["wire_to_host"].as_u64().unwrap() > 100, "{sum}");
    assert_eq!(sum["wire_tap_created"], false, "{sum}");
    assert_eq!(sum["host_tap_created"], true, "{sum}");
    assert_eq!(sum["csum_in_software"], 0, "{sum}");

    // --pcap-wire: tshark reads every MAC frame with its direction (1 into the NIC, 2 out),
    // as many each way as the summary counts; the TCP transfer went out through the MAC.
    if nicgen_tb::tshark::tshark_required() {
        let rows = tshark_rows(&cap, None);
        let rows: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect();
        let dir = |r: &Vec<&str>| u32::from_str_radix(r[0].trim_start_matches("0x"), 16).unwrap();
        let inbound = rows.iter().filter(|r| dir(r) == 1).count() as u64;
        let outbound = rows.iter().filter(|r| dir(r) == 2).count() as u64;
        assert_eq!(
            inbound + outbound,
            rows.len() as u64,
            "every frame has a direction"
        );
        assert_eq!(inbound, sum["wire_rx_frames"].as_u64().unwrap(), "{sum}");
        assert_eq!(outbound, sum["wire_tx_frames"].as_u64().unwrap(), "{sum}");
        let tcp_out: u64 = rows
            .iter()
            .filter(|r| dir(r) == 2)
            .filter_map(|r| r.get(1)?.parse::<u64>().ok())
            .sum();
        assert!(tcp_out >= sent as u64, "TCP bytes out: {tcp_out}");
        assert_eq!(bad_checksums_out(&cap), 0, "frames out with a bad checksum");
    }
    let _ = std::fs::remove_file(&cap);

    // The TAP that existed stays, with its address; the one nicgen created is gone.
    let shown = run_in(&a, &["ip", "addr", "show", "dev", &wt]);
    assert!(shown.contains("10.99.0.1/24"), "{shown}");
    let t0 = Instant::now();
    while link_exists(&b, &ht) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the host TAP {ht} outlived the run"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Interop with Linux's own tunnel (the host's tunnel, issue mode (b)): a Linux `vxlan` device
/// on each side (VNI 42, UDP 4789), the wire side's over its TAP, the host side's over the
/// host TAP the NIC serves. Ping over the overlay both ways, then 4 MiB of TCP each way, checked
/// by SHA-256; every overlay frame crosses the NIC's MAC as VXLAN (tshark decodes them on the
/// wire capture, every checksum good, inner ones too), received whole (no steering entry: the
/// host's kernel de-capsulates). The host TAP offers UDP-tunnel GSO: the kernel hands the
/// driver tunnelled super-frames, which the NIC segments (TSO with every inner and outer
/// field rewritten), and a tunnelled frame asking for its inner TCP checksum goes as LSO of
/// one segment.
#[test]
fn linux_vxlan_over_the_rtl_moves_4_mib_of_tcp_each_way() {
    if !nicgen_tb::verilator::verilator_required() || !can_run() {
        return;
    }
    let mut r = start("x", &[]);
    let (a, b, cap) = (r.a.clone(), r.b.clone(), r.cap.clone());
    for (ns, dev, local, remote, addr) in [
        (&a, &r.wt, "10.99.0.1", "10.99.0.2", "10.200.0.1/24"),
        (&b, &r.ht, "10.99.0.2", "10.99.0.1", "10.200.0.2/24"),
    ] {
        run_in(
            ns,
            &[
                "ip", "link", "add", "vx0", "type", "vxlan", "id", "42", "local", local, "remote",
                remote, "dstport", "4789", "dev", dev,
            ],
        );
        run_in(ns, &["ip", "addr", "add", addr, "dev", "vx0"]);
        run_in(ns, &["ip", "link", "set", "vx0", "up"]);
    }
    run_in(&b, &["ping", "-c", "3", "-W", "10", "10.200.0.1"]);
    run_in(&a, &["ping", "-c", "3", "-W", "10", "10.200.0.2"]);
    assert!(offload_on(&b, &r.ht, "tcp-segmentation-offload"));
    assert!(offload_on(&b, &r.ht, "tx-udp_tnl-segmentation"));
    let up = transfer(
        &b,
        &a,
        "10.200.0.1",
        "x",
        "host's vxlan (mode b), host to wire",
    );
    let down = transfer(
        &a,
        &b,
        "10.200.0.2",
        "x",
        "host's vxlan (mode b), wire to host",
    );
    let sum = r.stop();
    assert!(sum["host_to_wire"].as_u64().unwrap() > 2800, "{sum}");
    assert!(sum["wire_to_host"].as_u64().unwrap() > 2800, "{sum}");
    // The kernel's vxlan device hands tunnelled super-frames to the host TAP: the NIC
    // segments them. (Frames it sends whole with an inner TCP checksum request go as one
    // segment; those without payload get it from the driver.)
    assert_eq!(sum["tunnel_gso_offered"], true, "{sum}");
    assert!(sum["lso_tunnel_sends"].as_u64().unwrap() > 10, "{sum}");
    assert_eq!(sum["gso_in_software"], 0, "{sum}");
    assert_eq!(sum["host_frames_dropped"], 0, "{sum}");
    if nicgen_tb::tshark::tshark_required() {
        // The inner TCP payload bytes tshark finds inside VXLAN, per direction (1 into the
        // NIC from the wire, 2 out to it).
        let mut bytes = [0u64; 2];
        for row in tshark_rows(&cap, Some("vxlan.vni == 42")) {
            let d = u32::from_str_radix(row[0].trim_start_matches("0x"), 16).unwrap();
            let n: u64 = row.get(1).and_then(|t| t.parse().ok()).unwrap_or(0);
            bytes[(d == 2) as usize] += n;
        }
        assert!(
            bytes[1] >= up as u64,
            "TCP bytes in VXLAN out of the NIC: {bytes:?}"
        );
        assert!(
            bytes[0] >= down as u64,
            "TCP bytes in VXLAN into the NIC: {bytes:?}"
        );
        assert_eq!(bad_checksums_out(&cap), 0, "frames out with a bad checksum");
    }
    let _ = std::fs::remove_file(&cap);
}

/// Interop with the NIC's own engines (issue mode (a)): a Linux `vxlan` device in the wire-side
/// namespace (VNI 42 over the wire TAP, a static neighbour entry for the NIC's underlay
/// address), and `sim tap --vxlan` on the host side: the host TAP carries plain frames, the NIC
/// encapsulates every one towards the wire peer and de-capsulates the VNI's frames from the
/// wire. Ping over the overlay both ways, then 4 MiB of TCP each way (SHA-256), the host's
/// super-frames segmented by the NIC before it encapsulates each segment; on the wire every
/// frame out of the NIC is VXLAN with good checksums, inner ones too.
#[test]
fn nic_vxlan_engines_carry_linux_vxlan_traffic_4_mib_each_way() {
    if !nicgen_tb::verilator::verilator_required() || !can_run() {
        return;
    }
    // The NIC's underlay address 10.99.0.2 and its outer source MAC (`--vxlan`'s default,
    // 02:00 and the address).
    let nic_mac = "02:00:0a:63:00:02";
    let spec = format!("vni=42,local=10.99.0.2,remote=10.99.0.1,remote-mac={WIRE_MAC}");
    let mut r = start("v", &["--vxlan", &spec]);
    let (a, b, cap) = (r.a.clone(), r.b.clone(), r.cap.clone());
    run_in(
        &a,
        &[
            "ip",
            "link",
            "add",
            "vx0",
            "type",
            "vxlan",
            "id",
            "42",
            "local",
            "10.99.0.1",
            "remote",
            "10.99.0.2",
            "dstport",
            "4789",
            "dev",
            &r.wt,
        ],
    );
    run_in(&a, &["ip", "addr", "add", "10.200.0.1/24", "dev", "vx0"]);
    run_in(&a, &["ip", "link", "set", "vx0", "up"]);
    run_in(
        &a,
        &[
            "ip",
            "neigh",
            "replace",
            "10.99.0.2",
            "lladdr",
            nic_mac,
            "dev",
            &r.wt,
            "nud",
            "permanent",
        ],
    );
    // The host side is the overlay: its frames get 50 bytes of outer headers on the wire.
    run_in(&b, &["ip", "link", "set", &r.ht, "mtu", "1450"]);
    run_in(&b, &["ip", "addr", "add", "10.200.0.2/24", "dev", &r.ht]);
    assert!(offload_on(&b, &r.ht, "tcp-segmentation-offload"));
    run_in(&b, &["ping", "-c", "3", "-W", "10", "10.200.0.1"]);
    run_in(&a, &["ping", "-c", "3", "-W", "10", "10.200.0.2"]);
    let up = transfer(
        &b,
        &a,
        "10.200.0.1",
        "v",
        "NIC's vxlan (mode a), host to wire",
    );
    let down = transfer(
        &a,
        &b,
        "10.200.0.2",
        "v",
        "NIC's vxlan (mode a), wire to host",
    );
    let sum = r.stop();
    assert!(sum["host_to_wire"].as_u64().unwrap() > 2800, "{sum}");
    assert!(sum["wire_to_host"].as_u64().unwrap() > 2800, "{sum}");
    assert!(sum["lso_sends"].as_u64().unwrap() > 10, "{sum}");
    assert_eq!(sum["csum_in_software"], 0, "{sum}");
    assert_eq!(sum["host_frames_dropped"], 0, "{sum}");
    if nicgen_tb::tshark::tshark_required() {
        let mut bytes = [0u64; 2];
        let mut frames = [0u64; 2];
        for row in tshark_rows(&cap, Some("vxlan.vni == 42")) {
            let d = u32::from_str_radix(row[0].trim_start_matches("0x"), 16).unwrap();
            let n: u64 = row.get(1).and_then(|t| t.parse().ok()).unwrap_or(0);
            bytes[(d == 2) as usize] += n;
            frames[(d == 2) as usize] += 1;
        }
        assert!(bytes[1] >= up as u64, "TCP bytes in VXLAN out: {bytes:?}");
        assert!(bytes[0] >= down as u64, "TCP bytes in VXLAN in: {bytes:?}");
        // Everything the NIC sent went out in the tunnel.
        assert_eq!(frames[1], sum["wire_tx_frames"].as_u64().unwrap(), "{sum}");
        assert_eq!(bad_checksums_out(&cap), 0, "frames out with a bad checksum");
    }
    let _ = std::fs::remove_file(&cap);
}
