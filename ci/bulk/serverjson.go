package bulk

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The MCP Registry's server.json (schema
// https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json),
// the parts a scan needs.
type serverJSON struct {
	Name     string       `json:"name"`
	Version  string       `json:"version"`
	Packages []packageDef `json:"packages"`
	Remotes  []struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"remotes"`
}

type packageDef struct {
	RegistryType     string     `json:"registryType"`
	Identifier       string     `json:"identifier"`
	Version          string     `json:"version"`
	RuntimeHint      string     `json:"runtimeHint"`
	RuntimeArguments []argument `json:"runtimeArguments"`
	Transport        struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"transport"`
	PackageArguments     []argument `json:"packageArguments"`
	EnvironmentVariables []input    `json:"environmentVariables"`
}

// input is the schema's Input (and KeyValueInput: Name).
type input struct {
	Name       string   `json:"name"`
	Value      string   `json:"value"`
	Default    string   `json:"default"`
	IsRequired bool     `json:"isRequired"`
	IsSecret   bool     `json:"isSecret"`
	Choices    []string `json:"choices"`
}

// argument is a PositionalArgument or a NamedArgument (type "named",
// Name the flag with its dashes).
type argument struct {
	input
	Type      string `json:"type"`
	ValueHint string `json:"valueHint"`
}

// resolved is an input's value for the scan: its fixed value, else its
// default, else its first choice; ok is false when it has none.
func (in input) resolved() (string, bool) {
	switch {
	case in.Value != "":
		return in.Value, true
	case in.Default != "":
		return in.Default, true
	case len(in.Choices) > 0:
		return in.Choices[0], true
	}
	return "", false
}

// parseServerJSON reads one server.json: one spec per package, one per
// remote.
func parseServerJSON(where string, v any) ([]Spec, []InputError) {
	b, _ := json.Marshal(v)
	var sj serverJSON
	if err := json.Unmarshal(b, &sj); err != nil {
		return nil, []InputError{{Where: where, Msg: fmt.Sprintf("not a server.json: %v", err)}}
	}
	if len(sj.Packages) == 0 && len(sj.Remotes) == 0 {
		return nil, []InputError{{Where: where, Msg: "a server.json with neither packages nor remotes"}}
	}
	var specs []Spec
	var bad []InputError
	for i, p := range sj.Packages {
		w := fmt.Sprintf("%s/packages/%d", where, i)
		s, err := packageSpec(p)
		if err != nil {
			bad = append(bad, InputError{Where: w, Msg: err.Error()})
			continue
		}
		s.Source = w
		specs = append(specs, s)
	}
	for i, r := range sj.Remotes {
		specs = append(specs, Spec{Kind: KindRemote, Name: r.URL, Source: fmt.Sprintf("%s/remotes/%d", where, i),
			Status: StatusNotScannedHere, Why: whyRemote + " (" + r.Type + ")"})
	}
	return specs, bad
}

func packageSpec(p packageDef) (Spec, error) {
	if p.Identifier == "" {
		return Spec{}, fmt.Errorf("package without identifier")
	}
	s := Spec{Name: p.Identifier, Version: p.Version}
	switch p.RegistryType {
	case "npm":
		s.Kind = KindNPM
		if !validNPMName(p.Identifier) || strings.ContainsAny(p.Version, ":/") {
			return Spec{}, fmt.Errorf("npm package %q@%q: not a registry name and version", p.Identifier, p.Version)
		}
	case "oci":
		s.Kind = KindImage
		if p.Version != "" && !strings.Contains(p.Identifier, ":") && !strings.Contains(p.Identifier, "@") {
			s.Name, s.Version = p.Identifier+":"+p.Version, ""
		}
	case "pypi":
		s.Kind = KindPyPI
		name, extras, version, err := pythonPackageArg(p.Identifier)
		if err != nil || len(extras) > 0 || version != "" {
			return Spec{}, fmt.Errorf("PyPI package %q: not a project name", p.Identifier)
		}
		s.Name = name
		if p.Version != "" {
			if _, err := parsePyVersion(p.Version); err != nil {
				return Spec{}, fmt.Errorf("PyPI package %q version %q: %w", p.Identifier, p.Version, err)
			}
			s.Version = "==" + p.Version
		}
	case "mcpb":
		s.Kind, s.Status, s.Why = KindOther, StatusNotScannedHere, whyMCPB
	default:
		s.Kind, s.Status, s.Why = KindOther, StatusNotScannedHere, fmt.Sprintf("%q packages are not scanned here", p.RegistryType)
	}
	if t := p.Transport.Type; t != "" && t != "stdio" && s.Status == 0 {
		s.Status, s.Why = StatusNotScannedHere, fmt.Sprintf("transport %q: only stdio servers are scanned here", t)
	}
	var missing []string
	for _, a := range p.PackageArguments {
		val, ok := a.resolved()
		label := a.Name
		if label == "" {
			label = a.ValueHint
		}
		switch {
		case a.IsSecret && !ok:
			missing = append(missing, label+" (a secret argument)")
			continue
		case !ok && a.IsRequired:
			missing = append(missing, label)
			continue
		case !ok:
			continue // optional, no value: left out
		}
		if a.Type == "named" {
			s.Args = append(s.Args, a.Name, val)
		} else {
			s.Args = append(s.Args, val)
		}
	}
	for _, e := range p.EnvironmentVariables {
		if e.Name == "" {
			return Spec{}, fmt.Errorf("environment variable without name")
		}
		val, ok := e.resolved()
		switch {
		case ok:
			s.Env = append(s.Env, EnvVar{Name: e.Name, Value: val})
		case e.IsSecret:
			s.Env = append(s.Env, EnvVar{Name: e.Name, Secret: true})
		case e.IsRequired:
			missing = append(missing, e.Name)
		}
	}
	if len(missing) > 0 && s.Status == 0 {
		s.Status, s.Why = StatusNeedsConfig, "required, with no value or default: "+strings.Join(missing, ", ")
	}
	return s, nil
}
