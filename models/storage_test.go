package models_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"pluginhost/models"
)

// FormatTime and AppendTime write what time.Time.Format writes with
// TimeLayout in UTC, for any instant and zone.
func TestFormatTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 1_000, time.UTC),
		time.Date(2026, 1, 1, 2, 0, 0, 500, east), // the day before in UTC
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), // past four digits
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
		time.UnixMicro(1_764_460_800_123_456),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		times = append(times, time.Unix(r.Int64N(400*365*86400)-100*365*86400, r.Int64N(1e9)).In(east))
	}
	for _, tt := range times {
		want := tt.UTC().Format(models.TimeLayout)
		if got := models.FormatTime(tt); got != want {
			t.Errorf("FormatTime(%v) = %s, want %s", tt, got, want)
		}
		if got := string(models.AppendTime([]byte("x"), tt)); got != "x"+want {
			t.Errorf("AppendTime(x, %v) = %s, want x%s", tt, got, want)
		}
	}
}

func BenchmarkAppendTime(b *testing.B) {
	buf := make([]byte, 0, 64)
	now := time.Now()
	for b.Loop() {
		buf = models.AppendTime(buf[:0], now)
	}
}
