# jsonl.awk -- read fields of lockbench's one-line JSON objects, with awk
# alone (no JSON tool is assumed on the machine). Included with -f by
# plot.sh and table.sh.
#
# The lines are flat objects whose values are numbers, strings without
# escaped quotes, true/false/null, or flat arrays of numbers, as lockbench
# prints them; that is all this parser handles.

# The raw text of `key`'s value in `line` ("" if absent): a number, null,
# true/false, a string without its quotes, or an array with its brackets.
function jget(line, key,    pat, v) {
    pat = "\"" key "\":"
    if (!match(line, pat "(\\[[^]]*\\]|\"[^\"]*\"|[^,}]*)")) return ""
    v = substr(line, RSTART + length(pat), RLENGTH - length(pat))
    if (v ~ /^"/) v = substr(v, 2, length(v) - 2)
    return v
}

# The n-th (1-based) element of an array value "[a,b,c]" ("" if absent).
function jelem(arr, n,    parts, k) {
    gsub(/^\[|\]$/, "", arr)
    k = split(arr, parts, ",")
    return n <= k ? parts[n] : ""
}

# A number with `d` decimals, or "-" for an absent or null value.
function fmt(v, d) {
    if (v == "" || v == "null") return "-"
    return sprintf("%." d "f", v)
}
