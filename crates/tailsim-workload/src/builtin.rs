//! The built-in flow-size distributions: the shipped files under
//! `workloads/cdfs/` and, for each, the sampling rule of the simulator it
//! comes from (see `workloads/cdfs/README.md` for provenance).

use std::path::Path;

use crate::cdf::Interp;
use crate::tail::GeneralizedParetoTail;

/// A shipped distribution and the convention of the simulator it came from.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    /// File name under `workloads/cdfs/`.
    pub file: &'static str,
    pub interp: Interp,
    pub unit_bytes: u64,
    /// Who sampled it this way (paper / simulator).
    pub convention: &'static str,
    /// A tail drawn above the file's last cumulative probability, when the
    /// original simulator computed part of the distribution in code.
    pub tail: Option<GeneralizedParetoTail>,
    pub(crate) text: &'static str,
}

macro_rules! builtin {
    ($name:literal, $file:literal, $interp:ident, $unit:literal, $why:literal) => {
        builtin!($name, $file, $interp, $unit, $why, None)
    };
    ($name:literal, $file:literal, $interp:ident, $unit:literal, $why:literal, $tail:expr) => {
        Builtin {
            name: $name,
            file: $file,
            interp: Interp::$interp,
            unit_bytes: $unit,
            convention: $why,
            tail: $tail,
            text: include_str!(concat!("../../../workloads/cdfs/", $file)),
        }
    };
}

/// The built-in distributions. Names without a simulator suffix are the
/// versions most papers mean: pFabric's packet tables for web search and
/// data mining, the SIGCOMM'18 numbering for Homa (`homa-w1` … `homa-w5`).
/// The Homa thesis numbers its workloads differently (W1–W7, see
/// `workloads/cdfs/README.md`): `homa-thesis-w1` … `homa-thesis-w7` follow
/// it, so thesis W2, W4, W6 and W7 are the same files as SIGCOMM W2, W3, W4
/// and W5 under a second name, and thesis W1 is a different file with a tail.
static BUILTINS: &[Builtin] = &[
    builtin!(
        "websearch",
        "websearch_pfabric-ns2_packets.txt",
        Linear,
        1460,
        "pFabric (SIGCOMM'13) ns-2 scripts: linear, rounded up to whole 1460 B packets"
    ),
    builtin!(
        "datamining",
        "datamining_pfabric-ns2_packets.txt",
        Linear,
        1460,
        "pFabric (SIGCOMM'13) ns-2 scripts: linear, rounded up to whole 1460 B packets"
    ),
    builtin!(
        "websearch-hpcc",
        "websearch_hpcc_bytes.txt",
        Linear,
        1,
        "HPCC (SIGCOMM'19) traffic_gen.py, also Parsimon/m3: linear in bytes"
    ),
    builtin!("datamining-netbench", "datamining_netbench_bytes.txt", Step, 1, "NetBench, upper-bound variant: next"),
    builtin!("fb-hadoop", "fb-hadoop_hpcc_bytes.txt", Linear, 1, "HPCC FB_Hadoop: linear in bytes"),
    builtin!(
        "google-rpc",
        "google-rpc-2008_hpcc_bytes.txt",
        Linear,
        1,
        "HPCC GoogleRPC2008 (sizes of Homa W3): linear in bytes"
    ),
    builtin!("ali-storage", "ali-storage-2019_hpcc_bytes.txt", Linear, 1, "HPCC AliStorage2019: linear in bytes"),
    builtin!(
        "fb-cachefollower",
        "fb-cachefollower-all_parsimon-eval_bytes.txt",
        Linear,
        1,
        "Parsimon/m3 Ecdf: linear in bytes"
    ),
    builtin!("fb-hadoop-all", "fb-hadoop-all_parsimon-eval_bytes.txt", Linear, 1, "Parsimon/m3 Ecdf: linear in bytes"),
    builtin!(
        "fb-webserver-all",
        "fb-webserver-all_parsimon-eval_bytes.txt",
        Linear,
        1,
        "Parsimon/m3 Ecdf: linear in bytes"
    ),
    builtin!(
        "homa-w1",
        "homa_w1_homasim_bytes.txt",
        Step,
        1,
        "Homa SIGCOMM'18 W1 (Facebook memcached), HomaSimulation FacebookKeyValue_Sampled.txt: next (thesis W1 \
         is homa-thesis-w1, another file with a tail)"
    ),
    builtin!(
        "homa-w2",
        "homa_w2_homasim_bytes.txt",
        Step,
        1,
        "Homa SIGCOMM'18 W2 = thesis W2 (Google search RPC), HomaSimulation Google_SearchRPC.txt: next"
    ),
    builtin!(
        "homa-w3",
        "homa_w3_homasim_bytes.txt",
        Step,
        1,
        "Homa SIGCOMM'18 W3 = thesis W4 (Google all-application RPC), HomaSimulation Google_AllRPC.txt: next"
    ),
    builtin!(
        "homa-w4",
        "homa_w4_homasim_bytes.txt",
        Step,
        1,
        "Homa SIGCOMM'18 W4 = thesis W6 (Facebook Hadoop), HomaSimulation Facebook_HadoopDist_All.txt: next"
    ),
    builtin!(
        "homa-w5",
        "homa_w5_homasim_packets.txt",
        Step,
        1442,
        "Homa SIGCOMM'18 W5 = thesis W7 (DCTCP web search), HomaSimulation DCTCP_MsgSizeDist.txt: next, packets of \
         1442 B"
    ),
    builtin!("homa-w1-module", "homa_w1_homamodule_bytes.txt", Step, 1, "HomaModule cp_node W1: next"),
    builtin!("homa-w2-module", "homa_w2_homamodule_bytes.txt", Step, 1, "HomaModule cp_node W2: next"),
    builtin!("homa-w3-module", "homa_w3_homamodule_bytes.txt", Step, 1, "HomaModule cp_node W3: next"),
    builtin!("homa-w4-module", "homa_w4_homamodule_bytes.txt", Step, 1, "HomaModule cp_node W4: next"),
    builtin!("homa-w5-module", "homa_w5_homamodule_bytes.txt", Step, 1, "HomaModule cp_node W5: next"),
    builtin!(
        "homa-thesis-w1",
        "homa-thesis_w1_facebook-kv_bytes.txt",
        Step,
        1,
        "Homa thesis W1 (Facebook memcached ETC), HomaSimulation FacebookKeyValueMsgSizeDist.txt: next up to \
         0.47, then generalized Pareto (k 0.348238, sigma 214.476 B, from 15 B, cap 2^30 B), rounded to whole bytes",
        Some(GeneralizedParetoTail::HOMA_THESIS_W1)
    ),
    builtin!(
        "homa-thesis-w2",
        "homa_w2_homasim_bytes.txt",
        Step,
        1,
        "Homa thesis W2 = SIGCOMM'18 W2 (Google search RPC), HomaSimulation Google_SearchRPC.txt: next"
    ),
    builtin!(
        "homa-thesis-w3",
        "homa-thesis_w3_fabricated-heavy-middle_bytes.txt",
        Step,
        1,
        "Homa thesis W3 (synthesized heavy middle; not in the paper), HomaSimulation Fabricated_Heavy_Middle.txt: next"
    ),
    builtin!(
        "homa-thesis-w4",
        "homa_w3_homasim_bytes.txt",
        Step,
        1,
        "Homa thesis W4 = SIGCOMM'18 W3 (Google all-application RPC), HomaSimulation Google_AllRPC.txt: next"
    ),
    builtin!(
        "homa-thesis-w5",
        "homa-thesis_w5_fb-webserver_bytes.txt",
        Step,
        1,
        "Homa thesis W5 (Facebook web server, intra-cluster; not in the paper), HomaSimulation \
         Facebook_WebServerDist_IntraCluster.txt: next"
    ),
    builtin!(
        "homa-thesis-w6",
        "homa_w4_homasim_bytes.txt",
        Step,
        1,
        "Homa thesis W6 = SIGCOMM'18 W4 (Facebook Hadoop), HomaSimulation Facebook_HadoopDist_All.txt: next"
    ),
    builtin!(
        "homa-thesis-w7",
        "homa_w5_homasim_packets.txt",
        Step,
        1442,
        "Homa thesis W7 = SIGCOMM'18 W5 (DCTCP web search), HomaSimulation DCTCP_MsgSizeDist.txt: next, packets of \
         1442 B (1500 - 20 IP - 8 UDP - 30 Homa header)"
    ),
];

/// All built-in distributions, in the order of [`SizeCdf::builtin_names`](crate::SizeCdf::builtin_names).
pub fn builtins() -> &'static [Builtin] {
    BUILTINS
}

/// The built-in entry whose file has the same name as `origin`'s last path
/// component, so shipped files read from disk keep their convention (and
/// their tail). Files shipped under two names have the same convention under
/// both, so the first entry serves.
pub(crate) fn known_file(origin: &str) -> Option<&'static Builtin> {
    let name = Path::new(origin).file_name()?.to_str()?;
    BUILTINS.iter().find(|b| b.file == name)
}

/// The table of built-ins in `docs/workloads.md` (printed by the ignored
/// test `print_builtin_means`): name, file, unit, rule, exact mean in bytes
/// and in 1460 B packets, largest size.
#[cfg(test)]
pub(crate) fn docs_table() -> String {
    use crate::SizeCdf;
    let mut out = String::from(
        "| name | file | unit | rule | mean bytes | mean 1460 B packets | max bytes |\n|---|---|---|---|---|---|---|\n",
    );
    for b in builtins() {
        let c = SizeCdf::builtin(b.name).unwrap();
        let unit = if b.unit_bytes == 1 { "bytes".to_string() } else { format!("packets × {} B", b.unit_bytes) };
        let tail = if b.tail.is_some() { " + Pareto tail" } else { "" };
        let (rule, mean) = (format!("{:?}", b.interp).to_lowercase() + tail, c.mean_bytes());
        let (pk, max) = (c.mean_packets(1460), c.max_bytes());
        out += &format!("| `{}` | `{}` | {unit} | {rule} | {mean:.1} | {pk:.2} | {max} |\n", b.name, b.file);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row renders with finite numbers, the thesis names included.
    #[test]
    fn docs_table_has_a_row_per_builtin() {
        let table = docs_table();
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(rows.len(), builtins().len());
        for row in &rows {
            assert!(!row.contains("NaN") && !row.contains("inf"), "{row}");
        }
        let w1 = rows.iter().find(|r| r.starts_with("| `homa-thesis-w1` ")).unwrap();
        let want =
            "| `homa-thesis-w1` | `homa-thesis_w1_facebook-kv_bytes.txt` | bytes | step + Pareto tail | 185.1 | 1.02 |";
        assert_eq!(*w1, format!("{want} 1073741824 |"));
        let w7 = rows.iter().find(|r| r.starts_with("| `homa-thesis-w7` ")).unwrap();
        assert!(w7.contains("packets × 1442 B | step | 2515863.3 | 1723.56 | 28840000 |"), "{w7}");
        for n in 1..=7 {
            assert!(rows.iter().any(|r| r.starts_with(&format!("| `homa-thesis-w{n}` "))), "W{n}");
        }
    }
}
