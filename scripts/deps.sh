#!/bin/bash
# Installs what toolsd needs to build, run and test, from Debian's packages.
# Safe to run again: apt-get skips what is there. Runs as root.
set -euo pipefail

packages=(
        build-essential clang lld meson ninja-build pkg-config python3
        libuv1-dev libsystemd-dev libcap-ng-dev libjson-c-dev libinih-dev
        libseccomp-dev libcurl4-openssl-dev libpcre2-dev libcmocka-dev
        libclang-rt-14-dev
        bubblewrap systemd python3-pytest procps iproute2 passwd groff-base
)

missing=()
for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
        if [[ $(id -u) -ne 0 ]]; then
                echo "deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
                exit 1
        fi
        echo "deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
