# syntax=docker/dockerfile:1
#
# One image for every service; the command picks which one runs:
#   docker run --rm svc-apiserver node services/gateway/dist/main.js --help
# docker-compose.yml and deploy/kubernetes/ run it as storage, authn, authz,
# admission, watch-fanout, gateway and the one-shot pki step.

ARG NODE_IMAGE=node:20-bookworm-slim

# Only the package.json files and the lock, so the `npm install` layer below
# stays cached until a dependency changes (new workspaces are picked up
# without editing this file).
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && cp package-lock.json /manifests/ \
 && find . -name package.json -not -path '*/node_modules/*' -exec cp --parents {} /manifests/ \;

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY --from=manifests /manifests/ ./
RUN npm install --no-audit --no-fund
COPY . .
# `npm run build` = `buf generate` (buf from the @bufbuild/buf npm package,
# ts-proto as a local plugin) then `tsc -b`.
RUN npm run build
# The runtime tree: package.json and dist of every workspace package and
# service (plus nested node_modules where npm put one), the deploy scripts and
# the default audit policy.
RUN mkdir -p /out \
 && cp package.json /out/ \
 && for d in packages/* services/*; do \
      [ -f "$d/package.json" ] || continue; \
      mkdir -p "/out/$d" && cp "$d/package.json" "/out/$d/"; \
      if [ -d "$d/dist" ]; then cp -r "$d/dist" "/out/$d/"; fi; \
      if [ -d "$d/node_modules" ]; then cp -r "$d/node_modules" "/out/$d/"; fi; \
    done \
 && mkdir -p /out/deploy && cp -r deploy/scripts deploy/audit-policy.yaml /out/deploy/ \
 && find /out -name '*.test.js' -o -name '*.test.d.ts' -o -name '*.test.js.map' -o -name '*.test.d.ts.map' | xargs -r rm -f
# Drop the build tools (typescript, jest, buf, ts-proto) from node_modules.
RUN npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
# openssl: the pki step (deploy/scripts/pki.js) issues certificates with it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssl ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
# node_modules/@svc/* are relative symlinks into packages/ and services/,
# which the next COPY fills at the same paths.
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /out/ ./
# /pki is where the pki step keeps the CAs and where every service reads its
# own files; /export/<consumer> is where the pki step writes each consumer's
# set (docker-compose mounts a volume per consumer there). A named volume
# mounted on a directory starts with that directory's owner. /var/log/svc
# holds the gateway's audit log.
RUN mkdir -p /pki /export/gateway /export/authn /export/authz /export/admission /export/storage \
      /export/watch-fanout /export/etcd /export/nats /export/controller-manager /var/log/svc \
 && chown -R 1000:1000 /pki /export /var/log/svc
# The image's `node` user, numeric so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 6443 7101 7102 7103 7104 7105
CMD ["node", "services/gateway/dist/main.js", "--help"]
