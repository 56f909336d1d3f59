// Package weatherserver is a small HTTPS weather service that stands in for
// a real one, for the weather example, its walk-through and its tests: it
// makes its own certificate authority (which the host trusts only through
// the operator's --egress-ca) and answers the current weather of any city
// openly, and a forecast only with its API key.
package weatherserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"pluginhost/internal/devca"
)

// KeyHeader is the request header that carries the API key.
const KeyHeader = "X-Api-Key"

// Server is a running weather service.
type Server struct {
	// URL is its base address, such as https://localhost:8443.
	URL string
	// CA signed its certificate; CA.PEM() is what --egress-ca reads.
	CA *devca.CA
	// Key is the API key /v1/forecast takes.
	Key string

	srv *http.Server
	ln  net.Listener
}

// Start listens on addr (such as 127.0.0.1:0) and serves until Close.
func Start(addr, key string) (*Server, error) {
	ca, err := devca.New("pluginhost example weather CA", 30*24*time.Hour)
	if err != nil {
		return nil, err
	}
	cert, err := ca.Issue("localhost", "127.0.0.1", "::1")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{CA: ca, Key: key, ln: ln, URL: fmt.Sprintf("https://localhost:%d", ln.Addr().(*net.TCPAddr).Port)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/current", s.current)
	mux.HandleFunc("GET /v1/forecast", s.forecast)
	s.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.ServeTLS(ln, "", "")
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Weather is the weather of a city on a day.
type Weather struct {
	City        string  `json:"city"`
	Day         string  `json:"day,omitempty"`
	Temperature float64 `json:"temperature"`
	Sky         string  `json:"sky"`
}

var skies = []string{"clear", "cloudy", "rain", "snow", "fog", "wind"}

// weatherOf is the same answer for the same city and day, every time.
func weatherOf(city string, day int) Weather {
	h := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(city)) + fmt.Sprint(day)))
	n := binary.BigEndian.Uint32(h[:4])
	return Weather{City: city, Temperature: float64(int(n%400)-100) / 10, Sky: skies[int(n>>16)%len(skies)]}
}

func (s *Server) current(w http.ResponseWriter, r *http.Request) {
	city := r.URL.Query().Get("city")
	if city == "" || len(city) > 100 {
		http.Error(w, `{"error":"city is 1 to 100 characters"}`, http.StatusBadRequest)
		return
	}
	writeJSON(w, weatherOf(city, 0))
}

func (s *Server) forecast(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(KeyHeader)), []byte(s.Key)) != 1 || s.Key == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"a valid X-Api-Key is required"}`))
		return
	}
	city := r.URL.Query().Get("city")
	if city == "" || len(city) > 100 {
		http.Error(w, `{"error":"city is 1 to 100 characters"}`, http.StatusBadRequest)
		return
	}
	var days []Weather
	for d := 1; d <= 3; d++ {
		wd := weatherOf(city, d)
		wd.Day = time.Now().UTC().AddDate(0, 0, d).Format("2006-01-02")
		days = append(days, wd)
	}
	writeJSON(w, map[string]any{"city": city, "days": days})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
