#!/usr/bin/env bash
# Regenerates the fixture host trees used by the golden tests. Each tree is
# laid out like "/" (proc/..., sys/...) and holds only the files tune reads.
# Run from this directory; commit the result.
set -euo pipefail
cd "$(dirname "$0")"

put() { mkdir -p "$(dirname "$1")"; printf '%b' "$2" > "$1"; }

cpuinfo() { # cpuinfo N: N short processor stanzas
  local i out=""
  for ((i = 0; i < $1; i++)); do
    out+="processor\t: $i\nvendor_id\t: GenuineIntel\nmodel name\t: Fixture CPU\ncpu MHz\t\t: 2400.000\n\n"
  done
  printf '%b' "$out"
}

limits() { # limits SOFT HARD
  printf 'Limit                     Soft Limit           Hard Limit           Units     \n'
  printf 'Max cpu time              unlimited            unlimited            seconds   \n'
  printf 'Max stack size            8388608              unlimited            bytes     \n'
  printf 'Max processes             7523                 7523                 processes \n'
  printf 'Max open files            %-20s %-20s files     \n' "$1" "$2"
  printf 'Max locked memory         65536                65536                bytes     \n'
}

sysctls() { # sysctls DIR then name=value pairs
  local d=$1; shift
  for kv in "$@"; do
    local k=${kv%%=*} v=${kv#*=}
    put "$d/proc/sys/${k//.//}" "$v\n"
  done
}

# small: 1 core, 1 GiB, stock low limits of an old small VM, cgroup v2 with
# no limits (a nested unit whose files say "max").
d=small; rm -rf $d
put $d/proc/cpuinfo "$(cpuinfo 1)"
put $d/sys/devices/system/cpu/online "0\n"
put $d/proc/self/status "Name:\ttune\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n"
put $d/proc/meminfo "MemTotal:        1014600 kB\nMemFree:          512000 kB\nMemAvailable:     800000 kB\n"
limits 1024 4096 > $d/proc/self/limits
put $d/proc/self/cgroup "0::/system.slice/sluice.service\n"
put $d/sys/fs/cgroup/system.slice/sluice.service/memory.max "max\n"
put $d/sys/fs/cgroup/system.slice/sluice.service/cpu.max "max 100000\n"
sysctls $d fs.file-max=98304 fs.nr_open=1048576 net.core.somaxconn=128 \
  net.ipv4.tcp_max_syn_backlog=128 net.core.netdev_max_backlog=1000 \
  "net.ipv4.tcp_rmem=4096\t87380\t6291456" "net.ipv4.tcp_wmem=4096\t16384\t4194304" \
  "net.ipv4.tcp_mem=11571\t15429\t23142" net.core.rmem_max=212992 net.core.wmem_max=212992 \
  "net.ipv4.ip_local_port_range=32768\t60999" net.ipv4.tcp_syncookies=1 net.ipv4.tcp_tw_reuse=0 \
  net.ipv4.tcp_fin_timeout=60 net.ipv4.tcp_keepalive_time=7200 net.ipv4.tcp_keepalive_intvl=75 \
  net.ipv4.tcp_keepalive_probes=9

# large: 64 cores, 256 GiB, tuned for many connections; cgroup v1 (hybrid)
# hierarchies with no limits.
d=large; rm -rf $d
put $d/proc/cpuinfo "$(cpuinfo 64)"
put $d/sys/devices/system/cpu/online "0-63\n"
put $d/proc/self/status "Name:\ttune\nCpus_allowed_list:\t0-63\n"
put $d/proc/meminfo "MemTotal:       268435456 kB\nMemFree:        260000000 kB\n"
limits 1048576 1048576 > $d/proc/self/limits
put $d/proc/self/cgroup "12:memory:/system.slice/sluice.service\n4:cpu,cpuacct:/system.slice/sluice.service\n0::/system.slice/sluice.service\n"
put $d/sys/fs/cgroup/memory/memory.limit_in_bytes "9223372036854771712\n"
put $d/sys/fs/cgroup/memory/system.slice/sluice.service/memory.limit_in_bytes "9223372036854771712\n"
put $d/sys/fs/cgroup/cpu,cpuacct/system.slice/sluice.service/cpu.cfs_quota_us "-1\n"
put $d/sys/fs/cgroup/cpu,cpuacct/system.slice/sluice.service/cpu.cfs_period_us "100000\n"
sysctls $d fs.file-max=26000000 fs.nr_open=2097152 net.core.somaxconn=65535 \
  net.ipv4.tcp_max_syn_backlog=65535 net.core.netdev_max_backlog=16384 \
  "net.ipv4.tcp_rmem=4096\t131072\t16777216" "net.ipv4.tcp_wmem=4096\t65536\t16777216" \
  "net.ipv4.tcp_mem=6291456\t8388608\t12582912" net.core.rmem_max=16777216 net.core.wmem_max=16777216 \
  "net.ipv4.ip_local_port_range=1024\t65535" net.ipv4.tcp_syncookies=1 net.ipv4.tcp_tw_reuse=1 \
  net.ipv4.tcp_fin_timeout=15 net.ipv4.tcp_keepalive_time=600 net.ipv4.tcp_keepalive_intvl=30 \
  net.ipv4.tcp_keepalive_probes=5

# container: a 16-core 64 GiB host, but the pod's cgroup v2 limits give this
# container 1.5 cores and 2 GiB (the container's own memory.max is looser
# than its pod's). Sysctls that are not per network namespace are absent, as
# they are inside many containers.
d=container; rm -rf $d
put $d/proc/cpuinfo "$(cpuinfo 16)"
put $d/sys/devices/system/cpu/online "0-15\n"
put $d/proc/self/status "Name:\ttune\nCpus_allowed_list:\t0-15\n"
put $d/proc/meminfo "MemTotal:       65536000 kB\n"
limits 65536 65536 > $d/proc/self/limits
put $d/proc/self/cgroup "0::/kubepods.slice/pod1/ctr1\n"
put $d/sys/fs/cgroup/kubepods.slice/memory.max "max\n"
put $d/sys/fs/cgroup/kubepods.slice/pod1/memory.max "2147483648\n"
put $d/sys/fs/cgroup/kubepods.slice/pod1/cpu.max "max 100000\n"
put $d/sys/fs/cgroup/kubepods.slice/pod1/ctr1/memory.max "4294967296\n"
put $d/sys/fs/cgroup/kubepods.slice/pod1/ctr1/cpu.max "150000 100000\n"
sysctls $d fs.file-max=6553600 fs.nr_open=1048576 net.core.somaxconn=4096 \
  net.ipv4.tcp_max_syn_backlog=1024 \
  "net.ipv4.tcp_rmem=4096\t131072\t6291456" "net.ipv4.tcp_wmem=4096\t16384\t4194304" \
  "net.ipv4.ip_local_port_range=32768\t60999" net.ipv4.tcp_syncookies=1 net.ipv4.tcp_tw_reuse=2 \
  net.ipv4.tcp_fin_timeout=60 net.ipv4.tcp_keepalive_time=7200 net.ipv4.tcp_keepalive_intvl=75 \
  net.ipv4.tcp_keepalive_probes=9

# broken: malformed and missing values; the report must name each one.
d=broken; rm -rf $d
put $d/sys/devices/system/cpu/online "0-1,x\n"
put $d/proc/meminfo "MemTotal:       lots kB\n"
put $d/proc/self/limits "Limit                     Soft Limit           Hard Limit           Units\nMax stack size            8388608              unlimited            bytes\n"
put $d/proc/self/cgroup "0::/\n"
put $d/sys/fs/cgroup/cpu.max "abc 100000\n"
sysctls $d fs.file-max=98304 net.core.somaxconn=-5x \
  "net.ipv4.tcp_rmem=4096\t87380" net.ipv4.tcp_syncookies=0
