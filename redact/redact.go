// Package redact hides passwords in connection strings for messages and logs.
package redact

import "strings"

// Userinfo returns s with the password of the user information before its
// last "@" replaced by mask, keeping a scheme ("name://"), the user name
// before a colon, and everything from the "@" on. A part before the "@"
// without a colon is a user name, kept as it is, unless lonePassword says
// that it is a password (as in Redis's "redis://secret@host"), which mask
// then replaces. A string without "@" is returned as it is.
func Userinfo(s, mask string, lonePassword bool) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	head := s[:at]
	scheme := ""
	if i := strings.Index(head, "://"); i >= 0 {
		scheme, head = head[:i+3], head[i+3:]
	}
	if i := strings.Index(head, ":"); i >= 0 {
		head = head[:i+1] + mask
	} else if lonePassword {
		head = mask
	}
	return scheme + head + s[at:]
}
