package scan

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/docker/docker/api/types/container"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
)

// noContainers is an engine with no container to reap.
type noContainers struct{ sandbox.Engine }

func (noContainers) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	return nil, nil
}

// fill sets every settable field under v to a value that is not its
// zero, named after path where it is a string.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if strings.Count(path, ".") > 4 {
		return // deep enough: a type that holds itself ends here
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("set-" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+".key")
		fill(t, e, path+".value")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, v.Type().NumOut())
			for i := range out {
				out[i] = reflect.Zero(v.Type().Out(i))
			}
			return out
		}))
	case reflect.Interface:
		switch {
		case reflect.TypeFor[*bytes.Buffer]().Implements(v.Type()):
			v.Set(reflect.ValueOf(&bytes.Buffer{}))
		case reflect.TypeFor[*runs.StateDir]().Implements(v.Type()):
			v.Set(reflect.ValueOf(&runs.StateDir{Name: path}))
		default:
			t.Fatalf("%s: an interface fill does not know", path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fill(t, f, path+"."+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("%s: a %s fill does not know", path, v.Kind())
	}
}

// TestScanPassesEverySessionOption holds the scan to its options: every
// field of SessionOptions set in Options reaches the sessions the
// scan opens, but for what the scan sets itself (RunID when empty, Log
// wrapped, and the bait unless NoSeed). A new field of SessionOptions is
// filled and checked without a change here.
func TestScanPassesEverySessionOption(t *testing.T) {
	var given sandbox.SessionOptions
	gv := reflect.ValueOf(&given).Elem()
	for i := range gv.NumField() {
		f, name := gv.Field(i), gv.Type().Field(i).Name
		if !f.CanSet() {
			// The session's own seams (unexported): set through their
			// address, as the scan must pass them on too.
			f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		}
		fill(t, f, name)
		if f.IsZero() {
			t.Fatalf("SessionOptions.%s: not set", name)
		}
	}
	given.Env = []string{"GIVEN=1"}
	log := given.Log

	for _, noSeed := range []bool{true, false} {
		t.Run(fmt.Sprintf("NoSeed=%t", noSeed), func(t *testing.T) {
			seed := uint64(3)
			sc, err := newScanner(context.Background(), noContainers{}, Options{SessionOptions: given, NoSeed: noSeed, BaitSeed: &seed})
			if err != nil {
				t.Fatal(err)
			}
			defer sc.cancel()
			got := sc.sessionOptions()
			want := given
			if lw, ok := got.Log.(*logWriter); !ok || lw.w != log {
				t.Errorf("Log = %#v, want the given writer behind a logWriter", got.Log)
			}
			want.Log = got.Log
			if !noSeed {
				if !slices.Equal(got.Env, append(sc.bait.Env(), given.Env...)) {
					t.Errorf("Env = %q, want the bait's, then %q", got.Env, given.Env)
				}
				if len(got.Seeds) != len(sc.bait.Seeds())+1 || !reflect.DeepEqual(got.Seeds[len(got.Seeds)-1], sc.bait.BoundarySeed()) {
					t.Errorf("Seeds: %d, want the bait's %d and the boundary's", len(got.Seeds), len(sc.bait.Seeds()))
				}
				if tok := sc.bait.Tokens.AWSSecret; len(got.Secrets("x"+tok)) == 0 {
					t.Error("Secrets does not find the bait's honeytoken")
				}
				if !reflect.DeepEqual(got.Placeholders, sc.bait.Placeholders()) {
					t.Errorf("Placeholders = %v, want the bait's", got.Placeholders)
				}
				want.Env, want.Seeds, want.Secrets, want.Placeholders = got.Env, got.Seeds, got.Secrets, got.Placeholders
			}
			if &got.Env[0] == &given.Env[0] {
				t.Error("Env is the given slice, not the session's own")
			}
			gotV, wantV := reflect.ValueOf(got), reflect.ValueOf(want)
			for i := range gotV.NumField() {
				name := gotV.Type().Field(i).Name
				g, w := gotV.Field(i), wantV.Field(i)
				if g.Kind() == reflect.Func {
					if g.Pointer() != w.Pointer() {
						t.Errorf("SessionOptions.%s: not the one given", name)
					}
					continue
				}
				if !deepEqual(g, w) {
					t.Errorf("SessionOptions.%s = %s, want %s", name, show(g), show(w))
				}
			}
		})
	}
}

// deepEqual is reflect.DeepEqual over values that may be unexported
// fields.
func deepEqual(a, b reflect.Value) bool {
	if a.CanInterface() {
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	}
	panic("deepEqual: an unexported " + a.Kind().String())
}

func show(v reflect.Value) string {
	if v.CanInterface() {
		return strings.TrimSpace(fmt.Sprintf("%+v", v.Interface()))
	}
	return v.Kind().String()
}
