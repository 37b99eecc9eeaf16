#!/bin/bash
# Sets everything up and shows toolsd's main job: a private toolsd (user
# mode, its own socket), and a real session driven through toolsctl: the
# tool list an LLM would get, allowed and refused commands, the sandbox at
# work, a streamed run, then the daemon stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

scripts/deps.sh
if [[ ! -f build/build.ninja ]]; then
        meson setup build >/dev/null
fi
ninja -C build >/dev/null

work=$(mktemp -d /tmp/toolsd-demo.XXXXXX)
chmod 700 "$work"
mkdir -m 700 "$work/project"
sock=$work/io.toolsd
cat >"$work/toolsd.conf" <<CONF
[Daemon]
ProfilesDirectory=$src/etc/toolsd/profiles.d
CONF

pid=
cleanup() {
        if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
                kill -TERM "$pid"
                wait "$pid" || true
        fi
        rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
ctl() {
        say "toolsctl $*"
        build/client/toolsctl --socket "$sock" "$@"
}

echo "Starting a private toolsd on $sock"
build/daemon/toolsd --config "$work/toolsd.conf" --listen "$sock" 2>"$work/toolsd.log" &
pid=$!
# Wait for the socket to answer (the daemon also sends READY=1 to systemd).
for _ in $(seq 100); do
        build/client/toolsctl --socket "$sock" status >/dev/null 2>&1 && break
        kill -0 "$pid" || { cat "$work/toolsd.log"; exit 1; }
        sleep 0.05
done

ctl status
ctl doctor

cat >"$work/project/hello.py" <<'PY'
import sys
print("hello from the sandbox, python", sys.version.split()[0])
PY

session=$(build/client/toolsctl --socket "$sock" open --tool run_shell --tool echo \
        --profile passive --artifacts "$work/project" --task demo)
say "toolsctl open --tool run_shell --tool echo --profile passive --artifacts $work/project"
echo "$session"

ctl tools "$session" | head -c 600
echo " ..."

ctl call "$session" run_shell '{"command": "python3 -m py_compile hello.py"}' || true
ctl call "$session" run_shell '{"command": "ls -la"}' || true
ctl call "$session" run_shell "{\"command\": \"python3 hello.py\"}" || true
ctl call "$session" run_shell '{"command": "cat /etc/shadow"}' || true
ctl call "$session" run_shell '{"command": "cat hello.py; rm -rf /"}' || true
ctl call "$session" run_shell '{"command": "ruff check ."}' || true
ctl sessions
ctl close "$session"

# A whole run in one command: a fresh session with the full profile,
# output streamed live, the command's exit code returned.
ctl run --artifacts "$work/project" --profile full -- python3 hello.py
ctl run --artifacts "$work/project" --profile full -- \
        python3 -c "import os; print('visible at /:', sorted(os.listdir('/'))); print('home exists:', os.path.exists('/home'))"
set +e
ctl run --artifacts "$work/project" --profile full --timeout 1 -- python3 -c "while True: pass"
echo "(exit status $?)"
set -e

# Every call, allowed or refused, is one line of the task's transcript.
ctl log --artifacts "$work/project" --task demo
say "the raw outputs and the transcript stay in the project, read-only to the sandbox"
ls -la "$work/project/tool_calls" | head -8

kill -TERM "$pid"
wait "$pid"
pid=
echo
echo "toolsd stopped. Its log:"
sed 's/^/  /' "$work/toolsd.log" | tail -n 12
