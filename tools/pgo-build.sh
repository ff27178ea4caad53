#!/usr/bin/env bash
# A profile-guided build of tailsim: the compiler lays out and inlines the simulator's code by where a
# representative set of runs spends its time (rustc's -Cprofile-generate / -Cprofile-use). Same source, same
# results byte for byte (checked below); 9-11 % fewer instructions and 4-8 % less CPU time per packet-hop at
# 128-144 hosts, 3-4 % at 1,024-5,488 (docs/performance.md, "A profile-guided build"). Opt-in: it builds the
# simulator twice and trains it for about half a minute (3 minutes in all on 2 cores, 1.5 more for --install),
# which `pip install .` and CI should not pay for.
#
# Usage: tools/pgo-build.sh [--install]
#   builds target/pgo/tailsim (the command-line binary, a drop-in for target/release/tailsim);
#   --install also builds the Python package with the profile and installs it into the active environment
#   (its dependencies added where missing), so that `tailsim` and `import tailsim` use it.
# Needs: cargo and rustup (llvm-profdata comes from rustup's llvm-tools component, added if missing).
# Run it from the project's root. Build trees: target/pgo-gen (instrumented), target/pgo-use (optimized).
set -euo pipefail
install=0
for a in "$@"; do
  case "$a" in
    --install) install=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pgo-build: unknown argument '$a' (expected --install or --help)" >&2; exit 2 ;;
  esac
done
[ -f Cargo.toml ] && [ -d crates/tailsim-cli ] || { echo "pgo-build: run from the tailsim project's root" >&2; exit 2; }
command -v cargo >/dev/null || { echo "pgo-build: cargo (Rust toolchain) not found" >&2; exit 1; }

# llvm-profdata must match rustc's LLVM: take rustup's copy from the active toolchain, never the system's.
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
  command -v rustup >/dev/null || { echo "pgo-build: $profdata is missing and rustup is not available to add llvm-tools" >&2; exit 1; }
  echo "pgo-build: adding rustup's llvm-tools component (llvm-profdata) ..." >&2
  rustup component add llvm-tools >/dev/null 2>&1 || rustup component add llvm-tools-preview >/dev/null
  [ -x "$profdata" ] || { echo "pgo-build: llvm-profdata still missing at $profdata" >&2; exit 1; }
fi

root=$(pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
raw=$root/target/pgo/raw
rm -rf "$raw" && mkdir -p "$raw"

step() { echo "pgo-build: $*" >&2; }
# A run's own warnings (flows left unfinished at a short time limit) are expected here; its errors are shown.
quiet() { "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; echo "pgo-build: failed: $*" >&2; exit 1; }; }
step "1/4 instrumented build (target/pgo-gen)"
CARGO_TARGET_DIR=$root/target/pgo-gen RUSTFLAGS="-Cprofile-generate=$raw" \
  cargo build --release -q -p tailsim-cli
gen=$root/target/pgo-gen/release/tailsim

# The training set: every transport and switch mechanism the simulator has, at sizes where the packet path
# dominates (the benchmark scenarios), and the examples that the optimized build is checked against.
bench_runs=(
  "htsim-p2 1ms" "htsim-ws 2ms" "htsim-p2-1024 50us" "fattree128-perm-100g 2ms" "pfabric-websearch-dctcp 10ms"
  "detail-128-alltoall 5ms" "fastlane-128 5ms" "lg-100g-stress 20ms" "sqr-websearch 20ms" "burstradar-cache 1s"
)
# (Examples that run for seconds are shortened: the profile should weigh the packet path, not one transport.)
examples=(ndp homa phost incast "qjump-websearch --set workload[0].flows=300" "detail --set stop.time=10ms"
  "fastlane --set stop.time=5ms" fattree-failure linkguardian-rdma sqr-testbed burstradar-testbed pinned-paths
  dumbbell)
step "2/4 training runs"
# Entries split into words by `read -a`, which never expands them as file names (workload[0] is no glob).
for b in "${bench_runs[@]}"; do
  read -r -a w <<<"$b"
  quiet "$gen" bench --in-process --scenario "${w[0]}" --time "${w[1]}"
done
for x in "${examples[@]}"; do
  read -r -a w <<<"$x"
  quiet "$gen" run -q "examples/${w[0]}.toml" "${w[@]:1}" --out "$work/gen-${w[0]}"
done
"$profdata" merge -o "$root/target/pgo/merged.profdata" "$raw"
# Named by its content: cargo does not watch the file a flag names, so a new profile must be a new flag.
sum=$(cksum < "$root/target/pgo/merged.profdata" | cut -d' ' -f1)
rm -f "$root"/target/pgo/tailsim-*.profdata
mv "$root/target/pgo/merged.profdata" "$root/target/pgo/tailsim-$sum.profdata"

step "3/4 optimized build (target/pgo-use)"
use_flags="-Cprofile-use=$root/target/pgo/tailsim-$sum.profdata"
CARGO_TARGET_DIR=$root/target/pgo-use RUSTFLAGS="$use_flags" cargo build --release -q -p tailsim-cli
cp "$root/target/pgo-use/release/tailsim" "$root/target/pgo/tailsim.tmp"
mv "$root/target/pgo/tailsim.tmp" "$root/target/pgo/tailsim"

# The profile changes the machine code, never the simulation: both builds must write the same tables (flows,
# ports, samples; CSV or Parquet as each example asks), byte for byte. summary.json differs by its wall clock.
step "4/4 checking that the optimized build's results equal the instrumented build's"
for x in "${examples[@]}"; do
  read -r -a w <<<"$x"
  e=${w[0]}
  quiet "$root/target/pgo/tailsim" run -q "examples/$e.toml" "${w[@]:1}" --out "$work/use-$e"
  tables=$(cd "$work/gen-$e" && ls | grep -v '^summary\.json$' || true)
  [ -n "$tables" ] || { echo "pgo-build: examples/$e.toml wrote no tables to compare" >&2; exit 1; }
  for t in $tables; do
    cmp -s "$work/gen-$e/$t" "$work/use-$e/$t" ||
      { echo "pgo-build: examples/$e.toml: $t differs between the two builds (a bug: please report it)" >&2; exit 1; }
  done
done
step "ok: target/pgo/tailsim (use it as TAILSIM_BIN for side-by-side.sh, or run it directly)"

if [ $install = 1 ]; then
  command -v python >/dev/null || { echo "pgo-build: --install needs an active Python environment" >&2; exit 1; }
  step "installing the Python package built with the profile into $(python -c 'import sys; print(sys.prefix)')"
  CARGO_TARGET_DIR=$root/target/pgo-use RUSTFLAGS="$use_flags" \
    python -m pip wheel --quiet --no-deps --wheel-dir "$work/wheel" .
  whl=$(ls "$work"/wheel/tailsim-*.whl)
  # Replace the package itself, then add whatever it depends on that the environment lacks.
  python -m pip install --quiet --no-deps --force-reinstall "$whl"
  python -m pip install --quiet "$whl"
  step "ok: tailsim $(python -c 'import tailsim; print(tailsim.__version__)') installed"
fi
