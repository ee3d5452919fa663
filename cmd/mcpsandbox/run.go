package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/proxy"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
)

const runSynopsis = "run [flags] -- COMMAND [ARG...] | run --print-config vscode|claude|generic [flags] -- COMMAND [ARG...]"

// runRun is `mcpsandbox run`: an MCP server over stdio, in a sandbox, for
// as long as the client on stdin and stdout uses it. Nothing but MCP is
// written to stdout; what the calls did goes to stderr and --log.
func runRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", runSynopsis, stderr)
	opts, finish := runFlags(fs, stderr)
	printConfig := fs.String("print-config", "", "print a client configuration that runs this command (vscode, claude or generic) and exit")
	index := indexURLFlag(fs)
	fromCfg := fs.String("from-config", "", "FILE[#SERVER]: serve a server entry of an MCP client's configuration (Claude Desktop, Cursor, VS Code mcp.json, .mcp.json, Gemini's settings.json) with its command line and environment as written")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := finish(); err != nil {
		return err
	}
	opts.Session.Argv = fs.Args()
	if *fromCfg != "" {
		argv, env, err := fromConfig(*fromCfg, opts.Session.Argv, false, nil)
		if err != nil {
			return err
		}
		opts.Session.Argv, opts.Session.Env = argv, append(opts.Session.Env, env...)
	}
	if len(opts.Session.Argv) == 0 {
		fs.Usage()
		return usageError{"run needs the server command after --"}
	}
	if *printConfig != "" {
		return printRunConfig(stdout, *printConfig, args)
	}
	opts.Stdin, opts.Stdout = stdin, stdout
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if opts.Log != nil {
		defer opts.Log.(io.Closer).Close()
	}
	if _, err := dockerLine(&opts.Session); err != nil {
		return err
	}
	installed, err := launch(ctx, cli, &opts.Session, opts.SamePath, *index, stderr)
	if err != nil {
		return err
	}
	if opts.Session.Source == nil {
		if err := hostScript(&opts.Session, stderr); err != nil {
			return err
		}
	}
	if installed != nil && !installed.Cached {
		fmt.Fprintf(stderr, "mcpsandbox: the package's install scripts ran in a sandbox of their own (a scan reports what they did)\n")
	}
	_, err = proxy.Run(ctx, cli, *opts)
	return err
}

// runFlags defines run's flags on fs; the function it returns checks
// them once parsed and fills in the options.
func runFlags(fs *pflag.FlagSet, stderr io.Writer) (*proxy.RunOptions, func() error) {
	opts := &proxy.RunOptions{Hints: proxy.HintsVerified}
	so := &opts.Session
	session := sessionFlags(fs, serverFlags, stderr)
	fs.BoolVar(&opts.SamePath, "same-path", false, "with --workspace: the server sees it at its absolute host path, so the paths a client sends are the server's too (without it, the client's roots under it are translated to /workspace)")
	env := fs.StringArray("env", nil, "environment variable KEY=VAL for the server, or KEY for the host's value (repeatable)")
	fs.StringArrayVar(&opts.Secrets, "secret", nil, "NAME of an --env variable whose value is watched as a honeytoken: seen leaving the sandbox, it is a secret-exfiltration finding (repeatable)")
	policyFile := fs.String("policy", "", "policy file (as for scan); its run section says per rule or tool: log, correct or deny")
	verdictsFile := fs.String("verdicts", "", "a scan's JSON report: its findings correct the liars' hints (or deny them, by policy) before their first call")
	fs.Var(&opts.Hints, "hints", "what the client is told of the safety hints: verified (corrected toward the safe side once contradicted), strip (none: clients always ask) or pass (as the server sent them)")
	logFile := fs.String("log", "", "append one JSON line per call, phase, finding and hint correction to this file")
	quiet := fs.BoolP("quiet", "q", false, "no human lines on stderr")
	verbose := fs.BoolP("verbose", "v", false, "also print the sandbox's progress to stderr")
	fs.DurationVar(&opts.StaleAfter, "stale-after", proxy.DefaultStaleAfter, "a call the server has not answered for this long is ended for its effects (its answer, later, still goes to the client); negative: never")
	fs.DurationVar(&opts.PhaseInterval, "phase-interval", proxy.DefaultPhaseInterval, "between calls, how often what the server does on its own is collected as a phase; negative: only at the end")
	fs.IntVar(&opts.ClientQueue, "client-queue", proxy.DefaultClientQueue, "messages that may wait for the client to read them; a server that sends more ends the session (a flood problem)")
	fs.Int64Var(&opts.ClientQueueBytes, "client-queue-bytes", proxy.DefaultClientQueueBytes, "bytes that may wait for the client to read them (as --client-queue)")
	fs.DurationVar(&opts.JudgeWait, "judge-wait", proxy.DefaultJudgeWait, "how long a call may wait for the effects of the calls before it to be read and judged; past it the call is refused with a reason (negative: no bound)")
	fs.StringVar(&opts.Name, "name", "", "name of the run (default: the time and the command): its container is kept, stopped, until 'mcpsandbox clean NAME'; 'changes NAME' lists what it changed in the --workspace, 'apply NAME' writes it to the host")
	rm := fs.Bool("rm", false, "remove the container when the run ends: no named run is kept (its workspace changes are lost)")
	return opts, func() error {
		for _, e := range *env {
			k, _, ok := strings.Cut(e, "=")
			if k == "" {
				return usageError{fmt.Sprintf("--env %q: want KEY=VAL or KEY", e)}
			}
			if !ok {
				v, set := os.LookupEnv(k)
				if !set {
					return usageError{fmt.Sprintf("--env %s: not set on the host", k)}
				}
				e = k + "=" + v
			}
			so.Env = append(so.Env, e)
		}
		if err := session(so); err != nil {
			return err
		}
		if err := runName(opts, *rm, fs.Args()); err != nil {
			return err
		}
		if so.Workspace == "" && opts.SamePath {
			return usageError{"--same-path needs --workspace"}
		}
		var err error
		if *policyFile != "" {
			if opts.Verdict.Policy, err = rules.LoadPolicy(*policyFile); err != nil {
				return usageError{err.Error()}
			}
		}
		if *verdictsFile != "" {
			if opts.Preload, err = loadVerdicts(*verdictsFile); err != nil {
				return usageError{err.Error()}
			}
		}
		if *logFile != "" {
			f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return usageError{fmt.Sprintf("--log: %v", err)}
			}
			opts.Log = f
		}
		if !*quiet {
			opts.Notice = stderr
		}
		if *verbose {
			so.Log = stderr
		}
		return nil
	}
}

// runName names the run: --name, or the time and the command; none
// with --rm. A name taken is refused here, before anything starts
// (proxy.Run refuses it again, should another run take it meanwhile).
func runName(opts *proxy.RunOptions, rm bool, argv []string) error {
	if rm {
		if opts.Name != "" {
			return usageError{"--name and --rm together: a named run is kept"}
		}
		return nil
	}
	given := opts.Name != ""
	if given {
		if err := runs.CheckName(opts.Name); err != nil {
			return usageError{"--name: " + err.Error()}
		}
	}
	st, err := runStore()
	if err != nil {
		return err
	}
	opts.Store = st
	if given {
		if _, err := st.Get(opts.Name); err == nil {
			return usageError{fmt.Sprintf("--name %s: a run of that name exists (see 'mcpsandbox runs'; 'mcpsandbox clean %s' removes it)", opts.Name, opts.Name)}
		}
		return nil
	}
	// Two runs of one command in one second: the second gets -2, and so on.
	base := runs.DefaultName(time.Now(), argv)
	for i := 1; i <= maxNameTries; i++ {
		opts.Name = base
		if i > 1 {
			opts.Name = fmt.Sprintf("%s-%d", base[:min(len(base), 96)], i)
		}
		if _, err := st.Get(opts.Name); errors.Is(err, runs.ErrNoRun) {
			return nil
		}
	}
	return usageError{fmt.Sprintf("no free run name after %s-%d: give one with --name", base, maxNameTries)}
}

// maxNameTries bounds the suffixes tried for a default run name.
const maxNameTries = 100

// loadVerdicts reads the findings of a scan's JSON report.
func loadVerdicts(path string) ([]report.Finding, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--verdicts: %w", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("--verdicts %s: not a JSON report: %w", path, err)
	}
	if !strings.HasPrefix(r.SchemaVersion, reportMajor) {
		return nil, fmt.Errorf("--verdicts %s: schema %q, want a report of %s*", path, r.SchemaVersion, reportMajor)
	}
	return r.Findings, nil
}

// reportMajor is the report schema's major version, the reports --verdicts
// reads: fields are only ever added within it.
var reportMajor = report.SchemaVersion[:strings.LastIndex(report.SchemaVersion, ".")+1]

// The clients --print-config writes for.
const (
	clientVSCode  = "vscode"
	clientClaude  = "claude"
	clientGeneric = "generic"
)

// printRunConfig prints a client configuration that runs this command
// line, less --print-config, with this binary's absolute path.
func printRunConfig(stdout io.Writer, client string, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	runArgs := append([]string{"run"}, withoutPrintConfig(args)...)
	entry := map[string]any{"command": exe, "args": runArgs}
	name := serverName(args)
	var v any
	switch client {
	case clientVSCode:
		entry["type"] = "stdio"
		v = map[string]any{"servers": map[string]any{name: entry}}
	case clientClaude:
		v = map[string]any{"mcpServers": map[string]any{name: entry}}
	case clientGeneric:
		v = entry
	default:
		return usageError{fmt.Sprintf("--print-config %q: want %s, %s or %s", client, clientVSCode, clientClaude, clientGeneric)}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// withoutPrintConfig is args less --print-config and its value (before
// the --: after it, everything is the server's), with the host paths
// made absolute: a client starts the command from a directory of its own.
func withoutPrintConfig(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, inline := strings.Cut(a, "=")
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case name == "--print-config":
			if !inline {
				i++
			}
			continue
		case hostPathFlags[name] != nil && inline:
			a = name + "=" + hostPathFlags[name](value)
		case hostPathFlags[name] != nil && i+1 < len(args):
			out = append(out, a)
			i++
			a = hostPathFlags[name](args[i])
		}
		out = append(out, a)
	}
	return out
}

// hostPathFlags make the host path in each flag's value absolute.
var hostPathFlags = map[string]func(string) string{
	"--workspace": absPath, "--log": absPath, "--policy": absPath, "--verdicts": absPath, "--agent": absPath,
	"--mount": absBefore(":"), "--package": absBefore(":/"),
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// absBefore makes the host path before sep absolute (HOST:/TARGET).
func absBefore(sep string) func(string) string {
	return func(v string) string {
		if i := strings.LastIndex(v, sep); i > 0 {
			return absPath(v[:i]) + v[i:]
		}
		return absPath(v)
	}
}

// serverName names the server in a client's configuration: the npm
// package npx runs, or the command's base name, in the characters every
// client takes.
func serverName(args []string) string {
	i := slices.Index(args, "--")
	if i < 0 || i+1 >= len(args) {
		return "server"
	}
	argv := args[i+1:]
	name := filepath.Base(argv[0])
	if name == "npx" || name == "uvx" || name == "node" || name == "python3" || name == "python" {
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				name = a
				break
			}
		}
	}
	name = strings.TrimSuffix(filepath.Base(strings.TrimPrefix(name, "@")), filepath.Ext(name))
	if at := strings.LastIndex(name, "@"); at > 0 {
		name = name[:at]
	}
	name = unsafeName.ReplaceAllString(name, "-")
	if name == "" {
		name = "server"
	}
	return "sandboxed-" + name
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
