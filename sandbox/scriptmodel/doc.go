// Package scriptmodel is a scripted model endpoint: it speaks the OpenAI
// chat completions and responses, Anthropic messages and Gemini
// generateContent APIs (streaming and not), and answers a client's first turn by calling one
// tool, picked by its name's stem (alpha, whatever the client calls it:
// mcp__twin__alpha, twin_alpha), then ends the conversation. No real
// model and no network: `mcpsandbox client` runs it on the sandbox's
// loopback, so that a client's agent loop can be driven to one tool call.
package scriptmodel
