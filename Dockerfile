# One image, one binary: `tickgate worker` and `tickgate api` (see docker-compose.yml).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/tickgate ./cmd/tickgate

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/tickgate /usr/local/bin/tickgate
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tickgate"]
