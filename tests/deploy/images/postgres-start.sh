#!/bin/sh
# The first start makes the cluster, its superuser (POSTGRES_USER) and database; every start then
# serves on 127.0.0.1:PGPORT with password authentication.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-host=scram-sha-256 --auth-local=trust
    rm -f "$pwfile"
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start
    createdb -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"
    pg_ctl -D "$PGDATA" -w stop
fi
exec postgres -D "$PGDATA" -c listen_addresses=127.0.0.1 -k /tmp -p "$PGPORT"
