#!/usr/bin/env bash
# The Python side of the interop tests: a virtualenv at tests/e2e/.venv with the official Dropbox
# Python SDK (requirements.txt, every version pinned) from PyPI, and openssl, which makes the
# test's certificates. Idempotent: installs only when requirements.txt changed since the last
# install (or the venv is missing or broken). Installs Debian's python3-venv and openssl with apt
# when they are missing, as tests/all.sh does for chromium.
#
#   tests/e2e/python/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/../.venv"
stamp="$venv/.edgegrant-requirements"

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y "$@" || { $sudo apt-get update && $sudo apt-get install -y "$@"; }
}

command -v python3 >/dev/null || apt_install python3
command -v openssl >/dev/null || apt_install openssl

want=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && "$venv/bin/python" -c 'import dropbox' 2>/dev/null; then
  exit 0
fi

rm -rf "$venv"
# Debian's python3 has venv without ensurepip until python3-venv is installed.
if ! python3 -m venv "$venv" 2>/dev/null; then
  rm -rf "$venv"
  apt_install python3-venv
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$here/requirements.txt"
"$venv/bin/python" -c 'import dropbox; print("dropbox Python SDK", dropbox.__version__, "in tests/e2e/.venv")'
echo "$want" > "$stamp"
