#!/usr/bin/env bash
# The programs the benchmarks drive besides Python: wrk (the load generator) and nginx (the
# HTTP targets and the TLS front of the API benchmarks). Installs them with apt-get when they
# are missing and we are root (Debian/Ubuntu); otherwise says what to install.
set -euo pipefail
have_nginx() { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }
command -v wrk >/dev/null 2>&1 && have_nginx && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "bench: wrk and nginx are needed: install them (Debian/Ubuntu: apt-get install -y wrk nginx-light)" >&2
    exit 1
fi
echo "bench: installing wrk and nginx-light"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q wrk nginx-light >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q wrk nginx-light >/dev/null; }
