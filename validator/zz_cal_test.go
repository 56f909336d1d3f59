package validator

import (
	"encoding/json"
	"os"
	"testing"
)

func BenchmarkZZUnmarshal(b *testing.B) {
	data, _ := os.ReadFile(atLimitsFile)
	for b.Loop() {
		var v any
		json.Unmarshal(data, &v)
	}
}

func BenchmarkZZDecode(b *testing.B) {
	data, _ := os.ReadFile(atLimitsFile)
	b.ReportAllocs()
	for b.Loop() {
		decode(data, &checker{})
	}
}
