# Shared helpers for the platform's scripts. Source it; do not run it.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

APT_UPDATED=""

# why_no_install: prints why this script may not install Debian packages (and fails),
# or prints nothing (and succeeds) where it may: as root, with apt-get on the PATH,
# unless PLATFORM_INSTALL=0 asks it never to.
why_no_install() {
  if [ "${PLATFORM_INSTALL:-1}" = "0" ]; then
    echo "PLATFORM_INSTALL=0 is set"
  elif [ "$(id -u)" -ne 0 ]; then
    echo "this is not root"
  elif ! command -v apt-get >/dev/null; then
    echo "apt-get is not on the PATH"
  else
    return 0
  fi
  return 1
}

# install_command PKG...: the command a person runs to install them.
install_command() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo "
  echo "${sudo}apt-get install -y --no-install-recommends $*"
}

# apt_get_install PKG...: install these packages now (the caller found them missing).
apt_get_install() {
  local why
  why="$(why_no_install)" || die "missing Debian packages: $* ($why): run \`$(install_command "$@")\`"
  say "apt-get install $*"
  if [ -z "$APT_UPDATED" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 \
    || die "apt-get install $* failed"
}

apt_install() {
  # Install Debian packages that are missing; needs root (as on CI and the dev machines).
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_get_install "${missing[@]}"
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
  stamp="$VENV/.installed-$(basename "$req")-$(cat "$ROOT"/requirements*.txt | sha256sum | cut -c1-16)"  # any pinned set changed
  if [ ! -f "$stamp" ]; then
    say "installing $req into $VENV"
    "$PY" -m pip install -q --disable-pip-version-check -r "$ROOT/$req" >&2 || die "pip install -r $req failed"
    touch "$stamp"
  fi
}

# ensure_docker: install docker.io, debootstrap and bubblewrap where missing, and make
# sure the Docker engine answers, starting dockerd where it does not. Sandboxes have no
# network, so the engine runs without a bridge or iptables rules (see DESIGN.md).
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/taskplatform-dockerd.log}"
docker_ready() { command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; }
ensure_docker() {
  local pkgs=() pid="" deadline
  { command -v dockerd >/dev/null && command -v docker >/dev/null; } || pkgs+=(docker.io)
  command -v debootstrap >/dev/null || pkgs+=(debootstrap)
  command -v bwrap >/dev/null || pkgs+=(bubblewrap)
  [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || pkgs+=(debian-archive-keyring)
  [ ${#pkgs[@]} -eq 0 ] || apt_install "${pkgs[@]}"
  docker_ready && return 0
  [ "$(id -u)" -eq 0 ] || die "the Docker engine does not answer and only root can start it (dockerd --bridge=none --iptables=false --ip6tables=false)"
  if pgrep -x dockerd >/dev/null; then
    say "dockerd is running but does not answer yet; waiting for it"
  else
    # A dockerd that was killed leaves its pid file; should that pid now belong to some
    # other process, dockerd refuses to start. No dockerd runs, so the file is stale.
    rm -f /var/run/docker.pid
    say "starting dockerd --bridge=none --iptables=false --ip6tables=false (log: $DOCKERD_LOG)"
    mkdir -p "$(dirname "$DOCKERD_LOG")"
    # In its own session (a Ctrl-C here does not reach it) and in /, so it outlives this
    # script and pins no directory of the checkout.
    (cd / && exec setsid dockerd --bridge=none --iptables=false --ip6tables=false \
      </dev/null >>"$DOCKERD_LOG" 2>&1) &
    pid=$!
  fi
  deadline=$((SECONDS + 60))
  until docker_ready; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$DOCKERD_LOG" >&2
      die "dockerd exited (log: $DOCKERD_LOG)"
    fi
    [ "$SECONDS" -lt "$deadline" ] || { tail -n 30 "$DOCKERD_LOG" >&2; die "the Docker engine did not answer within 60 s (log: $DOCKERD_LOG)"; }
    sleep 0.5
  done
  say "the Docker engine answers"
}
