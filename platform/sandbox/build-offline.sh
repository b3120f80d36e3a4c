#!/usr/bin/env bash
# Build the sandbox image without a registry: debootstrap a minimal Debian bookworm
# with python3 and python3-pytest from the Debian mirror apt already uses, trim what a
# sandbox never needs, and `docker import` it as taskplatform-sandbox:<recipe-hash>
# (also tagged :latest). Same content as ./Dockerfile, which is for hosts with a registry.
#
#   build-offline.sh                 build unless the image for this recipe exists
#   build-offline.sh --recipe-hash   print the recipe hash (the image tag) and exit
#
# <recipe-hash> is the first 12 hex digits of sha256(this script + Dockerfile): a
# changed recipe is a new tag. The trimmed root filesystem is cached as a tarball under
# var/sandbox-cache/, keyed by that hash, so a rebuild after `docker rmi` downloads
# nothing. Needs a running Docker engine (platform/scripts/ensure-docker.sh starts one)
# and, to debootstrap, root. The image ID is the last line on stdout; the rest goes to
# stderr. SANDBOX_MIRROR overrides the mirror, SANDBOX_CACHE_DIR the cache directory.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=SCRIPTDIR/../scripts/lib.sh
. "$HERE/../scripts/lib.sh"

IMAGE=taskplatform-sandbox
SUITE=bookworm
# git, for agent sessions (repositories, `git apply`, `git diff`); python-is-python3, so
# a repository's `python` works as on a developer's machine. Then every language's
# toolchain, the Debian packages evaluation/sandbox/languages.py names (a test checks the
# two lists agree): the same packages bwrap binds from the host.
PACKAGES=python3,python3-pytest,git,python-is-python3
TOOLCHAINS=g++,gcc,golang-go,libc6-dev,lua5.4,mono-mcs,mono-runtime,node-typescript,nodejs,openjdk-17-jdk-headless,php-cli,ruby,rustc
PACKAGES="$PACKAGES,$TOOLCHAINS"
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

[ -f "$HERE/Dockerfile" ] || die "$HERE/Dockerfile is missing (the recipe is the script and the Dockerfile together)"
RECIPE_HASH="$(cat "$SELF" "$HERE/Dockerfile" | sha256sum | cut -c1-12)"
# The recipe version lives in one place: the Dockerfile's LABEL.
RECIPE_VERSION="$(sed -n 's/^LABEL org\.taskplatform\.sandbox\.recipe=\([^[:space:]]*\).*/\1/p' "$HERE/Dockerfile")"
[ -n "$RECIPE_VERSION" ] || die "no 'LABEL org.taskplatform.sandbox.recipe=...' line in $HERE/Dockerfile"
TAG="$IMAGE:$RECIPE_HASH"
CACHE_DIR="${SANDBOX_CACHE_DIR:-$ROOT/var/sandbox-cache}"
CACHED="$CACHE_DIR/rootfs-$SUITE-$RECIPE_HASH.tar"

case "${1:-}" in
  "") ;;
  --recipe-hash) echo "$RECIPE_HASH"; exit 0 ;;
  -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$SELF" >&2; exit 0 ;;
  *) die "unknown argument: $1 (try --help)" ;;
esac

# --- what this needs ---------------------------------------------------------
command -v docker >/dev/null \
  || die "the docker client is missing: run 'make sandbox-image' as root (platform/scripts/ensure-docker.sh installs docker.io)"
if ! timeout 20 docker info >/dev/null 2>&1; then
  hint="start it with 'make sandbox-image' as root (dockerd --bridge=none --iptables=false --ip6tables=false)"
  [ "$(id -u)" -eq 0 ] || hint="$hint, or check that $(id -un) may use the docker socket"
  die "the Docker engine does not answer (docker info failed): $hint"
fi

image_id() { docker image inspect -f '{{.Id}}' "$1"; }

finish() {
  # Point :latest at this recipe's image and print its ID as the last line on stdout.
  docker tag "$TAG" "$IMAGE:latest" >&2
  image_id "$TAG"
}

# One build at a time per cache directory; a second caller waits, then finds the image.
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.lock"
flock 9

TMP_DIR=""
unmount_under() {
  # Whatever debootstrap left mounted (proc, sys) when it failed half-way; deepest first.
  local m
  awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r \
    | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
cleanup() {
  if [ -n "$TMP_DIR" ] && [ -d "$TMP_DIR" ]; then
    unmount_under "$TMP_DIR"
    rm -rf --one-file-system "$TMP_DIR"
  fi
  rm -f "$CACHED.partial"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A build killed outright (SIGKILL, a lost session) leaves its work directory behind;
# holding the lock, nothing else can be using one, so remove them.
for stale in "$CACHE_DIR"/build.*; do
  [ -d "$stale" ] || continue
  say "removing $stale, left by an interrupted build"
  unmount_under "$stale"
  rm -rf --one-file-system "$stale"
done
rm -f "$CACHE_DIR"/*.partial

if docker image inspect "$TAG" >/dev/null 2>&1; then
  say "$TAG is up to date (recipe $RECIPE_VERSION)"
  finish
  exit 0
fi

# --- the root filesystem, from the cache or from debootstrap -----------------
detect_mirror() {
  # The Debian mirror apt uses for $SUITE (one-line .list and deb822 .sources files).
  if [ -n "${SANDBOX_MIRROR:-}" ]; then echo "$SANDBOX_MIRROR"; return; fi
  local found=() f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    mapfile -t -O "${#found[@]}" found < <(awk -v s="$SUITE" '
      $1 == "deb" { i = 2
        if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) == s) print $i }' "$f")
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    mapfile -t -O "${#found[@]}" found < <(awk -v s="$SUITE" -v RS= '
      { deb = 0; suite = 0; off = 0; uri = ""
        n = split($0, lines, "\n")
        for (j = 1; j <= n; j++) {
          line = lines[j]; sub(/^[ \t]+/, "", line)
          if (line ~ /^#/) continue
          split(line, w, /[ \t]+/); key = tolower(w[1])
          if (key == "types:" && line ~ /[ \t]deb([ \t]|$)/) deb = 1
          if (key == "suites:" && (" " line " ") ~ ("[ \t]" s "[ \t]")) suite = 1
          if (key == "enabled:" && tolower(w[2]) == "no") off = 1
          if (key == "uris:") uri = w[2]
        }
        if (deb && suite && !off && uri != "") print uri }' "$f")
  done
  if [ ${#found[@]} -gt 0 ]; then echo "${found[0]}"; else echo "http://deb.debian.org/debian"; fi
}

trim_rootfs() {
  # Remove what a sandbox never needs; keep the rest as Debian installed it.
  local r="$1"
  rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old \
    "$r"/var/lib/dpkg/*-old "$r"/usr/share/doc "$r"/usr/share/man "$r"/usr/share/info \
    "$r"/debootstrap
  if [ -d "$r/usr/share/locale" ]; then
    find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name C ! -name 'C.*' ! -name locale.alias \
      -exec rm -rf {} +
  fi
  find "$r/var/log" -mindepth 1 -delete
  # Docker supplies /dev and these three files to every container; what debootstrap put
  # there (device nodes, and the host's resolv.conf and hostname) does not belong in it.
  find "$r/dev" -mindepth 1 -delete
  rm -f "$r/etc/resolv.conf" "$r/etc/hostname" "$r/etc/hosts"
  mkdir -p "$r/scratch"
  chmod 1777 "$r/scratch" "$r/tmp"
}

if [ -f "$CACHED" ]; then
  say "using the cached root filesystem $CACHED"
else
  [ "$(id -u)" -eq 0 ] || die "no cached root filesystem for recipe $RECIPE_HASH, and debootstrap needs root: run as root ('make sandbox-image')"
  command -v debootstrap >/dev/null \
    || die "debootstrap is missing: apt-get install debootstrap (platform/scripts/ensure-docker.sh does)"
  [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] \
    || die "the Debian archive keyring is missing: apt-get install debian-archive-keyring"
  mirror="$(detect_mirror)"
  # Under the cache directory, not $TMPDIR: the lock above covers it, so the next build
  # can clear what a killed one left (see above). It must allow device nodes (not nodev).
  TMP_DIR="$(mktemp -d "$CACHE_DIR/build.XXXXXX")"
  rootfs="$TMP_DIR/rootfs"
  log="$CACHE_DIR/debootstrap.log"
  say "debootstrap --variant=minbase --include=$PACKAGES $SUITE from $mirror (log: $log)"
  if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$mirror" >"$log" 2>&1; then
    tail -n 25 "$log" >&2
    die "debootstrap failed (full log: $log)"
  fi
  unmount_under "$rootfs"
  trim_rootfs "$rootfs"
  say "caching the root filesystem as $CACHED"
  tar --numeric-owner -C "$rootfs" -cf "$CACHED.partial" .
  mv "$CACHED.partial" "$CACHED"
  # Tarballs of older recipes are never used again.
  find "$CACHE_DIR" -maxdepth 1 -name "rootfs-*.tar" ! -name "$(basename "$CACHED")" -delete
fi

# --- the image -----------------------------------------------------------------
say "docker import as $TAG"
docker import \
  --change "ENV PATH=$IMAGE_PATH" \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL org.taskplatform.sandbox.recipe=$RECIPE_VERSION" \
  --change "LABEL org.taskplatform.sandbox.recipe-hash=$RECIPE_HASH" \
  --change 'WORKDIR /scratch' \
  --change 'USER 65534:65534' \
  --change 'CMD ["python3"]' \
  --message "taskplatform sandbox, recipe $RECIPE_VERSION ($RECIPE_HASH), built offline" \
  - "$TAG" <"$CACHED" >&2

# Check the image the way the platform runs it before :latest points at it.
say "checking $TAG (python3 3.11 and pytest, the toolchains, no network, read-only, uid 65534)"
if ! docker run --rm --network none --read-only --tmpfs /scratch --user 65534:65534 \
  --cap-drop ALL --security-opt no-new-privileges "$TAG" \
  sh -c 'python3 -c "import sys, pytest; assert sys.version_info[:2] == (3, 11), sys.version" &&
         for t in gcc g++ javac java node tsc go rustc ruby php lua5.4 mcs mono; do command -v $t >/dev/null || { echo "no $t" >&2; exit 1; }; done' >&2; then
  docker rmi "$TAG" >&2 || true
  die "the new image $TAG failed its check (removed); delete $CACHED to rebuild from scratch"
fi
finish
