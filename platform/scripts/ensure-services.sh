#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1, installing (apt, as root) and
# starting them when they do not; where they already run, use them as they are.
# Prints nothing on stdout but the DATABASE_URL to use.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PG_USER="${PLATFORM_PG_USER:-platform}"
PG_PASSWORD="${PLATFORM_PG_PASSWORD:-platform}"
PG_DB="${PLATFORM_PG_DB:-platform}"

pg_ready() { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; }

as_postgres() {
  # Superuser access over the local socket (peer auth on a stock install).
  if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
    runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 "$@"
  else
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres "$@"
  fi
}

ensure_postgres() {
  if ! pg_ready; then
    if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
      apt_install postgresql postgresql-contrib
    fi
    local version
    version="$(ls /etc/postgresql | sort -V | tail -n 1)"
    say "starting PostgreSQL $version"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
    for _ in $(seq 1 60); do pg_ready && break; sleep 0.5; done
    pg_ready || die "PostgreSQL did not start on 127.0.0.1:5432"
  fi
  if ! as_postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname='$PG_USER'" | grep -q 1; then
    say "creating PostgreSQL role $PG_USER"
    as_postgres -c "CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASSWORD'"
  fi
  if ! as_postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$PG_DB'" | grep -q 1; then
    as_postgres -c "CREATE DATABASE $PG_DB OWNER $PG_USER"
  fi
}

redis_ready() { command -v redis-cli >/dev/null && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

ensure_redis() {
  redis_ready && return 0
  command -v redis-server >/dev/null || apt_install redis-server
  say "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/platform.log >&2
  for _ in $(seq 1 40); do redis_ready && break; sleep 0.25; done
  redis_ready || die "Redis did not start on 127.0.0.1:6379"
}

if [ -z "${DATABASE_URL:-}" ]; then
  ensure_postgres
  echo "postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:5432/$PG_DB"
else
  echo "$DATABASE_URL"
fi
[ -n "${REDIS_URL:-}" ] || ensure_redis
