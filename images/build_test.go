package images_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestBuildTwiceIsANoOpAndImagesRun(t *testing.T) {
	cli := sandboxtest.Docker(t)
	ctx := context.Background()
	first, err := images.Build(ctx, cli, "node", images.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := images.Build(ctx, cli, "node", images.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if second.Built || second.Ref != first.Ref || second.ID != first.ID {
		t.Errorf("second build: %+v, first %+v; want a no-op", second, first)
	}
	if out, errs := sandboxtest.Output(t, cli, "mcpsandbox/node:latest", "node", "-e", "console.log(1)"); out != "1\n" {
		t.Errorf("node -e: stdout %q stderr %q", out, errs)
	}
	if out, errs := sandboxtest.Output(t, cli, "mcpsandbox/node:latest", "npx", "--version"); !strings.Contains(out, ".") {
		t.Errorf("npx --version: stdout %q stderr %q", out, errs)
	}
	if out, errs := sandboxtest.Output(t, cli, "mcpsandbox/node:latest", "sh", "-c", "id -u; stat -c %a /tmp; ls -d /workspace"); out != "10001\n1777\n/workspace\n" {
		t.Errorf("sh: stdout %q stderr %q", out, errs)
	}
	if _, err := os.Stat("/usr/bin/git"); err == nil {
		if out, errs := sandboxtest.Output(t, cli, first.Ref, "sh", "-c", "cd /tmp && git init -q -b main r && cd r && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m one && git log --format=%s"); out != "one\n" {
			t.Errorf("git in the node image: stdout %q stderr %q", out, errs)
		}
	}
	list, err := images.List(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, im := range list {
		for _, tag := range im.Tags {
			found = found || tag == first.Ref
		}
	}
	if !found {
		t.Errorf("images ls does not list %s", first.Ref)
	}
}

func TestPythonImage(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("this host has no /usr/bin/python3 to build the python image from")
	}
	cli := sandboxtest.Docker(t)
	res, err := images.Build(context.Background(), cli, "python", images.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, errs := sandboxtest.Output(t, cli, res.Ref, "python3", "-c", "import json, ssl, sqlite3; print('ok')"); out != "ok\n" {
		t.Errorf("python3: stdout %q stderr %q", out, errs)
	}
}
