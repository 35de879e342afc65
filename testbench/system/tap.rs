//! Linux through the RTL: two network namespaces joined only by `nicgen sim tap` (the whole
//! NIC, its wire side on a TAP in one namespace, its host side through the real driver on a TAP
//! in the other). Ping both ways, then a 4 MiB TCP transfer checked by SHA-256; everything the
//! test made (namespaces, TAPs, the simulator) is removed at the end, also on failure.
//!
//! Needs root, `/dev/net/tun`, `ip`, `ping` and python3: under `NICGEN_REQUIRE_TOOLS=1` (CI,
//! `cargo xtask test`) a missing one fails the test; elsewhere it is skipped with a message.

use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn sh(args: &[&str]) -> std::process::Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("running {args:?}: {e}"))
}

fn ok(args: &[&str]) {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Root, /dev/net/tun, `ip`, `ping` and python3 (the TCP ends): missing, the test fails under
/// `NICGEN_REQUIRE_TOOLS=1` and skips otherwise (`nicgen_tb::require`).
fn can_run() -> bool {
    nicgen_tb::require::root_required(&["ip", "ping", "python3"])
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
        for n in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn in_ns(ns: &str, args: &[&str]) -> Vec<String> {
    let mut v = vec![
        "ip".to_string(),
        "netns".into(),
        "exec".into(),
        ns.to_string(),
    ];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

#[test]
fn linux_namespaces_ping_and_move_4_mib_of_tcp_through_the_rtl() {
    if !nicgen_tb::verilator::verilator_required() || !can_run() {
        return;
    }
    let id = std::process::id() % 100_000;
    let (a, b) = (format!("ngw{id}"), format!("ngh{id}"));
    let (wt, ht) = (format!("ngtw{id}"), format!("ngth{id}"));
    let mut s = Setup {
        ns: [a.clone(), b.clone()],
        sim: None,
    };
    ok(&["ip", "netns", "add", &a]);
    ok(&["ip", "netns", "add", &b]);
    let child = Command::new(env!("CARGO_BIN_EXE_nicgen"))
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
            "900",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting nicgen sim tap");
    s.sim = Some(child);
    // The first run builds the NIC model (a minute or two): wait for both TAPs.
    let t0 = Instant::now();
    loop {
        let up = sh(&in_ns(&a, &["ip", "link", "show", &wt])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>())
        .status
        .success()
            && sh(&in_ns(&b, &["ip", "link", "show", &ht])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>())
            .status
            .success();
        if up {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "the TAPs never appeared"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let run = |ns: &str, args: &[&str]| {
        let v = in_ns(ns, args);
        ok(&v.iter().map(String::as_str).collect::<Vec<_>>());
    };
    run(&a, &["ip", "addr", "add", "10.99.0.1/24", "dev", &wt]);
    run(&a, &["ip", "link", "set", &wt, "up"]);
    run(&b, &["ip", "addr", "add", "10.99.0.2/24", "dev", &ht]);
    run(&b, &["ip", "link", "set", &ht, "up"]);
    run(&a, &["ip", "link", "set", "lo", "up"]);
    run(&b, &["ip", "link", "set", "lo", "up"]);

    // Ping both ways (the first may wait for ARP through the RTL).
    run(&b, &["ping", "-c", "3", "-W", "10", "10.99.0.1"]);
    run(&a, &["ping", "-c", "3", "-W", "10", "10.99.0.2"]);

    // 4 MiB over TCP from the host side to the wire side, checked by SHA-256.
    let data: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let want = format!("{:x}", Sha256::digest(&data));
    let dir = std::env::temp_dir().join(format!("nicgen-tap-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("data.bin");
    std::fs::write(&file, &data).unwrap();
    let server = "import socket,hashlib\n\
                  s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
                  s.bind(('10.99.0.1',5001)); s.listen(1); s.settimeout(300)\n\
                  c,_=s.accept(); c.settimeout(300); h=hashlib.sha256(); n=0\n\
                  while True:\n    b=c.recv(65536)\n    if not b: break\n    h.update(b); n+=len(b)\n\
                  print(n, h.hexdigest(), flush=True)\n";
    let mut srv = Command::new("ip")
        .args(["netns", "exec", &a, "python3", "-c", server])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let client = format!(
        "import socket\ns=socket.create_connection(('10.99.0.1',5001),timeout=300)\n\
         s.sendall(open('{}','rb').read()); s.close()\n",
        file.display()
    );
    run(&b, &["python3", "-c", &client]);
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

    // Stop the simulator with SIGTERM: it prints its counts per direction.
    let mut c = s.sim.take().unwrap();
    ok(&["kill", "-TERM", &c.id().to_string()]);
    let mut out = String::new();
    std::io::Read::read_to_string(c.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(
        c.wait().unwrap().success(),
        "nicgen sim tap exited badly: {out}"
    );
    let count = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no `{k}` in: {out}"))
    };
    assert!(count("host_to_wire") > 2800, "{out}");
    assert!(count("wire_to_host") > 100, "{out}");
    let _ = std::io::stdout().flush();
}
