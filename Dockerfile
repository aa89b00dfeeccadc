# syntax=docker/dockerfile:1
# One image for every Punctual role; the command picks the role:
#   api (default)  node dist/apps/api/src/main.js        listens on PORT (3000)
#   scheduler      node dist/apps/scheduler/src/main.js  health and metrics on HEALTH_PORT (8081)
#   worker         node dist/apps/worker/src/main.js     health and metrics on HEALTH_PORT (8081)
#   migrations     npx prisma migrate deploy             (or: node dist/libs/db/src/migrate.cli.js)

FROM node:20-slim AS base
# Prisma's schema engine (`prisma migrate deploy`) links against OpenSSL and picks its build from
# the installed version; node:20-slim ships without it. CA certificates: TLS to managed databases.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV CHECKPOINT_DISABLE=1 \
    PRISMA_HIDE_UPDATE_MESSAGE=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app

# Compiles TypeScript (and generates the Prisma client into it) with every dependency.
FROM base AS build
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json prisma.config.ts ./
COPY scripts ./scripts
COPY prisma ./prisma
COPY apps ./apps
COPY libs ./libs
RUN npm run build

# Production dependencies only. Their install downloads Prisma's schema engine for this platform;
# the runtime filesystem is read-only, so it must be here now, not fetched at the first migration.
FROM base AS deps
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
RUN ls node_modules/@prisma/engines/schema-engine-* >/dev/null 2>&1 \
 || (echo "Prisma's schema engine was not downloaded (no access to binaries.prisma.sh?): 'prisma migrate deploy' would not run from this image; run migrations with 'node dist/libs/db/src/migrate.cli.js' instead, or build where the download works." >&2 && exit 1)

FROM base AS runtime
ENV NODE_ENV=production \
    NPM_CONFIG_CACHE=/tmp/.npm
# A numeric, non-root user: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --system --gid 10001 punctual \
 && useradd --system --uid 10001 --gid punctual --home-dir /app --no-create-home --shell /usr/sbin/nologin punctual
# Everything stays owned by root and read-only to the app user.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json prisma.config.ts ./
COPY prisma ./prisma
COPY scripts/healthcheck.mjs ./scripts/healthcheck.mjs
USER 10001:10001
EXPOSE 3000 8081
# Liveness of whichever role runs here: the API answers on PORT, scheduler and worker on HEALTH_PORT.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
CMD ["node", "dist/apps/api/src/main.js"]
