package models

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidateKey checks a storage key for a write: the format rules of
// ValidateKeyFormat, and not a name of the credential families.
func ValidateKey(key string) error {
	if err := ValidateKeyFormat(key); err != nil {
		return err
	}
	if family := CredentialFamily(key); family != "" {
		return Errorf(ErrInvalid, "key %q names a credential (%s family); credentials may not be kept in plugin storage", key, family)
	}
	return nil
}

// ValidateKeyFormat checks the form of a storage key: 1 to 80 characters,
// valid UTF-8, no control characters.
func ValidateKeyFormat(key string) error {
	if key == "" {
		return Errorf(ErrInvalid, "key is empty; a key has 1 to %d characters", MaxKeyLength)
	}
	if !utf8.ValidString(key) {
		return Errorf(ErrInvalid, "key is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(key); n > MaxKeyLength {
		return Errorf(ErrInvalid, "key has %d characters; a key has at most %d", n, MaxKeyLength)
	}
	for i, r := range key {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return Errorf(ErrInvalid, "key %q has a control character at byte %d; keys may not contain control characters", key, i)
		}
	}
	return nil
}

// credentialWords are words that alone denote a credential, by family.
var credentialWords = map[string]string{
	"credential": "credential", "credentials": "credential", "creds": "credential",
	"password": "password", "passwords": "password", "passwd": "password",
	"passphrase": "password", "passphrases": "password",
	"secret": "secret", "secrets": "secret",
	"token": "token", "tokens": "token",
}

// credentialPairs are two-word names that denote a credential.
var credentialPairs = map[[2]string]string{
	{"api", "key"}: "API key", {"api", "keys"}: "API key",
	{"private", "key"}: "private key", {"private", "keys"}: "private key",
	{"access", "key"}: "API key", {"secret", "key"}: "secret",
}

// credentialQualifiers may prefix a credential word inside one written-together
// word: "accesstoken", "refreshtoken", "apikey", "dbpassword".
var credentialQualifiers = []string{
	"access", "refresh", "auth", "bearer", "id", "session", "api", "client",
	"private", "db", "user", "admin", "root", "app", "master", "shared", "oauth",
}

// CredentialFamily returns the credential family a key name denotes (credential,
// password, secret, token, API key, private key), or "" when it denotes none.
//
// The name is split into words at separators, case changes and digits, so
// `apiKey`, `API_KEY`, `refresh-token`, `db_password` and `AccessToken` are all
// caught, while words that merely contain the letters (`tokenizer`, `secretary`,
// `keyboard`) are not.
func CredentialFamily(key string) string {
	words := splitWords(key)
	for i, w := range words {
		if f, ok := credentialWords[w]; ok {
			return f
		}
		if i+1 < len(words) {
			if f, ok := credentialPairs[[2]string{w, words[i+1]}]; ok {
				return f
			}
		}
		if f := joinedCredential(w); f != "" {
			return f
		}
	}
	return ""
}

// joinedCredential recognises qualifier+credential written as one word.
func joinedCredential(w string) string {
	for _, q := range credentialQualifiers {
		rest, ok := strings.CutPrefix(w, q)
		if !ok || rest == "" {
			continue
		}
		if f, ok := credentialWords[rest]; ok {
			return f
		}
		if rest == "key" || rest == "keys" {
			switch q {
			case "api", "access":
				return "API key"
			case "private":
				return "private key"
			}
		}
	}
	return ""
}

// splitWords lower-cases a name and splits it into words at non-letters, at
// lower-to-upper case changes and at the end of an upper-case run (APIKey ->
// api key).
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// IsSafeIdentifier reports whether s is a safe plugin identifier: a lower-case
// letter, then lower-case letters, digits and underscores, at most 64 characters.
// Namespace ids are safe identifiers.
func IsSafeIdentifier(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// IsDottedIdentifier reports whether s is one or more safe identifiers joined by
// dots (plugin and capability ids: `com.example.notes`, `weather.lookup`), at
// most 128 characters.
func IsDottedIdentifier(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !IsSafeIdentifier(part) {
			return false
		}
	}
	return true
}
