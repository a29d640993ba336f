# Reads busted's TAP output and prints the closing line CI reads: N passed, N failed, N skipped.
# A pending spec (a GPU spec on a machine without a GPU) is "ok N - # SKIP ...".
/^ok [0-9]+ - # SKIP/ { skipped++; next }
/^ok [0-9]+/          { passed++; next }
/^not ok [0-9]+/      { failed++; next }
END {
    if (passed + failed + skipped == 0) { print "no spec ran"; failed = 1 }
    printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
    if (failed > 0) exit 1
}
