package bulk

// pypi.go fetches Python packages from a package index (PEP 503's simple
// API) as wheels, each checked against the hash the index gives and its
// own RECORD, resolves their dependencies for the python image, and
// installs them into a tree in the cache, in Go: no pip, uv or pipx runs
// on the host, and none of the package's code. A project that has only
// an sdist is refused: building one runs its code.

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DefaultIndexURL is PyPI's simple index, the default of --index-url.
const DefaultIndexURL = "https://pypi.org/simple/"

// ErrSdistOnly is wrapped when a project has no wheel that fits, only a
// source distribution: building it would run its code, so it is refused.
var ErrSdistOnly = errors.New("only a source distribution")

// ErrOffIndex is wrapped when the index sends the fetch somewhere it
// may not go (see checkFileURL).
var ErrOffIndex = errors.New("a URL off the index")

// ErrIntegrity is wrapped when a download does not match the hash its
// index gave.
var ErrIntegrity = errors.New("integrity mismatch")

const (
	// maxIndexPage bounds a project's page of the index (PyPI's largest
	// are a few MiB); each is parsed, picked from and dropped.
	maxIndexPage = 16 << 20
	// pypiDir is the cache's directory for the Python side: wheels by
	// hash, trees by what they hold.
	pypiDir = "pypi"
)

// PyPI installs PyPI specs (KindPyPI) from an index into the cache.
type PyPI struct {
	// Cache is the cache directory.
	Cache string
	// IndexURL is the simple index (DefaultIndexURL when empty).
	IndexURL string
	// Target is the python image's interpreter.
	Target PyTarget
	// Image is the python image the server runs in.
	Image string
	// Client fetches (a client with no timeout of its own when nil: the
	// context bounds each fetch).
	Client *http.Client
}

// pyFile is one file an index lists for a project.
type pyFile struct {
	file     string
	url      string
	sha256   []byte
	requires string // data-requires-python
	yanked   bool
	wheel    wheelName
	version  pyVersion
	sdist    bool
}

// pyDist is a distribution chosen: a wheel downloaded and checked.
type pyDist struct {
	name    string // normalized
	file    pyFile
	path    string
	info    wheelInfo
	extras  []string
	from    string // what asked for it
	reqs    []pyRequirement
	applied map[string]bool // requirement texts already queued
}

// pyTreeMarker is what an installed tree's marker holds.
type pyTreeMarker struct {
	Dists   []string          `json:"dists"` // file names, in install order
	Scripts map[string]string `json:"scripts"`
	Version string            `json:"version"`
}

func (p PyPI) index() string {
	u := p.IndexURL
	if u == "" {
		u = DefaultIndexURL
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

func (p PyPI) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	allowed := map[string]bool{}
	if ix, err := url.Parse(p.index()); err == nil {
		allowed[hostKey(ix.Hostname())] = true
	}
	// The user's proxies are theirs to reach, private or not.
	for _, scheme := range []string{"http", "https"} {
		if pu, err := http.ProxyFromEnvironment(&http.Request{URL: &url.URL{Scheme: scheme, Host: "pypi.org"}}); err == nil && pu != nil {
			allowed[hostKey(pu.Hostname())] = true
		}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if allowed[hostKey(host)] {
			return dialer.DialContext(ctx, network, addr)
		}
		// Any other host is asked for by the index: only at a public
		// address, as resolved here, and dialled at that address (no
		// second lookup that could answer otherwise).
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			if !publicAddr(ip) {
				return nil, fmt.Errorf("%w: %s resolves to %s, not a public address", ErrOffIndex, host, ip)
			}
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("%s: no address", host)
		}
		return dialer.DialContext(ctx, network, net.JoinHostPort(ips[0].String(), port))
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		return p.checkFileURL(req.URL)
	}}
}

// hostKey is a host name as compared: lower case, without a final dot.
func hostKey(h string) string { return strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), ".")) }

// nonPublic are the IPv4 ranges that are not the public internet beyond
// what netip names (loopback, private, link-local, multicast,
// unspecified): 0/8, shared address space (100.64/10: carrier NAT, and a
// cloud's metadata service at 100.100.100.200), IETF protocol
// assignments, benchmarking, reserved.
var nonPublic = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("240.0.0.0/4")}

// publicAddr says whether ip is a public unicast address, IPv4 written
// in IPv6 (mapped, compatible, NAT64's 64:ff9b::/96, 6to4's 2002::/16)
// read as the IPv4 it carries.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() {
		b := ip.As16()
		switch {
		case b[0] == 0x20 && b[1] == 0x02: // 6to4
			ip = netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
		case b == [16]byte{0, 0x64, 0xff, 0x9b, 12: b[12], 13: b[13], 14: b[14], 15: b[15]}: // NAT64
			ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case [12]byte(b[:12]) == [12]byte{} && !ip.IsLoopback() && !ip.IsUnspecified(): // IPv4-compatible
			ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		}
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || !ip.IsValid() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// numericLabel is a host's last label that is a number (decimal, octal,
// hex): a resolver that takes inet_aton's forms reads the whole host as
// an IPv4 address (2130706433, 127.1, 0x7f.0.0.1).
var numericLabel = regexp.MustCompile(`(?i)^(0x[0-9a-f]*|[0-9]+)$`)

// checkFileURL refuses a URL the index sends the host to (a file's, a
// redirect's) on another host than the index's unless it is https to a
// name or a public address: an index page is not to make the host ask
// its loopback, its link-local metadata service or the private network
// (the hash check keeps the answer from being used, not the request
// from being made). A name is checked again where it is dialled, by the
// address it resolves to (see client).
func (p PyPI) checkFileURL(u *url.URL) error {
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("%w: %s: not http(s)", ErrOffIndex, u.Redacted())
	}
	ix, err := url.Parse(p.index())
	if err != nil {
		return err
	}
	host := hostKey(u.Hostname())
	if host == hostKey(ix.Hostname()) && (u.Scheme == ix.Scheme || u.Scheme == "https") {
		return nil
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%w: %s: another host than the index's, over http", ErrOffIndex, u.Redacted())
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !publicAddr(ip) {
			return fmt.Errorf("%w: %s: not a public address", ErrOffIndex, u.Redacted())
		}
		return nil
	}
	labels := strings.Split(host, ".")
	if numericLabel.MatchString(labels[len(labels)-1]) {
		return fmt.Errorf("%w: %s: a host whose last label is a number, an address to some resolvers", ErrOffIndex, u.Redacted())
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%w: %s: localhost", ErrOffIndex, u.Redacted())
	}
	return nil
}

// Install implements Installer.
func (p PyPI) Install(ctx context.Context, s Spec) (Installed, error) {
	root, err := pySpecRequirement(s)
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	if u, err := url.Parse(p.index()); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Installed{}, fmt.Errorf("%w: --index-url %q is not an http(s) URL", ErrFetch, p.IndexURL)
	}
	reqs := []pyRequirement{root}
	for _, w := range s.With {
		r, err := parsePyRequirement(w)
		if err != nil {
			return Installed{}, fmt.Errorf("%w: --with %q: %w", ErrFetch, w, err)
		}
		reqs = append(reqs, r)
	}
	dists, err := p.resolve(ctx, reqs)
	if err != nil {
		return Installed{}, err
	}
	rootDist := dists[0]
	tree, cached, marker, err := p.installTree(ctx, dists)
	if err != nil {
		return Installed{}, err
	}
	cmd, note, err := chooseScript(marker.Scripts, s)
	if err != nil {
		return Installed{}, fmt.Errorf("%s %s: %w", s.Name, rootDist.file.version, err)
	}
	in := Installed{Dir: tree, Version: rootDist.file.version.String(), Integrity: "sha256-" + hex.EncodeToString(rootDist.file.sha256),
		Cached: cached, Image: p.Image, Argv: append([]string{"python3", PackageTarget + "/bin/" + cmd}, s.Args...),
		Entry: &Entry{Path: "bin/" + cmd, Bin: cmd, Why: scriptWhy(cmd, s)}}
	if note != "" {
		in.Notes = append(in.Notes, note)
	}
	if len(dists) > 1 {
		names := make([]string, 0, len(dists)-1)
		for _, d := range dists[1:] {
			names = append(names, d.name+" "+d.file.version.String())
		}
		in.Notes = append(in.Notes, fmt.Sprintf("with %d dependencies: %s", len(names), strings.Join(names, ", ")))
	}
	return in, nil
}

// scriptWhy says why the console script was chosen.
func scriptWhy(cmd string, s Spec) string {
	if s.Bin != "" {
		return "the console script the line names (--from, --spec)"
	}
	if normalizePyPI(cmd) == normalizePyPI(s.Name) {
		return "the console script named like the package, as uvx and pipx run it"
	}
	return "the package's only console script"
}

// pySpecRequirement is the spec's package as a requirement.
func pySpecRequirement(s Spec) (pyRequirement, error) {
	text := s.Name
	if len(s.Extras) > 0 {
		text += "[" + strings.Join(s.Extras, ",") + "]"
	}
	text += s.Version
	r, err := parsePyRequirement(text)
	if err != nil {
		return r, err
	}
	if r.marker != nil {
		return r, fmt.Errorf("%w: %q: a marker on the package asked for", ErrInvalidPackage, text)
	}
	return r, nil
}

// chooseScript picks the console script to run: the one the spec names
// (--from/--spec), else the one named like the package, as uvx and pipx
// do; else the only one, with a note.
func chooseScript(scripts map[string]string, s Spec) (string, string, error) {
	names := slices.Sorted(mapKeys(scripts))
	want := s.Bin
	if want == "" {
		want = s.Name
	}
	if _, ok := scripts[want]; ok {
		return want, "", nil
	}
	for _, n := range names {
		if s.Bin == "" && normalizePyPI(n) == normalizePyPI(want) {
			return n, "", nil
		}
	}
	if s.Bin == "" && len(names) == 1 {
		return names[0], fmt.Sprintf("no console script named %s: ran its only one, %s", want, names[0]), nil
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("%w: the package has no console script to run", ErrInstall)
	}
	return "", "", fmt.Errorf("%w: no console script named %s; it has %s (name one with --from PKG CMD)", ErrInstall, want, strings.Join(names, ", "))
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// resolve picks a wheel for each requirement and, in turn, for each of
// theirs that the image's environment keeps: breadth first, the newest
// version every requirement so far allows; one that a later requirement
// excludes is refused (no backtracking: the error names both).
func (p PyPI) resolve(ctx context.Context, roots []pyRequirement) ([]*pyDist, error) {
	env := newPyEnv(p.Target.Version, p.Target.Machine)
	type queued struct {
		req  pyRequirement
		from string
	}
	var queue []queued
	for _, r := range roots {
		queue = append(queue, queued{r, "the command line"})
	}
	chosen := map[string]*pyDist{}
	var order []*pyDist
	specsOf := map[string][]string{}
	var unpacked uint64
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: resolving: %w", ErrFetch, err)
		}
		q := queue[0]
		queue = queue[1:]
		name := normalizePyPI(q.req.name)
		if len(q.req.specs) > 0 {
			specsOf[name] = append(specsOf[name], q.req.text+" (from "+q.from+")")
		}
		if d := chosen[name]; d != nil {
			if !q.req.specs.contains(d.file.version) {
				return nil, fmt.Errorf("%w: %s %s was chosen, but %s asks for %s: not resolved (%s)", ErrFetch, name, d.file.version, q.from, q.req.text, strings.Join(specsOf[name], "; "))
			}
			for _, x := range q.req.extras {
				if !slices.Contains(d.extras, x) {
					d.extras = append(d.extras, x)
				}
			}
		} else {
			if len(order) >= maxResolved {
				return nil, fmt.Errorf("%w: more than %d distributions to install", ErrFetch, maxResolved)
			}
			// A project's page is read once: it is chosen from then.
			files, err := p.page(ctx, name)
			if err != nil {
				return nil, err
			}
			f, err := p.pick(name, files, q.req)
			files = nil
			if err != nil {
				return nil, fmt.Errorf("%w: %s (asked by %s): %w", ErrFetch, q.req.text, q.from, err)
			}
			wpath, err := p.download(ctx, f)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrFetch, f.file, err)
			}
			zr, info, err := checkWheel(wpath, f.file)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrFetch, err)
			}
			zr.Close()
			// Every wheel is bounded, and so is what they make together.
			if info.size > uint64(maxTarballFiles)-unpacked {
				return nil, fmt.Errorf("%w: the packages unpack to over %d bytes in all", ErrFetch, maxTarballFiles)
			}
			unpacked += info.size
			if info.requiresPython != "" {
				if ok, err := p.pythonFits(info.requiresPython); err != nil || !ok {
					return nil, fmt.Errorf("%w: %s needs Python %s; the image's is %s", ErrFetch, f.file, info.requiresPython, p.Target.Version)
				}
			}
			d := &pyDist{name: name, file: f, path: wpath, info: info, extras: q.req.extras, from: q.from, applied: map[string]bool{}}
			for _, rd := range info.requires {
				r, err := parsePyRequirement(rd)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: Requires-Dist: %w", ErrFetch, f.file, err)
				}
				d.reqs = append(d.reqs, r)
			}
			chosen[name] = d
			order = append(order, d)
		}
		d := chosen[name]
		for _, r := range d.reqs {
			if d.applied[r.text] || r.marker != nil && !r.marker.eval(env, d.extras) {
				continue
			}
			d.applied[r.text] = true
			queue = append(queue, queued{r, d.name + " " + d.file.version.String()})
		}
	}
	return order, nil
}

// pythonFits says whether the image's python satisfies a Requires-Python.
func (p PyPI) pythonFits(requires string) (bool, error) {
	specs, err := parsePySpecifiers(requires)
	if err != nil {
		return false, err
	}
	v, err := parsePyVersion(p.Target.Version)
	if err != nil {
		return false, err
	}
	return specs.contains(v), nil
}

// pick chooses the newest version the requirement allows that has a
// wheel for the image, and its best-fitting wheel. Yanked files and
// pre-releases are taken only when pinned (PEP 592, PEP 440).
func (p PyPI) pick(name string, files []pyFile, r pyRequirement) (pyFile, error) {
	allowPre := r.specs.pinned() || r.specs.allowsPre()
	var best *pyFile
	bestFit, sdists, versions := 0, 0, 0
	for i := range files {
		f := &files[i]
		if !r.specs.contains(f.version) || f.yanked && !r.specs.pinned() || f.version.prerelease() && !allowPre {
			continue
		}
		versions++
		if f.requires != "" {
			if ok, err := p.pythonFits(f.requires); err == nil && !ok {
				continue
			}
		}
		if f.sdist {
			sdists++
			continue
		}
		fit := p.Target.fits(f.wheel)
		if fit == 0 {
			continue
		}
		if best == nil || f.version.compare(best.version) > 0 || f.version.compare(best.version) == 0 && fit > bestFit {
			best, bestFit = f, fit
		}
	}
	if best == nil {
		switch {
		case versions == 0:
			return pyFile{}, fmt.Errorf("no version on the index fits %q", r.text)
		case sdists > 0:
			return pyFile{}, fmt.Errorf("%w: no wheel for Python %s on %s; building its sdist would run its code on the host: refused", ErrSdistOnly, p.Target.Version, p.Target.Machine)
		}
		return pyFile{}, fmt.Errorf("no wheel for Python %s on %s", p.Target.Version, p.Target.Machine)
	}
	return *best, nil
}

var (
	anchorRE = regexp.MustCompile(`(?is)<a\s([^>]*)>`)
	attrRE   = regexp.MustCompile(`(?is)([a-z-]+)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?`)
)

// page reads a project's page of the simple index: its anchors, each a
// file with its sha256 in the URL's fragment (a file without one is not
// taken: it could not be verified).
func (p PyPI) page(ctx context.Context, name string) ([]pyFile, error) {
	base, err := url.Parse(p.index() + name + "/")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := p.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w: %s is not on the index %s", ErrFetch, name, p.index())
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: the index answered %s", ErrFetch, base, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIndexPage+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, base, err)
	}
	if len(body) > maxIndexPage {
		return nil, fmt.Errorf("%w: %s: a page of over %d bytes", ErrFetch, base, maxIndexPage)
	}
	files, err := parseIndexPage(ctx, resp.Request.URL, name, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, base, err)
	}
	return files, nil
}

// parseIndexPage reads the anchors of a project's page: files of that
// project (by the name in the file name), with a sha256, over http(s).
func parseIndexPage(ctx context.Context, base *url.URL, name string, body []byte) ([]pyFile, error) {
	var out []pyFile
	for n, m := range anchorRE.FindAllSubmatch(body, -1) {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllSubmatch(m[1], -1) {
			attrs[strings.ToLower(string(a[1]))] = html.UnescapeString(string(a[2]) + string(a[3]) + string(a[4]))
			if a[2] == nil && a[3] == nil && a[4] == nil {
				attrs[strings.ToLower(string(a[1]))] = "\x00present"
			}
		}
		href, ok := attrs["href"]
		if !ok {
			continue
		}
		u, err := base.Parse(href)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			continue
		}
		algo, sum, _ := strings.Cut(u.Fragment, "=")
		digest, err := hex.DecodeString(sum)
		if algo != "sha256" || err != nil || len(digest) != sha256.Size {
			continue
		}
		u.Fragment = ""
		file := path.Base(u.Path)
		if checkFileName(file) != nil {
			continue
		}
		f := pyFile{file: file, url: u.String(), sha256: digest, requires: attrs["data-requires-python"]}
		if f.requires == "\x00present" {
			f.requires = ""
		}
		_, f.yanked = attrs["data-yanked"]
		if wn, err := parseWheelName(file); err == nil {
			v, err := parsePyVersion(wn.version)
			if err != nil || normalizePyPI(wn.name) != name {
				continue
			}
			f.wheel, f.version = wn, v
		} else if v, ok := sdistVersion(file, name); ok {
			f.sdist, f.version = true, v
		} else {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// sdistVersion reads NAME-VERSION.tar.gz (or .zip) of the project.
func sdistVersion(file, name string) (pyVersion, bool) {
	base, ok := strings.CutSuffix(file, ".tar.gz")
	if !ok {
		if base, ok = strings.CutSuffix(file, ".zip"); !ok {
			return pyVersion{}, false
		}
	}
	i := strings.LastIndex(base, "-")
	if i < 0 || normalizePyPI(base[:i]) != name {
		return pyVersion{}, false
	}
	v, err := parsePyVersion(base[i+1:])
	return v, err == nil
}

// download fetches a wheel into the cache by its sha256, bounded, and
// checks the hash the index gave: a wheel already there is not fetched
// again (its name is its hash, checked when it was written).
func (p PyPI) download(ctx context.Context, f pyFile) (string, error) {
	dir, err := cachePath(p.Cache, pypiDir, "wheels")
	if err != nil {
		return "", err
	}
	final := filepath.Join(dir, hex.EncodeToString(f.sha256)+".whl")
	if err := hashFile(final, f.sha256); err == nil {
		return final, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		// Not what its name says: fetched again, over it.
		os.Remove(final)
	}
	if err := p.checkFileURL(mustParse(f.url)); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return "", err
	}
	resp, err := p.client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the index answered %s", resp.Status)
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxWheel+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if n > maxWheel {
		return "", fmt.Errorf("over %d bytes: refused", maxWheel)
	}
	if !bytes.Equal(h.Sum(nil), f.sha256) {
		return "", fmt.Errorf("%w: its sha256 is %x, the index says %x", ErrIntegrity, h.Sum(nil), f.sha256)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// hashFile checks that the file at p has the sha256 want.
func hashFile(p string, want []byte) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxWheel+1)); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%w: %s", ErrIntegrity, p)
	}
	return nil
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		return &url.URL{Scheme: "invalid"}
	}
	return u
}

// installTree installs the chosen wheels into one tree of the cache,
// named by their hashes: lib (the site directory), bin (the console
// scripts' launchers and the wheels' scripts), data. It is built beside
// and renamed into place, its marker written last.
func (p PyPI) installTree(ctx context.Context, dists []*pyDist) (string, bool, pyTreeMarker, error) {
	h := sha256.New()
	for _, d := range dists {
		fmt.Fprintf(h, "%s\x00%x\x00%q\n", d.file.file, d.file.sha256, d.extras)
	}
	fmt.Fprintf(h, "lib=%s\n", PackageTarget+"/lib")
	root := dists[0]
	dirName := root.name + "@" + root.file.version.String() + "-" + hex.EncodeToString(h.Sum(nil))[:treeDigest]
	trees, err := cachePath(p.Cache, pypiDir, treesDir)
	if err != nil {
		return "", false, pyTreeMarker{}, err
	}
	tree, err := cachePath(trees, dirName)
	if err != nil {
		return "", false, pyTreeMarker{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, installedMarker)); err == nil {
		var m pyTreeMarker
		if json.Unmarshal(b, &m) == nil {
			return tree, true, m, nil
		}
	}
	if err := os.MkdirAll(trees, 0o755); err != nil {
		return "", false, pyTreeMarker{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	tmp, err := os.MkdirTemp(trees, ".install-*")
	if err != nil {
		return "", false, pyTreeMarker{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	defer os.RemoveAll(tmp)
	m := pyTreeMarker{Scripts: root.info.scripts, Version: root.file.version.String()}
	owner := map[string]string{}
	for _, d := range dists {
		zr, err := zip.OpenReader(d.path)
		if err != nil {
			return "", false, m, fmt.Errorf("%w: %s: %w", ErrInstall, d.file.file, err)
		}
		// Checked again: the file is read a second time, and the cache is
		// only ours until proved otherwise.
		wn, _ := parseWheelName(d.file.file)
		info, err := checkWheelZip(&zr.Reader, wn, d.file.file)
		if err == nil {
			err = installWheel(ctx, &zr.Reader, info, tmp, owner)
		}
		zr.Close()
		if err != nil {
			return "", false, m, err
		}
		m.Dists = append(m.Dists, d.file.file)
	}
	lib := PackageTarget + "/lib"
	names := slices.Sorted(mapKeys(root.info.scripts))
	for _, name := range names {
		rel := "bin/" + name
		if prev, ok := owner[rel]; ok {
			return "", false, m, fmt.Errorf("%w: %s installs %s, which is also a console script", ErrWheel, prev, rel)
		}
		b, err := launcher(name, root.info.scripts[name], lib)
		if err != nil {
			return "", false, m, fmt.Errorf("%w: %w", ErrWheel, err)
		}
		if err := os.MkdirAll(filepath.Join(tmp, "bin"), treeDirMode); err != nil {
			return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "bin", name), b, 0o755); err != nil {
			return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
		}
	}
	for _, sub := range []string{"lib", "bin"} {
		if err := os.MkdirAll(filepath.Join(tmp, sub), treeDirMode); err != nil {
			return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
		}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return "", false, m, err
	}
	if err := os.WriteFile(filepath.Join(tmp, installedMarker), mb, 0o644); err != nil {
		return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	if err := os.Chmod(tmp, treeDirMode); err != nil {
		return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	if err := os.RemoveAll(tree); err != nil {
		return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	if err := os.Rename(tmp, tree); err != nil {
		return "", false, m, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	return tree, false, m, nil
}
