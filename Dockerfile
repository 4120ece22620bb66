# The oipkit image for people who build with Docker or Podman:
#   docker build -t oipkit .
# `make image` builds the same layout without a daemon, reproducibly and for
# linux/amd64 and linux/arm64 (deploy/README.md); prefer it for releases.
# Both give a static oipkit on an empty base, run as the non-root user 65532.

ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=0.1.0-dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS= \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -buildid= -X github.com/oipkit/oipkit/version.Version=${VERSION}" \
      -o /out/usr/local/bin/oipkit ./cmd/oipkit \
 && mkdir -p /out/etc /out/home/nonroot /out/tmp \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group \
 && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /out/ /
COPY --from=build --chown=65532:65532 /out/home/nonroot /home/nonroot
USER 65532:65532
WORKDIR /home/nonroot
ENV PATH=/usr/local/bin HOME=/home/nonroot
EXPOSE 8000 8001
LABEL org.opencontainers.image.title=oipkit \
      org.opencontainers.image.description="Open Inference Protocol conformance suite, load generator and reference server"
ENTRYPOINT ["/usr/local/bin/oipkit"]
CMD ["help"]
