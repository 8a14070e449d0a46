# compare.awk -- baton against Redis from the JSON lines of one
# make bench-compare run (tests/bench/compare.sh): baton's lines
# ("system":"baton"), Redis's ("system":"redis", "durable":true|false) and
# benchfloor's ("system":"floor"). Used with jsonl.awk:
#
#   awk -f jsonl.awk -f compare.awk [-v out=table|dat] BENCH_COMPARE_JSONL
#
# out=table (default): the markdown table of the figures and the ratios
#   baton / Redis, then W2's limit from the floor (docs/performance.md,
#   "The limit of W2": one hand-off costs at least one fsync and two
#   loopback round trips) and each W2 rate as a fraction of it; then the
#   same with benchfloor's fsync3 (three writers at once, as the three
#   nodes of the local cluster share one disk), for information.
# out=dat: the chart's data (tests/bench/plot-compare.sh), one row per
#   figure: index, "label", baton / Redis durable, baton / Redis default.
#
# When a run appears twice the last line wins.

function key(line,    sys) {
    sys = jget(line, "system")
    if (sys == "redis") sys = jget(line, "durable") == "true" ? "durable" : "default"
    return sys SUBSEP jget(line, "workload") SUBSEP jget(line, "clients")
}

# The ratio a / b, or "-" when either is missing or b is 0.
function ratio(a, b) {
    if (a == "" || a == "null" || b == "" || b == "null" || b + 0 == 0) return "-"
    return sprintf("%.3g", a / b)
}

function num(v, scale, d) {
    if (v == "" || v == "null") return "-"
    return sprintf("%." d "f", v / scale)
}

# One figure: run w/c, field f shown divided by scale with d decimals.
function row(w, c, f, what, scale, d, better,    b, rd, rf) {
    b = v["baton", w, c, f]; rd = v["durable", w, c, f]; rf = v["default", w, c, f]
    nrows++
    if (out == "dat") {
        printf "%d \"%s-%s %s\" %s %s\n", nrows, w, c, short[f], ratio(b, rd), ratio(b, rf)
        return
    }
    printf "| %s, %s client%s | %s (%s) | %s | %s | %s | %s | %s |\n", w, c, (c == 1 ? "" : "s"),
        what, better, num(b, scale, d), num(rd, scale, d), ratio(b, rd), num(rf, scale, d),
        ratio(b, rf)
}

function limit_line(c,    g, frac) {
    g = v["baton", "W2", c, "ops_per_s"]
    if (g == "" || limit == 0) return
    frac = 100 * g / limit
    printf "W2, %d clients: %.0f grants/s = %.1f%% of the limit (target >= 85%%: %s)\n", c, g,
        frac, (frac >= 85 ? "met" : "not met")
}

BEGIN {
    short["ops_per_s"] = "rate"; short["acq_p50_us"] = "acq p50"
    short["acq_p99_us"] = "p99 wait"; short["jain"] = "jain"; short["max_streak"] = "streak"
}

jget($0, "system") == "floor" {
    fsync = jget($0, "fsync_p50_us"); rtt = jget($0, "rtt_p50_us")
    fsync3 = jget($0, "fsync3_p50_us")
    next
}
/"workload"/ {
    k = key($0)
    split("ops_per_s acq_p50_us acq_p99_us jain max_streak", fs, " ")
    for (i in fs) v[k, fs[i]] = jget($0, fs[i])
}

END {
    if (out != "dat") {
        print "| run | figure | baton | Redis durable | baton / Redis durable | Redis default | baton / Redis default |"
        print "|---|---|---:|---:|---:|---:|---:|"
    }
    row("W1", 1, "ops_per_s", "cycles/s", 1, 0, "higher is better")
    row("W1", 1, "acq_p50_us", "acquire p50, ms", 1000, 3, "lower is better")
    row("W1", 64, "ops_per_s", "cycles/s", 1, 0, "higher is better")
    for (c = 2; c <= 256; c *= 128) {
        row("W2", c, "ops_per_s", "grants/s", 1, 0, "higher is better")
        row("W2", c, "acq_p99_us", "p99 wait, ms", 1000, 2, "lower is better")
        row("W2", c, "jain", "Jain's index", 1, 4, "1 is fair")
        row("W2", c, "max_streak", "max streak", 1, 0, "1 is best")
    }
    if (out == "dat") exit 0
    if (fsync == "" || rtt == "") {
        print "no benchfloor line: no limit"
        exit 0
    }
    handoff = fsync + 2 * rtt
    limit = 1e6 / handoff
    printf "\nW2 limit: fsync p50 %.1f us + 2 x loopback round trip p50 %.1f us = %.1f us per hand-off: at most %.0f grants/s\n",
        fsync, rtt, handoff, limit
    limit_line(2)
    limit_line(256)
    if (fsync3 == "") exit 0
    h3 = fsync3 + 2 * rtt
    printf "With the three nodes writing at once to this one disk (fsync3 p50 %.1f us): %.1f us per hand-off, at most %.0f grants/s; W2 reached %.1f%% (2 clients) and %.1f%% (256)\n",
        fsync3, h3, 1e6 / h3, 100 * v["baton", "W2", 2, "ops_per_s"] * h3 / 1e6,
        100 * v["baton", "W2", 256, "ops_per_s"] * h3 / 1e6
}
