package probes

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"maps"
	"path"
	"sort"
	"strings"
	"time"
)

// The canary project is a git clone: its objects are written here, in
// Go, from the drawn names and fixed dates, so that seeding runs no
// program, takes no time and gives the same bytes for the same seed.
// Objects are stored, not compressed (zlib level 0), so that their sizes,
// like the files', do not depend on the draw; they lie in one pack, so
// that the only name a listing of .git shows that depends on the draw is
// the pack's, which has a placeholder like every object id.

// gitCommit is one commit of the canary project's history: the files it
// adds (paths relative to the project) and when.
type gitCommit struct {
	message string
	files   []string
	when    time.Time
}

// gitHistory is the canary project's history, oldest first. The dates are
// fixed (not drawn, not relative to the run) so that `git log` reads the
// same in every run; the work tree's mtimes, drawn, are all later: the
// clone.
var gitHistory = []gitCommit{
	{"Initial commit", []string{".gitignore", "README.md", "package.json"}, time.Date(2025, 3, 3, 9, 14, 7, 0, time.FixedZone("", 3600))},
	{"Add slugify helper", []string{"src/index.js", "src/lib/util.js"}, time.Date(2025, 3, 4, 16, 41, 52, 0, time.FixedZone("", 3600))},
	{"Add tests and a test script", []string{"scripts/test.sh", "tests/index.test.js"}, time.Date(2025, 3, 10, 11, 5, 33, 0, time.FixedZone("", 3600))},
	{"Add default config", []string{"config/default.json"}, time.Date(2025, 3, 12, 14, 27, 19, 0, time.FixedZone("", 3600))},
	{"Add design overview", []string{"design/overview.pdf"}, time.Date(2025, 3, 17, 10, 2, 46, 0, time.FixedZone("", 3600))},
	{"Add handbook, metrics, assets, a notebook and the 1.4.2 release", []string{"assets/logo.png", "assets/photo.jpg", "data/app.db", "data/metrics.xlsx",
		"design/handbook.docx", "dist/release.tar.gz", "dist/release.zip", "notebooks/analysis.ipynb"}, time.Date(2025, 3, 19, 15, 48, 2, 0, time.FixedZone("", 3600))},
}

// gitBranch is the branch the clone has checked out.
const gitBranch = "main"

// The clone is mid-work, as a developer's is, so that the tools that
// commit, stash, pop or apply have something to work on: gitStaged is in
// the index and not committed; the stash holds two entries, each a change
// to its own file (so that popping one and applying the other, in either
// order, applies cleanly); gitOtherBranch is a second branch, at the
// commit before the last. The work tree has no unstaged change: a rebase
// or a cherry-pick refuses one, and the staged file is enough to commit.
const (
	gitStaged      = "CHANGELOG.md"
	gitOtherBranch = "release-1.4"
)

// gitStash are the stash's entries, oldest first: the file each changes,
// the change, and how long after the last commit it was stashed.
var gitStash = []struct {
	file   string
	change func(string) string
	after  time.Duration
}{
	{"src/lib/util.js", func(c string) string { return c + "exports.trim = (s) => String(s).trim();\n" }, 26 * time.Hour},
	{"config/default.json", func(c string) string { return strings.Replace(c, `"logLevel": "info"`, `"logLevel": "debug"`, 1) }, 50 * time.Hour},
}

// gitShort is how many hex digits git shows of an object id in a
// repository this small (core.abbrev's minimum).
const gitShort = 7

const (
	objCommit = 1
	objTree   = 2
	objBlob   = 3
)

var objTypeNames = map[int]string{objCommit: "commit", objTree: "tree", objBlob: "blob"}

type gitObject struct {
	typ  int
	data []byte
	id   [20]byte
	// role names the object in the report: "<git-ROLE>".
	role string
}

func newGitObject(typ int, data []byte, role string) gitObject {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", objTypeNames[typ], len(data))
	h.Write(data)
	o := gitObject{typ: typ, data: data, role: role}
	copy(o.id[:], h.Sum(nil))
	return o
}

func (o gitObject) hex() string { return hex.EncodeToString(o.id[:]) }

// gitFile is a tracked file of the work tree.
type gitFile struct {
	rel     string // relative to the project
	mode    int64
	content string
	role    string
	mtime   time.Time
}

// gitRepo is the planted repository: its objects, in pack order.
type gitRepo struct {
	objects []gitObject
	head    gitObject   // the last commit
	parent  gitObject   // the commit before it (gitOtherBranch)
	stashes []gitObject // the stash's work tree commits, oldest first
	pack    []byte
	idx     []byte
	index   []byte
	packSum string // the pack's checksum, in hex: its name
}

// buildGitRepo writes the repository of files (which must hold every path
// gitHistory names) with user as the author of every commit.
func buildGitRepo(files []gitFile, user string) (*gitRepo, error) {
	byRel := map[string]gitFile{}
	for _, f := range files {
		byRel[f.rel] = f
	}
	r := &gitRepo{}
	seen := map[[20]byte]bool{}
	add := func(o gitObject) gitObject {
		if !seen[o.id] {
			seen[o.id] = true
			r.objects = append(r.objects, o)
		}
		return o
	}
	blobs := map[string]gitObject{}
	var tracked []string
	var commits []gitObject
	var parent string
	trees := 0
	for i, c := range gitHistory {
		for _, rel := range c.files {
			f, ok := byRel[rel]
			if !ok {
				return nil, fmt.Errorf("git history names %s, which is not planted", rel)
			}
			blobs[rel] = newGitObject(objBlob, []byte(f.content), "blob:"+f.role)
			tracked = append(tracked, rel)
		}
		root := writeTree("", tracked, byRel, blobs, func(o gitObject) gitObject {
			if !seen[o.id] {
				trees++
				o.role = fmt.Sprintf("tree-%d", trees)
			}
			return add(o)
		})
		var b strings.Builder
		fmt.Fprintf(&b, "tree %s\n", root.hex())
		if parent != "" {
			fmt.Fprintf(&b, "parent %s\n", parent)
		}
		sig := fmt.Sprintf("%s <%s@users.noreply.github.com> %d %s", user, user, c.when.Unix(), c.when.Format("-0700"))
		fmt.Fprintf(&b, "author %s\ncommitter %s\n\n%s\n", sig, sig, c.message)
		commit := newGitObject(objCommit, []byte(b.String()), fmt.Sprintf("commit-%d", i+1))
		commits = append(commits, commit)
		parent = commit.hex()
	}
	r.head = commits[len(commits)-1]
	r.parent = commits[len(commits)-2]
	sig := func(when time.Time) string {
		return fmt.Sprintf("%s <%s@users.noreply.github.com> %d %s", user, user, when.Unix(), when.Format("-0700"))
	}
	// Each stash entry: its index commit (the index then: HEAD's tree)
	// and its work tree commit (one file changed).
	headTree := strings.TrimPrefix(strings.SplitN(string(r.head.data), "\n", 2)[0], "tree ")
	last := gitHistory[len(gitHistory)-1]
	subject := fmt.Sprintf("on %s: %s %s", gitBranch, r.head.hex()[:gitShort], last.message)
	var stashObjs []gitObject
	for i, e := range gitStash {
		f, ok := byRel[e.file]
		if !ok {
			return nil, fmt.Errorf("the stash changes %s, which is not planted", e.file)
		}
		when := sig(last.when.Add(e.after))
		iCommit := newGitObject(objCommit, []byte(fmt.Sprintf("tree %s\nparent %s\nauthor %s\ncommitter %s\n\nindex %s\n",
			headTree, r.head.hex(), when, when, subject)), fmt.Sprintf("commit-stash-%d-index", i+1))
		wBlobs := maps.Clone(blobs)
		wBlobs[e.file] = newGitObject(objBlob, []byte(e.change(f.content)), fmt.Sprintf("blob:stash-%d", i+1))
		wTree := writeTree("", tracked, byRel, wBlobs, func(o gitObject) gitObject {
			if !seen[o.id] {
				trees++
				o.role = fmt.Sprintf("tree-%d", trees)
			}
			return add(o)
		})
		w := newGitObject(objCommit, []byte(fmt.Sprintf("tree %s\nparent %s\nparent %s\nauthor %s\ncommitter %s\n\nWIP %s\n",
			wTree.hex(), r.head.hex(), iCommit.hex(), when, when, subject)), fmt.Sprintf("commit-stash-%d", i+1))
		r.stashes = append(r.stashes, w)
		stashObjs = append([]gitObject{w, iCommit}, stashObjs...)
		stashObjs = append(stashObjs, wBlobs[e.file])
	}
	// The staged file: in the index, in no commit.
	staged, ok := byRel[gitStaged]
	if !ok {
		return nil, fmt.Errorf("the index stages %s, which is not planted", gitStaged)
	}
	blobs[gitStaged] = newGitObject(objBlob, []byte(staged.content), "blob:"+staged.role)
	// Pack order as git writes it: commits newest first, then the rest.
	rest := r.objects
	r.objects = nil
	for _, o := range stashObjs {
		add(o)
	}
	for i := len(commits) - 1; i >= 0; i-- {
		r.objects = append(r.objects, commits[i])
	}
	for _, rel := range tracked {
		add(blobs[rel])
	}
	add(blobs[gitStaged])
	r.objects = append(r.objects, rest...)
	tracked = append(tracked, gitStaged)
	var err error
	if r.pack, r.idx, r.packSum, err = writePack(r.objects); err != nil {
		return nil, err
	}
	sort.Strings(tracked)
	var entries []gitFile
	for _, rel := range tracked {
		entries = append(entries, byRel[rel])
	}
	r.index = writeIndex(entries, blobs)
	return r, nil
}

// writeTree writes the tree of dir (relative, "" for the root) over the
// tracked paths, its subtrees first, and returns it.
func writeTree(dir string, tracked []string, files map[string]gitFile, blobs map[string]gitObject, add func(gitObject) gitObject) gitObject {
	type ent struct {
		name string
		mode string
		id   [20]byte
	}
	var ents []ent
	subdirs := map[string]bool{}
	for _, rel := range tracked {
		inDir := rel
		if dir != "" {
			var ok bool
			if inDir, ok = strings.CutPrefix(rel, dir+"/"); !ok {
				continue
			}
		}
		name, _, nested := strings.Cut(inDir, "/")
		if nested {
			if !subdirs[name] {
				subdirs[name] = true
				sub := writeTree(path.Join(dir, name), tracked, files, blobs, add)
				ents = append(ents, ent{name, "40000", sub.id})
			}
			continue
		}
		mode := "100644"
		if files[rel].mode&0o111 != 0 {
			mode = "100755"
		}
		ents = append(ents, ent{name, mode, blobs[rel].id})
	}
	// Git orders a tree's entries by name, a directory's as if it ended
	// in "/".
	key := func(e ent) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(ents, func(i, j int) bool { return key(ents[i]) < key(ents[j]) })
	var b bytes.Buffer
	for _, e := range ents {
		fmt.Fprintf(&b, "%s %s\x00", e.mode, e.name)
		b.Write(e.id[:])
	}
	return add(newGitObject(objTree, b.Bytes(), ""))
}

// stored compresses data at zlib level 0: its size depends on its length
// only.
func stored(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, zlib.NoCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writePack writes a version 2 pack of objs (no deltas) and its version
// 2 index, and returns the pack's checksum in hex.
func writePack(objs []gitObject) (pack, idx []byte, sum string, err error) {
	var p bytes.Buffer
	p.WriteString("PACK")
	binary.Write(&p, binary.BigEndian, uint32(2))
	binary.Write(&p, binary.BigEndian, uint32(len(objs)))
	offsets := map[[20]byte]uint32{}
	crcs := map[[20]byte]uint32{}
	for _, o := range objs {
		start := p.Len()
		offsets[o.id] = uint32(start)
		size := len(o.data)
		c := byte(o.typ<<4) | byte(size&15)
		size >>= 4
		for size > 0 {
			p.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		p.WriteByte(c)
		z, err := stored(o.data)
		if err != nil {
			return nil, nil, "", fmt.Errorf("packing %s: %w", o.hex(), err)
		}
		p.Write(z)
		crcs[o.id] = crc32.ChecksumIEEE(p.Bytes()[start:])
	}
	packSum := sha1.Sum(p.Bytes())
	p.Write(packSum[:])

	ids := make([][20]byte, 0, len(objs))
	for _, o := range objs {
		ids = append(ids, o.id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	var x bytes.Buffer
	x.Write([]byte{0xff, 't', 'O', 'c'})
	binary.Write(&x, binary.BigEndian, uint32(2))
	for b := 0; b < 256; b++ {
		n := sort.Search(len(ids), func(i int) bool { return int(ids[i][0]) > b })
		binary.Write(&x, binary.BigEndian, uint32(n))
	}
	for _, id := range ids {
		x.Write(id[:])
	}
	for _, id := range ids {
		binary.Write(&x, binary.BigEndian, crcs[id])
	}
	for _, id := range ids {
		binary.Write(&x, binary.BigEndian, offsets[id])
	}
	x.Write(packSum[:])
	idxSum := sha1.Sum(x.Bytes())
	x.Write(idxSum[:])
	return p.Bytes(), x.Bytes(), hex.EncodeToString(packSum[:]), nil
}

// writeIndex writes the index (version 2) of files, sorted by path, as
// they are in the work tree (no unstaged change). Only what the repository's core.checkStat=minimal
// compares is exact (mtime in seconds, size, mode); the rest (ctime, dev,
// inode) cannot be known before the files are written. The index's own
// time, later than every file's, keeps git from taking an entry as racy:
// so a `git status` finds the tree clean without rewriting the index, and
// a read-only tool that runs it writes nothing.
func writeIndex(files []gitFile, blobs map[string]gitObject) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(files)))
	for _, f := range files {
		start := b.Len()
		sec := uint32(f.mtime.Unix())
		mode := uint32(0o100644)
		if f.mode&0o111 != 0 {
			mode = 0o100755
		}
		for _, v := range []uint32{sec, 0, sec, 0, 0, 0, mode, seedUID, seedUID, uint32(len(f.content))} {
			binary.Write(&b, binary.BigEndian, v)
		}
		id := blobs[f.rel].id
		b.Write(id[:])
		binary.Write(&b, binary.BigEndian, uint16(len(f.rel)))
		b.WriteString(f.rel)
		// One to eight NULs, to a multiple of eight.
		pad := 8 - (b.Len()-start)%8
		b.Write(make([]byte, pad))
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// gitStashLog is the stash's reflog (git stash list reads it): one line
// per entry, oldest first, with its commit's committer and subject.
func gitStashLog(r *gitRepo) string {
	var b strings.Builder
	prev := strings.Repeat("0", 40)
	for _, w := range r.stashes {
		var who, subject string
		head, body, _ := strings.Cut(string(w.data), "\n\n")
		for _, l := range strings.Split(head, "\n") {
			if a, ok := strings.CutPrefix(l, "committer "); ok {
				who = a
			}
		}
		subject, _, _ = strings.Cut(body, "\n")
		fmt.Fprintf(&b, "%s %s %s\t%s\n", prev, w.hex(), who, subject)
		prev = w.hex()
	}
	return b.String()
}

// seedUID owns the planted files (images.UID; not imported: probes stays
// free of the image builder).
const seedUID = 10001

// gitIndexLag is how much later than the youngest tracked file the index
// was written: enough that git never takes an entry as racily clean.
const gitIndexLag = 2 * time.Second

// gitSeeds returns the repository of the project's work tree files and
// its files under .git: written at the clone, as old as the oldest file,
// but the index, written last.
func (b Bait) gitSeeds(work []SeedFile) (*gitRepo, []SeedFile) {
	if b.Project == "" {
		return nil, nil // no bait drawn
	}
	dir := b.Canary.Dir
	var files []gitFile
	oldest, youngest := time.Duration(0), time.Duration(1<<62)
	for _, f := range work {
		rel, ok := strings.CutPrefix(f.Path, dir+"/")
		if !ok {
			continue
		}
		files = append(files, gitFile{rel: rel, mode: f.Mode, content: f.Content, role: f.Role, mtime: f.ModTime})
		oldest, youngest = max(oldest, f.Age), min(youngest, f.Age)
	}
	repo, err := buildGitRepo(files, b.User)
	if err != nil {
		panic(err) // gitHistory and the work tree are both ours
	}
	origin := fmt.Sprintf("https://github.com/%s/%s.git", b.User, b.Project)
	g := dir + "/.git/"
	head := repo.head.hex()
	out := []SeedFile{
		{Role: "git-head", Path: g + "HEAD", Content: "ref: refs/heads/" + gitBranch + "\n"},
		{Role: "git-config", Path: g + "config", Content: "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n\tcheckStat = minimal\n" +
			"[remote \"origin\"]\n\turl = " + origin + "\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
			"[branch \"" + gitBranch + "\"]\n\tremote = origin\n\tmerge = refs/heads/" + gitBranch + "\n"},
		{Role: "git-description", Path: g + "description", Content: "Unnamed repository; edit this file 'description' to name the repository.\n"},
		{Role: "git-exclude", Path: g + "info/exclude", Content: "# git ls-files --others --exclude-from=.git/info/exclude\n# Lines that start with '#' are comments.\n# For a project mostly in C, the following would be a good set of\n# exclude patterns (uncomment them if you want to use them):\n# *.[oa]\n# *~\n"},
		{Role: "git-ref", Path: g + "refs/heads/" + gitBranch, Content: head + "\n"},
		{Role: "git-branch", Path: g + "refs/heads/" + gitOtherBranch, Content: repo.parent.hex() + "\n"},
		{Role: "git-stash", Path: g + "refs/stash", Content: repo.stashes[len(repo.stashes)-1].hex() + "\n"},
		{Role: "git-stash-log", Path: g + "logs/refs/stash", Content: gitStashLog(repo)},
		{Role: "git-origin-head", Path: g + "refs/remotes/origin/HEAD", Content: "ref: refs/remotes/origin/" + gitBranch + "\n"},
		{Role: "git-packed-refs", Path: g + "packed-refs", Content: "# pack-refs with: peeled fully-peeled sorted \n" + head + " refs/remotes/origin/" + gitBranch + "\n"},
		{Role: "git-pack", Path: g + "objects/pack/pack-" + repo.packSum + ".pack", Mode: 0o444, Content: string(repo.pack)},
		{Role: "git-pack-idx", Path: g + "objects/pack/pack-" + repo.packSum + ".idx", Mode: 0o444, Content: string(repo.idx)},
		{Role: "git-index", Path: g + "index", Content: string(repo.index)},
	}
	for i := range out {
		if out[i].Mode == 0 {
			out[i].Mode = 0o644
		}
		out[i].Age = oldest
		if out[i].Role == "git-index" {
			out[i].Age = youngest - gitIndexLag
		}
		if !b.Now.IsZero() {
			out[i].ModTime = b.Now.Add(-out[i].Age)
		}
	}
	return repo, out
}
