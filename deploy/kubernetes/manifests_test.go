package kubernetes

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizations are every directory a user applies with kubectl apply -k.
var kustomizations = []string{"reference-server", "conformance", "load", "examples/mtls", "examples/s3-results"}

// rendered is one kustomization's output, decoded strictly by kind.
type rendered struct {
	dir         string
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	jobs        map[string]*batchv1.Job
	configMaps  map[string]*corev1.ConfigMap
	pvcs        map[string]*corev1.PersistentVolumeClaim
	pvs         map[string]*corev1.PersistentVolume
}

// render builds dir as kubectl apply -k does (kustomize's krusty).
func render(t *testing.T, dir string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decodeAll(t, dir, out)
}

func decodeAll(t *testing.T, dir string, out []byte) *rendered {
	t.Helper()
	r := &rendered{
		dir:         dir,
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
		jobs:        map[string]*batchv1.Job{},
		configMaps:  map[string]*corev1.ConfigMap{},
		pvcs:        map[string]*corev1.PersistentVolumeClaim{},
		pvs:         map[string]*corev1.PersistentVolume{},
	}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		where := fmt.Sprintf("%s: %s %s", dir, head.Kind, head.Metadata.Name)
		if !dns1123.MatchString(head.Metadata.Name) {
			t.Errorf("%s: name is not a DNS-1123 label", where)
		}
		switch gvk := head.APIVersion + " " + head.Kind; gvk {
		case "apps/v1 Deployment":
			r.deployments[head.Metadata.Name] = strict[appsv1.Deployment](t, where, doc)
		case "v1 Service":
			r.services[head.Metadata.Name] = strict[corev1.Service](t, where, doc)
		case "batch/v1 Job":
			r.jobs[head.Metadata.Name] = strict[batchv1.Job](t, where, doc)
		case "v1 ConfigMap":
			r.configMaps[head.Metadata.Name] = strict[corev1.ConfigMap](t, where, doc)
		case "v1 PersistentVolumeClaim":
			r.pvcs[head.Metadata.Name] = strict[corev1.PersistentVolumeClaim](t, where, doc)
		case "v1 PersistentVolume":
			r.pvs[head.Metadata.Name] = strict[corev1.PersistentVolume](t, where, doc)
		default:
			t.Errorf("%s: unexpected object %s", where, gvk)
		}
	}
	return r
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// strict decodes doc into T, failing on any field T does not have.
func strict[T any](t *testing.T, where string, doc []byte) *T {
	t.Helper()
	v := new(T)
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Errorf("%s: does not decode strictly into %T: %v", where, *v, err)
	}
	return v
}

func TestManifests(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			r := render(t, dir)
			for name, d := range r.deployments {
				r.checkDeployment(t, name, d)
			}
			for name, j := range r.jobs {
				r.checkPod(t, "Job "+name, &j.Spec.Template.Spec)
				if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
					t.Errorf("Job %s: restartPolicy %q, want Never", name, j.Spec.Template.Spec.RestartPolicy)
				}
				checkLabels(t, "Job "+name, j.Labels, j.Spec.Template.Labels)
			}
			if j := r.jobs["oipkit-load"]; j != nil {
				r.checkLoad(t, j)
			}
			if j := r.jobs["oipkit-conformance"]; j != nil {
				r.checkConformance(t, j)
			}
		})
	}
}

// TestExpectedObjects pins what each base provides, so that a renamed or
// dropped object does not pass unnoticed.
func TestExpectedObjects(t *testing.T) {
	want := map[string][]string{
		"reference-server":    {"Deployment oipkit-reference", "Service oipkit-reference"},
		"conformance":         {"Job oipkit-conformance", "PersistentVolumeClaim oipkit-conformance-reports", "ConfigMap oipkit-conformance"},
		"load":                {"Job oipkit-load", "Job oipkit-load-merge", "PersistentVolumeClaim oipkit-results", "ConfigMap oipkit-load"},
		"examples/s3-results": {"PersistentVolume oipkit-results-s3", "Job oipkit-load", "Job oipkit-load-merge"},
		"examples/mtls": {"Deployment oipkit-reference", "Service oipkit-reference", "Job oipkit-conformance",
			"Job oipkit-load", "Job oipkit-load-merge"},
	}
	for dir, objs := range want {
		r := render(t, dir)
		for _, o := range objs {
			kind, name, _ := strings.Cut(o, " ")
			var found bool
			switch kind {
			case "Deployment":
				found = r.deployments[name] != nil
			case "Service":
				found = r.services[name] != nil
			case "Job":
				found = r.jobs[name] != nil
			case "PersistentVolumeClaim":
				found = r.pvcs[name] != nil
			case "PersistentVolume":
				found = r.pvs[name] != nil
			case "ConfigMap":
				found = r.configMap(name) != nil
			}
			if !found {
				t.Errorf("%s: no %s", dir, o)
			}
		}
	}
}

// configMap finds a generated ConfigMap by its name before the hash suffix.
func (r *rendered) configMap(name string) *corev1.ConfigMap {
	if cm := r.configMaps[name]; cm != nil {
		return cm
	}
	for n, cm := range r.configMaps {
		if i := strings.LastIndexByte(n, '-'); i > 0 && n[:i] == name {
			return cm
		}
	}
	return nil
}

func checkLabels(t *testing.T, where string, objLabels, podLabels map[string]string) {
	t.Helper()
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/component"} {
		if objLabels[k] == "" || podLabels[k] != objLabels[k] {
			t.Errorf("%s: label %s = %q on the object, %q on its pods", where, k, objLabels[k], podLabels[k])
		}
	}
}

// checkPod checks what every oipkit pod must have: the hardened security
// context, resources, every volume mounted and defined, every environment
// reference resolvable.
func (r *rendered) checkPod(t *testing.T, where string, pod *corev1.PodSpec) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext must be non-root with the RuntimeDefault seccomp profile: %+v", where, psc)
	}
	if psc != nil && (psc.FSGroup == nil || *psc.FSGroup != *psc.RunAsUser) {
		t.Errorf("%s: fsGroup must be the user's group, so that mounted Secrets and volumes are readable", where)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: oipkit does not talk to the Kubernetes API: automountServiceAccountToken must be false", where)
	}
	if len(pod.InitContainers) > 0 {
		t.Errorf("%s: unexpected init containers", where)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		if _, dup := volumes[v.Name]; dup {
			t.Errorf("%s: volume %s defined twice", where, v.Name)
		}
		volumes[v.Name] = v
		r.checkVolume(t, where, v)
	}
	mounted := map[string]bool{}
	for _, c := range pod.Containers {
		cw := where + " container " + c.Name
		checkContainer(t, cw, c)
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			if _, dup := env[e.Name]; dup {
				t.Errorf("%s: env %s defined twice", cw, e.Name)
			}
			env[e.Name] = e
			r.checkEnvSource(t, cw, e)
		}
		for _, s := range append(append([]string(nil), c.Command...), c.Args...) {
			for _, ref := range envRefs(s) {
				if _, ok := env[ref]; !ok {
					t.Errorf("%s: %q refers to $(%s), which is not in the container's env (it would stay literal)", cw, s, ref)
				}
			}
		}
		var tmp bool
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				t.Errorf("%s: mounts undefined volume %s", cw, m.Name)
			}
			mounted[m.Name] = true
			tmp = tmp || m.MountPath == "/tmp"
			for _, ref := range envRefs(m.SubPathExpr) {
				if _, ok := env[ref]; !ok {
					t.Errorf("%s: subPathExpr %q refers to $(%s), not in env", cw, m.SubPathExpr, ref)
				}
			}
			if v := volumes[m.Name]; v.Secret != nil && !m.ReadOnly {
				t.Errorf("%s: Secret volume %s mounted writable", cw, m.Name)
			}
		}
		if !tmp {
			t.Errorf("%s: the root filesystem is read-only, so /tmp needs a volume", cw)
		}
		r.checkTLSFiles(t, cw, c, volumes)
	}
	for name := range volumes {
		if !mounted[name] {
			t.Errorf("%s: volume %s is not mounted", where, name)
		}
	}
}

func checkContainer(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no securityContext", where)
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Errorf("%s: allowPrivilegeEscalation must be false", where)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("%s: readOnlyRootFilesystem must be true", where)
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Errorf("%s: runAsNonRoot must be true", where)
	case sc.Privileged != nil && *sc.Privileged:
		t.Errorf("%s: privileged", where)
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
		t.Errorf("%s: capabilities must drop ALL and add none: %+v", where, sc.Capabilities)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		t.Errorf("%s: CPU and memory requests are required (scheduling a load generator blind skews its results)", where)
	}
	if lim.Memory().IsZero() {
		t.Errorf("%s: a memory limit is required", where)
	} else if lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("%s: memory limit %v below request %v", where, lim.Memory(), req.Memory())
	}
	image, tag, _ := strings.Cut(c.Image, ":")
	if path.Base(image) != "oipkit" || tag == "" || tag == "latest" {
		t.Errorf("%s: image %q: want oipkit with a pinned tag", where, c.Image)
	}
	if len(c.Command) > 0 {
		t.Errorf("%s: command overrides the image's entrypoint (oipkit): use args", where)
	}
	if len(c.Args) == 0 || !slices.Contains([]string{"serve", "conform", "load", "report"}, c.Args[0]) {
		t.Errorf("%s: args %q do not start with an oipkit command", where, c.Args)
	}
}

// envRefs lists the $(NAME) references Kubernetes expands in s ($$ escapes).
func envRefs(s string) []string {
	var refs []string
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		if s[i+1] == '$' {
			i++
			continue
		}
		if s[i+1] == '(' {
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				refs = append(refs, s[i+2:i+j])
				i += j
			}
		}
	}
	return refs
}

func (r *rendered) checkEnvSource(t *testing.T, where string, e corev1.EnvVar) {
	t.Helper()
	if e.ValueFrom == nil {
		return
	}
	switch {
	case e.ValueFrom.ConfigMapKeyRef != nil:
		ref := e.ValueFrom.ConfigMapKeyRef
		cm := r.configMaps[ref.Name]
		if cm == nil {
			t.Errorf("%s: env %s from ConfigMap %s, which this kustomization does not make", where, e.Name, ref.Name)
		} else if _, ok := cm.Data[ref.Key]; !ok {
			t.Errorf("%s: env %s from key %s, which ConfigMap %s lacks", where, e.Name, ref.Key, ref.Name)
		}
	case e.ValueFrom.FieldRef != nil:
	default:
		t.Errorf("%s: env %s from an unexpected source", where, e.Name)
	}
}

// secrets are the Secrets users create (deploy/README.md) and the keys the
// manifests read from them.
var secrets = map[string][]string{
	"oipkit-server-tls": {"tls.crt", "tls.key", "ca.crt"},
	"oipkit-client-tls": {"ca.crt", "tls.crt", "tls.key"},
}

func (r *rendered) checkVolume(t *testing.T, where string, v corev1.Volume) {
	t.Helper()
	switch {
	case v.PersistentVolumeClaim != nil:
		pvc := r.pvcs[v.PersistentVolumeClaim.ClaimName]
		if pvc == nil {
			t.Errorf("%s: volume %s claims %s, which this kustomization does not make", where, v.Name, v.PersistentVolumeClaim.ClaimName)
		} else if pvc.Spec.VolumeName != "" && r.pvs[pvc.Spec.VolumeName] == nil {
			t.Errorf("%s: claim %s binds volume %s, which this kustomization does not make", where, pvc.Name, pvc.Spec.VolumeName)
		}
	case v.Secret != nil:
		if _, ok := secrets[v.Secret.SecretName]; !ok {
			t.Errorf("%s: volume %s from unknown Secret %s", where, v.Name, v.Secret.SecretName)
		}
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o007 != 0 {
			t.Errorf("%s: Secret volume %s must not be readable by others (defaultMode)", where, v.Name)
		}
	case v.EmptyDir != nil:
		if v.EmptyDir.SizeLimit == nil {
			t.Errorf("%s: emptyDir %s without a sizeLimit", where, v.Name)
		}
	default:
		t.Errorf("%s: volume %s of an unexpected kind", where, v.Name)
	}
}

// checkTLSFiles: every file a TLS flag names is a key of a Secret mounted
// read-only at its directory.
func (r *rendered) checkTLSFiles(t *testing.T, where string, c corev1.Container, volumes map[string]corev1.Volume) {
	t.Helper()
	for _, flag := range []string{"--ca", "--cert", "--key", "--tls-cert", "--tls-key", "--tls-client-ca"} {
		file, ok := flagValue(c.Args, flag)
		if !ok {
			continue
		}
		var found bool
		for _, m := range c.VolumeMounts {
			v := volumes[m.Name]
			if v.Secret == nil || path.Dir(file) != m.MountPath {
				continue
			}
			found = slices.Contains(secrets[v.Secret.SecretName], path.Base(file))
		}
		if !found {
			t.Errorf("%s: %s=%s is not a key of a mounted Secret", where, flag, file)
		}
	}
	_, cert := flagValue(c.Args, "--cert")
	_, key := flagValue(c.Args, "--key")
	if cert != key {
		t.Errorf("%s: --cert and --key go together", where)
	}
}

// flagValue finds --name=value or --name value in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func (r *rendered) checkDeployment(t *testing.T, name string, d *appsv1.Deployment) {
	t.Helper()
	where := "Deployment " + name
	r.checkPod(t, where, &d.Spec.Template.Spec)
	checkLabels(t, where, d.Labels, d.Spec.Template.Labels)
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("%s: selector %s=%s does not match its pods", where, k, v)
		}
	}
	c := d.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, flag := range []string{"--http", "--grpc"} {
		addr, ok := flagValue(c.Args, flag)
		_, port, _ := strings.Cut(addr, ":")
		if n, err := strconv.Atoi(port); !ok || err != nil || !slices.Contains(slices.Collect(mapsValues(ports)), int32(n)) {
			t.Errorf("%s: %s=%s is not a declared container port %v", where, flag, addr, ports)
		}
		if !strings.HasPrefix(addr, "0.0.0.0:") && !strings.HasPrefix(addr, ":") {
			t.Errorf("%s: %s=%s listens on loopback only; the Service cannot reach it", where, flag, addr)
		}
	}
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if probe == nil {
			t.Errorf("%s: readiness and liveness probes are required", where)
			continue
		}
		var port string
		switch {
		case probe.HTTPGet != nil:
			port = probe.HTTPGet.Port.String()
			_, tls := flagValue(c.Args, "--tls-cert")
			if tls != (probe.HTTPGet.Scheme == corev1.URISchemeHTTPS) {
				t.Errorf("%s: probe scheme %q for a server with TLS %v", where, probe.HTTPGet.Scheme, tls)
			}
			if _, mtls := flagValue(c.Args, "--tls-client-ca"); mtls {
				t.Errorf("%s: an HTTP probe against mutual TLS fails: the kubelet has no client certificate", where)
			}
		case probe.TCPSocket != nil:
			port = probe.TCPSocket.Port.String()
		}
		if _, ok := ports[port]; !ok {
			t.Errorf("%s: probe on port %q, not a named container port", where, port)
		}
	}
	// The Service in front of it.
	var served bool
	for _, s := range r.services {
		match := len(s.Spec.Selector) > 0
		for k, v := range s.Spec.Selector {
			match = match && d.Spec.Template.Labels[k] == v
		}
		if !match {
			continue
		}
		served = true
		for _, p := range s.Spec.Ports {
			if _, ok := ports[p.TargetPort.String()]; !ok {
				t.Errorf("Service %s: targetPort %s is not a port of %s", s.Name, p.TargetPort.String(), where)
			}
		}
	}
	if !served {
		t.Errorf("%s: no Service selects its pods", where)
	}
}

func mapsValues(m map[string]int32) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// checkLoad checks the distributed load test: N indexed segments of one
// test, started together, writing where the merge reads.
func (r *rendered) checkLoad(t *testing.T, j *batchv1.Job) {
	t.Helper()
	where := "Job oipkit-load"
	cm := r.configMap("oipkit-load")
	if cm == nil {
		t.Fatalf("%s: no ConfigMap oipkit-load", where)
	}
	n, err := strconv.Atoi(cm.Data["SEGMENTS"])
	if err != nil || n < 1 {
		t.Fatalf("%s: SEGMENTS %q is not a positive number", where, cm.Data["SEGMENTS"])
	}
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("%s: completionMode must be Indexed", where)
	}
	if s.Completions == nil || s.Parallelism == nil || int(*s.Completions) != n || int(*s.Parallelism) != n {
		t.Errorf("%s: completions %v and parallelism %v must both equal SEGMENTS=%d", where, deref(s.Completions), deref(s.Parallelism), n)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 {
		t.Errorf("%s: a segment must run once (backoffLimitPerIndex 0): a retry sends its share late", where)
	}
	if s.Suspend != nil && *s.Suspend {
		t.Errorf("%s: suspended", where)
	}
	c := j.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "load" {
		t.Fatalf("%s: args %q", where, c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["JOB_COMPLETION_INDEX"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("%s: JOB_COMPLETION_INDEX must come from the pod's completion-index annotation: %+v", where, e)
	}
	for _, key := range []string{"SEGMENTS", "RUN", "START_AT"} {
		if e := env[key]; e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil || e.ValueFrom.ConfigMapKeyRef.Key != key {
			t.Errorf("%s: env %s must come from the test's ConfigMap", where, key)
		}
	}
	if v, _ := flagValue(c.Args, "--segment"); v != "$(JOB_COMPLETION_INDEX)/$(SEGMENTS)" {
		t.Errorf("%s: --segment=%q, want $(JOB_COMPLETION_INDEX)/$(SEGMENTS)", where, v)
	}
	if _, ok := flagValue(c.Args, "--start-at"); !ok {
		t.Errorf("%s: no --start-at: the segments would not start together", where)
	}
	if _, ok := flagValue(c.Args, "--threshold"); ok {
		t.Errorf("%s: segments must not gate: thresholds hold for the merged result only", where)
	}
	out, _ := flagValue(c.Args, "--output")
	if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("%s: --output=%q must differ per segment", where, out)
	}
	loadDir := mountFor(c, out)
	if loadDir == nil || loadDir.ReadOnly {
		t.Fatalf("%s: --output=%q is not on a writable volume", where, out)
	}

	merge := r.jobs["oipkit-load-merge"]
	if merge == nil {
		t.Fatalf("no merge Job beside %s", where)
	}
	mw := "Job oipkit-load-merge"
	if merge.Spec.Suspend == nil || !*merge.Spec.Suspend {
		t.Errorf("%s: must be suspended until the segments are done", mw)
	}
	mc := merge.Spec.Template.Spec.Containers[0]
	if mc.Args[0] != "report" {
		t.Errorf("%s: args %q, want oipkit report", mw, mc.Args)
	}
	if _, ok := flagValue(mc.Args, "--threshold"); !ok {
		t.Errorf("%s: no --threshold: the merge must gate", mw)
	}
	in := mc.Args[len(mc.Args)-1]
	readDir := mountFor(mc, in)
	if readDir == nil || readDir.MountPath != in {
		t.Fatalf("%s: reads %q, which is not a mounted directory", mw, in)
	}
	if !readDir.ReadOnly {
		t.Errorf("%s: the segments' directory should be mounted read-only", mw)
	}
	// Same claim, same sub-directory as the segments write to.
	claim := func(pod corev1.PodSpec, m *corev1.VolumeMount) string {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				return v.PersistentVolumeClaim.ClaimName
			}
		}
		return ""
	}
	lc, mcl := claim(j.Spec.Template.Spec, loadDir), claim(merge.Spec.Template.Spec, readDir)
	if lc == "" || lc != mcl || loadDir.SubPathExpr != readDir.SubPathExpr || path.Dir(out) != loadDir.MountPath {
		t.Errorf("%s reads claim %q sub-path %q; %s writes %s to claim %q sub-path %q at %s",
			mw, mcl, readDir.SubPathExpr, where, out, lc, loadDir.SubPathExpr, loadDir.MountPath)
	}
	if pvc := r.pvcs[lc]; pvc != nil && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("claim %s: segment pods on several nodes write it: ReadWriteMany", lc)
	}
	if merged, _ := flagValue(mc.Args, "--output"); mountFor(mc, merged) == nil || mountFor(mc, merged).ReadOnly {
		t.Errorf("%s: --output=%q is not on a writable volume", mw, merged)
	}
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

// mountFor is the mount holding file, or nil.
func mountFor(c corev1.Container, file string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if file == m.MountPath || strings.HasPrefix(file, m.MountPath+"/") {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func (r *rendered) checkConformance(t *testing.T, j *batchv1.Job) {
	t.Helper()
	where := "Job oipkit-conformance"
	c := j.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "conform" {
		t.Fatalf("%s: args %q", where, c.Args)
	}
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 {
		t.Errorf("%s: a failed run is a verdict: backoffLimit 0", where)
	}
	cm := r.configMap("oipkit-conformance")
	if cm == nil {
		t.Fatalf("%s: no ConfigMap oipkit-conformance", where)
	}
	// Neither target would test the bundled server instead of the cluster's.
	if cm.Data["HTTP"] == "" && cm.Data["GRPC"] == "" {
		t.Errorf("%s: no target in the ConfigMap", where)
	}
	_, tls := flagValue(c.Args, "--ca")
	if tls && strings.HasPrefix(cm.Data["HTTP"], "http://") {
		t.Errorf("%s: TLS flags with the plain URL %s", where, cm.Data["HTTP"])
	}
	dir, _ := flagValue(c.Args, "--report-dir")
	m := mountFor(c, dir)
	if m == nil || m.ReadOnly {
		t.Fatalf("%s: --report-dir=%q is not on a writable volume", where, dir)
	}
	for _, v := range j.Spec.Template.Spec.Volumes {
		if v.Name == m.Name && v.PersistentVolumeClaim == nil {
			t.Errorf("%s: reports go to volume %s, which does not outlive the pod", where, v.Name)
		}
	}
}

// TestMTLSExample: in the mutual-TLS example every side has its
// certificates, and the clients use https.
func TestMTLSExample(t *testing.T) {
	r := render(t, "examples/mtls")
	serve := r.deployments["oipkit-reference"].Spec.Template.Spec.Containers[0]
	for _, f := range []string{"--tls-cert", "--tls-key", "--tls-client-ca"} {
		if _, ok := flagValue(serve.Args, f); !ok {
			t.Errorf("reference server without %s", f)
		}
	}
	for _, name := range []string{"oipkit-load", "oipkit-conformance"} {
		c := r.jobs[name].Spec.Template.Spec.Containers[0]
		for _, f := range []string{"--ca", "--cert", "--key"} {
			if _, ok := flagValue(c.Args, f); !ok {
				t.Errorf("Job %s without %s", name, f)
			}
		}
	}
	if _, ok := flagValue(r.jobs["oipkit-load-merge"].Spec.Template.Spec.Containers[0].Args, "--ca"); ok {
		t.Error("the merge Job connects to nothing and needs no certificates")
	}
	if h := r.configMap("oipkit-conformance").Data["HTTP"]; !strings.HasPrefix(h, "https://") {
		t.Errorf("conformance HTTP target %q, want https://", h)
	}
}

func TestEnvRefs(t *testing.T) {
	for s, want := range map[string][]string{
		"--segment=$(JOB_COMPLETION_INDEX)/$(SEGMENTS)": {"JOB_COMPLETION_INDEX", "SEGMENTS"},
		"$$(ESCAPED) $(A)": {"A"},
		"plain":            nil,
		"$(UNCLOSED":       nil,
	} {
		if got := envRefs(s); !slices.Equal(got, want) {
			t.Errorf("envRefs(%q) = %q, want %q", s, got, want)
		}
	}
}
