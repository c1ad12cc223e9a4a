# Redis from Debian's packages, for the compose farm's test where no registry serves redis:7-alpine.
ARG BASE=reelfarm-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o redis -g redis /data
USER redis
WORKDIR /data
CMD ["redis-server", "--bind", "127.0.0.1", "--appendonly", "yes"]
