package models

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
// valid UTF-8, no control characters and no format characters (Unicode
// category Cf, which holds the bidirectional controls, zero-width spaces and
// joiners, the soft hyphen and the byte order mark): an invisible character
// makes two different keys look the same, so a key with one is malformed.
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
		if unicode.Is(unicode.Cf, r) {
			return Errorf(ErrInvalid, "key %q has an invisible format or bidirectional control character (U+%04X) at byte %d; keys may not contain them", key, r, i)
		}
	}
	return nil
}

// credentialWords are words that alone denote a credential, by family. The
// order is the order a joined word's ending is tried in (see joinedCredential).
var credentialWords = []struct{ word, family string }{
	{"credentials", "credential"}, {"credential", "credential"}, {"creds", "credential"},
	{"passwords", "password"}, {"password", "password"}, {"passwd", "password"},
	{"passphrases", "password"}, {"passphrase", "password"},
	{"secrets", "secret"}, {"secret", "secret"},
	{"tokens", "token"}, {"token", "token"},
}

// credentialPairs are two-word names that denote a credential, also caught
// written together ("apikey", "githubsecretkey").
var credentialPairs = []struct{ first, second, joined, family string }{
	{"api", "key", "apikey", "API key"}, {"api", "keys", "apikeys", "API key"},
	{"private", "key", "privatekey", "private key"}, {"private", "keys", "privatekeys", "private key"},
	{"access", "key", "accesskey", "API key"}, {"access", "keys", "accesskeys", "API key"},
	{"secret", "key", "secretkey", "secret"}, {"secret", "keys", "secretkeys", "secret"},
}

// CredentialFamily returns the credential family a key name denotes (credential,
// password, secret, token, API key, private key), or "" when it denotes none.
// The preview's inspector (preview/assets/core.js) applies the same rule to
// redact; testdata/keys-conformance.json in package preview holds the cases
// both must pass.
//
// The name is first normalised, so that look-alike spellings name the same
// words: NFKC (full-width ｐａｓｓｗｏｒｄ, mathematical bold 𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝, the long
// s of paſſword and ligatures become plain letters), then every default
// ignorable code point is dropped (zero-width spaces and joiners, the soft
// hyphen, bidi controls, variation selectors, fillers). It is then split into
// words at non-letters, case changes and digits, and each word is case folded
// (lower case, with ß as ss). So `apiKey`, `API_KEY`, `refresh-token`,
// `db_password` and `AccessToken` are caught. Each run of letters is also
// taken whole, case folded, as one word: case changes that are not camel
// case (`pAsSwOrD`, `PassWord`, `ToKeN`) split nothing.
//
// A word is a credential word (token, secret, password, ...) or a pair
// (api key, private key, ...), or a joined word that ends in one: `mypassword`,
// `githubtoken`, `csrftoken`, `secretkey`, `dbpassword`. A joined word names
// what its last part names, so a credential word at its start or in its middle
// is not caught: `tokenizer`, `secretary`, `passwordless`, `passage`,
// `keyboard` and `monkey` are ordinary keys (telling `tokenexpiry` from
// `tokenizer` would need a dictionary). `pass` and `key` alone are not
// credential words.
func CredentialFamily(key string) string {
	name := normalizeName(key)
	for _, run := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) }) {
		w := foldWord([]rune(run))
		for _, c := range credentialWords {
			if w == c.word {
				return c.family
			}
		}
		if f := joinedCredential(w); f != "" {
			return f
		}
	}
	words := splitWords(name)
	for i, w := range words {
		for _, c := range credentialWords {
			if w == c.word {
				return c.family
			}
		}
		if i+1 < len(words) {
			for _, p := range credentialPairs {
				if w == p.first && words[i+1] == p.second {
					return p.family
				}
			}
		}
		if f := joinedCredential(w); f != "" {
			return f
		}
	}
	return ""
}

// joinedCredential recognises a word that ends in a credential word or pair
// written together: "mypassword", "accesstoken", "githubapikey".
func joinedCredential(w string) string {
	for _, p := range credentialPairs {
		if strings.HasSuffix(w, p.joined) {
			return p.family
		}
	}
	for _, c := range credentialWords {
		if len(w) > len(c.word) && strings.HasSuffix(w, c.word) {
			return c.family
		}
	}
	return ""
}

// normalizeName returns a name as credential words are looked for in it: in
// NFKC, without default ignorable code points.
func normalizeName(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return s // already in NFKC, and no ASCII character is ignorable
	}
	s = norm.NFKC.String(s)
	return strings.Map(func(r rune) rune {
		if isDefaultIgnorable(r) {
			return -1
		}
		return r
	}, s)
}

// isDefaultIgnorable reports whether r has the Unicode property
// Default_Ignorable_Code_Point, derived as the standard derives it:
// Other_Default_Ignorable_Code_Point, format characters (Cf) and variation
// selectors, less white space, the interlinear annotation characters, the
// Egyptian hieroglyph format controls and the prepended concatenation marks.
func isDefaultIgnorable(r rune) bool {
	switch {
	case unicode.Is(unicode.White_Space, r), unicode.Is(unicode.Prepended_Concatenation_Mark, r),
		r >= 0xFFF9 && r <= 0xFFFB, r >= 0x13430 && r <= 0x13440:
		return false
	}
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Cf)
}

// foldWord case folds a word: each character's lower case, and ß as ss (as
// full case folding does; its other foldings yield no ASCII letter once a
// name is in NFKC).
func foldWord(w []rune) string {
	var b strings.Builder
	for _, r := range w {
		r = unicode.ToLower(r)
		if r == 'ß' {
			b.WriteString("ss")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// splitWords splits a name into case-folded words at non-letters, at
// lower-to-upper case changes and at the end of an upper-case run (APIKey ->
// api key).
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, foldWord(cur))
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
