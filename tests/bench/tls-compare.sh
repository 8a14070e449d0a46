#!/usr/bin/env bash
# tls-compare.sh -- what security costs: the same workloads plaintext and
# secured, back to back in one run, and the ratios. This is what
# `make bench TLS=1` executes.
#
#   tests/bench/tls-compare.sh BUILD_DIR [SECONDS]     (SECONDS defaults to 10)
#
# For each of REPS rounds (BENCH_TLS_REPS, default 3) it runs run-bench.sh
# twice on fresh clusters: plaintext, then secured (BENCH_SECURE=1: TLS 1.3
# on the client port and a bearer token; BENCH_PEER_TLS=1: mutual TLS
# between the nodes). Workloads: W1 with 1 and 64 clients, W2 with 2 and 256
# (BENCH_WORKLOADS, BENCH_W1_CLIENTS, BENCH_W2_CLIENTS override them).
# Alternating the two runs spreads this machine's drift over both. Then it
# prints, per workload and client count, the median ops/s of each and their
# ratio, against the targets set for TLS's cost (W1 64 clients >= 0.85,
# W2 >= 0.95).
# A benchmark reports, it does not assert: the exit status is 0 whenever
# every run printed its figures.
#
# Output: the table on stdout; every JSON line in BUILD_DIR/bench-tls.jsonl.
set -u

build=${1:?usage: tls-compare.sh BUILD_DIR [SECONDS]}
secs=${2:-10}
reps=${BENCH_TLS_REPS:-3}
here=$(dirname "$0")
out=$build/bench-tls.jsonl
export BENCH_WORKLOADS=${BENCH_WORKLOADS:-W1 W2}
export BENCH_W1_CLIENTS=${BENCH_W1_CLIENTS:-1 64}
export BENCH_W2_CLIENTS=${BENCH_W2_CLIENTS:-2 256}

: >"$out"
for ((r = 1; r <= reps; r++)); do
    echo "tls-compare: round $r of $reps: plaintext" >&2
    BENCH_SECURE=0 BENCH_PEER_TLS=0 "$here/run-bench.sh" "$build" "$secs" >>"$out" || exit 1
    echo "tls-compare: round $r of $reps: TLS (client port and peers) + token" >&2
    BENCH_SECURE=1 BENCH_PEER_TLS=1 "$here/run-bench.sh" "$build" "$secs" >>"$out" || exit 1
done

# Median ops/s per (workload, clients, secured) and the ratio.
awk -f "$here/jsonl.awk" -f /dev/stdin "$out" <<'AWK'
function median(list,    a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/"workload"/ {
    w = jget($0, "workload"); c = jget($0, "clients"); ops = jget($0, "ops_per_s")
    sec = jget($0, "client_tls") == "1" ? "tls" : "plain"
    k = w " " c
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    v[k, sec] = v[k, sec] " " ops
}
END {
    print "| run | clients | plaintext ops/s | TLS + token ops/s | TLS / plaintext | target |"
    print "|---|---:|---:|---:|---:|---|"
    for (i = 1; i <= n; i++) {
        split(order[i], kc, " ")
        p = median(v[order[i], "plain"]); t = median(v[order[i], "tls"])
        target = kc[1] == "W2" ? 0.95 : (kc[1] == "W1" && kc[2] == 64 ? 0.85 : 0)
        verdict = target ? sprintf(">= %.2f: %s", target, (p > 0 && t / p >= target) ? "met" : "NOT met") : "-"
        printf "| %s | %s | %.0f | %.0f | %.2f | %s |\n", kc[1], kc[2], p, t, (p > 0 ? t / p : 0), verdict
    }
}
AWK
