package scriptmodel

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"mcp__twin__beta", "mcp__twin__alpha"}, "mcp__twin__alpha"},
		{[]string{"twin_alpha", "alpha"}, "alpha"},
		{[]string{"twin.alpha", "read_file"}, "twin.alpha"},
		{[]string{"mcp_twin_alpha"}, "mcp_twin_alpha"},
		{[]string{"alphabet", "notalpha"}, ""},
		{nil, ""},
	} {
		got, ok := Match(tc.names, "alpha")
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Match(%v) = %q %t, want %q", tc.names, got, ok, tc.want)
		}
	}
}

func post(t *testing.T, e *Endpoint, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w
}

const openAITools = `"tools":[{"type":"function","function":{"name":"mcp__twin__alpha"}},{"type":"function","function":{"name":"mcp__twin__beta"}}]`

func TestOpenAI(t *testing.T) {
	e := New(Options{Tool: "beta"})
	w := post(t, e, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],`+openAITools+`}`)
	var r struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || len(r.Choices) != 1 || len(r.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("%v: %s", err, w.Body)
	}
	if tc := r.Choices[0].Message.ToolCalls[0]; tc.Function.Name != "mcp__twin__beta" || tc.Function.Arguments != "{}" || r.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("tool call %+v", r.Choices[0])
	}
	// The tool's result (or refusal) ends the conversation.
	w = post(t, e, "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user"},{"role":"assistant"},{"role":"tool","content":"no"}],`+openAITools+`}`)
	if !strings.Contains(w.Body.String(), `"content":"Done."`) || !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") || strings.Contains(w.Body.String(), "tool_calls") {
		t.Errorf("second turn:\n%s", w.Body)
	}
	turns, _ := e.Turns()
	if len(turns) != 2 || turns[0].Action != ActionToolCall || turns[1].Action != ActionEnd || !turns[1].ToolResults || turns[0].Matched != "mcp__twin__beta" {
		t.Errorf("turns %+v", turns)
	}
}

func TestOpenAIStreamToolCall(t *testing.T) {
	e := New(Options{Tool: "alpha"})
	w := post(t, e, "/chat/completions", `{"stream":true,"messages":[{"role":"user"}],`+openAITools+`}`)
	var name, args string
	for _, line := range strings.Split(w.Body.String(), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, tc := range ch.Choices[0].Delta.ToolCalls {
			name += tc.Function.Name
			args += tc.Function.Arguments
		}
	}
	if name != "mcp__twin__alpha" || args != "{}" || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("streamed call %q(%q):\n%s", name, args, w.Body)
	}
}

func TestAnthropic(t *testing.T) {
	e := New(Options{Tool: "alpha"})
	tools := `"tools":[{"name":"mcp__twin__alpha"},{"name":"mcp__twin__beta"}]`
	w := post(t, e, "/v1/messages", `{"model":"claude","messages":[{"role":"user","content":"hi"}],`+tools+`}`)
	var r struct {
		Content []struct{ Type, Name string }
		Stop    string `json:"stop_reason"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || len(r.Content) != 1 || r.Content[0].Type != "tool_use" || r.Content[0].Name != "mcp__twin__alpha" || r.Stop != "tool_use" {
		t.Fatalf("%v: %s", err, w.Body)
	}
	w = post(t, e, "/v1/messages", `{"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"tool_result","content":"x"}]}],`+tools+`}`)
	for _, ev := range []string{"event: message_start", "event: content_block_start", `"text":"Done."`, "event: message_stop"} {
		if !strings.Contains(w.Body.String(), ev) {
			t.Errorf("stream lacks %s:\n%s", ev, w.Body)
		}
	}
	// A streamed first turn calls the tool.
	e.SetTool("beta")
	w = post(t, e, "/v1/messages", `{"stream":true,"messages":[{"role":"user","content":"hi"}],`+tools+`}`)
	if !strings.Contains(w.Body.String(), `"name":"mcp__twin__beta"`) || !strings.Contains(w.Body.String(), `"partial_json":"{}"`) {
		t.Errorf("streamed tool_use:\n%s", w.Body)
	}
}

func TestGemini(t *testing.T) {
	e := New(Options{Tool: "alpha"})
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"mcp_twin_alpha"},{"name":"mcp_twin_beta"}]}]}`
	w := post(t, e, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body)
	if !strings.HasPrefix(w.Body.String(), "data: ") || !strings.Contains(w.Body.String(), `"functionCall":{"args":{},"name":"mcp_twin_alpha"}`) {
		t.Errorf("stream:\n%s", w.Body)
	}
	w = post(t, e, "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"parts":[{"functionResponse":{"name":"x"}}]}],"tools":[{"functionDeclarations":[{"name":"alpha"}]}]}`)
	if !strings.Contains(w.Body.String(), `"text":"Done."`) {
		t.Errorf("after the result:\n%s", w.Body)
	}
	// The client's own question (who speaks next) gets JSON.
	w = post(t, e, "/v1beta/models/flash:generateContent", `{"contents":[],"generationConfig":{"responseMimeType":"application/json"}}`)
	if !strings.Contains(w.Body.String(), `next_speaker`) {
		t.Errorf("next speaker:\n%s", w.Body)
	}
}

// A client that asks again and again is not driven in a loop, a huge
// body is refused, and the turns kept are bounded.
func TestBounds(t *testing.T) {
	e := New(Options{Tool: "alpha", MaxCalls: 2, MaxTurns: 3, MaxBody: 1 << 10})
	for range 5 {
		post(t, e, "/v1/chat/completions", `{"messages":[{"role":"user"}],`+openAITools+`}`)
	}
	turns, dropped := e.Turns()
	if len(turns) != 3 || dropped != 2 {
		t.Fatalf("kept %d, dropped %d", len(turns), dropped)
	}
	if turns[0].Action != ActionToolCall || turns[1].Action != ActionToolCall || turns[2].Action != ActionEnd {
		t.Errorf("actions %v %v %v", turns[0].Action, turns[1].Action, turns[2].Action)
	}
	if w := post(t, e, "/v1/messages", `{"x":"`+strings.Repeat("a", 2<<10)+`"}`); w.Code != http.StatusRequestEntityTooLarge || e.Refused() != 1 {
		t.Errorf("huge body: %d, refused %d", w.Code, e.Refused())
	}
	if w := post(t, e, "/v1/messages", `not json`); w.Code != http.StatusBadRequest {
		t.Errorf("bad body: %d", w.Code)
	}
	long := strings.Repeat("x", 500) + "_alpha"
	e = New(Options{Tool: "alpha"})
	w := post(t, e, "/v1/messages", `{"messages":[],"tools":[{"name":"`+long+`"}]}`)
	if !strings.Contains(w.Body.String(), long) {
		t.Error("the answer does not name the tool whole")
	}
	if turns, _ := e.Turns(); len(turns[0].Offered[0]) != maxName || len(turns[0].Matched) != maxName {
		t.Errorf("a long name: offered %d bytes, matched %d", len(turns[0].Offered[0]), len(turns[0].Matched))
	}
}

// The Responses API, as Codex speaks it: an MCP server's tools in a
// namespace, called by name within it; the output's result ends it.
func TestResponses(t *testing.T) {
	e := New(Options{Tool: "alpha"})
	tools := `"tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"mcp__twin","tools":[{"type":"function","name":"alpha"},{"type":"function","name":"beta"}]}]`
	w := post(t, e, "/v1/responses", `{"model":"m","stream":true,"input":[{"type":"message","role":"user"}],`+tools+`}`)
	for _, want := range []string{"event: response.created", "event: response.output_item.done", `"name":"alpha"`, `"namespace":"mcp__twin"`, `"type":"function_call"`, "event: response.completed"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("stream lacks %s:\n%s", want, w.Body)
		}
	}
	w = post(t, e, "/v1/responses", `{"input":[{"type":"function_call_output","call_id":"c","output":"ok"}],`+tools+`}`)
	if !strings.Contains(w.Body.String(), `"output_text"`) || strings.Contains(w.Body.String(), "function_call") {
		t.Errorf("after the output:\n%s", w.Body)
	}
	turns, _ := e.Turns()
	if turns[0].Matched != "mcp__twin.alpha" || turns[0].Action != ActionToolCall || !turns[1].ToolResults {
		t.Errorf("turns %+v", turns)
	}
}
