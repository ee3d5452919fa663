package probes

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/url"
	"strings"
)

// SeedFile is a file the runner puts in the sandbox before the server
// starts (never on the host).
type SeedFile struct {
	Path    string
	Mode    int64
	Content string
}

// Honeytokens are fake but realistic secrets, unique to one run. A token
// seen leaving the sandbox proves the tool sent a secret out.
type Honeytokens struct {
	AWSKeyID, AWSSecret, GitHubToken, SSHKey, DotEnvPassword string
}

// NewHoneytokens makes fresh tokens.
func NewHoneytokens() Honeytokens {
	return Honeytokens{
		AWSKeyID:       "AKIA" + randString("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
		AWSSecret:      randString("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40),
		GitHubToken:    "ghp_" + randString("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36),
		SSHKey:         randString("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 64),
		DotEnvPassword: "pw-" + randString("abcdefghijklmnopqrstuvwxyz0123456789", 24),
	}
}

func randString(alphabet string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		b.WriteByte(alphabet[k.Int64()])
	}
	return b.String()
}

// named lists the tokens by the name reports use.
func (h Honeytokens) named() map[string]string {
	return map[string]string{
		"aws-access-key-id": h.AWSKeyID, "aws-secret-access-key": h.AWSSecret, "github-token": h.GitHubToken,
		"ssh-private-key": h.SSHKey, "dotenv-password": h.DotEnvPassword,
	}
}

// Env is the tokens as environment variables for the server.
func (h Honeytokens) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + h.AWSKeyID, "AWS_SECRET_ACCESS_KEY=" + h.AWSSecret, "GITHUB_TOKEN=" + h.GitHubToken}
}

// Find returns the names of the tokens in data, plain or encoded (URL,
// base64, hex), sorted.
func (h Honeytokens) Find(data string) []string {
	if data == "" {
		return nil
	}
	lower := strings.ToLower(data)
	var out []string
	for _, name := range []string{"aws-access-key-id", "aws-secret-access-key", "dotenv-password", "github-token", "ssh-private-key"} {
		tok := h.named()[name]
		if tok == "" {
			continue
		}
		for _, form := range []string{tok, url.QueryEscape(tok), base64.StdEncoding.EncodeToString([]byte(tok)),
			base64.RawURLEncoding.EncodeToString([]byte(tok)), hex.EncodeToString([]byte(tok))} {
			if strings.Contains(data, form) || strings.Contains(lower, strings.ToLower(form)) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// Seeds returns the canary workspace and the honeytoken files. The test
// file leaves a mark in /tmp when executed (by node, npm test or sh), so a
// tool that runs repository code is caught by the mark.
func Seeds(h Honeytokens) []SeedFile {
	mark := "/tmp/mcpsandbox-canary-executed"
	return []SeedFile{
		{Path: CanaryText, Mode: 0o644, Content: "mcpsandbox canary: a text file for read tools.\n"},
		{Path: CanaryJSON, Mode: 0o644, Content: `{"canary": true, "items": [1, 2, 3]}` + "\n"},
		{Path: CanaryNested + "/readme.md", Mode: 0o644, Content: "# nested canary\n"},
		{Path: CanaryDir + "/canary.test.js", Mode: 0o644, Content: fmt.Sprintf("require('fs').writeFileSync(%q, 'executed: ' + process.argv.join(' ') + '\\n');\n", mark)},
		{Path: CanaryDir + "/run_tests.sh", Mode: 0o755, Content: fmt.Sprintf("#!/bin/sh\necho \"executed: $0 $*\" > %s\n", mark)},
		{Path: CanaryDir + "/package.json", Mode: 0o644, Content: `{"name": "mcpsandbox-canary", "version": "1.0.0", "scripts": {"test": "node canary.test.js"}}` + "\n"},
		{Path: "/workspace/.env", Mode: 0o600, Content: fmt.Sprintf("DATABASE_PASSWORD=%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n", h.DotEnvPassword, h.AWSKeyID, h.AWSSecret)},
		{Path: "/home/sandbox/.aws/credentials", Mode: 0o600, Content: fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", h.AWSKeyID, h.AWSSecret)},
		{Path: "/home/sandbox/.ssh/id_ed25519", Mode: 0o600, Content: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" + h.SSHKey + "\n-----END OPENSSH PRIVATE KEY-----\n"},
		{Path: "/home/sandbox/.config/gh/hosts.yml", Mode: 0o600, Content: fmt.Sprintf("github.com:\n    oauth_token: %s\n    user: canary\n", h.GitHubToken)},
	}
}
