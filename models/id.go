package models

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// ID prefixes say what an id names.
const (
	PrefixUser         = "usr_"
	PrefixInstallation = "instl_"
	PrefixInstance     = "inst_"
	PrefixToken        = "tok_"
	PrefixNotification = "ntf_"
	PrefixCredential   = "cred_"
	PrefixEntity       = "ent_"
)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID returns prefix followed by 128 random bits in lower-case base32.
func NewID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + strings.ToLower(idEncoding.EncodeToString(b))
}

// SessionCookie is the name of the web host's sign-in cookie.
const SessionCookie = "pluginhost_session"
