package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/clientverdict"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientadapter"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientrun"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// clientVerdict ends `mcpsandbox client` with its verdict's exit code
// (see clientreport.Decision.ExitCode); the report says why.
type clientVerdict struct {
	code    int
	verdict clientreport.Verdict
}

func (e clientVerdict) Error() string { return "client verdict " + e.verdict.String() }

func runClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("client", "client [flags] -- CLIENT_COMMAND [ARG...]", stderr)
	adapterName := fs.String("adapter", "", "how the client is pointed at the server and the model, and told a server is trusted: a built-in ("+strings.Join(clientadapter.Names(), ", ")+") or an adapter file (JSON)")
	printAdapter := fs.String("print-adapter", "", "print a built-in adapter's file, to start one's own from, and exit")
	transportName := fs.String("transport", "", "the twin's transport the client is pointed at: stdio or http (default: the adapter's first)")
	session := sessionFlags(fs, flagImage|flagCode, stderr)
	prompt := fs.String("prompt", clientrun.DefaultPrompt, "what the client is asked")
	timeout := fs.Duration("timeout", clientrun.DefaultTimeout, "bound on each client run (each leg)")
	env := fs.StringArray("env", nil, "environment variable KEY=VAL for the client (repeatable)")
	noControl := fs.Bool("no-control", false, "leave out the positive control (a REFUTED is then unbacked)")
	format := fs.String("format", "", "report format on stdout or --out: text or json (default: text on a terminal, else json)")
	out := fs.String("out", "", "write the report to this file instead of stdout")
	jsonOut := fs.String("json", "", "also write the JSON report to this file")
	junit := fs.String("junit", "", "also write a JUnit test case to this file")
	agentPath := agentFlag(fs) // looked for only when the client runs
	verbose := fs.BoolP("verbose", "v", false, "print progress to stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *printAdapter != "" {
		src, ok := clientadapter.Source(*printAdapter)
		if !ok {
			return usageError{fmt.Sprintf("--print-adapter %q: built-ins are %s", *printAdapter, strings.Join(clientadapter.Names(), ", "))}
		}
		var b bytes.Buffer
		json.Indent(&b, src, "", "  ")
		fmt.Fprintln(stdout, b.String())
		return nil
	}
	command := fs.Args()
	if len(command) == 0 {
		return usageError{"no client command given (after --)"}
	}
	if *adapterName == "" {
		return usageError{"--adapter: want a built-in (" + strings.Join(clientadapter.Names(), ", ") + ") or an adapter file"}
	}
	a, err := clientadapter.Load(*adapterName)
	if err != nil {
		return usageError{err.Error()}
	}
	if *transportName != "" && *transportName != "stdio" && *transportName != "http" {
		return usageError{fmt.Sprintf("--transport %q: want stdio or http", *transportName)}
	}
	if *timeout <= 0 {
		return usageError{fmt.Sprintf("--timeout %s: want more than 0", *timeout)}
	}
	if *format == "" {
		*format = "json"
		if *out == "" && isTerminal(stdout) {
			*format = "text"
		}
	}
	if *format != "text" && *format != "json" {
		return usageError{fmt.Sprintf("--format %q: want text or json", *format)}
	}
	for _, e := range *env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return usageError{fmt.Sprintf("--env %q: want KEY=VAL", e)}
		}
	}
	opts := clientrun.Options{Judge: clientverdict.Judge{}, Command: command, Adapter: a, TwinTransport: *transportName, Prompt: *prompt, ClientEnv: *env,
		Timeout: *timeout, NoControl: *noControl, SessionOptions: sandbox.SessionOptions{Limits: sandbox.DefaultLimits(), RunID: label.NewRunID()}}
	// The image, the mounts and the package.
	if err := session(&opts.SessionOptions); err != nil {
		return err
	}
	if *verbose {
		opts.Log = stderr
	}
	if err := clientrun.Preflight(opts); err != nil {
		return usageError{err.Error()}
	}
	var cli sandbox.Engine
	if a.Missing == "" {
		// An adapter that names a missing precondition runs nothing.
		ag, err := sandbox.FindAgent(*agentPath)
		if err != nil {
			return err
		}
		opts.Agent = ag
		c, err := sandbox.Connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		cli = c
		// A client's launcher line (npx -y PKG), fetched as a server's is.
		so := opts.SessionOptions
		so.Argv = opts.Command
		if _, err := launch(ctx, c, &so, false, "", stderr); err != nil {
			return err
		}
		opts.Command, so.Argv = so.Argv, nil
		opts.SessionOptions = so
	}
	rep, runErr := clientrun.Run(ctx, cli, opts)
	if err := writeClientReport(rep, *format, *out, *jsonOut, *junit, stdout); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return runErr
	}
	if code := rep.ExitCode(); code != 0 {
		return clientVerdict{code: code, verdict: rep.Verdict}
	}
	return nil
}

// writeClientReport writes the report in format to out (stdout if
// empty), and the JSON and JUnit files asked for.
func writeClientReport(rep *clientreport.Report, format, out, jsonOut, junit string, stdout io.Writer) error {
	write := func(path string, f func(io.Writer) error) error {
		if path == "" {
			return f(stdout)
		}
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return err
		}
		return os.WriteFile(path, b.Bytes(), 0o644)
	}
	main := rep.WriteJSON
	if format == "text" {
		main = rep.WriteText
	}
	if err := write(out, main); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if jsonOut != "" {
		if err := write(jsonOut, rep.WriteJSON); err != nil {
			return fmt.Errorf("writing the JSON report: %w", err)
		}
	}
	if junit != "" {
		if err := write(junit, rep.WriteJUnit); err != nil {
			return fmt.Errorf("writing the JUnit report: %w", err)
		}
	}
	return nil
}
