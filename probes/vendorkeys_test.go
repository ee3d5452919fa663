package probes

import (
	"reflect"
	"strings"
	"testing"
)

// TestVendorKeys: one subtest per format of the table: the bait's token
// of the format has its shape (what a server's format check looks for),
// a variable named for the vendor gets it, a leak of it is found, and a
// generic secret or another vendor's token is not of its shape.
func TestVendorKeys(t *testing.T) {
	if len(VendorKeys) < 10 {
		t.Fatalf("%d formats, want at least 10", len(VendorKeys))
	}
	tokens := NewBait(7).Tokens
	names := map[string]string{
		"anthropic-api-key": "ANTHROPIC_API_KEY", "openai-api-key": "OPENAI_API_KEY", "github-token": "GITHUB_PERSONAL_ACCESS_TOKEN",
		"gitlab-token": "GITLAB_TOKEN", "slack-bot-token": "SLACK_BOT_TOKEN", "stripe-secret-key": "STRIPE_SECRET_KEY",
		"google-api-key": "GOOGLE_API_KEY", "npm-token": "NPM_TOKEN", "huggingface-token": "HF_TOKEN",
		"sendgrid-api-key": "SENDGRID_API_KEY", "tavily-api-key": "TAVILY_API_KEY", "perplexity-api-key": "PERPLEXITY_API_KEY",
		"groq-api-key": "GROQ_API_KEY", "notion-token": "NOTION_TOKEN", "linear-api-key": "LINEAR_API_KEY", "brave-api-key": "BRAVE_API_KEY",
	}
	for _, v := range VendorKeys {
		t.Run(v.Role, func(t *testing.T) {
			tok := tokens.Vendor[v.Role]
			if !v.Valid(tok) || !strings.HasPrefix(tok, v.Prefix) {
				t.Fatalf("%q is not of its own shape", tok)
			}
			name, ok := names[v.Role]
			if !ok {
				t.Fatalf("no variable name in the test for %s", v.Role)
			}
			if got, ok := VendorKeyFor(name); !ok || got.Role != v.Role || tokens.VendorToken(name) != tok {
				t.Errorf("%s chose %q", name, got.Role)
			}
			if got := tokens.Find("Authorization: Bearer " + tok); !reflect.DeepEqual(got, []string{v.Role}) {
				t.Errorf("a leak of it: Find = %q", got)
			}
			if v.Valid(tokens.DotEnvPassword) {
				t.Errorf("the generic secret passes its check")
			}
			for _, other := range VendorKeys {
				if other.Role != v.Role && v.Valid(tokens.Vendor[other.Role]) {
					t.Errorf("%s's token passes its check", other.Role)
				}
			}
			if v.Checksum != nil {
				bad := []byte(tok)
				bad[len(v.Prefix)] ^= 1 // another character, the checksum kept
				if v.Valid(string(bad)) {
					t.Errorf("a token whose checksum does not match passes")
				}
			}
		})
	}
	if tokens.GitHubToken != tokens.Vendor["github-token"] {
		t.Error("the GitHub token is not the vendor table's")
	}
	if _, ok := VendorKeyFor("DB_PASSWORD"); ok {
		t.Error("a name with no vendor chose one")
	}
	// The same seed gives the same tokens.
	if again := NewBait(7).Tokens; !reflect.DeepEqual(again, tokens) {
		t.Error("the tokens of one seed differ")
	}
}
