#!/usr/bin/env python3
"""Summarize lab/tls-compare.sh's TSV: per scenario, over the rounds that
have both servers, the median (min..max) of the paired ratios sluice / net
of server CPU per message or handshake (over the generator's window, and
over the whole generator run), of the rate, and of peak RSS; the medians of
the absolute values beside them; and the issue's targets: CPU per echoed
message at most 1.0x net's, handshakes per server-core-second at least
0.95x net's (net / sluice of CPU per handshake).

    python3 lab/tls-summary.py docs/tls/compare.tsv
"""
import statistics
import sys
from collections import defaultdict

COLS = ["round", "server", "scenario", "conns", "inflight", "rate_per_s", "ops", "window_s",
        "srv_us_per_op", "srv_util", "srv_cpu_s_whole", "peak_rss_kib", "gen_rc", "notes"]


def num(v):
    """The float in v, or None for '-' and anything else unparsable."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def whole_us(row):
    """Server CPU over the whole generator run per op (setup and warm-up
    included, so above the window's figure)."""
    s, ops = num(row["srv_cpu_s_whole"]), num(row["ops"])
    return s / ops * 1e6 if s is not None and ops else None


def spread(xs):
    """'median (min..max)' of xs, or '-'."""
    if not xs:
        return "-"
    return "%.3f (%.3f..%.3f)" % (statistics.median(xs), min(xs), max(xs))


def main(path):
    runs = defaultdict(dict)  # (scenario, round) -> server -> row
    order = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        row = dict(zip(COLS, line.rstrip("\n").split("\t")))
        key = (row["scenario"], row["round"])
        if row["scenario"] not in order:
            order.append(row["scenario"])
        runs[key][row["server"]] = row
    print("scenario\tpairs\tcpu/op sluice÷net (window)\tcpu/op ÷ (whole run)\trate ÷\tpeak RSS ÷"
          "\tsluice µs/op\tnet µs/op\ttarget")
    for sc in order:
        ratios = defaultdict(list)
        absolute = defaultdict(list)
        pairs = 0
        for (s, _), by in sorted(runs.items()):
            if s != sc or "sluice" not in by or "net" not in by:
                continue
            a, b = by["sluice"], by["net"]
            got = False
            for name, fa, fb in [
                ("cpu", num(a["srv_us_per_op"]), num(b["srv_us_per_op"])),
                ("whole", whole_us(a), whole_us(b)),
                ("rate", num(a["rate_per_s"]), num(b["rate_per_s"])),
                ("rss", num(a["peak_rss_kib"]), num(b["peak_rss_kib"])),
            ]:
                if fa is not None and fb:
                    ratios[name].append(fa / fb)
                    got = got or name == "cpu"
            for srv, row in (("sluice", a), ("net", b)):
                if num(row["srv_us_per_op"]) is not None:
                    absolute[srv].append(num(row["srv_us_per_op"]))
            pairs += got
        target = "-"
        if ratios["cpu"]:
            m = statistics.median(ratios["cpu"])
            if sc.startswith("hs"):
                target = "handshakes/core ÷ net %.3f (want >= 0.95): %s" % (1 / m, "met" if 1 / m >= 0.95 else "NOT met")
            else:
                target = "cpu/msg ÷ net %.3f (want <= 1.0): %s" % (m, "met" if m <= 1.0 else "NOT met")
        med = lambda xs: "%.3f" % statistics.median(xs) if xs else "-"
        print("\t".join([sc, str(pairs), spread(ratios["cpu"]), spread(ratios["whole"]), spread(ratios["rate"]),
                         spread(ratios["rss"]), med(absolute["sluice"]), med(absolute["net"]), target]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tls-summary.py compare.tsv")
    main(sys.argv[1])
