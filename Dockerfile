# One image for every Punctual role; the command picks the app:
#   api (default)  node dist/apps/api/src/main.js
#   scheduler      node dist/apps/scheduler/src/main.js
#   worker         node dist/apps/worker/src/main.js
#   migrations     node dist/libs/db/src/migrate.cli.js   (or: npx prisma migrate deploy)

FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json prisma.config.ts ./
COPY scripts ./scripts
COPY prisma ./prisma
COPY apps ./apps
COPY libs ./libs
COPY bench ./bench
# Generates the Prisma client, compiles to dist/.
RUN npm run build

FROM node:20-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

FROM node:20-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
RUN groupadd --system --gid 10001 punctual && useradd --system --uid 10001 --gid punctual --home /app punctual
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json prisma.config.ts ./
COPY --chown=root:root prisma ./prisma
COPY --chown=root:root scripts/healthcheck.mjs ./scripts/healthcheck.mjs
USER 10001
EXPOSE 3000 8081
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
CMD ["node", "dist/apps/api/src/main.js"]
