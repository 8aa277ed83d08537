# syntax=docker/dockerfile:1
#
# One image for every service; the command picks which one runs:
#   docker run --rm svc-apiserver node services/gateway/dist/main.js --help
# docker-compose.yml and deploy/kubernetes/ run it as storage, authn, authz,
# admission, watch-fanout, gateway, controller-manager and the one-shot pki step.
#
# The build's version (what /version and every service's --version answer,
# and the image's OCI labels) comes from build arguments, since the build
# context has no .git:
#   docker build \
#     --build-arg SVC_GIT_VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg SVC_GIT_COMMIT="$(git rev-parse HEAD)" \
#     --build-arg SVC_BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
#     -t svc-apiserver:dev .
# Left empty, scripts/build-info.js uses the release, no commit and the time
# of the build.

# Node.js 22, an LTS release (package.json engines: >=20.19).
ARG NODE_IMAGE=node:22-bookworm-slim

# Only the package.json files and the lock, so the `npm ci` layer below stays
# cached until a dependency changes (new workspaces are picked up without
# editing this file).
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && cp package-lock.json /manifests/ \
 && find . -name package.json -not -path '*/node_modules/*' -exec cp --parents {} /manifests/ \;

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY --from=manifests /manifests/ ./
# Exactly the lock's versions (it fails when package.json and the lock
# disagree); the lock holds every platform's @bufbuild/buf binary, and npm
# installs the one for the platform being built (amd64 or arm64).
RUN npm ci --no-audit --no-fund
COPY . .
# `npm run build` = `buf generate` (buf from the @bufbuild/buf npm package,
# ts-proto as a local plugin), `tsc -b`, then scripts/build-info.js, which
# writes packages/service-kit/dist/build-info.json from these (build
# arguments are environment variables of RUN).
ARG SVC_GIT_VERSION=
ARG SVC_GIT_COMMIT=
ARG SVC_BUILD_DATE=
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
# The system's CA bundle, for Node.js started with --use-openssl-ca (webhooks, OIDC issuers signed
# by a private CA added to it). No openssl binary: the pki step issues certificates in process.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
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
# mounted on a directory starts with that directory's owner, so every one of
# them exists here, owned by the user below. /var/log/svc holds the gateway's
# audit log.
RUN mkdir -p /pki /export/gateway /export/authn /export/authz /export/admission /export/storage \
      /export/watch-fanout /export/etcd /export/nats /export/controller-manager /export/prometheus \
      /export/encryption /var/log/svc \
 && chown -R 1000:1000 /pki /export /var/log/svc
# Last, so that a new commit changes only the labels' layer.
ARG NODE_IMAGE
ARG SVC_GIT_VERSION=
ARG SVC_GIT_COMMIT=
ARG SVC_BUILD_DATE=
LABEL org.opencontainers.image.title="svc-apiserver" \
      org.opencontainers.image.description="A Kubernetes-compatible API server split into services: gateway, storage, authn, authz, admission, watch-fanout, controller-manager" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${SVC_GIT_VERSION:-unknown}" \
      org.opencontainers.image.revision="${SVC_GIT_COMMIT:-unknown}" \
      org.opencontainers.image.created="${SVC_BUILD_DATE:-unknown}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# The image's `node` user, numeric so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 6443 7101 7102 7103 7104 7105 9100 9101
CMD ["node", "services/gateway/dist/main.js", "--help"]
