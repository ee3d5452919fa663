package contract

import (
	"encoding/json"
	"sort"

	"github.com/mcpsandbox/mcpsandbox/ci/jsonfile"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Version names the file format.
const Version = "mcpsandbox.contract/v1"

// File is a contract.
type File struct {
	Version string `json:"version"`
	Tools   []Tool `json:"tools"`
}

// Tool is one published tool.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations"`
}

// FromReport makes a contract of the report's tools, sorted by name.
func FromReport(r *report.Report) File {
	f := File{Version: Version, Tools: []Tool{}}
	for _, t := range r.Tools {
		f.Tools = append(f.Tools, Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations})
	}
	sort.Slice(f.Tools, func(i, j int) bool { return f.Tools[i].Name < f.Tools[j].Name })
	return f
}

// Write writes a contract file.
func Write(path string, f File) error { return jsonfile.Write(path, "contract", f) }

// Load reads a contract file.
func Load(path string) (File, error) {
	var f File
	err := jsonfile.Read(path, "contract", &f, func() string { return f.Version }, Version)
	return f, err
}
