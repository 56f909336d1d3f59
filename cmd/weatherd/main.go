// Command weatherd runs the example weather service (package weatherserver)
// on loopback, for the weather example: it writes its CA to a file, for the
// host's --egress-ca, and prints its address and API key.
//
//	go run ./cmd/weatherd --addr 127.0.0.1:0 --ca weather-ca.pem
package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"pluginhost/weatherserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "listen address (port 0: one the system picks)")
	caFile := flag.String("ca", "weather-ca.pem", "file to write the server's CA certificate to (PEM)")
	key := flag.String("api-key", "", "the API key /v1/forecast takes (default: a random one, printed)")
	flag.Parse()
	if *key == "" {
		b := make([]byte, 16)
		rand.Read(b)
		*key = "wk_" + hex.EncodeToString(b)
	}
	s, err := weatherserver.Start(*addr, *key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weatherd:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*caFile, s.CA.PEM(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "weatherd:", err)
		os.Exit(1)
	}
	fmt.Printf("weather service listening at %s\nits CA is in %s (give it to pluginhost serve --egress-ca)\nAPI key: %s\n", s.URL, *caFile, *key)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	s.Close()
}
