package redact

import "testing"

func TestUserinfo(t *testing.T) {
	for _, tc := range []struct {
		s            string
		lonePassword bool
		want         string
	}{
		{"mysql://user:pw@tcp(host:3306)/db", false, "mysql://user:***@tcp(host:3306)/db"},
		{"user:pw@tcp(host:3306)/db", false, "user:***@tcp(host:3306)/db"},
		{"mysql://user@tcp(host:3306)/db", false, "mysql://user@tcp(host:3306)/db"},
		{"mysql://user:p@ss@tcp(host)/db", false, "mysql://user:***@tcp(host)/db"},
		{"sqlite:./data/ph.db", false, "sqlite:./data/ph.db"},
		{"redis://secret@host:bad port/0", true, "redis://***@host:bad port/0"},
		{"redis://user:secret@host:bad port/0", true, "redis://user:***@host:bad port/0"},
		{"redis://host:bad port/0", true, "redis://host:bad port/0"},
	} {
		if got := Userinfo(tc.s, "***", tc.lonePassword); got != tc.want {
			t.Errorf("Userinfo(%q, %v) = %q, want %q", tc.s, tc.lonePassword, got, tc.want)
		}
	}
}
