package validator

import (
	"sort"
	"strconv"
	"strings"
)

// versionAtLeast reports whether the semantic version v is at least min. An
// empty or malformed v is below every version; a pre-release is below its
// release (1.7.12-beta < 1.7.12).
func versionAtLeast(v, min string) bool {
	a, okA := parseVersion(v)
	b, okB := parseVersion(min)
	if !okA || !okB {
		return false
	}
	for i := 0; i < 3; i++ {
		if a.n[i] != b.n[i] {
			return a.n[i] > b.n[i]
		}
	}
	if a.pre == "" || b.pre == "" {
		return a.pre == "" // a release is above its pre-releases
	}
	return a.pre >= b.pre
}

type version struct {
	n   [3]int
	pre string
}

func parseVersion(s string) (version, bool) {
	var v version
	core, pre, _ := strings.Cut(s, "-")
	v.pre = pre
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v.n[i] = n
	}
	return v, true
}

func sortStrings(s []string) { sort.Strings(s) }
