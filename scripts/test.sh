#!/bin/bash
# Sets everything up and runs the whole test suite:
#   unit tests (cmocka, TAP) of a gcc build, the integration tests (pytest,
#   a real toolsd, real bwrap, real clients) against it, a clang build with
#   the same -Werror list, unit plus integration tests again under
#   AddressSanitizer and UndefinedBehaviorSanitizer, and a short libFuzzer
#   run of every fuzz target (FUZZ_SECONDS each: 60 in CI, 10 otherwise).
# Ends with the line "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD

scripts/deps.sh || exit 1

out=$src/build-test
mkdir -p "$out"
: >"$out/results"
py=/usr/bin/python3

# A step that is one test: a build, a check.
step() {
        local name=$1
        shift
        echo "== $name"
        if "$@" >"$out/$name.log" 2>&1; then
                echo "ok $name" >>"$out/results"
        else
                echo "not ok $name" >>"$out/results"
                echo "-- $name failed; last lines of $out/$name.log:"
                tail -n 40 "$out/$name.log"
        fi
}

# meson's unit tests: each TAP line of each test program counts.
unit() {
        local build=$1 tag=$2
        echo "== unit tests ($tag)"
        meson test -C "$build" --suite unit --print-errorlogs >"$out/unit-$tag.log" 2>&1
        $py - "$build/meson-logs/testlog.json" "$tag" >>"$out/results" <<'PY'
import json, re, sys
n = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    taps = [l for l in t.get("stdout", "").splitlines() if re.match(r"(not )?ok \d", l)]
    for l in taps:
        print("%s unit/%s/%s %s" % ("not ok" if l.startswith("not") else "ok", sys.argv[2], t["name"], l))
    if not taps or t["result"] not in ("OK", "EXPECTEDFAIL", "SKIP"):
        print("%s unit/%s/%s" % ("ok" if t["result"] == "OK" else "not ok", sys.argv[2], t["name"]))
PY
}

# pytest: each test case counts.
integration() {
        local build=$1 tag=$2
        shift 2
        echo "== integration tests ($tag)"
        TOOLSD_BUILD=$build $py -m pytest -q -p no:cacheprovider --junitxml="$out/pytest-$tag.xml" "$@" \
                >"$out/pytest-$tag.log" 2>&1
        tail -n 15 "$out/pytest-$tag.log"
        $py - "$out/pytest-$tag.xml" "$tag" >>"$out/results" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as e:
    print("not ok pytest/%s (no report: %s)" % (sys.argv[2], e))
    sys.exit()
for tc in root.iter("testcase"):
    bad = tc.find("failure") is not None or tc.find("error") is not None
    if tc.find("skipped") is not None:
        continue
    print("%s pytest/%s/%s::%s" % ("not ok" if bad else "ok", sys.argv[2], tc.get("classname"), tc.get("name")))
PY
}

# build DIR CC [meson options]: a fresh build directory with that compiler.
build() {
        local dir=$1 cc=$2
        shift 2
        rm -rf "$dir"
        CC=$cc meson setup "$dir" "$@" && ninja -C "$dir"
}

step build-gcc build build gcc
unit build gcc
integration "$src/build" gcc tests/integration client/python

step build-clang build build-clang clang

step build-asan build build-asan clang -Db_sanitize=address,undefined -Db_lundef=false
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
unit build-asan asan
integration "$src/build-asan" asan tests/integration
unset ASAN_OPTIONS UBSAN_OPTIONS

# libFuzzer: each target runs for FUZZ_SECONDS over a copy of its seed
# corpus (what it finds stays out of the tree) and counts as one test; a
# crash leaves its input in $out/fuzz-NAME/ (docs/sandbox-layers.md says
# how to run longer and turn a crash into a regression test).
fuzz_one() {
        local target=$1 seeds=$2 work=$3 secs=$4
        rm -rf "$work"
        mkdir -p "$work/corpus"
        cp -r "$seeds/." "$work/corpus/"
        "$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$work/" "$work/corpus"
}

fuzz() {
        local secs=${FUZZ_SECONDS:-$([[ ${CI:-} == true ]] && echo 60 || echo 10)} seeds name
        step build-fuzz build build-fuzz clang -Dfuzz=true
        for seeds in tests/fuzz/corpus/*/; do
                name=$(basename "$seeds")
                if [[ -x $src/build-fuzz/tests/fuzz-$name ]]; then
                        step "fuzz-$name" fuzz_one "$src/build-fuzz/tests/fuzz-$name" "$seeds" \
                                "$out/fuzz-$name" "$secs"
                else
                        echo "not ok fuzz-$name (target not built)" >>"$out/results"
                fi
        done
}

fuzz

passed=$(grep -c '^ok ' "$out/results")
failed=$(grep -c '^not ok ' "$out/results")
if ((failed)); then
        echo "failures:"
        grep '^not ok ' "$out/results" | sed 's/^/  /'
fi
echo "$passed passed, $failed failed"
((failed == 0 && passed > 0))
