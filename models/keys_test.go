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
