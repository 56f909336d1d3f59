// Package graph holds the GraphQL schema (*.graphqls, the API's documentation)
// and the code gqlgen generates from it. Generated files are never edited;
// `go generate ./...` regenerates them.
package graph
