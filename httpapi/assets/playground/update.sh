#!/usr/bin/env bash
# Refreshes the GraphiQL playground's vendored assets from the npm registry.
# The files are committed, so `go build` never needs the network; run this only
# to change a version, then update the versions below, SHA256SUMS and the
# version strings in httpapi/playground.go, and commit everything together.
set -euo pipefail
cd "$(dirname "$0")"
GRAPHIQL=graphiql@4.1.2
REACT=react@18.2.0
REACT_DOM=react-dom@18.2.0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$GRAPHIQL" "$REACT" "$REACT_DOM" >/dev/null)
for pkg in "$work"/*.tgz; do
  name=$(basename "$pkg" .tgz)
  mkdir "$work/$name"
  tar -xzf "$pkg" -C "$work/$name"
done
cp "$work"/graphiql-*/package/graphiql.min.js "$work"/graphiql-*/package/graphiql.min.css .
cp "$work"/react-[0-9]*/package/umd/react.production.min.js .
cp "$work"/react-dom-*/package/umd/react-dom.production.min.js .
cp "$work"/graphiql-*/package/LICENSE LICENSE.graphiql
cp "$work"/react-[0-9]*/package/LICENSE LICENSE.react
cp "$work"/react-dom-*/package/LICENSE LICENSE.react-dom
sha256sum graphiql.min.js graphiql.min.css react.production.min.js react-dom.production.min.js > SHA256SUMS
echo "updated; review and commit:"
cat SHA256SUMS
