# APNs Sandbox container image.
#   docker build -t apns-sandbox .            (or: docker compose up --build)
# Build with another Swift image: --build-arg SWIFT_IMAGE=swift:6.3-bookworm
# The toolchain matches the one CI uses (Swift 6.3 on Debian 12 bookworm).

ARG SWIFT_IMAGE=swift:6.3-bookworm

# ---- build ------------------------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# The very script CI and the README use to install the build dependencies (apt).
COPY scripts/setup scripts/setup
# setcap (libcap2-bin) for the binary's capability, below.
RUN scripts/setup \
 && apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libcap2-bin \
 && rm -rf /var/lib/apt/lists/*
COPY . .
# Debug info stripped (12 MB); the symbol table stays, so a crash report still names the functions.
RUN swift build -c release --product apns-sandbox --static-swift-stdlib \
 && bin="$(swift build -c release --product apns-sandbox --static-swift-stdlib --show-bin-path)" \
 && mkdir -p /staging \
 && cp "$bin/apns-sandbox" /staging/ \
 && strip --strip-debug /staging/apns-sandbox \
 && setcap cap_net_bind_service=+p /staging/apns-sandbox \
 && find "$bin" -maxdepth 1 -name '*.resources' -exec cp -R {} /staging/ \;

# ---- runtime ----------------------------------------------------------------------------------------
FROM debian:bookworm-slim
# Only the shared libraries the binary links (the Swift runtime is linked in statically):
# OpenSSL, nghttp2, SQLite, zlib, libcurl (URLSession: media downloads, webhook extensions), libcap (port 443,
# below), libstdc++ (Swift runtime), plus CA certificates.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libssl3 libnghttp2-14 libsqlite3-0 zlib1g libcurl4 libcap2 libstdc++6 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 apns \
 && useradd --system --uid 10001 --gid apns --home-dir /app --no-create-home --shell /usr/sbin/nologin apns \
 && mkdir -p /app/config /data \
 && chown apns:apns /data

# Port 443 as the non-root user: the one capability binding it needs, on the binary only (set in the build stage:
# a `setcap` here would store the binary a second time, in a layer of its own). Buildah's COPY keeps the file
# capability (scripts/image checks it); Docker's builders may drop it (moby/buildkit#2250), where Docker's default
# sysctl below makes it unneeded. *Permitted* and not effective (+p): the server raises it while its listeners bind and
# drops it after (Sources/Transport/Socket/BindCapability.swift), and the binary still starts where the capability
# cannot be granted (--cap-drop ALL; with +ep the kernel would refuse to run it). Where it is not granted or
# no-new-privileges is set, 443 needs net.ipv4.ip_unprivileged_port_start=0, as Docker sets by default and
# docker-compose.yml sets explicitly.
COPY --from=build /staging/ /usr/local/bin/
COPY config/ /app/config/

WORKDIR /app
# The generated CA (ca.pem) and server certificate live here; a named volume keeps them across restarts.
VOLUME /data
# Every interface inside the container (the config file's listeners are loopback only): the admin API then
# requires the admin token (APNS_SANDBOX_ADMIN_TOKEN, or the one generated into /data/admin-token).
# APNS_SANDBOX_CONFIG also tells `apns-sandbox healthcheck` which port the cleartext listener is on.
# TLS on 443 and 2197, Apple's two provider ports, so that a client with its default host and port (under
# Apple's names: network aliases, docker-compose.yml) needs no change but the sandbox CA in its trust store.
ENV APNS_SANDBOX_DATA_DIR=/data APNS_SANDBOX_HOST=:: APNS_SANDBOX_CONFIG=/app/config/sandbox.json \
    APNS_SANDBOX_TLS_PORT=443,2197
USER apns
# 443 and 2197: TLS (h2 and http/1.1 via ALPN); 8080: cleartext (h2c prior knowledge and HTTP/1.1).
EXPOSE 443 2197 8080
# Asks the configured cleartext listener (config file, then APNS_SANDBOX_HTTP_PORT), wherever it was moved.
# The start period covers the integrity check of both database files (storage.integrityCheckSeconds, 10 s each).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s CMD ["/usr/local/bin/apns-sandbox","healthcheck"]
ENTRYPOINT ["/usr/local/bin/apns-sandbox"]
CMD ["serve","--config","/app/config/sandbox.json"]
