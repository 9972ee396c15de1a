# Sourced by the CLI test scripts that take the hearth binary as $1. Gives a temp dir $TMP
# (removed on exit), a failure flag $fail, and:
#   bad TEXT...                      records a failure
#   expect CODE WHAT -- COMMAND...   runs COMMAND (stdout in $TMP/out, stderr in $TMP/err) and
#                                    wants exit status CODE
#   has FILE TEXT                    wants TEXT in $TMP/FILE
HEARTH=$1
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { printf 'FAIL: %s\n' "$*"; fail=1; }
[ -x "$HEARTH" ] || { echo "FAIL: $HEARTH is not built"; exit 1; }
expect() {
    code=$1; what=$2; shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq "$code" ] || bad "$what: exit $rc, want $code; stderr: $(tail -c 400 "$TMP/err")"
}
has() { grep -qF -- "$2" "$TMP/$1" || bad "$1 lacks '$2': $(tail -c 300 "$TMP/$1")"; }
