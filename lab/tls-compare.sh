#!/usr/bin/env bash
# The TLS issue's comparison: sluice's echo (cmd/echo -codec length with
# -tls-cert/-tls-key) beside lab/cmd/tls-net-echo (net + crypto/tls, a
# goroutine per connection), both on TLS 1.3 with an ECDSA P-256
# certificate, driven by cmd/sluiceload over loopback. Each server runs
# alone, pinned to CPU 0 (SERVER_CPU), the generator on CPU 1 (GEN_CPUS;
# unpinned on a 1-CPU machine), in paired rounds with the order
# alternating (sluice first in odd rounds, net first in even ones).
#
#	bash lab/tls-compare.sh [OUTDIR]     (OUTDIR default docs/tls, relative to the repository root)
#
# It writes OUTDIR/compare.tsv (a header naming the machine, the commit and
# the exact commands, then one line per run) and OUTDIR/summary.txt (what
# lab/tls-summary.py prints: per scenario, the median of the paired ratios
# sluice ÷ net of server CPU per message or handshake, with their range).
#
# Scenarios (SCENARIOS, "name:conns:inflight" words): echo64-* are 64-byte
# echoes in a closed loop; hs-full and hs-resumed are the generator's
# handshake mode (new connections, each handshaking once; resumed with
# session tickets). Per run: the generator's rate (msgs_per_sec, or
# handshakes_per_sec where its JSON has it), the server's CPU over the
# generator's measured window (-server-pid: utime+stime from
# /proc/PID/stat at the window's ends) per message or handshake, the
# server's CPU over the whole generator run as this script reads it from
# /proc/PID/stat (clock ticks ÷ getconf CLK_TCK; connection setup and the
# warm-up included), and its peak RSS (VmHWM, read just before it stops).
#
# Environment: ROUNDS (5), DURATION (5s), WARMUP (1s), SCENARIOS,
# SERVER_CPU (0), GEN_CPUS (1), SLUICE_SERVER_CMD and NET_SERVER_CMD
# (command templates; {BIN}, {CERT} and {KEY} are replaced by the build
# directory and the PEM files), GEN_TLS_ARGS (the generator's TLS flags;
# set it empty, with plaintext servers, to test the mechanics without TLS),
# CLIENT_GODEBUG, DRY_RUN=1 (start, probe with one echo through openssl
# s_client, and stop every server, but run no generator). A run whose generator flags sluiceload -h does not list is
# not run either: its line says which flag is missing.
#
# Every process runs on 127.0.0.1 under timeout; the script stops the
# processes it started by pid (TERM, then KILL), on an interrupt too.
set -euo pipefail

# The generator's TLS flags (cmd/sluiceload, internal/loadcmd).
TLS_FLAG=${TLS_FLAG:--tls}
TLS_CA_FLAG=${TLS_CA_FLAG:--tls-ca}
TLS_INSECURE_FLAG=${TLS_INSECURE_FLAG:--tls-insecure} # unused by default: the client verifies with -tls-ca
TLS_RESUME_FLAG=${TLS_RESUME_FLAG:--tls-resume}
HANDSHAKES_FLAG=${HANDSHAKES_FLAG:--handshakes}
: "$TLS_INSECURE_FLAG"

# Go's default key exchange is the X25519MLKEM768 hybrid; tlsmlkem=0 makes
# the Go client offer X25519 first, which both servers then choose, so the
# comparison measures the same key exchange on both sides.
CLIENT_GODEBUG=${CLIENT_GODEBUG-tlsmlkem=0}

rounds=${ROUNDS:-5}
duration=${DURATION:-5s}
warmup=${WARMUP:-1s}
scenarios=${SCENARIOS:-echo64-c1:1:1 echo64-c64:64:8 echo64-c1000:1000:1 hs-full:16:1 hs-resumed:16:1}
server_cpu=${SERVER_CPU:-0}
gen_cpus=${GEN_CPUS:-1}
dry=${DRY_RUN:-0}
sluice_default='{BIN}/echo -addr 127.0.0.1:0 -codec length -tls-cert {CERT} -tls-key {KEY}'
net_default='{BIN}/tls-net-echo -addr 127.0.0.1:0 -cert {CERT} -key {KEY}'
sluice_tmpl=${SLUICE_SERVER_CMD:-$sluice_default}
net_tmpl=${NET_SERVER_CMD:-$net_default}
gen_tls=${GEN_TLS_ARGS-$TLS_FLAG $TLS_CA_FLAG {CERT\}}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
outdir=${1:-docs/tls}
case $outdir in /*) ;; *) outdir=$root/$outdir ;; esac
cd "$root"

bin=$(mktemp -d)
tpid= # the timeout process around the running server
spid= # the running server
gpid= # the timeout process around the running generator
stop_pid() { # stop the timeout process $1 and its child $2: TERM, up to 5 s, KILL
  [ -n "$2" ] && kill -TERM "$2" 2>/dev/null || true
  if [ -n "$1" ]; then
    for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    [ -n "$2" ] && kill -KILL "$2" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
stop_server() { stop_pid "$tpid" "$spid"; tpid= spid=; }
stop_gen() { [ -n "$gpid" ] && stop_pid "$gpid" "$(pgrep -P "$gpid" || true)"; gpid=; }
trap 'stop_gen; stop_server; rm -rf "$bin"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v openssl > /dev/null || { echo "tls-compare: openssl is needed for the certificate" >&2; exit 1; }
command -v python3 > /dev/null || { echo "tls-compare: python3 is needed to read the generator's JSON" >&2; exit 1; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$bin/key.pem" -out "$bin/cert.pem" 2> "$bin/openssl.err" ||
  { cat "$bin/openssl.err" >&2; exit 1; }

expand() { # the template $1 with {BIN}, {CERT} and {KEY} replaced
  local s=$1
  s=${s//\{BIN\}/$bin}
  s=${s//\{CERT\}/$bin/cert.pem}
  s=${s//\{KEY\}/$bin/key.pem}
  echo "$s"
}

go build -o "$bin/sluiceload" ./cmd/sluiceload
case "$sluice_tmpl $net_tmpl" in *"{BIN}/echo "*) go build -o "$bin/echo" ./cmd/echo ;; esac
(cd lab && go build -o "$bin/tls-net-echo" ./cmd/tls-net-echo)
"$bin/sluiceload" -h > "$bin/gen.help" 2>&1 || true
has_flag() { grep -Eq -- "^  $1( |\$)" "$bin/gen.help"; }

ncpu=$(nproc)
gen_pin=()
[ "$ncpu" -ge 2 ] && gen_pin=(taskset -c "$gen_cpus")
clk=$(getconf CLK_TCK)
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; } # utime + stime

gen_args() { # scenario conns inflight: sluiceload's arguments after -addr, one per line
  local extra=()
  case $1 in
  hs-full) extra=("$HANDSHAKES_FLAG") ;;
  hs-resumed) extra=("$HANDSHAKES_FLAG" "$TLS_RESUME_FLAG") ;;
  esac
  # shellcheck disable=SC2046 # the TLS arguments are words
  printf '%s\n' -codec length -size 64 -conns "$2" -inflight "$3" -warmup "$warmup" -duration "$duration" -json \
    $(expand "$gen_tls") "${extra[@]}"
}

mkdir -p "$outdir"
out=$outdir/compare.tsv
dirty=$(git status --porcelain -- '*.go' go.mod go.sum lab/go.mod lab/go.sum lab/tls-compare.sh lab/tls-summary.py | wc -l)
{
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $ncpu-vCPU $(uname -s) $(uname -r) ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown CPU)), $(go version | awk '{print $3}'), $(openssl version | awk '{print $1, $2}'), commit $(git rev-parse --short HEAD)$([ "$dirty" = 0 ] || echo " with $dirty uncommitted file(s) among those built"), ROUNDS=$rounds DURATION=$duration WARMUP=$warmup CLK_TCK=$clk$([ "$dry" = 1 ] && echo ", DRY_RUN")"
  echo "# certificate: openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1"
  echo "# sluice: timeout -s KILL 600 taskset -c $server_cpu $sluice_tmpl"
  echo "# net: timeout -s KILL 600 taskset -c $server_cpu $net_tmpl"
  echo "# generator: GODEBUG=$CLIENT_GODEBUG timeout -s KILL 300 ${gen_pin[*]} {BIN}/sluiceload -addr ADDR -server-pid PID $(gen_args SCENARIO CONNS INFLIGHT | paste -sd' ' - | sed "s|$bin|{BIN}|g"), and per scenario: hs-full $HANDSHAKES_FLAG, hs-resumed $HANDSHAKES_FLAG $TLS_RESUME_FLAG"
  echo "# scenarios (name:conns:inflight): $scenarios"
  echo "# reproduce from the repository root: bash lab/tls-compare.sh ${outdir#"$root"/}"
  echo "# srv_us_per_op: server CPU over the generator's window per message or handshake; srv_cpu_s_whole: over the whole generator run (setup and warm-up included)"
  echo -e "# round\tserver\tscenario\tconns\tinflight\trate_per_s\tops\twindow_s\tsrv_us_per_op\tsrv_util\tsrv_cpu_s_whole\tpeak_rss_kib\tgen_rc\tnotes"
} > "$out"

# probe: one 64-byte frame echoed over TLS 1.3 by openssl s_client; prints
# "ok" with the negotiated suite and key exchange, or what went wrong.
probe() {
  local want got
  want=$(printf '%064d' 0)
  got=$({ printf '\0\0\0\100%s' "$want"; sleep 1; } |
    timeout -s KILL 10 openssl s_client -connect "$1" -CAfile "$bin/cert.pem" -tls1_3 -brief -no_ign_eof -verify_return_error 2> "$bin/probe.err" |
    tail -c 64 || true)
  if [ "$got" = "$want" ]; then
    echo "ok ($(awk -F': ' '/^Ciphersuite|^Server Temp Key/ {printf "%s%s", s, $2; s = ", "}' "$bin/probe.err") with openssl s_client)"
  else
    echo "failed: $(tail -c 200 "$bin/probe.err" | tr '\t\n' '  ')"
  fi
}

one() { # round server scenario conns inflight
  local tmpl=$sluice_tmpl
  [ "$2" = net ] && tmpl=$net_tmpl
  local cmd
  read -r -a cmd <<< "$(expand "$tmpl")"
  : > "$bin/srv.out"
  timeout -s KILL 600 taskset -c "$server_cpu" "${cmd[@]}" > "$bin/srv.out" 2> "$bin/srv.err" &
  tpid=$!
  local addr=
  for _ in $(seq 100); do
    spid=$(pgrep -P "$tpid" || true)
    addr=$(awk '/^listening on / {print $3; exit}' "$bin/srv.out")
    [ -n "$addr" ] && [ -n "$spid" ] && break
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.1
  done
  local rate=- ops=- win=- us=- util=- whole=- rss=- rc=- notes=
  local args missing=
  mapfile -t args < <(gen_args "$3" "$4" "$5")
  for a in "${args[@]}"; do
    case $a in -*) has_flag "$a" || missing="$missing $a" ;; esac
  done
  case $addr in
  127.0.0.1:*)
    if [ "$dry" = 1 ] || [ -n "$missing" ]; then
      rc=skipped
      notes="$([ -n "$missing" ] && echo "sluiceload lacks$missing; ")$([ -n "$gen_tls" ] && echo "probe $(probe "$addr"); ")would run: sluiceload -addr $addr -server-pid $spid ${args[*]}"
      notes=${notes//$bin/\{BIN\}}
    else
      local t0
      t0=$(cpu_ticks "$spid")
      GODEBUG=$CLIENT_GODEBUG timeout -s KILL 300 "${gen_pin[@]}" "$bin/sluiceload" -addr "$addr" -server-pid "$spid" "${args[@]}" > "$bin/gen.json" 2> "$bin/gen.err" &
      gpid=$!
      rc=0
      wait "$gpid" || rc=$?
      gpid=
      local t1
      t1=$(cpu_ticks "$spid")
      [ -n "$t0" ] && [ -n "$t1" ] && whole=$(awk -v a="$t0" -v b="$t1" -v c="$clk" 'BEGIN {printf "%.3f", (b - a) / c}')
      IFS=$'\t' read -r rate ops win us util notes < <(python3 - "$bin/gen.json" "$bin/gen.err" <<'EOF'
import json, sys
def first(d, *keys):
    for k in keys:
        if isinstance(d, dict) and d.get(k) is not None:
            return d[k]
    return None
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    err = open(sys.argv[2]).read().strip().replace("\t", " ").replace("\n", " | ")[-300:]
    print("-\t-\t-\t-\t-\tno JSON (%s): %s" % (type(e).__name__, err or "no stderr"))
    sys.exit(0)
rate = first(r, "handshakes_per_sec", "msgs_per_sec")
ops = first(r, "handshakes", "msgs")
srv = r.get("server") or {}
us = None
if srv.get("cpu_sec") is not None and ops:
    us = srv["cpu_sec"] / ops * 1e6
notes = []
for k in ("dropped", "unfinished", "conns_lost"):
    if r.get(k):
        notes.append("%s %s" % (k, r[k]))
if r.get("tls_version"):
    notes.append("%s %s" % (r["tls_version"], r.get("tls_cipher_suite", "")))
if r.get("mode") == "handshakes":
    notes.append("resumed %.1f%%" % (100 * (r.get("resumed_share") or 0)))
if r.get("handshake_failures"):
    notes.append("handshake failures %s" % json.dumps(r["handshake_failures"], sort_keys=True))
if r.get("errors"):
    notes.append("errors %s" % json.dumps(r["errors"], sort_keys=True))
if r.get("first_error"):
    notes.append("first error: %s" % r["first_error"])
f = lambda v, p: "-" if v is None else ("%.*f" % (p, v))
print("\t".join([f(rate, 1), "-" if ops is None else str(ops), f(r.get("window_sec"), 3), f(us, 3),
                 f(srv.get("util"), 3), "; ".join(notes).replace("\t", " ").replace("\n", " ")]))
EOF
      )
    fi
    rss=$(awk '/^VmHWM/ {print $2}' "/proc/$spid/status" 2>/dev/null) || rss=-
    ;;
  *) notes="server did not report a loopback address: $(tail -c 300 "$bin/srv.err" | tr '\t\n' '  ')" ;;
  esac
  stop_server
  # tls-net-echo's handshake tally (negotiated version, suite and group) on stderr at exit
  local tally
  tally=$(grep -m1 '^tls-net-echo: handshakes: ' "$bin/srv.err" | sed 's/^tls-net-echo: //' | tr '\t' ' ' || true)
  [ -n "$tally" ] && notes="${notes:+$notes; }$tally"
  echo -e "r$1\t$2\t$3\t$4\t$5\t$rate\t$ops\t$win\t$us\t$util\t$whole\t${rss:--}\t$rc\t${notes:--}" | tee -a "$out"
}

for r in $(seq 1 "$rounds"); do
  order="sluice net"
  [ $((r % 2)) = 0 ] && order="net sluice"
  for sc in $scenarios; do
    IFS=: read -r name conns inflight <<< "$sc"
    for s in $order; do one "$r" "$s" "$name" "$conns" "$inflight"; done
  done
done

python3 lab/tls-summary.py "$out" | tee "$outdir/summary.txt"
