package k8stest

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk/k8sjob"
)

func decode(t *testing.T, o k8sjob.Options) *batchv1.Job {
	t.Helper()
	var b bytes.Buffer
	if err := k8sjob.Write(&b, o); err != nil {
		t.Fatal(err)
	}
	var j batchv1.Job
	if err := yaml.UnmarshalStrict(b.Bytes(), &j); err != nil {
		t.Fatalf("strict decoding into batch/v1 Job: %v\n%s", err, b.String())
	}
	return &j
}

func options() k8sjob.Options {
	return k8sjob.Options{
		Name: "scan-registry", Namespace: "scans",
		Image: "registry.example/mcpsandbox-bulk:1", Shards: 5, Parallelism: 2,
		ListsConfigMap: "mcpsandbox-lists", Lists: []string{"npm.txt", "server.json"},
		ResultsClaim: "mcpsandbox-results", BulkArgs: []string{"-j", "2"},
		CPU: "2", Memory: "8Gi",
	}
}

func TestTheJobDecodesStrictlyIntoTheAPITypes(t *testing.T) {
	j := decode(t, options())
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Name != "scan-registry" || j.Namespace != "scans" {
		t.Errorf("type and name: %s %s %s/%s", j.APIVersion, j.Kind, j.Namespace, j.Name)
	}
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode = %v, want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || *s.Completions != 5 || s.Parallelism == nil || *s.Parallelism != 2 {
		t.Errorf("completions %v parallelism %v, want 5 and 2", s.Completions, s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 1 {
		t.Errorf("backoffLimitPerIndex = %v, want 1", s.BackoffLimitPerIndex)
	}
	for _, msg := range validation.IsDNS1123Label(j.Name + "-4") {
		t.Errorf("a pod's hostname: %s", msg)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod restartPolicy = %q: an Indexed Job's pods restart through the Job", pod.RestartPolicy)
	}
	if pod.ShareProcessNamespace == nil || !*pod.ShareProcessNamespace {
		t.Error("the runner reads the sandboxes' /proc: the pod must share its process namespace")
	}
}

// byName finds a container among the pod's init and app containers.
func byName(pod corev1.PodSpec, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

func mountPath(c *corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

func TestTheEngineIsANativeSidecarSharingItsDataRoot(t *testing.T) {
	pod := decode(t, options()).Spec.Template.Spec
	if len(pod.InitContainers) == 0 || pod.InitContainers[0].Name != "engine" {
		t.Fatal("the engine must be the first init container: the others need it")
	}
	engine, bulk, images := byName(pod, "engine"), byName(pod, "bulk"), byName(pod, "images")
	if bulk == nil || images == nil {
		t.Fatal("no bulk or images container")
	}
	if engine.RestartPolicy == nil || *engine.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("the engine must be a native sidecar (restartPolicy Always), or the Job never completes")
	}
	if engine.StartupProbe == nil || engine.StartupProbe.Exec == nil {
		t.Error("the engine needs a startup probe: the images step must wait for it")
	}
	if engine.SecurityContext == nil || engine.SecurityContext.Privileged == nil || !*engine.SecurityContext.Privileged {
		t.Error("Docker-in-Docker must be privileged")
	}
	if bulk.SecurityContext == nil || bulk.SecurityContext.Privileged == nil || !*bulk.SecurityContext.Privileged {
		t.Error("the runner enters the sandboxes' namespaces: it must be privileged")
	}
	for _, vol := range []string{"docker-root", "engine-socket", "scratch"} {
		want := mountPath(engine, vol)
		for _, c := range []*corev1.Container{bulk, images} {
			if got := mountPath(c, vol); got == "" || got != want {
				t.Errorf("%s mounts %s at %q, the engine at %q: paths the engine gives or takes must be the same", c.Name, vol, got, want)
			}
		}
	}
	if got := mountPath(engine, "docker-root"); got != k8sjob.DockerRoot {
		t.Errorf("the engine's data root is at %q, want %q", got, k8sjob.DockerRoot)
	}
	for _, v := range pod.Volumes {
		if (v.Name == "docker-root" || v.Name == "scratch") && v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir: the engine's layers must not sit on an overlay", v.Name)
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func TestTheCompletionIndexIsTheShard(t *testing.T) {
	o := options()
	pod := decode(t, o).Spec.Template.Spec
	bulk := byName(pod, "bulk")
	args := strings.Join(bulk.Args, " ")
	if want := fmt.Sprintf("--shard $(%s)/%d", k8sjob.ShardEnv, o.Shards); !strings.Contains(args, want) {
		t.Errorf("bulk args %q lack %q", args, want)
	}
	var from string
	for _, e := range bulk.Env {
		if e.Name == k8sjob.ShardEnv && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			from = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if from != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("%s comes from %q, not the completion index annotation", k8sjob.ShardEnv, from)
	}
	// The kubelet expands $(VAR) only for variables the container declares;
	// any other is passed on as it is, and bulk would read "$(X)/5".
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		declared := map[string]bool{}
		for _, e := range c.Env {
			declared[e.Name] = true
		}
		for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
			for _, m := range varRef.FindAllStringSubmatch(a, -1) {
				if !declared[m[1]] {
					t.Errorf("container %s: %q names $(%s), which it does not declare", c.Name, a, m[1])
				}
			}
		}
	}
	for _, l := range o.Lists {
		if !slices.Contains(bulk.Args, k8sjob.ListsDir+"/"+l) {
			t.Errorf("bulk args %q lack the list %s", args, l)
		}
	}
	if mountPath(bulk, "results") != k8sjob.ResultsDir || mountPath(bulk, "lists") != k8sjob.ListsDir {
		t.Error("results and lists are not mounted where the args say")
	}
	var claim, cm string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
		if v.ConfigMap != nil {
			cm = v.ConfigMap.Name
		}
	}
	if claim != o.ResultsClaim || cm != o.ListsConfigMap {
		t.Errorf("volumes: claim %q config map %q, want %q and %q", claim, cm, o.ResultsClaim, o.ListsConfigMap)
	}
}

func TestEveryMountNamesAVolume(t *testing.T) {
	pod := decode(t, options()).Spec.Template.Spec
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		vols[v.Name] = true
	}
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("container %s mounts %s, which is not a volume", c.Name, m.Name)
			}
		}
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			t.Errorf("container name %s: %s", c.Name, msg)
		}
	}
}

func TestDefaultsDecodeToo(t *testing.T) {
	j := decode(t, k8sjob.Options{Image: "i", Shards: 1, ListsConfigMap: "l", Lists: []string{"a"}, ResultsClaim: "r"})
	if *j.Spec.Parallelism != 1 || j.Name != k8sjob.DefaultName {
		t.Errorf("defaults: parallelism %d name %q", *j.Spec.Parallelism, j.Name)
	}
}

// The strict decoding is what makes the tests above worth anything: a
// misspelt field must fail it, not be dropped.
func TestStrictDecodingRefusesAnUnknownField(t *testing.T) {
	var b bytes.Buffer
	if err := k8sjob.Write(&b, options()); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(b.String(), "completionMode:", "completionMod:", 1)
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(bad), &j); err == nil {
		t.Error("a misspelt field decoded without an error")
	}
}

// What kubectl reads (sigs.k8s.io/yaml, a YAML 1.1 reader) is what was
// given, for strings YAML 1.1 resolves to another type, YAML syntax,
// control characters and the line breaks of either YAML version.
func TestHostileStringsReadBackAsKubectlReadsThem(t *testing.T) {
	for _, s := range []string{
		"yes", "no", "on", "off", "y", "N", "True", "null", "~", "",
		"0x1F", "017", "0o17", "0b101", "1_000", "1e3", ".inf", "-.Inf", ".nan", "1:20", "190:20:30",
		"2001-12-14", "=", "<<", "- x", "key: value", "a #b", "#c", "{a: 1}", "[1]", "&a", "*a", "!!int 1", "|", ">",
		"a\nb", "\n", "a\r\nb", "\r", "\t", "\x00", "nul\x00in", "\x01\x1f", "\x7f", "\x1b[31m",
		"\u0080", "\u0085", "a\u0085b", "\u2028", "x\u2028y\u2029z", "\ufeff", "\ufffe", "\uffff", "😀", "\u202e",
		strings.Repeat("a b ", 1<<15), strings.Repeat("x\n", 1<<12),
	} {
		o := options()
		o.BulkArgs = []string{s, s}
		if s != "" {
			o.Image, o.DindImage = s, s
		}
		pod := decode(t, o).Spec.Template.Spec
		bulk, engine := byName(pod, "bulk"), byName(pod, "engine")
		got := bulk.Args[4:6]
		if got[0] != s || got[1] != s {
			t.Errorf("%.40q: bulk's args read back as %.80q", s, got)
		}
		if s != "" && (bulk.Image != s || engine.Image != s) {
			t.Errorf("%.40q: the images read back as %.40q and %.40q", s, bulk.Image, engine.Image)
		}
	}
}
