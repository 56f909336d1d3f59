package models

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0},
		{"1.0.0", "1.0.1", -1},
		{"1.10.0", "1.9.0", 1},
		{"2.0.0", "10.0.0", -1},
		{"1.0.0-alpha", "1.0.0", -1},
		{"1.0.0", "1.0.0-rc.1", 1},
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.1", "1.0.0-alpha.beta", -1},
		{"1.0.0-beta.2", "1.0.0-beta.11", -1},
		{"1.0.0-rc.1", "1.0.0-beta.11", 1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestIsDevelopmentVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"1.0.0-dev.1": true, "1.0.0-beta.1.dev.3": true, "0.1.0-dev.12": true,
		"1.0.0": false, "1.0.0-beta.1": false, "1.0.0-devel": false, "1.0.0-develop.1": false, "1.0.0-rc.dev": false,
	} {
		if got := IsDevelopmentVersion(v); got != want {
			t.Errorf("IsDevelopmentVersion(%q) = %v, want %v", v, got, want)
		}
	}
}
