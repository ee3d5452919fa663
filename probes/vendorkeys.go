package probes

import (
	"hash/crc32"
	"math/rand/v2"
	"strings"
)

// VendorKey is the shape of one vendor's API keys, as the vendor's own
// documentation, its published token formats or its SDK's checks give
// it: a server that checks the shape before it calls the vendor
// ("Invalid API key format") refuses a generic secret, and the tools
// behind the check are never run. A honeytoken of the shape passes the
// check, and then it is the server's to send away.
type VendorKey struct {
	// Role is the token's report name (<anthropic-api-key>).
	Role string
	// Words are the words (between _ or -) of a variable's name that
	// choose this shape: any one of them (ANTHROPIC_API_KEY, CLAUDE_KEY).
	Words []string
	// Prefix, then Length characters of Alphabet, then Suffix.
	Prefix   string
	Length   int
	Alphabet string
	Suffix   string
	// Checksum, when the format has a public one: the last characters
	// computed from the rest (GitHub's and npm's CRC32 in base62).
	Checksum func(body string) string
	// Sep splits the body into parts of these lengths joined by it
	// (Slack's xoxb-N-N-X, SendGrid's SG.X.Y): nil for one part.
	Sep   string
	Parts []int
}

const (
	lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	digits     = "0123456789"
	hexDigits  = "0123456789abcdef"
	urlSafe    = alnum + "-_"
	base62     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	letters    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// crc32Base62 is GitHub's (and npm's) token checksum: the CRC32 of the
// random part in base62, left-padded with 0 to six characters.
func crc32Base62(body string) string {
	n := crc32.ChecksumIEEE([]byte(body))
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = base62[n%62]
		n /= 62
	}
	return string(b[:])
}

// VendorKeys is the table of shapes, by vendor: the variable's name
// picks the first whose word it has (see VendorKeyFor); a name with none
// gets the generic secret (Honeytokens.DotEnvPassword, 24 letters and
// digits). docs/probes.md lists it.
var VendorKeys = []VendorKey{
	{Role: "anthropic-api-key", Words: []string{"ANTHROPIC", "CLAUDE"}, Prefix: "sk-ant-api03-", Length: 93, Alphabet: urlSafe, Suffix: "AA"},
	{Role: "openai-api-key", Words: []string{"OPENAI"}, Prefix: "sk-proj-", Length: 156, Alphabet: urlSafe},
	// The bait's own GitHub token (Honeytokens.GitHubToken) is of this
	// shape.
	{Role: "github-token", Words: []string{"GITHUB", "GH"}, Prefix: "ghp_", Length: 30, Alphabet: alnum, Checksum: crc32Base62},
	{Role: "gitlab-token", Words: []string{"GITLAB", "GL"}, Prefix: "glpat-", Length: 20, Alphabet: urlSafe},
	{Role: "slack-bot-token", Words: []string{"SLACK"}, Prefix: "xoxb-", Sep: "-", Parts: []int{13, 13, 24}, Alphabet: alnum},
	{Role: "stripe-secret-key", Words: []string{"STRIPE"}, Prefix: "sk_live_", Length: 99, Alphabet: alnum},
	{Role: "google-api-key", Words: []string{"GOOGLE", "GEMINI", "GCP", "YOUTUBE", "MAPS"}, Prefix: "AIza", Length: 35, Alphabet: urlSafe},
	{Role: "npm-token", Words: []string{"NPM"}, Prefix: "npm_", Length: 30, Alphabet: alnum, Checksum: crc32Base62},
	{Role: "huggingface-token", Words: []string{"HF", "HUGGINGFACE", "HUGGING"}, Prefix: "hf_", Length: 34, Alphabet: letters},
	{Role: "sendgrid-api-key", Words: []string{"SENDGRID"}, Prefix: "SG.", Sep: ".", Parts: []int{22, 43}, Alphabet: urlSafe},
	{Role: "tavily-api-key", Words: []string{"TAVILY"}, Prefix: "tvly-", Length: 32, Alphabet: alnum},
	{Role: "perplexity-api-key", Words: []string{"PERPLEXITY", "PPLX"}, Prefix: "pplx-", Length: 48, Alphabet: alnum},
	{Role: "groq-api-key", Words: []string{"GROQ"}, Prefix: "gsk_", Length: 52, Alphabet: alnum},
	{Role: "notion-token", Words: []string{"NOTION"}, Prefix: "ntn_", Length: 46, Alphabet: alnum},
	{Role: "linear-api-key", Words: []string{"LINEAR"}, Prefix: "lin_api_", Length: 40, Alphabet: alnum},
	{Role: "brave-api-key", Words: []string{"BRAVE"}, Prefix: "BSA", Length: 28, Alphabet: alnum},
}

// draw makes one key of the shape from r.
func (v VendorKey) draw(r *rand.Rand) string {
	str := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = v.Alphabet[r.IntN(len(v.Alphabet))]
		}
		return string(b)
	}
	var body string
	if v.Parts != nil {
		parts := make([]string, len(v.Parts))
		for i, n := range v.Parts {
			if v.Role == "slack-bot-token" && i < 2 {
				b := []byte(str(n))
				for j := range b {
					b[j] = digits[r.IntN(len(digits))]
				}
				parts[i] = string(b)
				continue
			}
			parts[i] = str(n)
		}
		body = strings.Join(parts, v.Sep)
	} else {
		body = str(v.Length)
	}
	if v.Checksum != nil {
		body += v.Checksum(body)
	}
	return v.Prefix + body + v.Suffix
}

// Valid says whether key has the shape: prefix, length, alphabet and
// checksum (the check a server makes before it calls the vendor).
func (v VendorKey) Valid(key string) bool {
	body, ok := strings.CutPrefix(key, v.Prefix)
	if !ok {
		return false
	}
	if body, ok = strings.CutSuffix(body, v.Suffix); !ok {
		return false
	}
	in := func(s, alphabet string) bool {
		for _, c := range s {
			if !strings.ContainsRune(alphabet, c) {
				return false
			}
		}
		return true
	}
	if v.Parts != nil {
		parts := strings.Split(body, v.Sep)
		if len(parts) != len(v.Parts) {
			return false
		}
		for i, p := range parts {
			if len(p) != v.Parts[i] || !in(p, v.Alphabet) {
				return false
			}
		}
		return true
	}
	if v.Checksum != nil {
		if len(body) != v.Length+6 || v.Checksum(body[:v.Length]) != body[v.Length:] {
			return false
		}
		body = body[:v.Length]
	}
	return len(body) == v.Length && in(body, v.Alphabet)
}

// VendorKeyFor is the shape a secret variable's name asks for, and
// whether there is one.
func VendorKeyFor(name string) (VendorKey, bool) {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	for _, v := range VendorKeys {
		for _, w := range words {
			for _, want := range v.Words {
				if w == want {
					return v, true
				}
			}
		}
	}
	return VendorKey{}, false
}

// VendorToken is the bait's honeytoken for a secret variable: of the
// vendor's shape when its name names one, else "" (the caller's
// generic token).
func (h Honeytokens) VendorToken(name string) string {
	if v, ok := VendorKeyFor(name); ok {
		return h.Vendor[v.Role]
	}
	return ""
}
