package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/oip"
)

const (
	dur        = `{"count":1,"ns":2}`
	okInfStats = `{"success":` + dur + `,"fail":` + dur + `,"queue":` + dur + `,"compute_input":` + dur +
		`,"compute_infer":` + dur + `,"compute_output":` + dur + `,"cache_hit":` + dur + `,"cache_miss":` + dur + `}`
	okBatch = `{"batch_size":1,"compute_input":` + dur + `,"compute_infer":` + dur + `,"compute_output":` + dur + `}`
)

// okStats is a statistics answer with one entry whose inference_stats and
// batch_stats are as given.
func okStats(inferenceStats, batch, extra string) string {
	return `{"model_stats":[{"name":"add_sub","version":"1","last_inference":1700000000000,"inference_count":3,` +
		`"execution_count":3,"inference_stats":` + inferenceStats + `,"batch_stats":[` + batch + `]` + extra + `}]}`
}

// TestCheckSchemaExtensions: the extensions' answers are graded under the
// requirement whose statement gives each place its shape, and the readings
// an ambiguity leaves open pass.
func TestCheckSchemaExtensions(t *testing.T) {
	for _, c := range []struct {
		what, component, body string
		want                  []string // "REQ[~] where: message fragment", ~ for soft
	}{
		{"statistics", SchemaStatistics, okStats(okInfStats, okBatch, ""), nil},
		{"statistics with response_stats and memory_usage", SchemaStatistics, okStats(okInfStats, okBatch,
			`,"response_stats":{"0":{"compute_infer":`+dur+`,"compute_output":`+dur+`,"success":`+dur+`,"fail":`+dur+`,"empty_response":`+dur+`,"cancel":`+dur+`}},"memory_usage":[{"type":"GPU","id":0,"byte_size":64}]`), nil},
		{"a duration's ns that is a string", SchemaStatistics, okStats(strings.Replace(okInfStats, `"ns":2`, `"ns":"2"`, 1), okBatch, ""),
			[]string{"OIP-EXT-STAT-004 /model_stats/0/inference_stats/success/ns: is a string, want integer"}},
		{"no compute_infer", SchemaStatistics, okStats(strings.Replace(okInfStats, `"compute_infer"`, `"infer"`, 1), okBatch, ""),
			[]string{`OIP-EXT-STAT-004 /model_stats/0/inference_stats: required member "compute_infer" is missing`}},
		{"no cache statistics (soft)", SchemaStatistics, okStats(strings.Replace(okInfStats, `"cache_hit"`, `"hit"`, 1), okBatch, ""),
			[]string{`OIP-EXT-STAT-004~ /model_stats/0/inference_stats: required member "cache_hit" is missing`}},
		{"a negative count", SchemaStatistics, strings.Replace(okStats(okInfStats, okBatch, ""), `"inference_count":3`, `"inference_count":-3`, 1),
			[]string{"OIP-EXT-STAT-003 /model_stats/0/inference_count: "}},
		{"a batch without its size", SchemaStatistics, okStats(okInfStats, strings.Replace(okBatch, `"batch_size":1,`, ``, 1), ""),
			[]string{`OIP-EXT-STAT-009 /model_stats/0/batch_stats/0: required member "batch_size" is missing`}},
		{"no batch_stats", SchemaStatistics, `{"model_stats":[{"name":"m","last_inference":0,"inference_count":0,"execution_count":0,"inference_stats":` + okInfStats + `}]}`,
			[]string{`OIP-EXT-STAT-003 /model_stats/0: required member "batch_stats" is missing`}},
		{"memory of another type", SchemaStatistics, okStats(okInfStats, okBatch, `,"memory_usage":[{"type":"TPU","id":0,"byte_size":64}]`),
			[]string{"OIP-EXT-STAT-010 /model_stats/0/memory_usage/0/type: "}},

		{"shared-memory status", SchemaSystemSHMStatus, `[{"name":"r","key":"/k","offset":0,"byte_size":64}]`, nil},
		{"a region without its key", SchemaSystemSHMStatus, `[{"name":"r","offset":0,"byte_size":64}]`,
			[]string{`OIP-EXT-SHM-006 /0: required member "key" is missing`}},
		{"CUDA status, no offset (A-34)", SchemaCUDASHMStatus, `[{"name":"r","device_id":0,"byte_size":64}]`, nil},

		{"index entries by name alone (A-33)", SchemaRepositoryIndex, `[{"name":"broken"},{"name":"add_sub","version":"1","state":"READY","reason":""}]`, nil},
		{"a numeric state", SchemaRepositoryIndex, `[{"name":"add_sub","state":1}]`, []string{"OIP-EXT-REPO-005 /0/state: is a number, want string"}},
		{"an index that is an object", SchemaRepositoryIndex, `{"models":[]}`, []string{"OIP-EXT-REPO-002 : is an object, want array"}},

		{"log settings", SchemaLogSettings, `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":0,"log_format":"default"}`, nil},
		{"log settings without log_format", SchemaLogSettings, `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":0}`,
			[]string{`OIP-EXT-LOG-002 : required member "log_format" is missing`}},
		{"an update answered with a string level", SchemaLogSettingsUpdate, `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":"1","log_format":"ISO8601"}`,
			[]string{"OIP-EXT-LOG-003 /log_verbose_level: is a string, want integer"}},

		{"trace settings", SchemaTraceSettings, `{"trace_file":"","trace_level":["OFF"],"trace_rate":"1000","trace_count":"-1","log_frequency":["0"]}`, nil},
		{"a trace level that is a string", SchemaTraceSettings, `{"trace_file":"","trace_level":"OFF","trace_rate":"1000","trace_count":"-1","log_frequency":"0"}`,
			[]string{"OIP-EXT-TRACE-002 /trace_level: is a string, want array"}},
		{"an updated rate that is a number", SchemaTraceUpdate, `{"trace_file":"","trace_level":["OFF"],"trace_rate":1000,"trace_count":"-1","log_frequency":"0"}`,
			[]string{"OIP-EXT-TRACE-003 /trace_rate: is a number, which is none of the forms allowed here"}},

		{"a configuration, dims as numbers and as protobuf JSON strings", SchemaModelConfig,
			`{"name":"add_sub","max_batch_size":0,"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[1,16]}],"output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":["1","16"]}]}`, nil},
		{"a configuration without a name", SchemaModelConfig, `{"input":[]}`, []string{`OIP-EXT-CFG-002 : required member "name" is missing`}},

		{"OIP-GEN's generate answer (no id, A-38)", SchemaGenerateResponse, `{"model_name":"text_gen","text_output":"abc"}`, nil},
		{"a numeric id", SchemaGenerateResponse, `{"id":1,"model_name":"text_gen","model_version":"1","text_output":"abc"}`,
			[]string{"OIP-EXT-GEN-002 /id: is a number, want string"}},
		{"no text_output", SchemaGenerateResponse, `{"model_name":"text_gen"}`, []string{`OIP-EXT-GEN-001 : required member "text_output" is missing`}},
		{"a stream event", SchemaGenerateEvent, `{"text_output":"a"}`, nil},
		{"an error event", SchemaGenerateEvent, `{"error":"model failed"}`, nil},
		{"an event with neither", SchemaGenerateEvent, `{"text":"a"}`, []string{"OIP-EXT-GEN-004 : is an object, which is none of the forms allowed here"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			checkProblems(t, CheckSchema(c.component, []byte(c.body)), c.want)
		})
	}
}

// TestCheckSchemaRequests: what the suite sends to the extensions is what
// the schema's request components describe, and the catalog's bad requests
// are not.
func TestCheckSchemaRequests(t *testing.T) {
	for _, c := range []struct {
		what, component, body string
		want                  []string
	}{
		{"register", "system_shm_register_request", `{"key":"/oipkit","offset":0,"byte_size":64}`, nil},
		{"CUDA register", "cuda_shm_register_request", `{"raw_handle":{"b64":"AAAA"},"device_id":0,"byte_size":64}`, nil},
		{"index", "repository_index_request", `{}`, nil},
		{"index, ready a string", "repository_index_request", `{"ready":"yes"}`, []string{"OIP-EXT-REPO-004 /ready: is a string, want boolean"}},
		{"load with config and a file", "repository_load_request", `{"parameters":{"config":"{}","file:1/model.onnx":"AAAA"}}`, nil},
		{"load with a file and no config", "repository_load_request", `{"parameters":{"file:1/model.onnx":"AAAA"}}`, []string{"OIP-EXT-REPO-008 /parameters: "}},
		{"unload_dependents not a boolean", "repository_unload_request", `{"parameters":{"unload_dependents":"x"}}`,
			[]string{"OIP-EXT-REPO-011 /parameters/unload_dependents: is a string, want boolean"}},
		{"log update", "log_settings_request", `{"log_verbose_level":1}`, nil},
		{"log update of a negative level", "log_settings_request", `{"log_verbose_level":-1}`, []string{"OIP-EXT-LOG-005 /log_verbose_level: "}},
		{"log update of the file", "log_settings_request", `{"log_file":"/var/log/x"}`, []string{"OIP-EXT-LOG-004 : "}},
		{"trace update and clear", "trace_settings_request", `{"trace_rate":"1000","trace_level":["TIMESTAMPS"],"trace_count":null}`, nil},
		{"generate", "generate_request", `{"id":"g1","text_input":"hi","parameters":{"max_tokens":5}}`, nil},
		{"generate without text_input", "generate_request", `{"id":"g2"}`, []string{`OIP-EXT-GEN-003 : required member "text_input" is missing`}},
		{"a numeric sequence", "sequence_parameters", `{"sequence_id":42,"sequence_start":true}`, nil},
		{"a string sequence (sequence(string_id))", "sequence_parameters", `{"sequence_id":"s1","sequence_end":true}`, nil},
		{"a flag that is a string", "sequence_parameters", `{"sequence_id":1,"sequence_start":"true"}`, []string{"OIP-EXT-SEQ-003 /sequence_start: is a string, want boolean"}},
		{"schedule", "schedule_parameters", `{"priority":1,"timeout":10000000}`, nil},
		{"classification", "classification_parameters", `{"classification":2}`, nil},
		{"a region without its size", "shared_memory_parameters", `{"shared_memory_region":"r"}`, []string{"OIP-EXT-SHM-002 : "}},
	} {
		t.Run(c.what, func(t *testing.T) {
			checkProblems(t, CheckSchema(c.component, []byte(c.body)), c.want)
		})
	}
}

// TestSchemaMatchesOIPTypes: the statistics, shared-memory, repository and
// logging messages package oip encodes (the reference server's and the
// client's) are what the schema describes, so that DecodeBody reads every
// body the schema accepts.
func TestSchemaMatchesOIPTypes(t *testing.T) {
	for _, c := range []struct {
		component string
		v         any
	}{
		{SchemaStatistics, oip.StatisticsResponse{ModelStats: []oip.ModelStatistics{{Name: "m", Version: "1", BatchStats: []oip.BatchStatistics{{BatchSize: 1}},
			MemoryUsage: []oip.MemoryUsage{{Type: "CPU", ByteSize: 1}}, ResponseStats: map[string]oip.ResponseStatistics{"0": {}}}}}},
		{SchemaSystemSHMStatus, []oip.SystemSharedMemoryRegion{{Name: "r", Key: "/k", ByteSize: 64}}},
		{"system_shm_register_request", oip.SystemSharedMemoryRegister{Key: "/k", ByteSize: 64}},
		{SchemaRepositoryIndex, []oip.RepositoryModel{{Name: "broken"}, {Name: "add_sub", Version: "1", State: "READY"}}},
		{SchemaLogSettings, oip.LogSettings{Format: "default"}},
		{"log_settings_request", oip.LogSettingsUpdate{Info: new(bool)}},
		{SchemaTraceSettings, oip.TraceSettings{"trace_file": {""}, "trace_level": {"OFF"}, "trace_rate": {"1000"}, "trace_count": {"-1"}, "log_frequency": {"0"}}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		checkProblems(t, CheckSchema(c.component, b), nil)
	}
}

func checkProblems(t *testing.T, probs []SchemaProblem, want []string) {
	t.Helper()
	var got []string
	for _, p := range probs {
		soft := ""
		if p.Soft != "" {
			soft = "~"
		}
		got = append(got, p.Req+soft+" "+p.String())
	}
	if len(got) != len(want) {
		t.Fatalf("problems %q, want %d: %q", got, len(want), want)
	}
	for i, w := range want {
		req, frag, _ := strings.Cut(w, " ")
		where, msg, _ := strings.Cut(frag, ": ")
		p := probs[i]
		soft := strings.HasSuffix(req, "~")
		if p.Req != strings.TrimSuffix(req, "~") || (p.Soft != "") != soft || p.Where != where || !strings.Contains(p.Message, msg) {
			t.Errorf("problem %d is %q, want %s %q: %q…", i, got[i], req, where, msg)
		}
	}
}

// TestDecodeBody: a body is read into the oip types only when the schema
// accepts it where a failure is due; a warning's place leaves the values
// readable; another status is an error that says so.
func TestDecodeBody(t *testing.T) {
	stats := func(status int, body string) *Exchange {
		return &Exchange{Method: "GET", Path: "/v2/models/add_sub/stats", Status: status, Body: []byte(body)}
	}
	var r oip.StatisticsResponse
	if err := DecodeBody(stats(200, okStats(okInfStats, okBatch, "")), &r); err != nil || len(r.ModelStats) != 1 || r.ModelStats[0].InferenceCount != 3 {
		t.Errorf("a conforming body: %v, %+v", err, r)
	}
	for what, body := range map[string]string{
		"ns a string":             okStats(strings.Replace(okInfStats, `"ns":2`, `"ns":"2"`, 1), okBatch, ""),
		"inference_count missing": strings.Replace(okStats(okInfStats, okBatch, ""), `"inference_count":3,`, ``, 1),
		"not JSON":                `{"model_stats":[`,
	} {
		if err := DecodeBody(stats(200, body), &oip.StatisticsResponse{}); !errors.Is(err, ErrBodyBreaksSchema) {
			t.Errorf("%s: %v, want ErrBodyBreaksSchema", what, err)
		}
	}
	// No cache statistics: a warning (x-oip-soft), and the counts read.
	r = oip.StatisticsResponse{}
	if err := DecodeBody(stats(200, okStats(strings.Replace(okInfStats, `"cache_hit"`, `"hit"`, 1), okBatch, "")), &r); err != nil || r.ModelStats[0].ExecutionCount != 3 {
		t.Errorf("a body without cache_hit: %v, %+v", err, r)
	}
	if err := DecodeBody(stats(400, `{"error":"unknown model"}`), &r); err == nil || errors.Is(err, ErrBodyBreaksSchema) || !strings.Contains(err.Error(), "want 200") {
		t.Errorf("a 400: %v, want an error saying 200 was wanted", err)
	}
}
