package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestInstrumentLabelsRoutePattern(t *testing.T) {
	m := NewMetrics()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/{instance_id}/{extension}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	h := m.Instrument(mux)
	for _, path := range []string{"/app/i1/main", "/app/i2/main", "/nowhere"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	for _, tc := range []struct {
		route, status string
		want          float64
	}{
		{"GET /app/{instance_id}/{extension}", "418", 2},
		{"other", "404", 1},
	} {
		var got dto.Metric
		if err := m.requests.WithLabelValues(tc.route, tc.status).Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != tc.want {
			t.Errorf("requests{route=%q,status=%q} = %v, want %v", tc.route, tc.status, got.GetCounter().GetValue(), tc.want)
		}
	}
}
