package kit

import (
	"strings"
	"testing"
)

// TestRuns checks the word-at-a-time scans against a byte at a time, with
// each byte that stops them at every place of texts shorter and longer
// than a word, after plain ASCII and after other UTF-8.
func TestRuns(t *testing.T) {
	stops := []string{`"`, `\`, "\x00", "\x1f", "<", ">", "&", "é", "\xff", "\u2028", " ", "~", "\x7f"}
	for _, lead := range []string{"", "abcdefg", "ünï", strings.Repeat("x", 17)} {
		for n := range 20 {
			for at := range n + 1 {
				for _, stop := range stops {
					s := lead + strings.Repeat("a", at) + stop + strings.Repeat("b", n-at)
					if got, want := plainRun(s), plainRunBytes(s); got != want {
						t.Errorf("plainRun(%q) = %d, want %d", s, got, want)
					}
					gotN, gotASCII := stringRun([]byte(s))
					wantN, wantASCII := stringRunBytes(s)
					if gotN != wantN || gotASCII != wantASCII {
						t.Errorf("stringRun(%q) = %d, %v, want %d, %v", s, gotN, gotASCII, wantN, wantASCII)
					}
				}
			}
		}
	}
}

func FuzzRuns(f *testing.F) {
	f.Add("plain text with \"quotes\" and <tags> & more")
	f.Add("\xe2\x80\xa8 line separator")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := plainRun(s), plainRunBytes(s); got != want {
			t.Errorf("plainRun(%q) = %d, want %d", s, got, want)
		}
		gotN, gotASCII := stringRun([]byte(s))
		if wantN, wantASCII := stringRunBytes(s); gotN != wantN || gotASCII != wantASCII {
			t.Errorf("stringRun(%q) = %d, %v, want %d, %v", s, gotN, gotASCII, wantN, wantASCII)
		}
	})
}

func plainRunBytes(s string) int {
	for i := range len(s) {
		if c := s[i]; c >= 0x80 || c < 0x20 || strings.IndexByte(`"\<>&`, c) >= 0 {
			return i
		}
	}
	return len(s)
}

func stringRunBytes(s string) (int, bool) {
	ascii := true
	for i := range len(s) {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 {
			return i, ascii
		}
		ascii = ascii && c < 0x80
	}
	return len(s), ascii
}
