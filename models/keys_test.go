package models

import "testing"

func TestCredentialFamily(t *testing.T) {
	tests := []struct {
		key, family string
	}{
		{"password", "password"},
		{"db_password", "password"},
		{"DB-PASSWORD", "password"},
		{"userPassword", "password"},
		{"passwd", "password"},
		{"dbpassword", "password"},
		{"credentials", "credential"},
		{"aws.credentials", "credential"},
		{"secret", "secret"},
		{"client_secret", "secret"},
		{"clientSecret", "secret"},
		{"token", "token"},
		{"access_token", "token"},
		{"accessToken", "token"},
		{"AccessToken", "token"},
		{"accesstoken", "token"},
		{"refresh-token", "token"},
		{"refreshToken", "token"},
		{"REFRESH_TOKEN", "token"},
		{"github token", "token"},
		{"token2", "token"},
		{"api_key", "API key"},
		{"apiKey", "API key"},
		{"APIKey", "API key"},
		{"API-KEY", "API key"},
		{"apikey", "API key"},
		{"x-api-key", "API key"},
		{"private_key", "private key"},
		{"privateKey", "private key"},
		{"privatekey", "private key"},
		{"ssh.private.key", "private key"},
		// case changes that are not camel case
		{"pAsSwOrD", "password"},
		{"PaSsWoRd", "password"},
		{"PassWord", "password"},
		{"ToKeN", "token"},
		{"aPiKeY", "API key"},
		{"my-sEcReT", "secret"},
		{"PaSsWoRdLeSs", ""},
		{"ToKeNiZeR", ""},
		// ordinary words that merely contain the letters
		{"tokenizer", ""},
		{"tokenized_text", ""},
		{"secretary", ""},
		{"secretariat_name", ""},
		{"keyboard", ""},
		{"key", ""},
		{"primary_key", ""},
		{"passwordless_login_enabled", ""},
		{"notes", ""},
		{"favorite_city", ""},
		{"monkey", ""},
		{"apiary", ""},
	}
	for _, tt := range tests {
		if got := CredentialFamily(tt.key); got != tt.family {
			t.Errorf("CredentialFamily(%q) = %q, want %q", tt.key, got, tt.family)
		}
	}
}

func TestValidateKey(t *testing.T) {
	long80 := ""
	for range 80 {
		long80 += "é"
	}
	tests := []struct {
		name, key string
		ok        bool
	}{
		{"one character", "a", true},
		{"80 characters (multi-byte)", long80, true},
		{"81 characters", long80 + "a", false},
		{"empty", "", false},
		{"newline", "a\nb", false},
		{"tab", "a\tb", false},
		{"NUL", "a\x00b", false},
		{"DEL", "a\x7fb", false},
		{"line separator", "a\u2028b", false},
		{"invalid UTF-8", "a\xffb", false},
		{"spaces and punctuation", "my note #1 (draft)", true},
		{"credential", "api_key", false},
	}
	for _, tt := range tests {
		err := ValidateKey(tt.key)
		if tt.ok && err != nil {
			t.Errorf("%s: unexpected error %v", tt.name, err)
		}
		if !tt.ok && ErrorCode(err) != ErrInvalid {
			t.Errorf("%s: got %v, want %s", tt.name, err, ErrInvalid)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	for _, s := range []string{"a", "notes", "saved_entities", "n2"} {
		if !IsSafeIdentifier(s) {
			t.Errorf("IsSafeIdentifier(%q) = false", s)
		}
	}
	for _, s := range []string{"", "Notes", "2n", "_a", "a-b", "a.b", "a b", string(make([]byte, 65))} {
		if IsSafeIdentifier(s) {
			t.Errorf("IsSafeIdentifier(%q) = true", s)
		}
	}
	for _, s := range []string{"com.example.notes", "weather.lookup", "notes"} {
		if !IsDottedIdentifier(s) {
			t.Errorf("IsDottedIdentifier(%q) = false", s)
		}
	}
	for _, s := range []string{"com..notes", ".a", "a.", "A.b"} {
		if IsDottedIdentifier(s) {
			t.Errorf("IsDottedIdentifier(%q) = true", s)
		}
	}
}

// TestKeyLookAlikes: look-alike spellings of credential names are refused as
// credentials, and invisible format characters as malformed keys, both with
// PLUGIN_STORAGE_INVALID; ordinary words that start with a credential word
// are kept. (The full corpus, shared with the preview's JavaScript, is
// preview/testdata/keys-conformance.json.)
func TestKeyLookAlikes(t *testing.T) {
	tests := []struct {
		key, family string
		malformed   bool
	}{
		{"mypassword", "password", false},
		{"secretkey", "secret", false},
		{"githubtoken", "token", false},
		{"csrftoken", "token", false},
		{"ｐａｓｓｗｏｒｄ", "password", false},
		{"pass\u200bword", "password", true},
		{"pass\u00adword", "password", true},
		{"𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝", "password", false},
		{"paſſword", "password", false},
		{"pass\ufe0fword", "password", false},
		{"\u202enote", "", true},
		{"note\u2066x\u2069", "", true},
		{"passage", "", false},
		{"tokenizer", "", false},
		{"passwordless", "", false},
	}
	for _, tt := range tests {
		if got := CredentialFamily(tt.key); got != tt.family {
			t.Errorf("CredentialFamily(%q) = %q, want %q", tt.key, got, tt.family)
		}
		err := ValidateKey(tt.key)
		if tt.family == "" && !tt.malformed {
			if err != nil {
				t.Errorf("ValidateKey(%q) = %v, want accepted", tt.key, err)
			}
			continue
		}
		if ErrorCode(err) != ErrInvalid {
			t.Errorf("ValidateKey(%q) = %v, want %s", tt.key, err, ErrInvalid)
		}
		if fmtErr := ValidateKeyFormat(tt.key); (fmtErr != nil) != tt.malformed {
			t.Errorf("ValidateKeyFormat(%q) = %v, malformed want %v", tt.key, fmtErr, tt.malformed)
		}
	}
}

// BenchmarkCredentialFamily measures the credential check of every write's
// key, for a plain ASCII key and a look-alike one.
func BenchmarkCredentialFamily(b *testing.B) {
	for _, key := range []string{"favorite_city_name", "ｐａｓｓｗｏｒｄ\u200b_hint"} {
		b.Run(key, func(b *testing.B) {
			for b.Loop() {
				CredentialFamily(key)
			}
		})
	}
}

func TestCredentialPairsJoined(t *testing.T) {
	for _, p := range credentialPairs {
		if p.joined != p.first+p.second {
			t.Errorf("pair %s %s is written together as %q", p.first, p.second, p.joined)
		}
	}
}
