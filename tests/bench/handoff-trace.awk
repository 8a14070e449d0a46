# handoff-trace.awk -- the stages of W2's hand-offs, from a `perf trace`
# of the leader, both followers and lockbench (tests/bench/handoff-trace.sh
# makes it and says what each stage is). Input: the trace's lines sorted by
# time; variables: leader, f1, f2, lb (pids) and tasks (a file of "pid tid"
# lines: which process each thread belongs to). Output: one line per
# measurement, "stage<TAB>microseconds", and "#" lines of counts.
#
# Only system calls are seen, so a stage is the time between two of them:
# what a process did in between (its CPU, waiting for a core, the kernel's
# loopback and disk work) is inside the stage. A later stage is matched to
# an earlier one as the first event of its kind after it, which holds while
# hand-offs follow each other (W2 with 2 clients) and blurs with more.

BEGIN {
    while ((getline line < tasks) > 0) {
        split(line, a, " ")
        owner[a[2]] = a[1]
    }
    close(tasks)
}

# An event of kind k at time t.
function put(k, t) {
    n[k]++
    at[k, n[k]] = t
}

# The index of the first event of kind k at or after t (strictly after
# when strict), n[k] + 1 if none.
function after(k, t, strict,    lo, hi, mid) {
    lo = 1
    hi = n[k] + 1
    while (lo < hi) {
        mid = int((lo + hi) / 2)
        if (at[k, mid] < t || (strict && at[k, mid] == t)) lo = mid + 1
        else hi = mid
    }
    return lo
}

# The time of the first event of kind k after t, or -1.
function first(k, t, strict,    i) {
    i = after(k, t, strict)
    return i <= n[k] ? at[k, i] : -1
}

# The time of the last event of kind k before t, or -1.
function last(k, t,    i) {
    i = after(k, t, 0) - 1
    return i >= 1 ? at[k, i] : -1
}

function out(stage, v) {
    if (v >= 0 && v < 5000) printf "%s\t%.1f\n", stage, v
}

# The role of a process: L, F1, F2, B (lockbench) or "".
function role(pid) {
    return pid == leader ? "L" : pid == f1 ? "F1" : pid == f2 ? "F2" : pid == lb ? "B" : ""
}

# A log write's completion on a loop thread: libraft reads its AIO eventfd
# (8 bytes) and calls io_getevents. When the kernel refused the write
# without blocking (RWF_NOWAIT: the first write into a preallocated block),
# libraft hands it to its thread pool in the same loop turn (a futex wake);
# the write is then done when the pool's uv_async wakes the loop (an
# eventfd read of 1024 bytes).
function comp_flush(r) {
    if (pend[r] != "") {
        if (wake[r]) { pool[r]++; npool++ }
        else put(r "comp", pend[r])
    }
    pend[r] = ""
    wake[r] = 0
}

{
    if (!match($0, /^ *[0-9]+\.[0-9]+ /)) next
    t = substr($0, RSTART, RLENGTH) * 1000.0
    if (!match($0, /\/[0-9]+ [a-z_0-9]+\(/)) next
    s = substr($0, RSTART + 1, RLENGTH - 2)
    split(s, a, " ")
    tid = a[1]
    call = a[2]
    pid = (tid in owner) ? owner[tid] : tid
    r = role(pid)
    # The nodes' loop threads; lockbench runs its loop on a thread of its own.
    if (r == "" || (tid != pid && r != "B")) next
    ret = ""
    if (match($0, /\) += -?[0-9]+/)) {
        ret = substr($0, RSTART, RLENGTH)
        sub(/^\) += /, "", ret)
    }
    count = ""
    if (match($0, /count: [0-9]+/)) count = substr($0, RSTART + 7, RLENGTH - 7)
    if (call == "epoll_wait") { comp_flush(r); next }
    if (call == "futex" && $0 ~ /WAKE/ && pend[r] != "") { wake[r] = 1; next }
    if (call == "read" && count == 8 && ret == 8) { comp_flush(r); pend[r] = t; next }
    if (call == "read" && count == 1024 && ret + 0 > 0 && pool[r] > 0) {
        pool[r]--
        put(r "comp", t)
        next
    }
    if (call == "io_submit") { put(r "sub", t); nsub++; next }
    if (r == "B") {
        if (call == "sendto") put("Bsend", t)
        else if (call == "read" && ret + 0 > 0) put("Bread", t)
        next
    }
    if (r == "L") {
        if (call == "read" && count == 65536 && ret + 0 > 0) put("Lcread", t)
        else if (call == "writev") put("Lae", t)
        else if (call == "read" && count == 16 && ret == 16) put("Lresp", t)
        else if (call == "write" && count != 8) put("Lcw", t)
        next
    }
    # a follower
    if (call == "read" && count == 16 && ret == 16) put(r "aer", t)
    else if (call == "write" && count != 8) put(r "resp", t)
}

END {
    comp_flush("L"); comp_flush("F1"); comp_flush("F2")
    prev = -1
    i = 1
    while (i <= n["Lae"]) {
        ta = at["Lae", i]
        j = i
        while (j < n["Lae"] && at["Lae", j + 1] - at["Lae", j] < 30) j++
        tb = at["Lae", j]
        i = j + 1
        # AppendEntries that carry a client's command: a client read since
        # the previous ones (the others are heartbeats or catch-up).
        k = after("Lcread", prev, 1)
        prev = tb
        if (k > n["Lcread"] || at["Lcread", k] >= ta) continue
        s1 = at["Lcread", k]
        s0 = last("Bsend", s1)
        if (s0 >= 0) out("01 client sends -> leader reads", s1 - s0)
        out("02 leader reads -> AppendEntries sent", ta - s1)
        lc = -1
        ls = first("Lsub", s1, 0)
        if (ls >= 0 && ls < tb + 2000) {
            out("03 leader reads -> its log write submitted", ls - s1)
            lc = first("Lcomp", ls, 1)
            if (lc >= 0) out("04 leader's log write", lc - ls)
        }
        q = -1
        for (f = 1; f <= 2; f++) {
            F = "F" f
            a0 = first(F "aer", ta, 0)
            if (a0 < 0) continue
            fs = first(F "sub", a0, 0)
            if (fs < 0) continue
            fc = first(F "comp", fs, 1)
            if (fc < 0) continue
            fw = first(F "resp", fc, 0)
            if (fw < 0) continue
            out("05 AppendEntries sent -> follower reads", a0 - ta)
            out("06 follower reads -> its log write submitted", fs - a0)
            out("07 follower's log write", fc - fs)
            out("08 follower's write done -> result sent", fw - fc)
            rr = first("Lresp", fw, 0)
            if (rr < 0) continue
            out("09 result sent -> leader reads", rr - fw)
            if (q < 0 || rr < q) q = rr
        }
        if (q < 0 || lc < 0) continue
        commit = q > lc ? q : lc
        out("10 leader waits for its own write after the first result", lc > q ? lc - q : 0)
        cw = first("Lcw", commit, 0)
        if (cw < 0) continue
        out("11 commit -> reply and push written", cw - commit)
        br = first("Bread", cw, 0)
        if (br >= 0) {
            out("12 push written -> client reads", br - cw)
            bs = first("Bsend", br, 0)
            if (bs >= 0) out("13 client reads -> next request sent", bs - br)
        }
        out("14 leader reads a request -> its reply/push written", cw - s1)
        if (lastcw >= 0 && lastcw != "") out("15 one hand-off (push to push)", cw - lastcw)
        lastcw = cw
    }
    printf "# log writes sent to libraft's thread pool: %d of %d io_submits (loop threads)\n",
        npool, nsub
}
