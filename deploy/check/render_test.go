package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// objects is one rendering of a kustomization, decoded into Kubernetes API types.
type objects struct {
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    map[string]*corev1.Service
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	pdbs        map[string]*policyv1.PodDisruptionBudget
}

// render builds deploy/<dir> with kustomize and decodes every object strictly: a field the
// API type does not have (a typo, a wrong indentation) fails, and so does a kind the check
// does not know.
func render(t *testing.T, dir string) objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("..", dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	o := objects{
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{},
		deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
	}
	for _, res := range resMap.Resources() {
		b, err := res.MarshalJSON()
		if err != nil {
			t.Fatalf("%s: %v", res.CurId(), err)
		}
		name := res.GetName()
		var target any
		switch res.GetKind() {
		case "ConfigMap":
			o.configMaps[name] = &corev1.ConfigMap{}
			target = o.configMaps[name]
		case "Secret":
			o.secrets[name] = &corev1.Secret{}
			target = o.secrets[name]
		case "Service":
			o.services[name] = &corev1.Service{}
			target = o.services[name]
		case "Deployment":
			o.deployments[name] = &appsv1.Deployment{}
			target = o.deployments[name]
		case "Job":
			o.jobs[name] = &batchv1.Job{}
			target = o.jobs[name]
		case "PodDisruptionBudget":
			o.pdbs[name] = &policyv1.PodDisruptionBudget{}
			target = o.pdbs[name]
		default:
			t.Fatalf("%s: kind %s is not one the check knows", dir, res.GetKind())
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(target); err != nil {
			t.Fatalf("%s: %s %s does not decode as its API type: %v\n%s", dir, res.GetKind(), name, err, b)
		}
	}
	return o
}

// configEnvVars are the environment variables internal/config reads (config.FromEnv): the
// string constants passed to os.Getenv and getenv in internal/config/config.go.
func configEnvVars(t *testing.T) map[string]bool {
	t.Helper()
	path := filepath.Join("..", "..", "internal", "config", "config.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	vars := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var fn string
		switch f := call.Fun.(type) {
		case *ast.Ident:
			fn = f.Name
		case *ast.SelectorExpr:
			if x, ok := f.X.(*ast.Ident); ok {
				fn = x.Name + "." + f.Sel.Name
			}
		}
		if fn != "os.Getenv" && fn != "getenv" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			name, _ := strconv.Unquote(lit.Value)
			vars[name] = true
		}
		return true
	})
	if !vars["DATABASE_URL"] || !vars["TEMPORAL_ADDRESS"] {
		t.Fatalf("found no config variables in %s: %v", path, vars)
	}
	return vars
}

var kustomizations = []string{"base", "overlays/temporal-cloud-api-key", "overlays/temporal-cloud-mtls"}

// TestManifestsRenderToWorkingObjects checks, for the base and each overlay, what a cluster
// would need to run tickgate: the migration Job, the worker and API Deployments with probes
// on /healthz and /readyz and resource requests, the Service reaching the API pods, a
// PodDisruptionBudget per Deployment, every referenced ConfigMap and Secret present, and
// every environment variable the pods get one that tickgate reads.
func TestManifestsRenderToWorkingObjects(t *testing.T) {
	known := configEnvVars(t)
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			o := render(t, dir)
			job := o.jobs["tickgate-migrate"]
			if job == nil {
				t.Fatalf("no migration Job")
			}
			if args := job.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, []string{"migrate"}) {
				t.Errorf("migration Job runs %v, want [migrate]", args)
			}
			if rp := job.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
				t.Errorf("migration Job restartPolicy %q: a Job needs OnFailure or Never", rp)
			}
			checkPod(t, o, known, "job/tickgate-migrate", job.Spec.Template.Spec, false)

			for name, cmd := range map[string]string{"tickgate-worker": "worker", "tickgate-api": "api"} {
				d := o.deployments[name]
				if d == nil {
					t.Fatalf("no Deployment %s", name)
				}
				if !slices.Equal(d.Spec.Template.Spec.Containers[0].Args, []string{cmd}) {
					t.Errorf("%s runs %v, want [%s]", name, d.Spec.Template.Spec.Containers[0].Args, cmd)
				}
				sel, err := metav1LabelSelector(d.Spec.Selector.MatchLabels)
				if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					t.Errorf("%s: selector %v does not match its pods' labels %v", name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
				}
				if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
					t.Errorf("%s: want at least 2 replicas (tickgate runs as several processes), got %v", name, d.Spec.Replicas)
				}
				checkPod(t, o, known, "deployment/"+name, d.Spec.Template.Spec, true)
				covered := false
				for _, pdb := range o.pdbs {
					s, err := metav1LabelSelector(pdb.Spec.Selector.MatchLabels)
					if err == nil && s.Matches(labels.Set(d.Spec.Template.Labels)) {
						covered = true
						if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
							t.Errorf("PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", pdb.Name)
						}
						if pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
							t.Errorf("PodDisruptionBudget %s: minAvailable %s blocks every drain of %d replicas", pdb.Name, pdb.Spec.MinAvailable, *d.Spec.Replicas)
						}
					}
				}
				if !covered {
					t.Errorf("%s: no PodDisruptionBudget selects its pods", name)
				}
			}

			svc := o.services["tickgate-api"]
			if svc == nil {
				t.Fatalf("no Service tickgate-api")
			}
			api := o.deployments["tickgate-api"]
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(api.Spec.Template.Labels)) {
				t.Errorf("Service tickgate-api selects %v, the API pods are labelled %v", svc.Spec.Selector, api.Spec.Template.Labels)
			}
			for _, p := range svc.Spec.Ports {
				if containerPort(api.Spec.Template.Spec.Containers[0], p.TargetPort.String()) == 0 {
					t.Errorf("Service port %s targets %s, which the API container does not expose", p.Name, p.TargetPort.String())
				}
			}
		})
	}
}

// TestCloudOverlaysConnectSecurely checks that each Temporal Cloud overlay gives the
// workers and APIs credentials: an API key from a Secret, or a client certificate and key
// mounted where TEMPORAL_TLS_CERT/KEY point.
func TestCloudOverlaysConnectSecurely(t *testing.T) {
	apiKey := render(t, "overlays/temporal-cloud-api-key")
	mtls := render(t, "overlays/temporal-cloud-mtls")
	for _, name := range []string{"tickgate-worker", "tickgate-api"} {
		env := podEnv(apiKey, apiKey.deployments[name].Spec.Template.Spec)
		if env["TEMPORAL_API_KEY"] == "" {
			t.Errorf("api-key overlay: %s gets no TEMPORAL_API_KEY", name)
		}
		if !strings.HasSuffix(env["TEMPORAL_ADDRESS"], ".tmprl.cloud:7233") {
			t.Errorf("api-key overlay: %s TEMPORAL_ADDRESS %q is not a Temporal Cloud endpoint", name, env["TEMPORAL_ADDRESS"])
		}

		spec := mtls.deployments[name].Spec.Template.Spec
		env = podEnv(mtls, spec)
		for _, v := range []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"} {
			path := env[v]
			if path == "" {
				t.Errorf("mtls overlay: %s gets no %s", name, v)
				continue
			}
			mounted := false
			for _, m := range spec.Containers[0].VolumeMounts {
				if strings.HasPrefix(path, m.MountPath+"/") {
					for _, vol := range spec.Volumes {
						if vol.Name == m.Name && vol.Secret != nil {
							mounted = true
						}
					}
				}
			}
			if !mounted {
				t.Errorf("mtls overlay: %s %s=%s is not inside a mounted Secret", name, v, path)
			}
		}
	}
}

// externalSecrets are created by the operator, not by the manifests (a TLS key pair is not
// something to commit), and may be referenced without being rendered.
var externalSecrets = map[string]bool{"temporal-cloud-tls": true}

// checkPod checks one pod template: references resolve, the image is tickgate's, the env
// is tickgate's, and (for long-running pods) probes and resource requests are set.
func checkPod(t *testing.T, o objects, known map[string]bool, what string, spec corev1.PodSpec, serving bool) {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: want one container, got %d", what, len(spec.Containers))
	}
	c := spec.Containers[0]
	if !strings.HasPrefix(c.Image, "ghcr.io/tickgate/tickgate:") {
		t.Errorf("%s: image %q is not tickgate's", what, c.Image)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("%s: cpu and memory requests are required, got %v", what, c.Resources.Requests)
	}
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil && o.configMaps[src.ConfigMapRef.Name] == nil:
			t.Errorf("%s: ConfigMap %s is not in the manifests", what, src.ConfigMapRef.Name)
		case src.SecretRef != nil && o.secrets[src.SecretRef.Name] == nil:
			t.Errorf("%s: Secret %s is not in the manifests", what, src.SecretRef.Name)
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil && o.secrets[v.Secret.SecretName] == nil && !externalSecrets[v.Secret.SecretName] {
			t.Errorf("%s: volume %s mounts Secret %s, which is not in the manifests", what, v.Name, v.Secret.SecretName)
		}
	}
	for name := range podEnv(o, spec) {
		if !known[name] {
			t.Errorf("%s: sets %s, which tickgate's config does not read", what, name)
		}
	}
	if !serving {
		return
	}
	for probe, want := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if want == nil || want.HTTPGet == nil {
			t.Errorf("%s: no HTTP probe on %s", what, probe)
			continue
		}
		if want.HTTPGet.Path != probe {
			t.Errorf("%s: probe on %s, want %s", what, want.HTTPGet.Path, probe)
		}
		port := containerPort(c, want.HTTPGet.Port.String())
		if port == 0 {
			t.Errorf("%s: probe port %s is not a container port", what, want.HTTPGet.Port.String())
		}
	}
	// The probed port is the one the process listens on.
	env := podEnv(o, spec)
	listen := env["TICKGATE_HTTP_ADDR"]
	if c.Args[0] == "worker" {
		listen = env["TICKGATE_WORKER_METRICS_ADDR"]
	}
	if len(c.Ports) == 0 || !strings.HasSuffix(listen, fmt.Sprintf(":%d", c.Ports[0].ContainerPort)) || !strings.HasPrefix(listen, "0.0.0.0:") {
		t.Errorf("%s: listens on %q but exposes %v (it must listen on all interfaces, on the exposed port)", what, listen, c.Ports)
	}
}

// podEnv is the container's environment as the kubelet builds it: envFrom sources first,
// then env (values from Secrets resolved when present).
func podEnv(o objects, spec corev1.PodSpec) map[string]string {
	c := spec.Containers[0]
	env := map[string]string{}
	for _, src := range c.EnvFrom {
		if src.ConfigMapRef != nil && o.configMaps[src.ConfigMapRef.Name] != nil {
			for k, v := range o.configMaps[src.ConfigMapRef.Name].Data {
				env[k] = v
			}
		}
		if src.SecretRef != nil && o.secrets[src.SecretRef.Name] != nil {
			s := o.secrets[src.SecretRef.Name]
			for k, v := range s.StringData {
				env[k] = v
			}
			for k, v := range s.Data {
				env[k] = string(v)
			}
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

func containerPort(c corev1.Container, port string) int32 {
	for _, p := range c.Ports {
		if p.Name == port || strconv.Itoa(int(p.ContainerPort)) == port {
			return p.ContainerPort
		}
	}
	return 0
}

func metav1LabelSelector(match map[string]string) (labels.Selector, error) {
	if len(match) == 0 {
		return nil, fmt.Errorf("empty selector")
	}
	return labels.SelectorFromSet(match), nil
}
