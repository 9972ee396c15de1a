# Sourced by CLI test scripts: a temp dir $T (removed on exit), a failure counter $fails,
# and expect CODE PATTERN -- command...: exit status CODE and PATTERN in stdout+stderr.
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fails=0

expect() {
    code=$1 pat=$2
    shift 3
    "$@" >"$T/out" 2>&1
    got=$?
    if [ "$got" != "$code" ] || ! grep -q -- "$pat" "$T/out"; then
        echo "FAIL: $* -> exit $got (want $code), output:"; sed 's/^/  /' "$T/out" | head -5
        [ "$got" != "$code" ] || echo "  (missing: $pat)"
        fails=$((fails + 1))
    fi
}
