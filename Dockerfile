# pluginhost container image: a static binary on an empty base, run as a
# non-root user, with its data folder on a volume. See docs/deploy.md.
#
#   docker build -t pluginhost .
#   docker run -p 8080:8080 -v pluginhost-data:/data pluginhost

# Build stage: the Go version go.mod asks for.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: SQLite is pure Go (modernc.org/sqlite), so the binary is static and
# runs on an empty base. -trimpath drops build paths; the build's commit is
# not stamped (.git is not in the build context; see .dockerignore).
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o /out/pluginhost . \
 && /out/pluginhost version \
 && mkdir -p /out/data /out/keys /out/tmp && chmod 1777 /out/tmp

# Run stage: the binary, CA certificates (the image proxy fetches https
# images), an empty /data for the volume and a /tmp for SQLite. No shell.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/pluginhost /usr/local/bin/pluginhost
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/keys /keys
COPY --from=build /out/tmp /tmp
# 65532 is "nonroot" by convention; any uid without a home works.
USER 65532:65532
ENV PLUGINHOST_ADDR=0.0.0.0:8080 \
    PLUGINHOST_DATA_DIR=/data \
    PLUGINHOST_DB=sqlite:/data/pluginhost.db \
    PLUGINHOST_TRUSTED_KEYS=/keys \
    TMPDIR=/tmp
# /data holds the SQLite database and the generated secret key (when
# PLUGINHOST_SECRET_KEY is not given): keep it on a volume and back it up.
VOLUME ["/data"]
EXPOSE 8080
# `pluginhost health` asks GET /readyz on the address in PLUGINHOST_ADDR:
# healthy once the schema is migrated and the database answers.
HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 CMD ["/usr/local/bin/pluginhost", "health"]
ENTRYPOINT ["/usr/local/bin/pluginhost"]
CMD ["serve"]
