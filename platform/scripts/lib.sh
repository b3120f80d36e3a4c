# Shared helpers for the platform's scripts. Source it; do not run it.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

APT_UPDATED=""
apt_install() {
  # Install Debian packages that are missing; needs root (as on CI and the dev machines).
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "missing Debian packages: ${missing[*]} (run as root or install them)"
  say "apt-get install ${missing[*]}"
  if [ -z "$APT_UPDATED" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
    || die "apt-get install ${missing[*]} failed"
}

ensure_python() {
  command -v python3 >/dev/null || apt_install python3
  python3 -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \
    || die "Python 3.11 or newer is required (found $(python3 --version 2>&1))"
  python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
}

# ensure_venv REQUIREMENTS_FILE: create .venv and install the pinned set once per change of the file.
ensure_venv() {
  local req="$1" stamp
  ensure_python
  [ -x "$PY" ] || { say "creating $VENV"; python3 -m venv "$VENV" || die "could not create $VENV"; }
  stamp="$VENV/.installed-$(basename "$req")-$(cat "$ROOT/requirements.txt" "$ROOT/$req" | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    say "installing $req into $VENV"
    "$PY" -m pip install -q --disable-pip-version-check -r "$ROOT/$req" >&2 || die "pip install -r $req failed"
    touch "$stamp"
  fi
}
