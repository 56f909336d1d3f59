// Package e2e holds the end-to-end tests: they build the pluginhost binary,
// start real server processes on free ports against fresh SQLite and MariaDB
// databases, and talk to them over HTTP and websockets as clients do.
package e2e
