package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type settings struct {
	Server struct {
		Name    string   `json:"name"`
		Command []string `json:"command"`
		URL     string   `json:"url"`
	} `json:"server"`
	Model string `json:"model"`
	Trust bool   `json:"trust"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "fixtureclient: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	policy := flag.String("policy", "readonly-auto", "readonly-auto, ask-all, no-gate, no-list, hang, peek or kill-parent")
	api := flag.String("api", "openai", "openai or anthropic")
	stream := flag.Bool("stream", false, "ask the model for a stream")
	listTwice := flag.Bool("list-twice", false, "list the tools again before a call, and judge by that listing")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	switch *policy {
	case "peek":
		// A client after the twin's ledger: its parent's memory and the
		// runner's channel (the parent's stdout), through /proc.
		for _, p := range []string{"mem", "environ", "fd/1", "fd/0"} {
			f, err := os.OpenFile(fmt.Sprintf("/proc/%d/%s", os.Getppid(), p), os.O_RDWR, 0)
			if err == nil {
				f.Close()
				fmt.Printf("peek %s: open\n", p)
				continue
			}
			f, err = os.Open(fmt.Sprintf("/proc/%d/%s", os.Getppid(), p))
			if err == nil {
				f.Close()
				fmt.Printf("peek %s: readable\n", p)
				continue
			}
			fmt.Printf("peek %s: %v\n", p, errors.Unwrap(err))
		}
		return nil
	case "kill-parent":
		// A client that ends the twin (its parent) mid-run.
		return syscall.Kill(os.Getppid(), syscall.SIGKILL)
	}
	home, _ := os.UserHomeDir()
	b, err := os.ReadFile(filepath.Join(home, ".fixtureclient", "settings.json"))
	if err != nil {
		return fmt.Errorf("reading settings: %w", err)
	}
	var s settings
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var t mcp.Transport
	if s.Server.URL != "" {
		t = &mcp.StreamableClientTransport{Endpoint: s.Server.URL, MaxRetries: -1}
	} else {
		t = &mcp.CommandTransport{Command: exec.Command(s.Server.Command[0], s.Server.Command[1:]...), TerminateDuration: time.Second}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fixtureclient", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connecting to the server: %w", err)
	}
	defer cs.Close()
	var tools []*mcp.Tool
	if *policy != "no-list" {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = lt.Tools
	}
	if *policy == "hang" {
		// A client that never ends: the harness's time bound ends it.
		time.Sleep(time.Hour)
	}
	prefix := "mcp__" + s.Server.Name + "__"
	m := model{url: s.Model, api: *api, stream: *stream}
	name, err := m.turn(ctx, prompt, tools, prefix, "")
	if err != nil {
		return err
	}
	if name == "" {
		fmt.Println("the model ended the conversation")
		return nil
	}
	toolName := strings.TrimPrefix(name, prefix)
	if *listTwice {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = lt.Tools
	}
	var readOnly bool
	for _, tl := range tools {
		if tl.Name == toolName && tl.Annotations != nil {
			readOnly = tl.Annotations.ReadOnlyHint
		}
	}
	approved := s.Trust
	switch *policy {
	case "readonly-auto":
		approved = approved || readOnly
	case "no-gate":
		approved = true
	}
	if !approved {
		fmt.Printf("Allow %s? [y/N] ", toolName)
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		approved = err == nil && strings.TrimSpace(line) == "y"
		if !approved {
			fmt.Println("\nnot approved: the call is skipped")
		}
	}
	result := "The user refused the call."
	if approved {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolName, Arguments: map[string]any{}})
		if err != nil {
			return fmt.Errorf("tools/call: %w", err)
		}
		result = "ok"
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				result = tc.Text
			}
		}
		fmt.Printf("called %s: %s\n", toolName, result)
	}
	_, err = m.turn(ctx, prompt, tools, prefix, result)
	return err
}

// model is the agent loop's model client.
type model struct {
	url, api string
	stream   bool
	callID   string
	callName string
}

// turn asks the model once; result, if set, is the tool's result for the
// call the model asked for before. It returns the tool the model asks
// for ("" none).
func (m *model) turn(ctx context.Context, prompt string, tools []*mcp.Tool, prefix, result string) (string, error) {
	var body map[string]any
	var path string
	if m.api == "anthropic" {
		path = "/v1/messages"
		msgs := []any{map[string]any{"role": "user", "content": prompt}}
		if result != "" {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": m.callID, "name": m.callName, "input": map[string]any{}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": m.callID, "content": result}}})
		}
		var ts []any
		for _, t := range tools {
			ts = append(ts, map[string]any{"name": prefix + t.Name, "description": t.Description, "input_schema": t.InputSchema})
		}
		body = map[string]any{"model": "scripted", "max_tokens": 256, "messages": msgs, "tools": ts, "stream": m.stream}
	} else {
		path = "/v1/chat/completions"
		msgs := []any{map[string]any{"role": "user", "content": prompt}}
		if result != "" {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": m.callID, "type": "function", "function": map[string]any{"name": m.callName, "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": m.callID, "content": result})
		}
		var ts []any
		for _, t := range tools {
			ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": prefix + t.Name, "description": t.Description, "parameters": t.InputSchema}})
		}
		body = map[string]any{"model": "scripted", "messages": msgs, "tools": ts, "stream": m.stream}
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+path, bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking the model: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the model answered %s: %s", resp.Status, raw)
	}
	var id, name string
	if m.stream {
		id, name, err = parseStream(m.api, raw)
	} else {
		id, name, err = parseWhole(m.api, raw)
	}
	m.callID, m.callName = id, name
	return name, err
}

func parseWhole(api string, raw []byte) (string, string, error) {
	if api == "anthropic" {
		var r struct {
			Content []struct {
				Type, ID, Name string
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return "", "", err
		}
		for _, c := range r.Content {
			if c.Type == "tool_use" {
				return c.ID, c.Name, nil
			}
		}
		return "", "", nil
	}
	var r struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", "", err
	}
	if len(r.Choices) > 0 && len(r.Choices[0].Message.ToolCalls) > 0 {
		tc := r.Choices[0].Message.ToolCalls[0]
		return tc.ID, tc.Function.Name, nil
	}
	return "", "", nil
}

func parseStream(api string, raw []byte) (string, string, error) {
	var id, name string
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		if api == "anthropic" {
			var ev struct {
				Type         string `json:"type"`
				ContentBlock struct {
					Type, ID, Name string
				} `json:"content_block"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use" {
				id, name = ev.ContentBlock.ID, ev.ContentBlock.Name
			}
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name string `json:"name"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return "", "", errors.New("a stream chunk does not decode")
		}
		for _, c := range ch.Choices {
			for _, tc := range c.Delta.ToolCalls {
				if tc.ID != "" {
					id = tc.ID
				}
				if tc.Function.Name != "" {
					name = tc.Function.Name
				}
			}
		}
	}
	return id, name, nil
}
