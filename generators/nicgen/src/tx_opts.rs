//! The transmit offloads `nicgen sim tx` asks for beyond checksums and VLAN: `--encap` (the
//! NIC's own VXLAN or NVGRE encapsulation, one context) and `--tso` (segmentation of every
//! frame as a super-frame). Parsing only; errors say what was wrong and how to write it.

use anyhow::{anyhow, bail, Result};
use nicgen_model::encap::{EncapContext, EncapKind, OuterIp};
use nicgen_model::ethernet::EthernetAddress;
use std::net::IpAddr;

/// How `--encap` is written.
pub const ENCAP_USAGE: &str = "vxlan:vni=N,src=IP,dst=IP,smac=MAC,dmac=MAC[,port=P][,udp-csum][,ttl=N][,tos=N] \
or nvgre:vsid=N,src=IP,dst=IP,smac=MAC,dmac=MAC[,flow=N][,ttl=N][,tos=N] (src and dst both IPv4 or both IPv6)";

fn mac(s: &str) -> Result<EthernetAddress> {
    let b: Vec<u8> = s
        .split(':')
        .map(|x| u8::from_str_radix(x, 16))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| anyhow!("`{s}` is not a MAC address (six hex bytes, `02:00:00:00:00:01`)"))?;
    let b: [u8; 6] = b
        .try_into()
        .map_err(|_| anyhow!("`{s}` is not a MAC address (six hex bytes, `02:00:00:00:00:01`)"))?;
    Ok(EthernetAddress(b))
}

fn num(key: &str, v: &str, max: u64) -> Result<u64> {
    match v.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => bail!("`{key}={v}`: {key} must be a number from 0 to {max}"),
    }
}

/// The context `--encap SPEC` describes (the inner checksums are the path's `--csum`).
pub fn parse_encap(spec: &str) -> Result<EncapContext> {
    let (kind, rest) = spec
        .split_once(':')
        .ok_or_else(|| anyhow!("--encap `{spec}` names no tunnel kind; use {ENCAP_USAGE}"))?;
    let nvgre = match kind {
        "vxlan" => false,
        "nvgre" => true,
        k => bail!("--encap: unknown tunnel kind `{k}`; use {ENCAP_USAGE}"),
    };
    let (mut id, mut src, mut dst, mut smac, mut dmac) = (None, None, None, None, None);
    let (mut port, mut udp_csum, mut ttl, mut tos, mut flow) = (4789u16, false, 64u8, 0u8, 0u8);
    for item in rest.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        let ip = |v: &str| -> Result<IpAddr> {
            v.parse()
                .map_err(|_| anyhow!("`{k}={v}`: not an IPv4 or IPv6 address"))
        };
        match (k, nvgre) {
            ("vni", false) | ("vsid", true) => id = Some(num(k, v, (1 << 24) - 1)? as u32),
            ("src", _) => src = Some(ip(v)?),
            ("dst", _) => dst = Some(ip(v)?),
            ("smac", _) => smac = Some(mac(v)?),
            ("dmac", _) => dmac = Some(mac(v)?),
            ("port", false) => port = num(k, v, 65535)? as u16,
            ("udp-csum", false) if v.is_empty() => udp_csum = true,
            ("ttl", _) => ttl = num(k, v, 255)? as u8,
            ("tos", _) => tos = num(k, v, 255)? as u8,
            ("flow", true) => flow = num(k, v, 255)? as u8,
            _ => bail!("--encap: `{item}` is not an option of {kind}; use {ENCAP_USAGE}"),
        }
    }
    let need = |what: &str| anyhow!("--encap {kind} needs {what}; use {ENCAP_USAGE}");
    let id = id.ok_or_else(|| need(if nvgre { "vsid=N" } else { "vni=N" }))?;
    let ip = match (
        src.ok_or_else(|| need("src=IP"))?,
        dst.ok_or_else(|| need("dst=IP"))?,
    ) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => OuterIp::V4 {
            src,
            dst,
            ttl,
            tos,
            dont_frag: true,
        },
        (IpAddr::V6(src), IpAddr::V6(dst)) => OuterIp::V6 {
            src,
            dst,
            hop_limit: ttl,
            traffic_class: tos,
            flow_label: 0,
        },
        _ => bail!("--encap: src and dst must both be IPv4 or both IPv6"),
    };
    Ok(EncapContext {
        dst_mac: dmac.ok_or_else(|| need("dmac=MAC"))?,
        src_mac: smac.ok_or_else(|| need("smac=MAC"))?,
        vlan: None,
        ip,
        kind: if nvgre {
            EncapKind::Nvgre {
                vsid: id,
                flow_id: flow,
            }
        } else {
            EncapKind::Vxlan {
                vni: id,
                dst_port: port,
                udp_checksum: udp_csum,
            }
        },
        inner_l3_csum: false,
        inner_l4_csum: false,
    })
}

/// How `sim tap --vxlan` is written.
pub const TAP_VXLAN_USAGE: &str =
    "vni=N,local=IP,remote=IP,remote-mac=MAC[,mac=MAC][,port=P] (local and remote both IPv4 or both IPv6)";

/// The VXLAN context `sim tap --vxlan SPEC` describes: outer headers from `local` (source MAC
/// `mac`, by default 02:00 and `local`'s last four bytes) to `remote` at `remote-mac`, VNI
/// `vni`, UDP port `port` (4789 by default), TTL 64, no outer UDP checksum over IPv4.
pub fn parse_tap_vxlan(spec: &str) -> Result<EncapContext> {
    let (mut vni, mut local, mut remote, mut rmac, mut lmac, mut port) =
        (None, None, None, None, None, 4789u16);
    for item in spec.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        let ip = |v: &str| -> Result<IpAddr> {
            v.parse()
                .map_err(|_| anyhow!("--vxlan `{k}={v}`: not an IPv4 or IPv6 address"))
        };
        match k {
            "vni" => vni = Some(num(k, v, (1 << 24) - 1)? as u32),
            "local" => local = Some(ip(v)?),
            "remote" => remote = Some(ip(v)?),
            "remote-mac" => rmac = Some(mac(v)?),
            "mac" => lmac = Some(mac(v)?),
            "port" => port = num(k, v, 65535)? as u16,
            _ => bail!("--vxlan: `{item}` is not an option; use {TAP_VXLAN_USAGE}"),
        }
    }
    let need = |what: &str| anyhow!("--vxlan needs {what}; use {TAP_VXLAN_USAGE}");
    let vni = vni.ok_or_else(|| need("vni=N"))?;
    let (local, remote) = (
        local.ok_or_else(|| need("local=IP"))?,
        remote.ok_or_else(|| need("remote=IP"))?,
    );
    let tail = match local {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => a.octets()[12..].try_into().expect("four bytes"),
    };
    let ip = match (local, remote) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => OuterIp::V4 {
            src,
            dst,
            ttl: 64,
            tos: 0,
            dont_frag: false,
        },
        (IpAddr::V6(src), IpAddr::V6(dst)) => OuterIp::V6 {
            src,
            dst,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        },
        _ => bail!("--vxlan: local and remote must both be IPv4 or both IPv6"),
    };
    Ok(EncapContext {
        dst_mac: rmac.ok_or_else(|| need("remote-mac=MAC"))?,
        src_mac: lmac.unwrap_or(EthernetAddress([2, 0, tail[0], tail[1], tail[2], tail[3]])),
        vlan: None,
        ip,
        kind: EncapKind::Vxlan {
            vni,
            dst_port: port,
            udp_checksum: false,
        },
        inner_l3_csum: false,
        inner_l4_csum: false,
    })
}

/// The MSS `--tso mss=N` asks for (1 to `max`).
pub fn parse_tso(spec: &str, max: usize) -> Result<usize> {
    match spec.strip_prefix("mss=").map(str::parse::<usize>) {
        Some(Ok(m)) if (1..=max).contains(&m) => Ok(m),
        _ => bail!("--tso `{spec}`: use mss=N with N from 1 to {max}"),
    }
}

/// The driver's form of a model encapsulation context (the two crates do not depend on each
/// other; this crate speaks both).
pub fn driver_ctx(c: &EncapContext) -> nicgen_driver::encap::EncapContext {
    use nicgen_driver::encap as drv;
    let ip = match c.ip {
        OuterIp::V4 {
            src,
            dst,
            ttl,
            tos,
            dont_frag,
        } => drv::OuterIp::V4 {
            src,
            dst,
            ttl,
            tos,
            dont_frag,
        },
        OuterIp::V6 {
            src,
            dst,
            hop_limit,
            traffic_class,
            flow_label,
        } => drv::OuterIp::V6 {
            src,
            dst,
            hop_limit,
            traffic_class,
            flow_label,
        },
    };
    let tunnel = match c.kind {
        EncapKind::Vxlan {
            vni,
            dst_port,
            udp_checksum,
        } => drv::Tunnel::Vxlan {
            vni,
            dst_port,
            udp_checksum,
        },
        EncapKind::Nvgre { vsid, flow_id } => drv::Tunnel::Nvgre { vsid, flow_id },
    };
    drv::EncapContext {
        dst_mac: c.dst_mac.0,
        src_mac: c.src_mac.0,
        ip,
        tunnel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encap_specs_parse_into_contexts() {
        let c = parse_encap(
            "vxlan:vni=42,src=172.16.0.1,dst=172.16.0.2,smac=02:00:00:00:00:01,dmac=02:00:00:00:00:02,udp-csum",
        )
        .unwrap();
        assert_eq!(
            c.kind,
            EncapKind::Vxlan {
                vni: 42,
                dst_port: 4789,
                udp_checksum: true
            }
        );
        assert_eq!(c.dst_mac, EthernetAddress([2, 0, 0, 0, 0, 2]));
        assert!(matches!(c.ip, OuterIp::V4 { ttl: 64, .. }));
        let c = parse_encap("nvgre:vsid=7,flow=9,src=fd00::1,dst=fd00::2,smac=02:00:00:00:00:01,dmac=02:00:00:00:00:02,ttl=5")
            .unwrap();
        assert_eq!(
            c.kind,
            EncapKind::Nvgre {
                vsid: 7,
                flow_id: 9
            }
        );
        assert!(matches!(c.ip, OuterIp::V6 { hop_limit: 5, .. }));
        for (bad, says) in [
            ("geneve:vni=1", "unknown tunnel kind"),
            (
                "vxlan:src=1.1.1.1,dst=1.1.1.2,smac=02:00:00:00:00:01,dmac=02:00:00:00:00:02",
                "needs vni=N",
            ),
            ("vxlan:vni=16777216", "from 0 to 16777215"),
            (
                "vxlan:vni=1,src=1.1.1.1,dst=fd00::1,smac=02:00:00:00:00:01,dmac=02:00:00:00:00:02",
                "both be IPv4",
            ),
            ("vxlan:vni=1,smac=02:00:00", "not a MAC address"),
            ("nvgre:vni=1", "not an option of nvgre"),
        ] {
            let e = parse_encap(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn tap_vxlan_specs_give_the_context() {
        let c = parse_tap_vxlan(
            "vni=42,local=192.168.50.1,remote=192.168.50.2,remote-mac=02:00:00:00:00:aa",
        )
        .unwrap();
        assert_eq!(c.src_mac.0, [2, 0, 192, 168, 50, 1]);
        assert_eq!(c.dst_mac.0, [2, 0, 0, 0, 0, 0xaa]);
        assert!(matches!(
            c.kind,
            EncapKind::Vxlan {
                vni: 42,
                dst_port: 4789,
                udp_checksum: false
            }
        ));
        for (bad, says) in [
            ("vni=42,local=1.2.3.4,remote=1.2.3.5", "remote-mac"),
            (
                "local=1.2.3.4,remote=1.2.3.5,remote-mac=02:00:00:00:00:01",
                "vni",
            ),
            (
                "vni=1,local=1.2.3.4,remote=::1,remote-mac=02:00:00:00:00:01",
                "both",
            ),
            ("vni=1,lokal=1.2.3.4", "lokal"),
            ("vni=99999999", "vni"),
        ] {
            let e = parse_tap_vxlan(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn tso_specs_name_the_mss() {
        assert_eq!(parse_tso("mss=1448", 9000).unwrap(), 1448);
        for bad in ["1448", "mss=0", "mss=9001", "mss=x"] {
            assert!(parse_tso(bad, 9000)
                .unwrap_err()
                .to_string()
                .contains("mss=N"));
        }
    }
}
