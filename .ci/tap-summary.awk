# Reads busted's TAP output and prints the closing line CI reads: N passed, N failed, N skipped.
# A pending spec (a GPU spec on a machine without a GPU) is "ok N - # SKIP ...".
# A result starting a line is busted's. A result after other text counts only where no line
# starts with that number: a spec's own output without a newline can run into busted's line
# ("0:0 0:0 ok 414 - ..." on the H200 once). Lines starting with "#" (busted's failure
# messages) are not read for results. A result the plan (1..N) counts and the output lacks, or
# output without a plan line (busted cut off), is a failure, never a silent drop.
function kind(r) { return r ~ /^not ok/ ? "failed" : (r ~ /^ok [0-9]+ - # SKIP/ ? "skipped" : "passed") }
function number(r,    n) { n = r; sub(/^(not )?ok /, "", n); sub(/ .*/, "", n); return n + 0 }
/^1\.\.[0-9]+$/ { planned = substr($0, 4) + 0; has_plan = 1; next }
/^#/ { next }
/^(not )?ok [0-9]+ - / { n = number($0); start[n] = kind($0); if (n > most) most = n; next }
{
    if (match($0, /[^A-Za-z](not )?ok [0-9]+ - /) == 0) next
    r = substr($0, RSTART + 1)
    n = number(r)
    if (!(n in mid)) mid[n] = kind(r)
    if (n > most) most = n
}
END {
    last = has_plan ? planned : most
    for (n = 1; n <= last; n++) {
        if (n in start) count[start[n]]++
        else if (n in mid) count[mid[n]]++
        else missing++
    }
    passed = count["passed"] + 0; failed = count["failed"] + 0; skipped = count["skipped"] + 0
    if (passed + failed + skipped == 0 && missing == 0) { print "no spec ran"; failed = 1 }
    if (!has_plan && last > 0) { print "no plan line (1..N) in the output: busted did not finish"; failed++ }
    if (missing > 0) {
        printf "%d of the %d results the plan counts are missing from the output: counted as failed\n", missing, last
        failed += missing
    }
    printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
    if (failed > 0) exit 1
}
