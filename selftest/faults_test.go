package selftest

import "net/http"

// fault500 is a REST hook that answers 500 {"error": …} to the one request
// match picks (method, path and body as sent) instead of passing it on: a
// server whose error route reports a refusal as a server fault.
func fault500(match func(r *http.Request, body string) bool) *restHook {
	return &restHook{serve: func(w http.ResponseWriter, r *http.Request) bool {
		if match(r, string(requestBody(r))) {
			jsonError(w, 500, `{"error":"internal error"}`)
			return true
		}
		return false
	}}
}

// post reports whether r is a POST to path with body.
func post(r *http.Request, path, body, want string) bool {
	return r.Method == http.MethodPost && r.URL.Path == path && body == want
}
