package models

import (
	"strconv"
	"strings"
)

// CompareVersions orders two semantic versions (MAJOR.MINOR.PATCH with an
// optional -prerelease) by semver precedence: -1, 0 or +1. Versions are
// assumed valid (the validator checks them).
func CompareVersions(a, b string) int {
	ac, apre, _ := strings.Cut(a, "-")
	bc, bpre, _ := strings.Cut(b, "-")
	if c := compareDotted(ac, bc, true); c != 0 {
		return c
	}
	switch {
	case apre == "" && bpre == "":
		return 0
	case apre == "":
		return 1 // a release is newer than its pre-releases
	case bpre == "":
		return -1
	}
	return compareDotted(apre, bpre, false)
}

func compareDotted(a, b string, numeric bool) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		an, aerr := strconv.ParseUint(as[i], 10, 64)
		bn, berr := strconv.ParseUint(bs[i], 10, 64)
		switch {
		case aerr == nil && berr == nil:
			if an != bn {
				if an < bn {
					return -1
				}
				return 1
			}
		case aerr == nil: // numeric identifiers sort before others
			return -1
		case berr == nil:
			return 1
		default:
			if c := strings.Compare(as[i], bs[i]); c != 0 {
				return c
			}
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

// HostVersion is the host's own version, a semantic version compared with a
// package's min_host_version. Release builds set it:
//
//	go build -ldflags "-X pluginhost/models.HostVersion=1.8.1" .
var HostVersion = "1.8.0"

// UISchema is the ui_schema of the UI configs the host renders.
const UISchema = 2

// IsDevelopmentVersion reports whether a version is one pluginhost dev
// gives the packages it installs: VERSION-dev.N, or VERSION-PRE.dev.N when
// the manifest's version has a pre-release already. The host makes the
// modules of such a package ready to run at once, in its interpreter, and
// compiles them once the author leaves them unchanged for a while.
func IsDevelopmentVersion(v string) bool {
	_, pre, ok := strings.Cut(v, "-")
	return ok && (strings.HasPrefix(pre, "dev.") || strings.Contains(pre, ".dev."))
}
