package bulk

// install_sandbox.go runs a fetched tree's lifecycle scripts (preinstall,
// install, postinstall, node-gyp's implicit build) in a sandbox: offline,
// in the build image, recorded as the report's install phase; the tree
// they built becomes an image layer on the runtime image, cached by
// name, version, integrity and both images.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/phase"
)

// ScriptRunner runs an installed tree's lifecycle scripts in a sandbox.
// NPM leaves them unrun without one.
type ScriptRunner interface {
	RunScripts(ctx context.Context, t ScriptTree) (InstallRun, error)
}

// ScriptTree is a tree fetched with scripts off whose lockfile marks
// packages with install scripts.
type ScriptTree struct {
	Name, Version, Integrity string
	// Dir is the tree on the host (the install prefix).
	Dir string
	// Scripts are the packages with install scripts, NAME@VERSION.
	Scripts []string
	// Env is the spec's environment (secrets as "" values are given
	// honeytokens of the install's own bait).
	Env []EnvVar
}

// InstallRun is a tree installed in a sandbox.
type InstallRun struct {
	// Image is the runtime image with the built tree at PackageTarget.
	Image string
	// Report is the install's: report.Install and the install phase, in
	// the report's deterministic form, findings not yet judged.
	Report *report.Report
	// Cached is set when both came from the cache: no script ran now.
	Cached bool
	// Failed is set when the scripts exited non-zero: the scan then runs
	// over the tree as fetched (scripts unrun), with the install's report
	// and findings joined to it, rather than losing the package's tools
	// to a script that wanted the network (a prebuilt download, say).
	Failed bool
}

// InstallError is an install that failed in the sandbox: the error says
// why, the report what the scripts did meanwhile.
type InstallError struct {
	Report *report.Report
	Err    error
}

func (e *InstallError) Error() string { return e.Err.Error() }

// Unwrap makes every InstallError an ErrInstall (failed-install).
func (e *InstallError) Unwrap() []error { return []error{e.Err, ErrInstall} }

// InstallCommand is what runs in the install sandbox: npm rebuild in the
// tree, offline, which runs every package's install scripts (and
// node-gyp rebuild where a binding.gyp has none) in dependency order.
// npm's cache lives in the tree for the run and goes with it, so that
// npm itself writes nothing outside the tree; its output goes to stderr,
// which the report keeps.
var InstallCommand = []string{"/bin/sh", "-c", "cd " + PackageTarget + " && npm rebuild --offline --foreground-scripts --no-audit --no-fund --logs-max=0 --cache=" + installNPMCache + " 1>&2; rc=$?; rm -rf " + installNPMCache + "; exit $rc"}

// installNPMCache is npm's cache during the install, inside the tree.
const installNPMCache = PackageTarget + "/.mcpsandbox-npm-cache"

// installEnv is the environment of every install: node-gyp's headers
// from the build image (nodedir=/usr: /usr/include/node, the host node's),
// no bytecode written by gyp's python, no update check.
var installEnv = []string{"npm_config_nodedir=/usr", "npm_config_update_notifier=false", "PYTHONDONTWRITEBYTECODE=1", "CI=true"}

// DefaultInstallTimeout bounds an install's scripts.
const DefaultInstallTimeout = 5 * time.Minute

// installStopMargin is what an install leaves of its caller's deadline
// to stop the sandbox and keep the report.
const installStopMargin = 20 * time.Second

// MaxInstalledTree bounds the built tree read back from the sandbox.
const MaxInstalledTree int64 = 2 << 30

// installRecordVersion changes whenever what the install runs changes:
// the cache key carries it.
const installRecordVersion = "install/1"

// SandboxScripts is the ScriptRunner that runs in the engine.
type SandboxScripts struct {
	Engine sandbox.Engine
	// Base is the install sandbox: agent, user, limits, disk bound, run
	// id; its image, command, environment, package and network are set
	// here (the network is the sinkhole: nothing leaves, attempts are
	// seen).
	Base sandbox.SessionOptions
	// BuildImage gives the build image (built once, when first needed);
	// RuntimeImage is the image the built tree is layered on, the scan's.
	BuildImage   func(ctx context.Context) (string, error)
	RuntimeImage string
	// Cache is the directory of the install records.
	Cache   string
	Timeout time.Duration
	// Seed draws each install's bait (probes.RandomSeed when nil).
	Seed func() uint64

	once     sync.Once
	build    string
	buildErr error
}

// installRecord is what the cache keeps of an install: the image the
// tree became and the install's report.
type installRecord struct {
	Version string         `json:"version"`
	Image   string         `json:"image"`
	Report  *report.Report `json:"report"`
}

func (r *SandboxScripts) buildImage(ctx context.Context) (string, error) {
	r.once.Do(func() { r.build, r.buildErr = r.BuildImage(ctx) })
	return r.build, r.buildErr
}

// RunScripts implements ScriptRunner.
func (r *SandboxScripts) RunScripts(ctx context.Context, t ScriptTree) (InstallRun, error) {
	build, err := r.buildImage(ctx)
	if err != nil {
		return InstallRun{}, fmt.Errorf("%w: the build image: %w", ErrInstall, err)
	}
	buildID, err := r.imageID(ctx, build)
	if err != nil {
		return InstallRun{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	runtimeID, err := r.imageID(ctx, r.RuntimeImage)
	if err != nil {
		return InstallRun{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	key := installKey(t, buildID, runtimeID)
	ref := sandbox.InstalledRepo + ":" + key[:16]
	recPath := filepath.Join(r.Cache, "installs", key+".json")
	if rec, ok := r.cached(ctx, recPath, ref); ok {
		return InstallRun{Image: ref, Report: rec.Report, Cached: true}, nil
	}

	seed := probes.RandomSeed()
	if r.Seed != nil {
		seed = r.Seed()
	}
	bait := probes.NewBait(seed).At(time.Now())
	opts := r.Base
	opts.Image, opts.Argv = build, InstallCommand
	opts.Env = append(append(append([]string{}, opts.Env...), installEnv...), envOfVars(t.Env, bait.Tokens)...)
	opts.Package, opts.PackageTarget = t.Dir, PackageTarget
	opts.Network = sandbox.NetworkSinkhole
	opts.LostKind = "install" // a lost install sandbox is the install's problem
	if err := os.MkdirAll(filepath.Dir(recPath), 0o755); err != nil {
		return InstallRun{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	tree, err := os.CreateTemp(filepath.Dir(recPath), ".tree-*.tar")
	if err != nil {
		return InstallRun{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	defer func() { tree.Close(); os.Remove(tree.Name()) }()
	lw := &limitWriter{w: tree, n: MaxInstalledTree}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultInstallTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		// The install's own bound comes first, with room left to stop it
		// and keep its report: a fetch timeout would leave none.
		if left := time.Until(dl) - installStopMargin; left < timeout {
			timeout = max(left, time.Second).Round(time.Second)
		}
	}
	res, err := phase.Run(ctx, r.Engine, opts, phase.Options{Name: report.PhaseInstall, Timeout: timeout, Bait: &bait, Extract: PackageTarget, ExtractTo: lw})
	rep := installReport(res, t, build, opts.Network)
	if ctx.Err() != nil {
		return InstallRun{}, ctx.Err()
	}
	if lw.over {
		err = fmt.Errorf("the built tree is over %d bytes: refused", MaxInstalledTree)
		rep.Install.Problems = append(rep.Install.Problems, report.Problem{Kind: "install", Message: err.Error()})
	}
	switch {
	case errors.Is(err, sandbox.ErrSandboxLost):
		// What the install did until then is kept; it is no install, and
		// no result: the package is failed (StatusOf), never scanned as
		// fetched as if its scripts had failed (scriptsFailed).
		lostInstall(rep)
		return InstallRun{}, &InstallError{Report: rep, Err: fmt.Errorf("%w: the install sandbox: %w", ErrInstall, err)}
	case err != nil && !errors.Is(err, phase.ErrExtract) && !lw.over:
		return InstallRun{}, fmt.Errorf("%w: the install sandbox: %w", ErrInstall, err)
	case !res.Ended:
		return InstallRun{}, &InstallError{Report: rep, Err: fmt.Errorf("%w: the install scripts did not end within %s", ErrInstall, timeout)}
	case rep.Server.OOMKilled:
		// Killed by the kernel for the sandbox's memory: what the kill cut
		// short (files half written, the runner's own npm still running)
		// is no verdict on the package; it is failed-install, said.
		n := oomInstall(rep, opts.Limits.MemoryMB)
		return InstallRun{}, &InstallError{Report: rep, Err: fmt.Errorf("%w: the install sandbox was killed for memory (its --memory %d MiB) after %d effect(s), which are not judged", ErrInstall, opts.Limits.MemoryMB, n)}
	case res.ExitCode != 0:
		return InstallRun{}, &InstallError{Report: rep, Err: fmt.Errorf("%w: the install scripts failed (exit %d): %s", ErrInstall, res.ExitCode, lastLines(rep.Install.StderrTail, 3))}
	case err != nil:
		return InstallRun{}, &InstallError{Report: rep, Err: fmt.Errorf("%w: %w", ErrInstall, err)}
	}
	runID := opts.RunID
	if err := sandbox.LoadTreeImage(ctx, r.Engine, r.RuntimeImage, tree, ref, runID, fmt.Sprintf("mcpsandbox bulk: %s@%s installed in %s", t.Name, t.Version, build)); err != nil {
		return InstallRun{}, fmt.Errorf("%w: the installed tree's image: %w", ErrInstall, err)
	}
	b, err := json.Marshal(installRecord{Version: installRecordVersion, Image: ref, Report: rep})
	if err == nil {
		err = writeAtomic(recPath, b)
	}
	if err != nil {
		return InstallRun{}, fmt.Errorf("%w: recording the install: %w", ErrInstall, err)
	}
	return InstallRun{Image: ref, Report: rep}, nil
}

// cached returns the record at path when the image it names is there.
func (r *SandboxScripts) cached(ctx context.Context, path, ref string) (installRecord, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return installRecord{}, false
	}
	var rec installRecord
	if json.Unmarshal(b, &rec) != nil || rec.Version != installRecordVersion || rec.Image != ref || rec.Report == nil || rec.Report.Install == nil {
		return installRecord{}, false
	}
	if _, err := r.Engine.ImageInspect(ctx, ref); err != nil {
		return installRecord{}, false // evicted: installed again
	}
	if err := sandbox.TouchImage(ctx, r.Engine, ref); err != nil {
		return installRecord{}, false
	}
	return rec, true
}

func (r *SandboxScripts) imageID(ctx context.Context, ref string) (string, error) {
	in, err := r.Engine.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	return in.ID, nil
}

// installKey names an install by everything that changes it.
func installKey(t ScriptTree, buildID, runtimeID string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%q\x00", installRecordVersion, t.Name, t.Version, t.Integrity, buildID, runtimeID, InstallCommand)
	for _, e := range t.Env {
		if e.Secret {
			fmt.Fprintf(h, "%s secret\x00", e.Name) // a honeytoken, drawn anew
		} else {
			fmt.Fprintf(h, "%s=%q\x00", e.Name, e.Value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// installReport is the install's report: report.Install filled from the
// run, the teardown folded into the install phase (what the scripts left
// running did is theirs), the sandbox's problems kept in Install.
func installReport(res phase.Result, t ScriptTree, build string, network sandbox.NetworkMode) *report.Report {
	rep := res.Report
	if rep == nil {
		rep = report.New()
	}
	in := &report.Install{Command: append([]string{}, InstallCommand...), Image: build, Network: network.String(), Package: PackageTarget,
		Scripts: append([]string{}, t.Scripts...), TimedOut: !res.Ended, StderrTail: rep.Server.StderrTail, Problems: append([]report.Problem{}, rep.Problems...)}
	if res.Ended {
		code := res.ExitCode
		in.ExitCode = &code
	}
	phase := report.Phase{Name: report.PhaseInstall, Effects: report.NewEffects()}
	for _, p := range rep.Phases {
		phase.Effects.Files = append(phase.Effects.Files, p.Effects.Files...)
		phase.Effects.Processes = append(phase.Effects.Processes, p.Effects.Processes...)
		phase.Effects.Network = append(phase.Effects.Network, p.Effects.Network...)
		phase.Effects.FilesOmitted += p.Effects.FilesOmitted
		phase.Effects.FilesTruncated = phase.Effects.FilesTruncated || p.Effects.FilesTruncated
		phase.Effects.FilesUnhashed += p.Effects.FilesUnhashed
	}
	rep.Phases = []report.Phase{phase}
	rep.Problems = []report.Problem{}
	rep.Install = in
	rep.Timing = nil
	return rep
}

// oomInstall is the install's report once the kernel killed its sandbox
// for memory: no exit of the scripts' own, and the effects seen until the
// kill left unjudged (counted in an install problem, which the report
// keeps), as a lost sandbox's end is no verdict on the package. It
// returns how many effects were left.
func oomInstall(rep *report.Report, memoryMB int64) int {
	in := rep.Install
	in.ExitCode, in.TimedOut = nil, false
	n := 0
	for i := range rep.Phases {
		ef := &rep.Phases[i].Effects
		n += len(ef.Files) + len(ef.Processes) + len(ef.Network)
		*ef = report.NewEffects()
	}
	in.Problems = append(in.Problems, report.Problem{Kind: "install", Message: fmt.Sprintf(
		"the install sandbox was killed for memory (--memory %d MiB, exit 137): the %d effect(s) seen until then are not judged; the package is failed-install", memoryMB, n)})
	return n
}

// lostInstall is the install's report once its sandbox was lost: the
// container's end (a kill's 137, or its removal before it ended) is not
// the scripts', so the install neither exited nor timed out, and the
// phase's bound, which a container gone before its end seemed to pass,
// is no problem of it.
func lostInstall(rep *report.Report) {
	in := rep.Install
	in.ExitCode, in.TimedOut = nil, false
	in.Problems = slices.DeleteFunc(in.Problems, func(p report.Problem) bool { return p.Kind == problemRunTimeout })
}

// MergeInstall puts an install's record into the scan's report: Install,
// the install phase first among the phases, and the agent's losses in
// the install counted with the scan's (so that they fail the gate as
// the scan's would). The verdict is then to be run again.
func MergeInstall(rep, install *report.Report) {
	if rep == nil || install == nil || install.Install == nil {
		return
	}
	in := *install.Install
	rep.Install = &in
	rep.Phases = append(append([]report.Phase{}, install.Phases...), rep.Phases...)
	rep.Sandbox.EventsDropped += install.Sandbox.EventsDropped
	rep.Sandbox.EventsTruncated += install.Sandbox.EventsTruncated
}

// InstallEffects counts what an install did outside its package tree:
// files changed there and network attempts (the summary's install
// effects).
func InstallEffects(rep *report.Report) int {
	if rep == nil || rep.Install == nil {
		return 0
	}
	pkg := strings.TrimSuffix(rep.Install.Package, "/")
	n := 0
	for _, p := range rep.Phases {
		if p.Name != report.PhaseInstall {
			continue
		}
		for _, f := range p.Effects.Files {
			if f.Path != pkg && !strings.HasPrefix(f.Path, pkg+"/") {
				n++
			}
		}
		n += len(p.Effects.Network)
	}
	return n
}

// hiddenLockfile is the lockfile npm writes in node_modules as it
// installs: unlike package-lock.json written before the download
// (--package-lock-only), it has read every package, so it marks a
// binding.gyp without an install script (node-gyp's implicit build).
const hiddenLockfile = "node_modules/.package-lock.json"

// scriptPackages lists the packages the tree's lockfiles (the hidden
// one and package-lock.json) mark with install scripts, NAME@VERSION, in
// path order.
func scriptPackages(tree string) ([]string, error) {
	type entry struct {
		Name             string `json:"name"`
		Version          string `json:"version"`
		HasInstallScript bool   `json:"hasInstallScript"`
	}
	all := map[string]entry{}
	for _, name := range []string{hiddenLockfile, "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(name)))
		if errors.Is(err, os.ErrNotExist) && name == hiddenLockfile {
			continue // none when nothing was installed
		}
		if err != nil {
			return nil, err
		}
		var lock struct {
			Packages map[string]entry `json:"packages"`
		}
		if err := json.Unmarshal(b, &lock); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for k, p := range lock.Packages {
			if q, ok := all[k]; ok {
				p.HasInstallScript = p.HasInstallScript || q.HasInstallScript
			}
			all[k] = p
		}
	}
	var out []string
	for _, key := range sortedKeys(all) {
		p := all[key]
		if key == "" || !p.HasInstallScript {
			continue
		}
		name := p.Name
		if name == "" {
			name = key[strings.LastIndex(key, "node_modules/")+len("node_modules/"):]
		}
		out = append(out, name+"@"+p.Version)
	}
	return slices.Compact(out), nil
}

// envOfVars is KEY=VAL for the variables, secrets given tokens' values.
func envOfVars(vars []EnvVar, t probes.Honeytokens) []string {
	env := make([]string, 0, len(vars))
	for _, e := range vars {
		v := e.Value
		if e.Secret {
			v = Honeytoken(e.Name, t)
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// lastLines is the last n non-empty lines of s, on one line.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return report.Printable(strings.Join(lines, "; "))
}

// limitWriter writes at most n bytes, then refuses (over).
type limitWriter struct {
	w    io.Writer
	n    int64
	over bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		l.over = true
		return 0, fmt.Errorf("over the bound of the built tree")
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// runScripts runs the tree's install scripts, if its lockfile marks
// any, through n.Scripts: the scan then runs in the image the built tree
// became, not over the host's tree.
func (n NPM) runScripts(ctx context.Context, s Spec, in *Installed, name, version, integrity string) error {
	scripts, err := scriptPackages(in.Dir)
	if err != nil {
		return fmt.Errorf("%w: %s@%s: %w", ErrInstall, name, version, err)
	}
	if len(scripts) == 0 {
		return nil
	}
	if n.Scripts == nil {
		in.Notes = append(in.Notes, fmt.Sprintf("install scripts not run (%s): scanned as fetched", strings.Join(scripts, ", ")))
		return nil
	}
	run, err := n.Scripts.RunScripts(ctx, ScriptTree{Name: name, Version: version, Integrity: integrity, Dir: in.Dir, Scripts: scripts, Env: s.Env})
	if rep, ok := scriptsFailed(err); ok && ctx.Err() == nil {
		// A script that failed offline (most often a download) does not
		// cost the scan: what it did is judged with the scan's report.
		in.Install = &InstallRun{Report: rep, Failed: true}
		in.Notes = append(in.Notes, fmt.Sprintf("install scripts failed in the sandbox (%v): scanned with the tree as fetched, scripts unrun", err))
		return nil
	}
	if err != nil {
		return err
	}
	in.Install, in.Image, in.Dir = &run, run.Image, ""
	return nil
}

// scriptsFailed is the install's report when err is scripts that ran to
// their end and exited non-zero; not for a bound hit or a sandbox that
// could not run (those stay failed-install).
func scriptsFailed(err error) (*report.Report, bool) {
	var ie *InstallError
	if !errors.As(err, &ie) || ie.Report == nil || ie.Report.Install == nil {
		return nil, false
	}
	in := ie.Report.Install
	if in.TimedOut || in.ExitCode == nil || *in.ExitCode == 0 {
		return nil, false
	}
	return ie.Report, true
}
