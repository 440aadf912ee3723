# syntax=docker/dockerfile:1
# Blockwire: one image for every role. Compose (or any orchestrator) picks the command:
#   blockwire start --role indexer | api | streams | worker | all
#   blockwire migrate            (one-shot, before the roles start)
#   blockwire status             (exit 0 healthy, 1 not)
# Multi-stage: dependencies (one `npm ci`) → build (tsc) and, beside it, production dependencies
# (the same install pruned of dev packages) → runtime (non-root, no compiler, no sources):
# `node dist/cli/main.js <command>`.

ARG NODE_IMAGE=node:24-bookworm-slim
# Debian packages installed before `npm ci`: the toolchain that compiles a native addon where no
# prebuilt binary fits. The addons (zeromq, msgpackr-extract) ship prebuilt binaries for linux
# x64/arm64, so a base without apt-get (scripts/lib/image.sh assembles one from the host's
# files) builds with `--build-arg BUILD_PACKAGES=`, which skips the step.
ARG BUILD_PACKAGES="python3 make g++"

# 1. Every dependency, the dev tools included, installed once.
FROM ${NODE_IMAGE} AS modules
WORKDIR /app
ARG BUILD_PACKAGES
RUN if [ -n "$BUILD_PACKAGES" ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends $BUILD_PACKAGES \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY package.json package-lock.json ./
# --workspaces=false: the SDK (client/, the @blockwire/client workspace) is a package of its own;
# the image leaves it out but for its network table and event kinds (client/network.ts,
# client/event-types.ts: data only), which the daemon shares so that both read an address the
# same way and name the same events.
RUN npm ci --no-audit --no-fund --workspaces=false

# 2. Compile TypeScript.
FROM modules AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY indexer ./indexer
COPY api ./api
COPY streams ./streams
COPY stamp ./stamp
COPY electrum ./electrum
COPY devnode ./devnode
COPY cli ./cli
COPY migrations ./migrations
COPY client/network.ts ./client/network.ts
COPY client/event-types.ts ./client/event-types.ts
RUN npx tsc -p tsconfig.build.json

# 3. Production dependencies only: the same install without its dev packages (cheaper than a
# second `npm ci --omit=dev`, and the same tree).
FROM modules AS deps
RUN npm prune --omit=dev --no-audit --no-fund --workspaces=false

# 4. Runtime: node, production node_modules, compiled JavaScript. Runs as the unprivileged
# `node` user (uid 1000).
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    BLOCKWIRE_STREAM_PORT=3001 \
    BLOCKWIRE_METRICS_PORT=9464 \
    BLOCKWIRE_DATA_DIR=/data
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
COPY --chown=root:root bin ./bin
RUN mkdir -p /data && chown node:node /data \
 && ln -s /app/bin/blockwire.js /usr/local/bin/blockwire
USER node
EXPOSE 3000 3001 9464
# Every role answers GET /healthz on BLOCKWIRE_METRICS_PORT while it runs (503 once stopping).
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.BLOCKWIRE_METRICS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM: graceful stop (the block being applied finishes, in-flight deliveries finish, the API
# closes), exit 0; after SHUTDOWN_TIMEOUT_MS (30 s) it exits 1. Give the container longer than that.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["start"]
