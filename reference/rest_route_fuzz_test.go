package reference

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzMatchRoute compares the hand-written core router (splitPath,
// matchRoute) with net/http's ServeMux given the same routes as patterns:
// the same route, the same model and version (wildcards unescaped as the
// router unescapes segments), for every path ServeMux does not redirect
// (one it would clean: "//", "." or ".." segments) and has no segment
// "%2F" alone (below). It must never panic, and allocates nothing for an
// unescaped path.
func FuzzMatchRoute(f *testing.F) {
	for _, p := range []string{
		"/v2", "/v2/", "/metrics", "/v2/health/live", "/v2/health/ready",
		"/v2/models/add_sub", "/v2/models/add_sub/ready", "/v2/models/add_sub/infer",
		"/v2/models/m/versions/1", "/v2/models/m/versions/1/ready", "/v2/models/m/versions/1/infer",
		"/v2/models/a%2Fb/infer", "/v2/models/a%zz/infer", "/v2/models//infer", "/v2/models/m/versions//infer",
		"/v2/models/m/versions/infer", "/v2/models/versions/versions/ready", "/v2/m%6Fdels/m", "/v2/models/m/extra/infer",
		"/v2/models/m/versions/1/infer/more/a/b", "/v2/models/%E2%98%83",
	} {
		f.Add(p)
	}
	type hit struct {
		kind           routeKind
		model, version string
	}
	mux := http.NewServeMux()
	var got hit
	for pattern, kind := range map[string]routeKind{
		"/metrics": routeMetrics, "/v2": routeServerMetadata, "/v2/{$}": routeServerMetadata,
		"/v2/health/live": routeServerLive, "/v2/health/ready": routeServerReady,
		"/v2/models/{m}": routeModelMetadata, "/v2/models/{m}/versions/{v}": routeModelMetadata,
		"/v2/models/{m}/ready": routeModelReady, "/v2/models/{m}/versions/{v}/ready": routeModelReady,
		"/v2/models/{m}/infer": routeModelInfer, "/v2/models/{m}/versions/{v}/infer": routeModelInfer,
	} {
		mux.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) {
			got = hit{kind, r.PathValue("m"), r.PathValue("v")}
		})
	}
	f.Fuzz(func(t *testing.T, p string) {
		u, err := url.Parse("http://h" + p)
		if err != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.Host != "h" {
			return
		}
		escaped := u.EscapedPath()
		r, ok := matchRoute(escaped) // whatever the oracle says of it
		if strings.Contains(escaped, "//") || strings.Contains(escaped+"/", "/./") || strings.Contains(escaped+"/", "/../") || !strings.HasPrefix(escaped, "/") {
			return // ServeMux redirects to the cleaned path
		}
		for _, seg := range strings.Split(escaped, "/") {
			if name, err := url.PathUnescape(seg); err == nil && name == "/" {
				// ServeMux keys its trailing-slash node by "/", so a segment
				// that unescapes to "/" is taken for it: it serves "/v2/%2F"
				// as "/v2/{$}" and finds no {m} in "/v2/models/%2F". Not an
				// oracle there; the router reads such a segment as a name.
				return
			}
		}
		got = hit{}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, &http.Request{Method: http.MethodGet, URL: u, Host: "h"})
		if rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect {
			return
		}
		if ok != (got.kind != 0) || ok && (r.kind != got.kind || r.model != got.model || r.version != got.version) {
			t.Fatalf("%q: router %v %+v, ServeMux %d %+v", escaped, ok, r, rec.Code, got)
		}
		if !strings.Contains(escaped, "%") {
			if a := testing.AllocsPerRun(1, func() { matchRoute(escaped) }); a != 0 {
				t.Fatalf("%q: routing allocates %v times", escaped, a)
			}
		}
	})
}
