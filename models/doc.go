// Package models holds the vocabulary of the plugin host: users, Installations,
// Instances, the manifest's storage declaration, storage items, the results every
// tool returns, change events, and the one error type that every layer reports.
//
// It depends on nothing but the standard library, so that every other package
// (storage rules, lifecycle, GraphQL, REST, validator) can share it.
package models
