# Shared by lab/tls-cpu.sh and lab/tls-flood.sh (sourced, not run): a
# temporary folder $bin with cmd/echo, lab/cmd/tls-net-echo and
# lab/cmd/tls-load built from the checkout at $root, a self-signed ECDSA
# P-256 pair for 127.0.0.1 ($bin/cert.pem, $bin/key.pem), and a trap that
# stops the server whose pid is in $pid and removes $bin; gen_cpu is the
# generator's CPU (1, or 0 on a machine with one).
bin=$(mktemp -d)
pid=
tls_lab_cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"; sleep 1; kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$bin"
}
trap tls_lab_cleanup EXIT INT TERM
(cd "$root" && go build -o "$bin/echo" ./cmd/echo)
(cd "$root/lab" && go build -o "$bin/tls-net-echo" ./cmd/tls-net-echo && go build -o "$bin/tls-load" ./cmd/tls-load)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$bin/key.pem" -out "$bin/cert.pem" 2>/dev/null
ncpu=$(nproc)
gen_cpu=1
if [ "$ncpu" -lt 2 ]; then gen_cpu=0; fi

# tls_lab_listening LOG waits (up to 5 s) for the server's "listening on"
# line in LOG and prints its address.
tls_lab_listening() {
  for _ in $(seq 100); do grep -q '^listening on' "$1" && break; sleep 0.05; done
  awk '/^listening on/{print $3; exit}' "$1"
}

# tls_lab_load ARGS... runs the generator on $gen_cpu (X25519 first,
# within 60 s) and prints its JSON result.
tls_lab_load() {
  GODEBUG=tlsmlkem=0 timeout 60 taskset -c "$gen_cpu" "$bin/tls-load" "$@"
}

# tls_lab_stop stops the server whose pid is in $pid.
tls_lab_stop() {
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
}
