// Package kit is what a plugin capability written in Go needs to talk to the
// host: it reads the request the host writes on standard input, gives typed
// access to the arguments and the Instance's storage snapshot, builds the
// result (data, evidence, host actions, notifications, fetch rounds) and
// writes it on standard output.
//
// A capability is one function:
//
//	package main
//
//	import "pluginhost/kit"
//
//	func init() { kit.Handle(summary) }
//
//	func main() { kit.Main() }
//
//	func summary(req *kit.Request) (*kit.Result, error) {
//		notes := req.Items("notes")
//		return kit.Reply(fmt.Sprintf("%d notes", len(notes)), map[string]any{"count": len(notes)}), nil
//	}
//
// `pluginhost build` compiles it to a reactor module (the host keeps an
// initialized instance and restores it before each run, so a run costs well
// under a millisecond); `GOOS=wasip1 GOARCH=wasm go build` compiles the same
// source to a command module (a fresh instance each run). Either way the
// function runs once per run, and every run starts from the state after
// initialization: nothing a run leaves in memory is seen by the next.
//
// A capability that needs the network answers kit.Fetching(requests...)
// instead of a result: the host makes the requests and runs the capability
// again with Request.Round one higher and the answers in Request.Fetched
// (Request.Answer), at most 4 rounds. A round may carry a value to the next
// run (Result.Carry, read with Request.Carried), so that a later round need
// not fetch again what an earlier one learned.
//
// The package uses nothing but the standard library, so that it adds little
// to a module. It reads the request and writes the result with a JSON codec
// of its own, which gives encoding/json's results in a fraction of its time
// inside a module, and hands encoding/json whatever it does not handle; the
// values a handler decodes with Item.Decode, Request.Args and the like go
// the same way.
package kit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Handler handles one run.
type Handler func(*Request) (*Result, error)

var handler Handler

// Handle registers the capability's handler. Call it from an init function,
// so that it is registered in a reactor module too, where main never runs.
func Handle(h Handler) { handler = h }

// Main runs the registered handler once, for a command module: call it from
// main.
func Main() {
	os.Exit(Serve(os.Stdin, os.Stdout, os.Stderr))
}

// Serve reads one request from in, runs the handler and writes the result
// to out, or the error to errOut. It returns the exit code the module
// should end with: 0, or 1 when the request could not be read or the
// handler failed. Tests of a capability call it directly.
func Serve(in io.Reader, out, errOut io.Writer) int {
	if handler == nil {
		fmt.Fprintln(errOut, "kit: no handler: call kit.Handle from an init function")
		return 1
	}
	var req Request
	// The request's values are read in place, so the buffer is not put
	// back: a handler may keep them.
	buf := readBuffers.Get().(*bytes.Buffer)
	_, err := buf.ReadFrom(in)
	if err == nil {
		err = decodeRequest(buf.Bytes(), &req)
	}
	if err != nil {
		fmt.Fprintln(errOut, "kit: cannot read the request:", err)
		return 1
	}
	res, err := handler(&req)
	if err == nil && res == nil {
		err = errors.New("the handler returned no result")
	}
	if err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	encoded, err := res.encode()
	if err != nil {
		fmt.Fprintln(errOut, "kit: cannot write the result:", err)
		return 1
	}
	if _, err := out.Write(encoded); err != nil {
		fmt.Fprintln(errOut, "kit: cannot write the result:", err)
		return 1
	}
	return 0
}

// run is the reactor's entry: the host calls it once per run, on an
// instance restored to its state after initialization.
//
//go:wasmexport pluginhost_run
func run() {
	if code := Serve(os.Stdin, os.Stdout, os.Stderr); code != 0 {
		os.Exit(code)
	}
}
