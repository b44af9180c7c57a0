# Multi-stage build: a static quiver binary on a distroless, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/quiver ./cmd/quiver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/quiver /usr/local/bin/quiver
ENV QUIVER_ADDR=:8080 QUIVER_DATA_DIR=/var/lib/quiver
VOLUME /var/lib/quiver
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/quiver", "serve"]
