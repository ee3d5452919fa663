package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// rawRequest is what the hand-written servers (flood, ambiguous) read of
// a request.
type rawRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Cursor          string `json:"cursor"`
		Name            string `json:"name"`
	} `json:"params"`
}

// rawServer writes JSON-RPC lines to stdout.
type rawServer struct{ out *bufio.Writer }

// send writes the answer to id with result (raw JSON).
func (s rawServer) send(id json.RawMessage, result string) {
	fmt.Fprintf(s.out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	s.out.Flush()
}

// serveRaw reads requests from stdin until it ends, answers initialize as
// server name, and hands every other request to handle; notifications
// and lines that do not decode are skipped.
func serveRaw(name string, handle func(s rawServer, req rawRequest)) {
	s := rawServer{out: bufio.NewWriterSize(os.Stdout, 1<<20)}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	for in.Scan() {
		var req rawRequest
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // notifications
		}
		if req.Method == "initialize" {
			s.send(req.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":%q,"version":"1.0.0"}}`, req.Params.ProtocolVersion, name))
			continue
		}
		handle(s, req)
	}
}
