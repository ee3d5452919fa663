package scriptmodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// openAI answers a chat completions request.
func (e *Endpoint) openAI(w http.ResponseWriter, path string, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a chat completions request", http.StatusBadRequest)
		return
	}
	t := Turn{API: APIOpenAI.String(), Path: path, Stream: req.Stream, Model: req.Model, Offered: []string{}}
	for _, tool := range req.Tools {
		t.Offered = append(t.Offered, tool.Function.Name)
	}
	for _, m := range req.Messages {
		if m.Role == "tool" || m.Role == "function" {
			t.ToolResults = true
		}
	}
	name, call := e.decide(t)
	id, callID := e.nextID("chatcmpl"), e.nextID("call")
	finish := "stop"
	if call {
		finish = "tool_calls"
	}
	usage := map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": endText}
		if call {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}}}
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": 0, "model": orDefault(req.Model),
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": orDefault(req.Model),
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if call {
		s.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": name, "arguments": ""}}}}, nil))
		s.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": "{}"}}}}, nil))
	} else {
		s.send("", chunk(map[string]any{"content": endText}, nil))
	}
	last := chunk(map[string]any{}, finish)
	last["usage"] = usage
	s.send("", last)
	s.raw("[DONE]")
}

// anthropic answers a messages request.
func (e *Endpoint) anthropic(w http.ResponseWriter, path string, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a messages request", http.StatusBadRequest)
		return
	}
	t := Turn{API: APIAnthropic.String(), Path: path, Stream: req.Stream, Model: req.Model, Offered: []string{}}
	for _, tool := range req.Tools {
		t.Offered = append(t.Offered, tool.Name)
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					t.ToolResults = true
				}
			}
		}
	}
	name, call := e.decide(t)
	id, useID := e.nextID("msg"), e.nextID("toolu")
	stop := "end_turn"
	block := map[string]any{"type": "text", "text": endText}
	if call {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": useID, "name": name, "input": map[string]any{}}
	}
	usage := map[string]int{"input_tokens": 1, "output_tokens": 1}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": orDefault(req.Model),
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": orDefault(req.Model), "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if call {
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": useID, "name": name, "input": map[string]any{}}})
		s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": "{}"}})
	} else {
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": endText}})
	}
	s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 1}})
	s.send("message_stop", map[string]any{"type": "message_stop"})
}

// gemini answers a generateContent or streamGenerateContent request.
// A request that asks for JSON and offers no tools is a client's own
// check (gemini-cli asks who speaks next): it is told the user does.
func (e *Endpoint) gemini(w http.ResponseWriter, r *http.Request, path string, body []byte) {
	var req struct {
		Contents []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a generateContent request", http.StatusBadRequest)
		return
	}
	stream := strings.HasSuffix(path, ":streamGenerateContent")
	model := path[strings.LastIndex(path, "/")+1:]
	model = model[:strings.LastIndex(model, ":")]
	t := Turn{API: APIGemini.String(), Path: path, Stream: stream, Model: model, Offered: []string{}}
	for _, tool := range req.Tools {
		for _, f := range tool.FunctionDeclarations {
			t.Offered = append(t.Offered, f.Name)
		}
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if _, ok := p["functionResponse"]; ok {
				t.ToolResults = true
			}
		}
	}
	name, call := e.decide(t)
	part := map[string]any{"text": endText}
	if call {
		part = map[string]any{"functionCall": map[string]any{"name": name, "args": map[string]any{}}}
	} else if len(t.Offered) == 0 && req.GenerationConfig.ResponseMimeType == "application/json" {
		part = map[string]any{"text": `{"reasoning":"The conversation is over.","next_speaker":"user"}`}
	}
	resp := map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
		"finishReason": "STOP", "index": 0}}, "usageMetadata": map[string]int{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion": orDefault(model)}
	if !stream {
		writeJSON(w, resp)
		return
	}
	if r.URL.Query().Get("alt") == "sse" {
		newSSE(w).send("", resp)
		return
	}
	// Without alt=sse the stream is a JSON array of responses.
	writeJSON(w, []any{resp})
}

func orDefault(model string) string {
	if model == "" {
		return "scripted"
	}
	return model
}

// responses answers an OpenAI Responses API request (what Codex speaks).
func (e *Endpoint) responses(w http.ResponseWriter, path string, body []byte) {
	var req struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  json.RawMessage `json:"input"`
		Tools  []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a responses request", http.StatusBadRequest)
		return
	}
	t := Turn{API: "openai-responses", Path: path, Stream: req.Stream, Model: req.Model, Offered: []string{}}
	// A namespace's tools (Codex puts an MCP server's in one) are
	// offered as NAMESPACE.TOOL, and called by the tool's name in the
	// namespace.
	namespace := map[string][2]string{}
	for _, tool := range req.Tools {
		if tool.Type == "namespace" {
			for _, sub := range tool.Tools {
				full := tool.Name + "." + sub.Name
				namespace[full] = [2]string{tool.Name, sub.Name}
				t.Offered = append(t.Offered, full)
			}
			continue
		}
		if tool.Name != "" {
			t.Offered = append(t.Offered, tool.Name)
		}
	}
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(req.Input, &items) == nil {
		for _, it := range items {
			if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
				t.ToolResults = true
			}
		}
	}
	name, call := e.decide(t)
	id, itemID, callID := e.nextID("resp"), e.nextID("item"), e.nextID("call")
	item := map[string]any{"type": "message", "id": itemID, "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": endText, "annotations": []any{}}}}
	if call {
		item = map[string]any{"type": "function_call", "id": itemID, "status": "completed", "call_id": callID, "name": name, "arguments": "{}"}
		if ns, ok := namespace[name]; ok {
			item["namespace"], item["name"] = ns[0], ns[1]
		}
	}
	usage := map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
		"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
	resp := map[string]any{"id": id, "object": "response", "created_at": 0, "status": "completed", "model": orDefault(req.Model),
		"output": []any{item}, "usage": usage}
	if !req.Stream {
		writeJSON(w, resp)
		return
	}
	s := newSSE(w)
	created := map[string]any{"id": id, "object": "response", "created_at": 0, "status": "in_progress", "model": orDefault(req.Model), "output": []any{}}
	s.send("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": created})
	s.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item})
	s.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item})
	s.send("response.completed", map[string]any{"type": "response.completed", "sequence_number": 3, "response": resp})
}
