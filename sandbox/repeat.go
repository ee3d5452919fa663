package sandbox

import (
	"crypto/sha256"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// pageRepeat spares the MCP SDK a tools/list page the session read the
// same before. The SDK decodes every tool of a page, and re-encodes each
// input schema to look for header annotations: O(tools) a listing, which
// the scan pays after every call. Only the next cursor of the SDK's
// result is used (the tools are read from the raw result, as sent), and
// that cursor is the same for the same bytes; so a listing arms the
// connection with the SHA-256 of the page it may get back, and a result
// with that hash, answering that request, reaches the SDK as the error
// errPageRepeated instead. The transcript keeps it as sent. The SDK keeps
// the tools of the page before (its cache is only replaced by a
// result), so what it knows of them is what it would have read.
type pageRepeat struct {
	mu sync.Mutex
	// want is the hash expected; armed until a request takes it (id) and
	// its answer comes; hit says that the answer had the hash.
	want      [sha256.Size]byte
	armed     bool
	id        jsonrpc.ID
	sent, hit bool
}

// errPageRepeated is what the SDK is given instead of a tools/list result
// that repeats the page the listing armed for.
var errPageRepeated = errors.New("mcpsandbox: the tools/list page repeats the last listing's")

// arm expects the next tools/list request's answer to hash to sum.
func (p *pageRepeat) arm(sum [sha256.Size]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.want, p.armed, p.sent, p.hit = sum, true, false, false
}

// disarm ends the expectation and says whether the answer repeated the
// page (and so reached the SDK as errPageRepeated).
func (p *pageRepeat) disarm() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	hit := p.hit
	p.armed, p.sent, p.hit = false, false, false
	return hit
}

// sending notes the id of a tools/list request sent while armed: only
// its answer is compared (a late answer to an earlier request is not).
func (p *pageRepeat) sending(m *jsonrpc.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed && !p.sent && m.Method == "tools/list" && m.ID.IsValid() {
		p.id, p.sent = m.ID, true
	}
}

// answer returns what the SDK reads of r, a response to a tools/list
// request: r itself, or errPageRepeated in its place when r answers the
// armed request with the hash expected.
func (p *pageRepeat) answer(r *jsonrpc.Response) *jsonrpc.Response {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed || !p.sent || r.ID != p.id || r.Error != nil {
		return r
	}
	p.armed = false
	if sha256.Sum256(r.Result) != p.want {
		return r
	}
	p.hit = true
	return &jsonrpc.Response{ID: r.ID, Error: errPageRepeated}
}
