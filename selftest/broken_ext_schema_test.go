package selftest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Extension answers that break only the schema (specs/oip-rest.schema.json):
// each fails the requirement the schema names for the place, once, and no
// spec that reads values from the body fails with it (one defect, one
// failure).

func init() { breakages = append(breakages, schemaBreakages...) }

var schemaBreakages = []breakage{
	{
		name: "rest-stats-ns-is-a-string",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					if is, ok := m["inference_stats"].(map[string]any); ok {
						if d, ok := is["success"].(map[string]any); ok {
							d["ns"] = "12345"
						}
					}
				})
			}
		}},
		// The counters specs (STAT-005..008) read the same body and check
		// nothing: its values are not read.
		failed: []string{"OIP-EXT-STAT-004"},
	},
	{
		name: "rest-stats-no-cache-hit",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if isStats(r) && a.status == 200 {
				eachModelStat(a, func(m map[string]any) {
					if is, ok := m["inference_stats"].(map[string]any); ok {
						delete(is, "cache_hit")
					}
				})
			}
		}},
		// The schema grades the cache statistics softly, as the catalog's
		// test does.
		warned: []string{"OIP-EXT-STAT-004"},
	},
	{
		name: "rest-shm-status-byte-size-a-string",
		rest: &restHook{out: func(r *http.Request, a *answer) {
			if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/v2/systemsharedmemory/") || a.status != 200 {
				return
			}
			var list []map[string]any
			if json.Unmarshal(a.body, &list) != nil {
				return
			}
			for _, m := range list {
				m["byte_size"] = "64"
			}
			a.body, _ = json.Marshal(list)
		}},
		// The register (SHM-007) and unregister (SHM-008) specs read the
		// status too, and check nothing of a body the schema refuses.
		failed: []string{"OIP-EXT-SHM-006"},
	},
}
