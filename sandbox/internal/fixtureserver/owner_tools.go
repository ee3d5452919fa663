package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The "owner" set is a server with bookkeeping of its own, as real ones
// have: every call, whatever the tool, appends to ~/.fixture/log,
// rewrites ~/.fixture/counters.json (to a temporary name, renamed over)
// and reports to a telemetry host. Its tools are honest about what they
// do themselves: a job lock made by one tool and removed by another, an
// append-only JSON-lines store rewritten whole (newest record first), a
// spawn of a program that is not installed. None of that is a lie of the
// tools': only the telemetry breaks a closed-world claim.

// TelemetryHost is where every owner call reports.
const TelemetryHost = "telemetry.fixture.example"

// ownerDir is the server's own directory, made as it starts.
func ownerDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".fixture")
}

// Paths of the owner tools' own files, in the workspace.
const (
	ownerJobLock = "/workspace/.owner/job.lock"
	ownerStore   = "/workspace/.owner/store.jsonl"
)

var ownerCalls int

// bookkeep is what every owner call does besides its work.
func bookkeep(ctx context.Context, tool string) {
	ownerCalls++
	dir := ownerDir()
	if f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		fmt.Fprintf(f, "call %d %s\n", ownerCalls, tool)
		f.Close()
	}
	b, _ := json.Marshal(map[string]any{"calls": ownerCalls, "last": tool})
	tmp := filepath.Join(dir, "counters.json.tmp")
	if os.WriteFile(tmp, append(b, '\n'), 0o644) == nil {
		os.Rename(tmp, filepath.Join(dir, "counters.json"))
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+TelemetryHost+"/v1/events", strings.NewReader(`{"event":"call"}`))
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

type saveArgs struct {
	Text string `json:"text" jsonschema:"the record to save"`
}

func addOwnerTools(s *mcp.Server) {
	os.MkdirAll(ownerDir(), 0o755)
	os.WriteFile(filepath.Join(ownerDir(), "counters.json"), []byte(`{"calls":0}`+"\n"), 0o644)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}
	additive := &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: no()}
	mcp.AddTool(s, &mcp.Tool{Name: "owner_status", Description: "Reports the server's status. Read-only.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			bookkeep(ctx, "owner_status")
			return text("ok"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "owner_search", Description: "Searches nothing. Read-only.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			bookkeep(ctx, "owner_search")
			return text("no match"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "owner_begin", Description: "Starts a job: takes its lock. Additive.", Annotations: additive},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			bookkeep(ctx, "owner_begin")
			os.MkdirAll(filepath.Dir(ownerJobLock), 0o755)
			return text("locked"), nil, os.WriteFile(ownerJobLock, []byte(fmt.Sprintln(os.Getpid())), 0o644)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "owner_end", Description: "Ends the job: releases its lock. Additive.", Annotations: additive},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			bookkeep(ctx, "owner_end")
			return text("unlocked"), nil, os.Remove(ownerJobLock)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "owner_save", Description: "Saves a record; records are only ever added (newest first).", Annotations: additive},
		func(ctx context.Context, req *mcp.CallToolRequest, in saveArgs) (*mcp.CallToolResult, any, error) {
			bookkeep(ctx, "owner_save")
			old, _ := os.ReadFile(ownerStore)
			line, _ := json.Marshal(map[string]string{"text": in.Text})
			os.MkdirAll(filepath.Dir(ownerStore), 0o755)
			tmp := ownerStore + ".tmp"
			if err := os.WriteFile(tmp, append(append(line, '\n'), old...), 0o644); err != nil {
				return nil, nil, err
			}
			return text("saved"), nil, os.Rename(tmp, ownerStore)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "owner_spawn", Description: "Runs an optional helper if it is installed. Read-only.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			bookkeep(ctx, "owner_spawn")
			// As Node's spawn does: the child looks the program up in PATH
			// itself, execve by execve (Go's exec.Command would look it up
			// in the parent and run nothing), and the tool answers at once.
			cmd := exec.Command(os.Args[0], "execvp", "missing-prog", "--version")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go cmd.Wait()
			return text("helper started"), nil, nil
		})
}

// execvp runs argv[0] as execvp does, trying each directory of PATH in
// turn; it returns only when none has it (127, as a shell says).
func execvp(argv []string) int {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		syscall.Exec(filepath.Join(dir, argv[0]), argv, os.Environ())
	}
	return 127
}
