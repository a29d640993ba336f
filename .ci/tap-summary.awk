# Reads busted's TAP output and prints the closing line CI reads: N passed, N failed, N skipped.
# A pending spec (a GPU spec on a machine without a GPU) is "ok N - # SKIP ...".
# A result is taken where it starts a line or where a spec's own output without a newline ran
# into it ("0:0 0:0 ok 414 - ..." on the H200 once), when its number is the next one expected;
# a result the plan (1..N) counts but the output lacks is a failure, never a silent drop.
{
    line = $0
    if (match(line, /(not )?ok [0-9]+ - /) == 0) {
        if (line ~ /^1\.\.[0-9]+$/) planned = substr(line, 4) + 0
        next
    }
    res = substr(line, RSTART)
    num = res
    sub(/^(not )?ok /, "", num)
    sub(/ .*/, "", num)
    if (num + 0 != seen + 1) next   # not a result line of this run, or one already taken
    seen = num + 0
    if (res ~ /^not ok/) failed++
    else if (res ~ /^ok [0-9]+ - # SKIP/) skipped++
    else passed++
}
END {
    if (passed + failed + skipped == 0) { print "no spec ran"; failed = 1 }
    if (planned > seen) {
        printf "%d of the %d results the plan counts are missing from the output (after result %d): counted as failed\n", planned - seen, planned, seen
        failed += planned - seen
    }
    printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
    if (failed > 0) exit 1
}
