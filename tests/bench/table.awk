# table.awk -- the markdown table of table.sh; needs jsonl.awk's functions
# (awk -f jsonl.awk -f table.awk BENCH_JSONL). One row per lockbench line.

BEGIN { rows = 0 }

function header() {
    print "| run | clients | ops/s | acquire p50 / p99 (ms) | release p50 / p99 (ms) | Jain / max streak | errors / violations | notes |"
    print "|---|---:|---:|---:|---:|---:|---:|---|"
}

# "a / b" of two values, each with d decimals ("-" where absent).
function pair(a, b, d) {
    return fmt(a, d) " / " fmt(b, d)
}

# Latency fields are in microseconds; the table shows milliseconds.
function ms(v) {
    return (v == "" || v == "null") ? "" : v / 1000.0
}

# kB as MB ("" where absent).
function kb_to_mb(v) {
    return (v == "" || v == "null") ? "" : v / 1024.0
}

# A list of kB values "[a,b,c]" as "a / b / c MB".
function mbs(arr,    parts, k, i, s) {
    gsub(/^\[|\]$/, "", arr)
    k = split(arr, parts, ",")
    s = ""
    for (i = 1; i <= k; i++) s = s (i > 1 ? " / " : "") fmt(kb_to_mb(parts[i]), 0)
    return s " MB"
}

# A list of percentages "[a,b,c]" as "a / b / c %".
function pcts(arr,    parts, k, i, s) {
    gsub(/^\[|\]$/, "", arr)
    k = split(arr, parts, ",")
    s = ""
    for (i = 1; i <= k; i++) s = s (i > 1 ? " / " : "") fmt(parts[i], 1)
    return s " %"
}

{
    w = jget($0, "workload")
    if (w == "") next
    if (rows++ == 0) header()
    n = jget($0, "clients")
    errs = pair(jget($0, "errors"), jget($0, "violations"), 0)
    if (w == "W1" || w == "W2" || w == "W3") {
        name = w == "W1" ? "W1 uncontended" : w == "W2" ? "W2 one hot lock" : "W3 leader kill -9"
        rolling = jget($0, "kill") == "rolling" # run-bench.sh W3R
        if (rolling) name = "W3R rolling restart (SIGTERM)"
        if (jget($0, "peer_tls") == 1) name = name ", peer TLS" # run-bench.sh BENCH_PEER_TLS=1
        if (jget($0, "client_tls") == 1) name = name ", client TLS + token" # BENCH_SECURE=1
        notes = ""
        if (w == "W3")
            notes = "longest gap " fmt(jget($0, "gap_ms"), 0) " ms (one client: " \
                    fmt(jget($0, "client_gap_max_ms"), 0) " ms)"
        if (rolling) notes = notes "; " jget($0, "restarts") " restarts"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, n,
               fmt(jget($0, "ops_per_s"), 0),
               pair(ms(jget($0, "acq_p50_us")), ms(jget($0, "acq_p99_us")), 2),
               pair(ms(jget($0, "rel_p50_us")), ms(jget($0, "rel_p99_us")), 2),
               fmt(jget($0, "jain"), 4) " / " fmt(jget($0, "max_streak"), 0), errs, notes
    } else if (w == "W6" || w == "W7" || w == "W8") {
        name = w == "W6" ? "W6 shared/exclusive, 4 names" : w == "W7" ? "W7 semaphore of 8" : "W8 multi-locks, 2-4 of 16 names"
        notes = "at most " jget($0, "max_holders") " holders of one name seen at once"
        if (w == "W6")
            notes = fmt(100.0 * jget($0, "shared_ops") / (jget($0, "ops") > 0 ? jget($0, "ops") : 1), 0) \
                    "% of grants shared; " notes
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, n,
               fmt(jget($0, "ops_per_s"), 0),
               pair(ms(jget($0, "acq_p50_us")), ms(jget($0, "acq_p99_us")), 2),
               pair(ms(jget($0, "rel_p50_us")), ms(jget($0, "rel_p99_us")), 2),
               fmt(jget($0, "jain"), 4) " / " fmt(jget($0, "max_streak"), 0), errs, notes
    } else if (w == "W4") {
        notes = jget($0, "locks") " locks on " jget($0, "sessions") " sessions in " \
                fmt(jget($0, "seconds"), 1) " s" \
                (jget($0, "complete") == "true" ? "" : " (INCOMPLETE)")
        if (jget($0, "rss_kb") != "") notes = notes "; servers' RSS " mbs(jget($0, "rss_kb"))
        # The async driver reports its K sessions as clients (one loop), the
        # blocking one its threads.
        who = n == jget($0, "sessions") ? "1 process, " n " sessions" : n " threads"
        printf "| W4 many locks | %s | %s locks/s | %s | - | - | %s | %s |\n", who,
               fmt(jget($0, "ops_per_s"), 0),
               pair(ms(jget($0, "acq_p50_us")), ms(jget($0, "acq_p99_us")), 2),
               fmt(jget($0, "errors"), 0) " / -", notes
    } else if (w == "W5") {
        notes = jget($0, "sessions_alive") " of " jget($0, "sessions") " sessions idle for " \
                fmt(jget($0, "seconds"), 0) " s (" fmt(jget($0, "keepalives_per_s"), 0) \
                " keepalives/s): **leader CPU " fmt(jget($0, "leader_cpu_pct"), 1) \
                "% of one core** (nodes " pcts(jget($0, "cpu_pct")) "), leader RSS " \
                fmt(kb_to_mb(jget($0, "leader_rss_kb")), 0) " MB"
        printf "| W5 idle sessions | %s | - | - | - | - | %s | %s |\n", n,
               fmt(jget($0, "errors"), 0) " / -", notes
    } else if (w == "W9") {
        # The next leader's wait (p50 / p99, ms) after a resign and after a
        # kill (from the end of the killed session's lease, kill + ttl), and
        # until the last observer heard of it.
        notes = jget($0, "resign_rounds") " resigns: next leader " \
                pair(jget($0, "resign_lead_p50_ms"), jget($0, "resign_lead_p99_ms"), 2) \
                " ms, last observer " \
                pair(jget($0, "resign_observed_p50_ms"), jget($0, "resign_observed_p99_ms"), 2) \
                " ms; " jget($0, "kill_rounds") " kills (ttl " jget($0, "ttl_ms") \
                " ms), from the lease's end: next leader " \
                pair(jget($0, "expiry_lead_p50_ms"), jget($0, "expiry_lead_p99_ms"), 2) \
                " ms, last observer " \
                pair(jget($0, "expiry_observed_p50_ms"), jget($0, "expiry_observed_p99_ms"), 2) \
                " ms (" jget($0, "expiry_early") " before it); " jget($0, "observer_gaps") \
                " observer gaps"
        printf "| W9 election | %s observers, %s candidates | - | - | - | - | %s | %s |\n", n,
               jget($0, "candidates"), errs, notes
    }
}

END {
    if (rows == 0) {
        print "table.sh: no lockbench line in the input" > "/dev/stderr"
        exit 1
    }
}
