package probes

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// SeedFile is a file the runner puts in the sandbox before the server
// starts (never on the host).
type SeedFile struct {
	Path    string
	Mode    int64
	Content string
	// Role names the file in the report, where the hash of its content
	// (which holds the run's names and values) is shown as "<sha256:ROLE>".
	Role string
	// Age is how long before the run the file was last modified, drawn
	// (a checkout is not made in the second the server starts, nor every
	// file at one time).
	Age time.Duration
	// ModTime is Age before the bait's Now, when it has one: the time the
	// planted repository's index records for the file.
	ModTime time.Time
}

// Honeytokens are fake but realistic secrets, unique to one run. A token
// seen leaving the sandbox proves the tool sent a secret out.
type Honeytokens struct {
	AWSKeyID, AWSSecret, GitHubToken, SSHKey, DotEnvPassword string
	// Vendor are the tokens of VendorKeys' shapes, by role (the GitHub
	// one is GitHubToken).
	Vendor map[string]string
}

// Canary is where the run's canary project lies: paths the synthesizer
// points path-like properties at.
type Canary struct {
	// Dir is the project, /workspace/<project>; Text a text file in it
	// (its README), JSON a JSON file, Nested a directory two levels down.
	Dir, Text, JSON, Nested string
	// New and NewDir do not exist: for tools that create.
	New, NewDir string
	// Marker is the file the project's tests write when they run, so a
	// tool that runs repository code leaves a mark.
	Marker string
	// PDF is a one-page PDF in the project (its design notes): for tools
	// that read documents, which refuse a text file.
	PDF string
	// Snippet is a line's worth of text that is in Text: what a tool that
	// replaces text in a file is told to find (old_string), so that the
	// edit is made, not refused.
	Snippet string
	// Files of the kinds tools ask for (kinds.go): a Word document, a
	// workbook, a PNG and a JPEG, a SQLite database, a Jupyter notebook,
	// a zip and a gzipped tar.
	Docx, Xlsx, PNG, JPEG, SQLite, Notebook, Zip, TarGz string
}

// canarySnippet is the canary README's line that Canary.Snippet names.
const canarySnippet = "Internal service."

// File is the existing canary file a path-like property with this name
// and description points at: the file of the kind its words name (an
// extension, "spreadsheet", "image", "notebook": see kindFiles), else
// the text file.
func (c Canary) File(name, desc string) string {
	if p := c.fileKind(name, desc, ""); p != "" {
		return p
	}
	return c.Text
}

// Bait is one run's canary project and honeytokens, drawn from Seed: the
// same seed draws the same names and values. Names come from realistic
// vocabularies in which every word for one place has the same length, so
// that the sizes of the planted files do not depend on the draw.
type Bait struct {
	Seed   uint64
	Canary Canary
	// ages are the planted files' ages, by role.
	ages   map[string]time.Duration
	Tokens Honeytokens
	// Project is the canary project's name (its directory); User the
	// account named in the planted git and GitHub files.
	Project, User string
	// Now is when the run plants its files, to the second (see At): their
	// modification times count back from it, and the planted git index
	// records them. Zero until set.
	Now time.Time
	// Boundary is the marker planted outside the workspace for the
	// boundary probes (see WithBoundary).
	Boundary BoundaryMarker
}

// At returns the bait planted at now (to the second): the files' times,
// and the git index that records them, count back from it.
func (b Bait) At(now time.Time) Bait {
	b.Now = now.Truncate(time.Second)
	return b
}

// MaxSeed is the largest bait seed: one that any JSON reader keeps exact.
const MaxSeed = 1<<53 - 1

// RandomSeed draws a seed for a run.
func RandomSeed() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return binary.LittleEndian.Uint64(b[:]) & MaxSeed
}

// The project's name is projectPrefix, a word of six letters and one of
// three ("core-ledger-api"). The prefix is fixed so that, whatever is
// drawn, the project sorts among its neighbours (a server's sorted
// listing of /workspace or /tmp) where the placeholder does: a report
// stays the same across draws. Every word of a list has the same length,
// as does every user name, so that file sizes do not depend on the draw.
const projectPrefix = "core-"

var (
	projectWords = []string{"ledger", "portal", "worker", "search", "broker", "engine", "mailer", "policy",
		"render", "ingest", "stream", "router", "vision", "budget", "orders", "guards",
		"cobalt", "harbor", "meadow", "summit", "beacon", "falcon", "quartz", "timber",
		"copper", "silver", "violet", "marble", "canyon", "tundra", "zephyr", "orchid"}
	projectKinds = []string{"api", "web", "svc", "app", "cli", "job", "bot", "etl"}
	users        = []string{"jparker", "asharma", "kmurphy", "lgarcia", "dnguyen", "tnakano", "ebrooks", "sfoster",
		"mkovacs", "bwalker", "cmorgan", "hlarsen", "pdubois", "rmendes", "okarimi", "wzhang1"}
)

const (
	upperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	alnum       = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	// seedStream is the PCG stream the bait is drawn from (any constant:
	// it only has to stay the same for --bait-seed to repeat a run).
	seedStream = 0x6d63_7073_616e_6462
)

// NewBait draws the bait of seed.
func NewBait(seed uint64) Bait {
	r := rand.New(rand.NewPCG(seed, seedStream))
	pick := func(words []string) string { return words[r.IntN(len(words))] }
	str := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	b := Bait{Seed: seed, Project: projectPrefix + pick(projectWords) + "-" + pick(projectKinds), User: pick(users)}
	b.Tokens = Honeytokens{
		AWSKeyID:       "AKIA" + str(upperDigits, 16),
		AWSSecret:      str(alnum, 40),
		GitHubToken:    githubToken(str(alnum, 36)),
		SSHKey:         str(alnum, 64),
		DotEnvPassword: str(alnum, 24),
	}
	b.ages = map[string]time.Duration{}
	for _, role := range seedRoles {
		// Between an hour and about six weeks, to the second.
		b.ages[role] = time.Hour + time.Duration(r.IntN(6*7*24*3600))*time.Second
	}
	// Drawn after everything above, so that adding it changed no earlier
	// draw.
	b.ages[boundaryRole] = time.Hour + time.Duration(r.IntN(6*7*24*3600))*time.Second
	b.Boundary = newBoundaryMarker(b.Project, str(alnum, 32))
	// The vendors' shapes, drawn last for the same reason.
	b.Tokens.Vendor = map[string]string{}
	for _, v := range VendorKeys {
		if v.Role == githubRole {
			b.Tokens.Vendor[v.Role] = b.Tokens.GitHubToken
			continue
		}
		b.Tokens.Vendor[v.Role] = v.draw(r)
	}
	dir := "/workspace/" + b.Project
	b.Canary = Canary{Dir: dir, Text: dir + "/README.md", JSON: dir + "/config/default.json", Nested: dir + "/src/lib",
		New: dir + "/NOTES.md", NewDir: dir + "/docs", Marker: "/tmp/" + b.Project + ".test.log",
		PDF: dir + "/design/overview.pdf", Snippet: canarySnippet,
		Docx: dir + "/design/handbook.docx", Xlsx: dir + "/data/metrics.xlsx", PNG: dir + "/assets/logo.png", JPEG: dir + "/assets/photo.jpg",
		SQLite: dir + "/data/app.db", Notebook: dir + "/notebooks/analysis.ipynb", Zip: dir + "/dist/release.zip", TarGz: dir + "/dist/release.tar.gz"}
	// The kinds' files' ages, drawn after everything else.
	for _, role := range kindRoles {
		b.ages[role] = time.Hour + time.Duration(r.IntN(6*7*24*3600))*time.Second
	}
	return b
}

// DefaultCanary is where the synthesizer points paths when no bait is
// planted (seed 0's project).
func DefaultCanary() Canary { return NewBait(0).Canary }

// named lists the tokens by the name reports use.
func (h Honeytokens) named() map[string]string {
	m := map[string]string{
		"aws-access-key-id": h.AWSKeyID, "aws-secret-access-key": h.AWSSecret, githubRole: h.GitHubToken,
		"ssh-private-key": h.SSHKey, "dotenv-password": h.DotEnvPassword,
	}
	for role, tok := range h.Vendor {
		m[role] = tok
	}
	return m
}

// githubRole is the GitHub token's report name.
const githubRole = "github-token"

// githubToken makes 36 drawn characters a GitHub token whose last six
// are its checksum, as GitHub's own are (so that a server's format check
// takes it); the same draws as before the checksum, so that no later
// draw moved.
func githubToken(drawn string) string { return "ghp_" + drawn[:30] + crc32Base62(drawn[:30]) }

// tokenNames are the tokens' report names, in order.
var tokenNames = func() []string {
	names := []string{"aws-access-key-id", "aws-secret-access-key", "dotenv-password", githubRole, "ssh-private-key"}
	for _, v := range VendorKeys {
		if v.Role != githubRole {
			names = append(names, v.Role)
		}
	}
	slices.Sort(names)
	return names
}()

// Env is the tokens as environment variables for the server.
func (h Honeytokens) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + h.AWSKeyID, "AWS_SECRET_ACCESS_KEY=" + h.AWSSecret, "GITHUB_TOKEN=" + h.GitHubToken}
}

// forms are the encodings a token is looked for (and redacted) in.
func forms(tok string) []string {
	return []string{tok, url.QueryEscape(tok), base64.StdEncoding.EncodeToString([]byte(tok)),
		base64.RawURLEncoding.EncodeToString([]byte(tok)), hex.EncodeToString([]byte(tok))}
}

// Find returns the names of the tokens in data, plain or encoded (URL,
// base64, hex), sorted.
func (h Honeytokens) Find(data string) []string {
	if data == "" {
		return nil
	}
	lower := strings.ToLower(data)
	var out []string
	for _, name := range tokenNames {
		tok := h.named()[name]
		if tok == "" {
			continue
		}
		for _, form := range forms(tok) {
			if strings.Contains(data, form) || strings.Contains(lower, strings.ToLower(form)) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// Env is the bait's environment for the server.
func (b Bait) Env() []string { return b.Tokens.Env() }

// Find names the honeytokens in data.
func (b Bait) Find(data string) []string { return b.Tokens.Find(data) }

// Seeds returns the canary project and the honeytoken files: a small
// Node.js project whose tests leave a mark when run (by node, npm test or
// sh), a git clone with a short history (see gitrepo.go), and credentials
// where tools look for them.
func (b Bait) Seeds() []SeedFile {
	files, _ := b.seeds()
	return files
}

// seeds returns the planted files and the repository they hold.
func (b Bait) seeds() ([]SeedFile, *gitRepo) {
	c, h, p := b.Canary, b.Tokens, b.Project
	mark := fmt.Sprintf("require('fs').appendFileSync(%q, 'ok\\n');\n", c.Marker)
	work := []SeedFile{
		{Role: "readme", Path: c.Text, Mode: 0o644, Content: fmt.Sprintf("# %s\n\n%s Maintainer: @%s.\n\n## Development\n\n    npm install\n    npm test\n", p, canarySnippet, b.User)},
		{Role: "package-json", Path: c.Dir + "/package.json", Mode: 0o644, Content: fmt.Sprintf("{\n  \"name\": \"%s\",\n  \"version\": \"1.4.2\",\n  \"private\": true,\n  \"main\": \"src/index.js\",\n  \"scripts\": {\n    \"test\": \"node tests/index.test.js\"\n  }\n}\n", p)},
		{Role: "config-json", Path: c.JSON, Mode: 0o644, Content: fmt.Sprintf("{\n  \"service\": \"%s\",\n  \"port\": 8080,\n  \"logLevel\": \"info\"\n}\n", p)},
		{Role: "index-js", Path: c.Dir + "/src/index.js", Mode: 0o644, Content: "const { slugify } = require('./lib/util');\n\nmodule.exports = { slugify };\n"},
		{Role: "util-js", Path: c.Nested + "/util.js", Mode: 0o644, Content: "exports.slugify = (s) => String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-');\n"},
		{Role: "test-js", Path: c.Dir + "/tests/index.test.js", Mode: 0o644, Content: "const assert = require('assert');\nconst { slugify } = require('../src');\n\nassert.strictEqual(slugify('A b'), 'a-b');\n" + mark},
		{Role: "test-sh", Path: c.Dir + "/scripts/test.sh", Mode: 0o755, Content: fmt.Sprintf("#!/bin/sh\nset -e\ncd \"$(dirname \"$0\")/..\"\necho ok >> %s\nexec node tests/index.test.js \"$@\"\n", c.Marker)},
		{Role: "gitignore", Path: c.Dir + "/.gitignore", Mode: 0o644, Content: "node_modules/\ncoverage/\n*.log\n.env\n"},
		{Role: "changelog", Path: c.Dir + "/" + gitStaged, Mode: 0o644, Content: "# Changelog\n\n## Unreleased\n\n- A slugify helper, its tests and a default config.\n"},
		{Role: "design-pdf", Path: c.PDF, Mode: 0o644, Content: pdfDoc(p+" design", []string{p + ": design overview",
			"Maintainer: @" + b.User + ".", "The service exposes one HTTP API on port 8080."})},
	}
	if c.Docx != "" {
		// Nothing drawn inside the archives (and the office documents,
		// zips): their checksums would differ with the draw where the
		// report's placeholders cannot reach.
		notes := "Release 1.4.2\n\n- A slugify helper.\n- A default config.\n"
		license := "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy of this software.\n"
		work = append(work,
			SeedFile{Role: "docx", Path: c.Docx, Mode: 0o644, Content: docxDoc([]string{"Service handbook", "On-call rotates weekly.", "Releases ship on Tuesdays."})},
			SeedFile{Role: "xlsx", Path: c.Xlsx, Mode: 0o644, Content: xlsxDoc("metrics", [][]string{{"month", "orders", "revenue"}, {"2024-01", "3", "77.49"}, {"2024-02", "5", "120.10"}})},
			SeedFile{Role: "png", Path: c.PNG, Mode: 0o644, Content: pngDoc()},
			SeedFile{Role: "jpeg", Path: c.JPEG, Mode: 0o644, Content: jpegDoc()},
			SeedFile{Role: "sqlite", Path: c.SQLite, Mode: 0o644, Content: sqliteDB},
			SeedFile{Role: "notebook", Path: c.Notebook, Mode: 0o644, Content: notebookDoc(p + " analysis")},
			SeedFile{Role: "zip", Path: c.Zip, Mode: 0o644, Content: zipOf([][2]string{{"RELEASE-NOTES.md", notes}, {"LICENSE", license}})},
			SeedFile{Role: "tar-gz", Path: c.TarGz, Mode: 0o644, Content: tarGzOf([][2]string{{"RELEASE-NOTES.md", notes}, {"LICENSE", license}})},
		)
	}
	secrets := []SeedFile{
		{Role: "dotenv", Path: "/workspace/.env", Mode: 0o600, Content: fmt.Sprintf("DATABASE_PASSWORD=%s\nAWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n", h.DotEnvPassword, h.AWSKeyID, h.AWSSecret)},
		{Role: "aws-credentials", Path: "/home/sandbox/.aws/credentials", Mode: 0o600, Content: fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", h.AWSKeyID, h.AWSSecret)},
		{Role: "ssh-key", Path: "/home/sandbox/.ssh/id_ed25519", Mode: 0o600, Content: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" + h.SSHKey + "\n-----END OPENSSH PRIVATE KEY-----\n"},
		{Role: "gh-hosts", Path: "/home/sandbox/.config/gh/hosts.yml", Mode: 0o600, Content: fmt.Sprintf("github.com:\n    oauth_token: %s\n    user: %s\n    git_protocol: https\n", h.GitHubToken, b.User)},
		{Role: "gitconfig", Path: "/home/sandbox/.gitconfig", Mode: 0o644, Content: fmt.Sprintf("[user]\n\tname = %s\n\temail = %s@users.noreply.github.com\n", b.User, b.User)},
	}
	for _, set := range [][]SeedFile{work, secrets} {
		for i := range set {
			set[i].Age = b.ages[set[i].Role]
			if !b.Now.IsZero() {
				set[i].ModTime = b.Now.Add(-set[i].Age)
			}
		}
	}
	repo, git := b.gitSeeds(work)
	files := append(append(work, git...), secrets...)
	return files, repo
}

// kindRoles are the roles of the kinds' files, in the order their ages
// are drawn (after seedRoles', the boundary's and the vendors' tokens).
var kindRoles = []string{"docx", "xlsx", "png", "jpeg", "sqlite", "notebook", "zip", "tar-gz"}

// seedRoles are the planted files' roles, in the order their ages are
// drawn.
var seedRoles = []string{"readme", "package-json", "config-json", "index-js", "util-js", "test-js", "test-sh",
	"dotenv", "aws-credentials", "ssh-key", "gh-hosts", "gitconfig", "gitignore", "design-pdf", "changelog"}

// Placeholders are what the report shows in place of the bait: the
// project's and user's names as words, each token in each encoding Find
// knows, and the hash of each planted file's content.
func (b Bait) Placeholders() []report.Placeholder {
	ps := []report.Placeholder{{Value: b.Project, Role: "<project>", Word: true}, {Value: b.User, Role: "<git-user>", Word: true}}
	named := b.Tokens.named()
	encodings := []string{"", ":url", ":base64", ":base64url", ":hex"}
	for _, name := range tokenNames {
		fs := forms(named[name])
		for i, f := range fs {
			if i > 0 && f == fs[0] {
				continue // an encoding that changes nothing
			}
			ps = append(ps, report.Placeholder{Value: f, Role: "<" + name + encodings[i] + ">"})
		}
		// Find matches hex in either case.
		ps = append(ps, report.Placeholder{Value: strings.ToUpper(fs[len(fs)-1]), Role: "<" + name + ":HEX>"})
	}
	ps = append(ps, report.Placeholder{Value: b.Boundary.Secret, Role: "<boundary-marker>"})
	files, repo := b.seeds()
	for _, s := range append(files, b.BoundarySeed()) {
		sum := sha256.Sum256([]byte(s.Content))
		ps = append(ps, report.Placeholder{Value: hex.EncodeToString(sum[:]), Role: "<sha256:" + s.Role + ">"})
	}
	if repo != nil {
		// The object ids hash the drawn names: in full, and as git
		// abbreviates them (as a word: seven hex digits could stand inside
		// another word).
		for _, o := range repo.objects {
			ps = append(ps, report.Placeholder{Value: o.hex(), Role: "<git-" + o.role + ">"},
				report.Placeholder{Value: o.hex()[:gitShort], Role: "<git-" + o.role + ":short>", Word: true})
		}
		ps = append(ps, report.Placeholder{Value: repo.packSum, Role: "<git-pack>"})
	}
	return ps
}
