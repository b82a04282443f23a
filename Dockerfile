# syntax=docker/dockerfile:1
#
# ship in a container (docs/deploy.md). Build from the repository root:
#
#   docker build -t ship \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg BUILD_TIME=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#
# The build copies no .git (.dockerignore), so the commit and build time
# that `ship version` prints come from these arguments.

# ---- build: a static binary, the module and build caches kept between builds
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=0.1.0-dev
ARG COMMIT=
ARG BUILD_TIME=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildTime=${BUILD_TIME}" \
      -o /out/ship ./cmd/ship

# ---- run: Debian slim, not distroless. exec_shell runs `sh -c` and
# sandboxes each command with bubblewrap when bwrap works, so a ship that
# may run commands needs a shell and bwrap in its image; curl serves the
# health check and the commands people ask the agent to run. CA
# certificates reach Telegram, Feishu, QQ and the model over TLS; time
# zones are compiled into the binary.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates curl bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 ship \
 && useradd --uid 10001 --gid 10001 --home-dir /project --no-create-home --shell /usr/sbin/nologin ship \
 && mkdir /project && chown 10001:10001 /project
COPY --from=build /out/ship /usr/local/bin/ship

# Not root: the project folder is the only place ship writes (Agent.md,
# ship.json, .ship/ with the chat logs, journal and tasks). A new named
# volume takes /project's owner, 10001; a bind-mounted folder must be
# owned by 10001 (chown 10001:10001 project).
USER 10001:10001
WORKDIR /project
VOLUME ["/project"]
ENV HOME=/project \
    SHIP_HOST=0.0.0.0 \
    SHIP_PORT=3000
# Listening beyond loopback, ship refuses to start without SHIP_API_TOKEN
# (`openssl rand -hex 32`): pass it from an env file, never in the image.
EXPOSE 3000

# GET /health is the server's cheap liveness answer and needs no token.
# A cluster replica answers it before JetStream has elected its leaders
# (10-16 s): the start period covers that.
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${SHIP_PORT}/health" || exit 1

# `ship start` runs the project in /project; arguments after the image
# name are added (e.g. --offline). Other commands:
#   docker run --rm -it -v ship-project:/project --entrypoint ship ship init .
ENTRYPOINT ["ship", "start"]
