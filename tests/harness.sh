# The shell tests' common harness (sourced after their paths are resolved):
# pass/fail/skip counters, a scratch folder removed on exit (the working
# directory from here on), and the reporting helpers.
pass=0; fail=0; skip=0
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

ok() { pass=$((pass + 1)); echo "ok - $*"; }
bad() { fail=$((fail + 1)); echo "not ok - $*"; }
# check NAME COMMAND...: passes if the command succeeds (its output is shown on failure)
check() {
    local name=$1; shift
    local out
    if out=$("$@" 2>&1); then ok "$name ${out:+($out)}"; else bad "$name: $out"; fi
}
run() { "$@" >/dev/null 2>run.err || { echo "command failed: $*"; cat run.err; return 1; }; }
