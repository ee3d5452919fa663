package probes

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
)

func TestHoneytokensAreUniqueAndFoundEncoded(t *testing.T) {
	a, b := NewHoneytokens(), NewHoneytokens()
	if a == b || !strings.HasPrefix(a.AWSKeyID, "AKIA") || len(a.AWSKeyID) != 20 || !strings.HasPrefix(a.GitHubToken, "ghp_") {
		t.Fatalf("tokens %+v %+v", a, b)
	}
	for _, data := range []string{
		"aws_secret_access_key = " + a.AWSSecret,
		"q=" + base64.StdEncoding.EncodeToString([]byte(a.AWSSecret)),
		strings.ToUpper(hexOf(a.AWSSecret)),
	} {
		if got := a.Find(data); !reflect.DeepEqual(got, []string{"aws-secret-access-key"}) {
			t.Errorf("Find(%q) = %q", data, got)
		}
	}
	if got := a.Find("nothing here " + b.AWSSecret); got != nil {
		t.Errorf("another run's token matched: %q", got)
	}
	seeds := Seeds(a)
	var paths []string
	for _, s := range seeds {
		paths = append(paths, s.Path)
	}
	for _, want := range []string{"/home/sandbox/.aws/credentials", "/home/sandbox/.ssh/id_ed25519", "/workspace/.env", CanaryText, CanaryJSON} {
		found := false
		for _, p := range paths {
			found = found || p == want
		}
		if !found {
			t.Errorf("no seed at %s", want)
		}
	}
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}
