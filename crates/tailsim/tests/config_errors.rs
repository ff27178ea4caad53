//! Bad input gets an error naming the file, the line and the key — never a panic.

use std::path::Path;

fn err(toml: &str) -> String {
    match tailsim::load_str(toml, "exp.toml", Path::new(env!("CARGO_MANIFEST_DIR")), &[]) {
        Ok(_) => panic!("accepted:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

const OK_TAIL: &str = "[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 0.5\nflows = 10\n";

#[test]
fn unknown_key_names_line_and_key() {
    let e = err(&format!("[topology]\npreset = \"pfabric-144\"\n[switch]\nbufer = \"36KB\"\n{OK_TAIL}"));
    assert!(e.starts_with("exp.toml:4: key `switch.bufer`"), "{e}");
    assert!(e.contains("unknown field"), "{e}");
}

#[test]
fn wrong_type() {
    let e = err(&format!("[topology]\npreset = \"pfabric-144\"\n[transport]\ninit_cwnd = \"ten\"\n{OK_TAIL}"));
    assert!(e.starts_with("exp.toml:4: key `transport.init_cwnd`"), "{e}");
}

#[test]
fn negative_rate() {
    let e = err(&format!(
        "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\nedge_rate = \"-10Gbps\"\ncore_rate = \"40Gbps\"\n{OK_TAIL}"
    ));
    assert!(e.starts_with("exp.toml:6: key `topology.edge_rate`") && e.contains("positive"), "{e}");
}

#[test]
fn load_must_be_below_one() {
    let e = err("[topology]\npreset = \"pfabric-144\"\n\n[[workload]]\nkind = \"poisson\"\ncdf = \"websearch\"\nload = 1.0\nflows = 5\n");
    assert!(e.starts_with("exp.toml:7: key `workload[0].load`") && e.contains("(0, 1)"), "{e}");
}

#[test]
fn missing_cdf_file() {
    let e = err("[topology]\npreset = \"pfabric-144\"\n[[workload]]\nkind = \"poisson\"\ncdf = \"no/such.txt\"\nload = 0.5\nflows = 5\n");
    assert!(e.starts_with("exp.toml:5: key `workload[0].cdf`") && e.contains("no/such.txt"), "{e}");
}

#[test]
fn second_workload_error_points_at_the_second_table() {
    let e = err(&format!(
        "[topology]\npreset = \"pfabric-144\"\n{OK_TAIL}\n[[workload]]\nkind = \"incast\"\nsenders = 500\nsize = 10\n"
    ));
    assert!(e.starts_with("exp.toml:11: key `workload[1].senders`"), "{e}");
}

#[test]
fn bad_units_and_values() {
    for (snippet, key) in [
        ("[switch]\nbuffer = \"36 parsecs\"", "switch.buffer"),
        ("[switch]\nbuffer = \"100B\"", "switch.buffer"),
        ("[stop]\ntime = \"-1ms\"", "stop.time"),
        ("[routing]\nload_balance = \"random\"", "routing.load_balance"),
        ("[transport]\nkind = \"quic\"", "transport.kind"),
        ("[transport]\nclass = 9", "transport.class"),
        ("[output]\nformat = \"xlsx\"", "output.format"),
    ] {
        let e = err(&format!("[topology]\npreset = \"pfabric-144\"\n{snippet}\n{OK_TAIL}"));
        assert!(e.starts_with(&format!("exp.toml:4: key `{key}`")), "{snippet}: {e}");
    }
}

#[test]
fn syntax_error_has_a_line() {
    let e = err("[topology]\npreset = \"pfabric-144\"\n[switch\n");
    assert!(e.starts_with("exp.toml:3:"), "{e}");
}

#[test]
fn unknown_preset_lists_the_known_ones() {
    let e = err(&format!("[topology]\npreset = \"pfabric-1440\"\n{OK_TAIL}"));
    assert!(e.starts_with("exp.toml:2: key `topology.preset`") && e.contains("pfabric-144, homa-144"), "{e}");
}

#[test]
fn missing_file_is_named() {
    let e = tailsim::load(Path::new("/nonexistent/exp.toml"), &[]).err().unwrap().to_string();
    assert!(e.starts_with("/nonexistent/exp.toml: cannot read"), "{e}");
}

#[test]
fn set_overrides_apply_and_are_checked() {
    let toml = format!("[topology]\npreset = \"pfabric-144\"\n{OK_TAIL}");
    let ok = tailsim::load_str(
        &toml,
        "exp.toml",
        Path::new("."),
        &["workload[0].load=0.25".into(), "transport.kind=dctcp".into()],
    );
    assert!(ok.is_ok(), "{}", ok.err().unwrap());
    let bad =
        tailsim::load_str(&toml, "exp.toml", Path::new("."), &["workload[0].load=2".into()]).err().unwrap().to_string();
    assert!(bad.contains("workload[0].load") && bad.contains("(0, 1)"), "{bad}");
    let bad = tailsim::load_str(&toml, "exp.toml", Path::new("."), &["nosuchkey=1".into()]).err().unwrap().to_string();
    assert!(bad.contains("unknown field `nosuchkey`"), "{bad}");
}

#[test]
fn keys_of_another_kind_are_rejected() {
    let e = err(
        "[topology]\npreset = \"pfabric-144\"\n[[workload]]\nkind = \"incast\"\nsenders = 3\nsize = 10\nload = 0.5\n",
    );
    assert!(
        e.starts_with("exp.toml:7: key `workload[0].load`") && e.contains("does not apply to kind \"incast\""),
        "{e}"
    );
    let e = err(&format!("[topology]\nkind = \"fat-tree\"\nk = 4\nrate = \"10Gbps\"\nleaves = 3\n{OK_TAIL}"));
    assert!(e.starts_with("exp.toml:5: key `topology.leaves`"), "{e}");
}

#[test]
fn impossible_values_are_errors_not_panics() {
    for (snippet, key) in [
        ("[host]\nnic_buffer = \"100B\"", "host.nic_buffer"),
        ("[transport]\nmin_rto = \"1ms\"\nmax_rto = \"100us\"", "transport.max_rto"),
        ("[transport]\ndupthresh = 0", "transport.dupthresh"),
        ("[transport]\nkind = \"cubic\"\ncubic_beta = 1.0", "transport.cubic_beta"),
        ("[transport]\nkind = \"cubic\"\ncubic_c = 0", "transport.cubic_c"),
        ("[transport]\nkind = \"tcp\"\ncubic_c = 0.4", "transport.cubic_c"),
        ("[transport]\nkind = \"cubic\"\ndctcp_g = 0.5", "transport.dctcp_g"),
        ("[transport]\nkind = \"homa\"\n[output]\ncwnd_trace = [0]", "output.cwnd_trace"),
        ("[transport]\nkind = \"tcp\"\nsyn_rto = \"1s\"", "transport.syn_rto"),
        ("[transport]\nkind = \"pfabric\"\nhandshake = true", "transport.handshake"),
        ("[[fault]]\nat = \"1us\"\nlink = [\"h0\", \"leaf0\"]", "fault[0]"),
        ("[[fault]]\nat = \"1us\"\nlink = [\"h0\", \"h1\"]\nstate = \"down\"", "fault[0].link"),
    ] {
        let e = err(&format!("[topology]\npreset = \"pfabric-144\"\n{OK_TAIL}{snippet}\n"));
        assert!(e.contains(&format!("key `{key}`")), "{snippet}: {e}");
    }
    // A topology file with no hosts.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tailsim-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.toml"), "hosts = 0\nlink = []\n").unwrap();
    let e = err(&format!("[topology]\nkind = \"file\"\npath = \"{}\"\n{OK_TAIL}", dir.join("t.toml").display()));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e.contains("key `topology.path`") && e.contains("at least 2"), "{e}");
}

#[test]
fn inline_topology_errors_name_the_key() {
    let wl = "[[workload]]\nkind = \"incast\"\nsenders = 1\nsize = 10\n";
    let link = "link = [{ a = \"h0\", b = \"s\", rate = \"10Gbps\" }, { a = \"h1\", b = \"s\", rate = \"10Gbps\" }]";
    let cfg = |t: &str| format!("[topology]\nkind = \"inline\"\n{t}\n{wl}");
    for (t, want) in [
        (format!("switch = [{{ name = \"s\" }}]\n{link}"), "topology.hosts"),
        ("hosts = 2\nswitch = [{ name = \"s\" }]".to_string(), "topology.link"),
        (format!("hosts = 2\n{link}"), "link end \"s\" is not a host or switch"),
        (format!("hosts = 2\nswitch = [{{ name = \"s\" }}, {{ name = \"s\" }}]\n{link}"), "two switches are named"),
    ] {
        let e = err(&cfg(&t));
        assert!(e.contains(want), "{t}: {e}");
    }
    // And the same entries load: two hosts through one switch.
    let ok = cfg(&format!("hosts = 2\nswitch = [{{ name = \"s\" }}]\n{link}"));
    let e = tailsim::load_str(&ok, "exp.toml", Path::new(env!("CARGO_MANIFEST_DIR")), &[]).unwrap();
    assert_eq!((e.world.net.n_hosts(), e.world.net.switches.len(), e.world.net.ports.len()), (2, 1, 4));
}
