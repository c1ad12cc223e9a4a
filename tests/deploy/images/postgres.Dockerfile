# PostgreSQL from Debian's packages, for the compose farm's test where no registry serves
# postgres:16-alpine: the same environment (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB) and data
# folder, a port of its own (PGPORT) on loopback, as the farm's containers share the host's network.
ARG BASE=reelfarm-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 700 /var/lib/postgresql/data
COPY postgres-start.sh /usr/local/bin/postgres-start
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data PGPORT=5432
USER postgres
CMD ["/usr/local/bin/postgres-start"]
