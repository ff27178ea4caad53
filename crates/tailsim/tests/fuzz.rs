//! Fuzzing the input parsers with proptest: CDF, CSV trace, htsim .cm/.flows/.topo texts made of the formats'
//! own tokens, and experiment files made by mutating valid ones (a value swapped for an odd one, a line
//! dropped or repeated). Nothing may panic; a configuration must be accepted or refused (with the file's
//! name first) within seconds. CI runs the cases below; a longer session: `PROPTEST_CASES=200000 cargo test
//! --release --test fuzz` (docs/testing.md).

use proptest::prelude::*;
use std::path::Path;
use std::time::Instant;
use tailsim_workload::{parse_cm, parse_flows, parse_topo, parse_trace_csv, CdfOptions, SizeCdf};

/// Cases per property: `PROPTEST_CASES` for a longer session, else CI's.
fn cases(ci: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(ci)
}

/// Texts of the formats' tokens, in any order: lines that nearly parse reach deeper than random bytes.
fn text_of(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(tokens), 0..60).prop_map(|v| v.concat())
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "7",
    "-1",
    "0.5",
    "1.0",
    "100",
    "1e3",
    "1e30",
    "-0",
    "nan",
    "inf",
    "-inf",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "1e-300",
    "99999999999999999999",
    "0x10",
    "",
];
const SEPS: &[&str] = &[" ", " ", "\t", "\n", "\n", "\r\n", ",", ",", "#", "%", "\u{feff}", "é"];

fn cdf_text() -> impl Strategy<Value = String> {
    text_of(&[
        "0",
        "1",
        "0.5",
        "1.0",
        "100",
        "1e3",
        "1e30",
        "-1",
        "nan",
        "inf",
        "1e-300",
        "99999999999999999999",
        " ",
        " ",
        "\n",
        "\n",
        "\t",
        "#",
        "x",
        "1 0",
        "1000 1 0.5",
        "2000 1 1.0",
    ])
}

fn csv_text() -> impl Strategy<Value = String> {
    let mut t: Vec<&'static str> = NUMBERS.to_vec();
    t.extend_from_slice(SEPS);
    t.extend_from_slice(&[
        "src,dst,size_bytes,start_us\n",
        "id,src,dst,size_bytes,start_ns\n",
        "start_ps",
        "src",
        "dst",
    ]);
    text_of(Box::leak(t.into_boxed_slice()))
}

fn htsim_text() -> impl Strategy<Value = String> {
    let mut t: Vec<&'static str> = NUMBERS.to_vec();
    t.extend_from_slice(SEPS);
    t.extend_from_slice(&[
        "Nodes ",
        "Connections ",
        "Triggers ",
        "Failures ",
        "trigger ",
        "->",
        " start ",
        " size ",
        " prio ",
        "Tiers ",
        "Podsize ",
        "Tier ",
        "Downlink_speed_Gbps ",
        "Radix_Up ",
        "Radix_Down ",
        "Queue_Up ",
        "Downlink_Latency_ns ",
        "Switch_Latency_ns ",
        "Oversubscribed ",
        "send_done_trigger ",
        "\n0->1 start 0 size 1000",
        "\nNodes 4",
    ]);
    text_of(Box::leak(t.into_boxed_slice()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(3000), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn cdf_parser_never_panics(text in cdf_text()) {
        for interp in [tailsim_workload::Interp::Step, tailsim_workload::Interp::Linear] {
            if let Ok(c) = SizeCdf::parse(&text, "f.cdf", CdfOptions { interp: Some(interp), unit_bytes: None }) {
                // What parses can be sampled everywhere in [0, 1] and has a finite mean.
                for u in [0.0, 0.25, 0.5, 0.999_999, 1.0] {
                    let _ = c.sample(u);
                }
                prop_assert!(c.mean_bytes().is_finite());
            }
        }
    }

    #[test]
    fn trace_parser_never_panics(text in csv_text()) {
        let _ = parse_trace_csv(&text, "t.csv");
    }

    #[test]
    fn htsim_parsers_never_panic(text in htsim_text()) {
        let _ = parse_cm(&text, "t.cm");
        let _ = parse_flows(&text, "t.flows");
        if let Ok(t) = parse_topo(&text, "t.topo") {
            let _ = t.fat_tree_shape();
        }
    }
}

/// Valid experiments to mutate: the examples and a few of the presets' shapes.
fn seeds() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for name in [
        "examples/pfabric-websearch-dctcp.toml",
        "examples/qjump-websearch.toml",
        "examples/linkguardian-rdma.toml",
        "examples/sqr-testbed.toml",
    ] {
        out.push((name.to_string(), std::fs::read_to_string(root.join(name)).unwrap()));
    }
    out.push((
        "fat-tree".into(),
        "[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\n[switch]\nbuffer = \"100KB\"\necn_threshold = \
         \"20KB\"\n[transport]\nkind = \"dctcp\"\n[[workload]]\nkind = \"incast\"\nsenders = 3\nsize = 20000\ncount = \
         2\ninterval = \"1ms\"\n[[fault]]\nat = \"1ms\"\nlink = [\"0\", \"edge0\"]\nstate = \"down\"\nduration = \"1ms\"\n"
            .into(),
    ));
    out
}

const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "1.5",
    "1e30",
    "nan",
    "inf",
    "18446744073709551615",
    "4294967295",
    "65536",
    "true",
    "\"\"",
    "\"0ps\"",
    "\"-0\"",
    "\"1e30Gbps\"",
    "\"0Gbps\"",
    "\"1ps\"",
    "\"1e9s\"",
    "\"unlimited\"",
    "\"..\"",
    "\"/\"",
    "\"websearch\"",
    "\"ndp\"",
    "\"homa\"",
    "\"pfabric\"",
    "\"fat-tree\"",
    "[]",
    "[1, 2]",
    "{}",
    "\"99999999999999999999B\"",
    "\"1TB\"",
    "0.999999999",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value of line n (mod the number of `key = value` lines) by VALUES[v].
    Value(usize, usize),
    Drop(usize),
    Repeat(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<usize>(), 0..VALUES.len()).prop_map(|(n, v)| Mutation::Value(n, v)),
        1 => any::<usize>().prop_map(Mutation::Drop),
        1 => any::<usize>().prop_map(Mutation::Repeat),
    ]
}

fn mutate(text: &str, muts: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for m in muts {
        let kv: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains(" = ")).collect();
        if kv.is_empty() {
            break;
        }
        match *m {
            Mutation::Value(n, v) => {
                let i = kv[n % kv.len()];
                let key = lines[i].split(" = ").next().unwrap().to_string();
                lines[i] = format!("{key} = {}", VALUES[v]);
            }
            Mutation::Drop(n) => {
                lines.remove(n % lines.len());
            }
            Mutation::Repeat(n) => {
                let i = n % lines.len();
                let l = lines[i].clone();
                lines.insert(i, l);
            }
        }
    }
    lines.join("\n") + "\n"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1000), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_experiments_are_accepted_or_refused_never_panic(
        seed in 0..5usize,
        muts in prop::collection::vec(mutation(), 1..4),
    ) {
        // Building is the check; keep what a mutation may make small (the memory check refuses the rest).
        std::env::set_var("TAILSIM_MAX_MEMORY", "512MB");
        let (name, text) = &seeds()[seed];
        let text = mutate(text, &muts);
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let t0 = Instant::now();
        match tailsim::load_str(&text, name, &base, &[]) {
            Ok(_) => {}
            Err(e) => prop_assert!(e.to_string().starts_with(name.as_str()), "{e}"),
        }
        prop_assert!(t0.elapsed().as_secs_f64() < 10.0, "took {:.1} s:\n{text}", t0.elapsed().as_secs_f64());
    }
}
