package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/onsi/gomega/types"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/oipkit/oipkit/specs"
)

// The JSON Schema of the REST JSON bodies (specs/oip-rest.schema.json: the
// core's from OIP-YAML's components, the extensions' from the catalog's
// statements) and a strict reading of what servers send. Strict, because encoding/json is lenient where the schema is not:
// it matches member names case-insensitively (a response with "OUTPUTS"
// would pass for outputs), keeps the last of duplicate members, and turns
// invalid UTF-8 into U+FFFD. Here member names count as sent, a duplicate
// member is a problem, and so is anything that is not strict JSON (a bare
// NaN, trailing data).
//
// Every 2xx body a spec receives on a route the schema covers is validated
// once, after the spec (see checkReceived): each problem is graded under the
// requirement the schema names for that place (x-oip-requirement: the MUST
// (schema) entries such as OIP-REST-RESP-002 and OIP-REST-RESP-006, or the
// weaker entry of an optional member; a warning where x-oip-soft says why).
// A spec that checks a schema requirement itself uses [MatchSchema], and
// the body is not graded twice; the same problems on the same route are
// recorded once per run.

// Schema components of the bodies servers send.
const (
	SchemaServerMetadata = "metadata_server_response"
	SchemaModelMetadata  = "metadata_model_response"
	SchemaInferResponse  = "inference_response"

	// The extensions' answers.
	SchemaStatistics        = "statistics_response"
	SchemaSystemSHMStatus   = "system_shm_status_response"
	SchemaCUDASHMStatus     = "cuda_shm_status_response"
	SchemaRepositoryIndex   = "repository_index_response"
	SchemaLogSettings       = "log_settings_response"
	SchemaLogSettingsUpdate = "log_settings_update_response"
	SchemaTraceSettings     = "trace_settings_response"
	SchemaTraceUpdate       = "trace_settings_update_response"
	SchemaModelConfig       = "model_config"
	SchemaGenerateResponse  = "generate_response"

	// One event of a generate_stream answer, which is not one JSON body:
	// a spec checks each with CheckSchema.
	SchemaGenerateEvent = "generate_stream_event"
)

const (
	schemaURL = "https://oipkit.dev/schemas/oip-rest.schema.json"
	// reqKeyword names the requirement of a place in the schema.
	reqKeyword = "x-oip-requirement"
	// softKeyword says why a problem at a place is graded as a warning
	// whatever its requirement's class (a catalog test that is soft there).
	softKeyword = "x-oip-soft"
	// maxJSONDepth bounds the nesting the strict reader follows, so that a
	// hostile body cannot exhaust the stack.
	maxJSONDepth = 256
)

// SchemaProblem is one way a body breaks the schema.
type SchemaProblem struct {
	Req     string // the requirement it is graded under
	Soft    string // why it is graded as a warning whatever Req's class, or ""
	Where   string // JSON pointer of the offending value; "" is the body
	Message string
	// Unparsed: the body is not strict JSON at all, so no client that
	// reads strict JSON can use it. Graded even on an exchange whose
	// problems a catalog ambiguity has recorded only ([Tolerate]).
	Unparsed bool
}

func (p SchemaProblem) String() string {
	where := p.Where
	if where == "" {
		where = "the body"
	}
	return where + ": " + p.Message
}

// restSchema is the schema document and its compiled components.
type restSchema struct {
	doc   map[string]any
	comps map[string]*jsonschema.Schema
}

var loadedSchema = sync.OnceValues(func() (*restSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(specs.RESTSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("specs/oip-rest.schema.json: %w", err)
	}
	m, _ := doc.(map[string]any)
	defs, _ := m["$defs"].(map[string]any)
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("specs/oip-rest.schema.json: %w", err)
	}
	s := &restSchema{doc: m, comps: map[string]*jsonschema.Schema{}}
	for _, name := range routeComponents {
		if _, ok := defs[name]; !ok {
			return nil, fmt.Errorf("specs/oip-rest.schema.json: no $defs/%s", name)
		}
	}
	// Every component compiles, also those of what clients send, which
	// the engine's tests check the suite's own requests against.
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		sch, err := c.Compile(schemaURL + "#/$defs/" + name)
		if err != nil {
			return nil, fmt.Errorf("specs/oip-rest.schema.json: %s: %w", name, err)
		}
		s.comps[name] = sch
	}
	return s, nil
})

// routeComponents are the components SchemaFor names.
var routeComponents = []string{
	SchemaServerMetadata, SchemaModelMetadata, SchemaInferResponse,
	SchemaStatistics, SchemaSystemSHMStatus, SchemaCUDASHMStatus, SchemaRepositoryIndex,
	SchemaLogSettings, SchemaLogSettingsUpdate, SchemaTraceSettings, SchemaTraceUpdate,
	SchemaModelConfig, SchemaGenerateResponse,
}

// SchemaFor names the schema component of a 2xx body of method and path,
// or "" when the spec gives that route no body schema (health, the
// answers to shared-memory register and unregister and to repository load
// and unload, whose bodies the extensions leave unspecified, and
// generate_stream, which is not JSON).
func SchemaFor(method, path string) string {
	route := strings.TrimPrefix(restRoute(method, path), "REST ")
	switch route {
	case "GET /v2", "GET /v2/":
		return SchemaServerMetadata
	case "GET /v2/models/{m}", "GET /v2/models/{m}/versions/{v}":
		return SchemaModelMetadata
	case "POST /v2/models/{m}/infer", "POST /v2/models/{m}/versions/{v}/infer":
		return SchemaInferResponse
	case "GET /v2/models/stats", "GET /v2/models/{m}/stats", "GET /v2/models/{m}/versions/{v}/stats":
		return SchemaStatistics
	case "GET /v2/models/{m}/config", "GET /v2/models/{m}/versions/{v}/config":
		return SchemaModelConfig
	case "POST /v2/models/{m}/generate", "POST /v2/models/{m}/versions/{v}/generate":
		return SchemaGenerateResponse
	case "POST /v2/repository/index":
		return SchemaRepositoryIndex
	case "GET /v2/logging":
		return SchemaLogSettings
	case "POST /v2/logging":
		return SchemaLogSettingsUpdate
	case "GET /v2/trace/setting", "GET /v2/models/{m}/trace/setting":
		return SchemaTraceSettings
	case "POST /v2/trace/setting", "POST /v2/models/{m}/trace/setting":
		return SchemaTraceUpdate
	}
	// /v2/{system,cuda}sharedmemory[/region/{r}]/status
	if method != http.MethodGet {
		return ""
	}
	segs := strings.Split(strings.TrimPrefix(route, "GET /v2/"), "/")
	if n := len(segs); (n == 2 || n == 4 && segs[1] == "region") && segs[n-1] == "status" {
		switch segs[0] {
		case "systemsharedmemory":
			return SchemaSystemSHMStatus
		case "cudasharedmemory":
			return SchemaCUDASHMStatus
		}
	}
	return ""
}

// CheckSchema reads body strictly as JSON and validates it as component.
// It returns every problem, sorted by place.
func CheckSchema(component string, body []byte) []SchemaProblem {
	s, err := loadedSchema()
	if err != nil {
		return []SchemaProblem{{Message: "conformance suite bug: " + err.Error()}}
	}
	sch, ok := s.comps[component]
	if !ok {
		return []SchemaProblem{{Message: "conformance suite bug: no schema component " + component}}
	}
	root, _ := s.reqAt(component, nil)
	if !utf8.Valid(body) {
		return []SchemaProblem{{Req: root, Message: "body is not UTF-8, which JSON text must be"}}
	}
	var probs []SchemaProblem
	dups, err := duplicateMembers(body)
	if err != nil {
		return []SchemaProblem{notStrict(root, body, err)}
	}
	for _, d := range dups {
		probs = append(probs, s.problem(component, d, pointer(d[:len(d)-1]),
			fmt.Sprintf("member %q appears more than once (which one counts is up to each client)", d[len(d)-1])))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []SchemaProblem{notStrict(root, body, err)}
	}
	var verr *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &verr) {
		probs = append(probs, s.problems(component, inst, verr)...)
	} else if err != nil {
		probs = append(probs, SchemaProblem{Req: root, Message: err.Error()})
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Where < probs[j].Where })
	return probs
}

// notStrict is the problem of a body that does not parse as strict JSON,
// graded under the component's root requirement. Bare NaN, Infinity and
// -Infinity tokens are a warning: Python's json, and so the stock
// Python clients, reads them, while JSON.parse, Go's encoding/json and
// Jackson refuse the whole body. Anything else fails.
func notStrict(root string, body []byte, err error) SchemaProblem {
	if b, found := finiteTokens(body); found && json.Valid(b) {
		return SchemaProblem{Req: root, Soft: "A-22", Unparsed: true,
			Message: "body is not strict JSON: it holds bare NaN, Infinity or -Infinity tokens, which Python's json reads but JSON.parse, Go's encoding/json and Jackson refuse"}
	}
	return SchemaProblem{Req: root, Unparsed: true, Message: "body is not strict JSON: " + err.Error()}
}

// finiteTokens is body with every bare NaN, Infinity and -Infinity token
// outside a string replaced by 0, and whether there was one.
func finiteTokens(body []byte) ([]byte, bool) {
	out := make([]byte, 0, len(body))
	found, inString := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(body) {
					i++
					out = append(out, body[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		if tok := nonFiniteAt(body[i:]); tok > 0 {
			out = append(out, '0')
			i += tok - 1
			found = true
			continue
		}
		out = append(out, c)
	}
	return out, found
}

// nonFiniteAt is the length of the non-finite token b starts with, or 0.
func nonFiniteAt(b []byte) int {
	for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(b, []byte(tok)) {
			return len(tok)
		}
	}
	return 0
}

var printer = message.NewPrinter(language.English)

// problems flattens a validation error into one problem per failed keyword.
// An anyOf is one problem: its branches' failures say less than it does.
func (s *restSchema) problems(component string, inst any, e *jsonschema.ValidationError) []SchemaProblem {
	if len(e.Causes) > 0 {
		if _, isAnyOf := e.ErrorKind.(*kind.AnyOf); !isAnyOf {
			var out []SchemaProblem
			for _, c := range e.Causes {
				out = append(out, s.problems(component, inst, c)...)
			}
			return out
		}
	}
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []SchemaProblem
		for _, m := range k.Missing {
			out = append(out, s.problem(component, append(append([]string(nil), loc...), m), pointer(loc),
				fmt.Sprintf("required member %q is missing", m)))
		}
		return out
	case *kind.AnyOf:
		var msg string
		switch {
		case strings.HasSuffix(e.SchemaURL, "/response_output"):
			msg = `has no "data"; only an output sent outside the JSON (parameters.binary_data_size or shared_memory_region) may leave it out`
		case strings.Contains(e.SchemaURL, "/tensor_data/"):
			msg = fmt.Sprintf("is %s, want an array, a number, a string or a boolean", jsonType(valueAt(inst, loc)))
		default:
			var forms []string
			for _, c := range e.Causes {
				forms = append(forms, c.ErrorKind.LocalizedString(printer))
			}
			msg = fmt.Sprintf("is %s, which is none of the forms allowed here (%s)", jsonType(valueAt(inst, loc)), strings.Join(forms, "; or "))
		}
		return []SchemaProblem{s.problem(component, loc, pointer(loc), msg)}
	case *kind.Type:
		return []SchemaProblem{s.problem(component, loc, pointer(loc),
			fmt.Sprintf("is %s, want %s", jsonType(valueAt(inst, loc)), strings.Join(k.Want, " or ")))}
	}
	return []SchemaProblem{s.problem(component, loc, pointer(loc), e.ErrorKind.LocalizedString(printer))}
}

// problem is a problem at where, graded as the schema says for path.
func (s *restSchema) problem(component string, path []string, where, msg string) SchemaProblem {
	req, soft := s.reqAt(component, path)
	return SchemaProblem{Req: req, Soft: soft, Where: where, Message: msg}
}

// reqAt is the requirement of the deepest place on path (an instance
// location) that names one, following properties, items, additional
// properties and $ref, and the soft reason named with it.
func (s *restSchema) reqAt(component string, path []string) (req, soft string) {
	defs, _ := s.doc["$defs"].(map[string]any)
	node, _ := defs[component].(map[string]any)
	for depth := 0; node != nil && depth < 64; depth++ {
		if r, ok := node[reqKeyword].(string); ok {
			req = r
			soft, _ = node[softKeyword].(string)
		}
		if ref, ok := node["$ref"].(string); ok {
			name, found := strings.CutPrefix(ref, "#/$defs/")
			if !found {
				break
			}
			node, _ = defs[name].(map[string]any)
			continue
		}
		if len(path) == 0 {
			break
		}
		seg := path[0]
		path = path[1:]
		props, _ := node["properties"].(map[string]any)
		if p, ok := props[seg].(map[string]any); ok {
			node = p
		} else if it, ok := node["items"].(map[string]any); ok && isIndex(seg) {
			node = it
		} else if ap, ok := node["additionalProperties"].(map[string]any); ok {
			node = ap
		} else {
			break
		}
	}
	return req, soft
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// valueAt is the value at path in a decoded instance, or nil.
func valueAt(v any, path []string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// duplicateMembers reads b as exactly one strict JSON value and returns the
// path (ending with the member name) of every member that repeats a name
// already seen in its object.
func duplicateMembers(b []byte) ([][]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var dups [][]string
	if err := walkJSON(dec, nil, 0, &dups); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value at byte %d", dec.InputOffset())
	}
	return dups, nil
}

func walkJSON(dec *json.Decoder, path []string, depth int, dups *[][]string) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			p := append(append([]string(nil), path...), key)
			if seen[key] {
				*dups = append(*dups, p)
			}
			seen[key] = true
			if err := walkJSON(dec, p, depth+1, dups); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, append(path, strconv.Itoa(i)), depth+1, dups); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// ----- the matcher and the check of every received body -----

// schemaBody is the JSON text of a 2xx answer its schema applies to (the
// JSON part of a binary inference response), or ok false.
func (e *Exchange) schemaBody() (component string, body []byte, ok bool) {
	if e.Err != nil || e.Status < 200 || e.Status > 299 {
		return "", nil, false
	}
	component = SchemaFor(e.Method, e.Path)
	if component == "" {
		return "", nil, false
	}
	body = e.Body
	if component == SchemaInferResponse {
		if r, err := e.AsInferResponse(); err == nil {
			body = r.JSONPart
		}
	}
	return component, bytes.TrimRight(body, " \t\r\n"), true
}

// schemaProblems validates the exchange's body once and keeps the result.
func (e *Exchange) schemaProblems() []SchemaProblem {
	if !e.schemaDone {
		e.schemaDone = true
		if component, body, ok := e.schemaBody(); ok {
			e.schema = CheckSchema(component, body)
			if component == SchemaInferResponse {
				e.schema = e.withoutSharedMemoryOutputs(body, e.schema)
			}
		}
	}
	return e.schema
}

// MatchSchema matches a 2xx REST answer whose body conforms to the schema
// of its route at every place graded under the requirement of the check
// that applies it: Verify(e).To(MatchSchema()) in a spec labelled
// OIP-REST-RESP-006. The
// body is then not graded again for that requirement after the spec.
func MatchSchema() types.GomegaMatcher {
	m := &schemaMatcher{}
	m.matcher = newMatcher("conform to the schema", func(actual any) error {
		e, err := exchangeOf(actual)
		if err != nil {
			return err
		}
		if err := e.noAnswer(); err != nil {
			return unusable("%v", err)
		}
		if _, _, ok := e.schemaBody(); !ok {
			return fmt.Errorf("%s: %s; want a 2xx answer with a body of the route's schema", e.What(), e.Got())
		}
		mine := problemsOf(e.schemaProblems(), m.req)
		if m.req != "" {
			e.markSchemaReported(m.req)
		}
		if len(mine) == 0 {
			return nil
		}
		if m.req != "" && current != nil && current.seenSchema(m.req, e, mine) {
			return nil // recorded already, where it was first seen (checkReceived)
		}
		msg := fmt.Sprintf("%s: the body breaks the schema: %s", e.What(), joinProblems(mine))
		if why := softReason(mine); why != "" {
			return &failure{msg: msg, g: grading{soft: why}}
		}
		return errors.New(msg)
	})
	return m
}

type schemaMatcher struct {
	*matcher
	req string
}

// forRequirement is how [Check] tells the matcher its requirement.
func (m *schemaMatcher) forRequirement(req string) { m.req = req }

// problemsOf keeps the problems of req ("" keeps all).
func problemsOf(probs []SchemaProblem, req string) []SchemaProblem {
	var out []SchemaProblem
	for _, p := range probs {
		if req == "" || p.Req == req {
			out = append(out, p)
		}
	}
	return out
}

// softReason is why problems are all graded as warnings, or "" when one of
// them is graded by its requirement's class.
func softReason(ps []SchemaProblem) string {
	why := ""
	for _, p := range ps {
		if p.Soft == "" {
			return ""
		}
		why = p.Soft
	}
	return why
}

func joinProblems(ps []SchemaProblem) string {
	const most = 8
	parts := make([]string, 0, min(len(ps), most)+1)
	for i, p := range ps {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-most))
			break
		}
		parts = append(parts, p.String())
	}
	return strings.Join(parts, "; ")
}

func (e *Exchange) markSchemaReported(req string) {
	if e.schemaReported == nil {
		e.schemaReported = map[string]bool{}
	}
	e.schemaReported[req] = true
}

// Tolerate marks an exchange whose schema problems a catalog ambiguity
// (such as A-22, NaN in JSON) asks the suite to record rather than grade:
// they become notes. A body that is not strict JSON is graded all the same
// (bare NaN or Infinity tokens as a warning, A-22; anything else fails):
// the ambiguity is what a server answers, not whether clients can read it.
func Tolerate(e *Exchange, ambiguity string) {
	if e != nil {
		e.tolerated = ambiguity
	}
}

// received keeps the spec-facing exchanges whose bodies are checked after
// the spec.
func (t *Target) receive(e *Exchange) {
	if e.Err != nil || e.Status < 200 || e.Status > 299 {
		return
	}
	t.mu.Lock()
	t.received = append(t.received, e)
	t.mu.Unlock()
}

// checkReceived validates every 2xx body the spec received, once, and
// grades each problem under its requirement. The same problem on the same
// route is recorded once per run, where it was first seen: a server that
// breaks the schema in every inference response fails the requirement
// once, not in every spec.
func (t *Target) checkReceived(notRun bool) {
	t.mu.Lock()
	list := t.received
	t.received = nil
	t.mu.Unlock()
	if notRun {
		return
	}
	for _, e := range list {
		byReq := map[string][]SchemaProblem{}
		var reqs []string
		for _, p := range e.schemaProblems() {
			if e.schemaReported[p.Req] || p.Req == "" {
				continue
			}
			if _, ok := byReq[p.Req]; !ok {
				reqs = append(reqs, p.Req)
			}
			byReq[p.Req] = append(byReq[p.Req], p)
		}
		sort.Strings(reqs)
		for _, req := range reqs {
			e.markSchemaReported(req)
			msg := fmt.Sprintf("%s: the body breaks the schema: %s", e.What(), joinProblems(byReq[req]))
			// What an ambiguity tolerates is the body's content; a body
			// that does not parse is graded all the same (Unparsed).
			if e.tolerated != "" && !unparsed(byReq[req]) {
				Note(req, "%s (recorded, not graded: %s)", msg, e.tolerated)
				continue
			}
			if !t.seenSchema(req, e, byReq[req]) {
				recordFinding(req, msg, grading{soft: softReason(byReq[req])}, e)
			}
		}
	}
}

func unparsed(ps []SchemaProblem) bool {
	return slices.ContainsFunc(ps, func(p SchemaProblem) bool { return p.Unparsed })
}

// withoutSharedMemoryOutputs drops the "no data" problems of response
// outputs the request asked for in a shared-memory region: the extension
// says such an output "must not define the data field" and puts nothing in
// its place (Triton answers {"name", "datatype", "shape"}), so the
// response alone cannot say why data is missing; the request can.
func (e *Exchange) withoutSharedMemoryOutputs(body []byte, probs []SchemaProblem) []SchemaProblem {
	var req struct {
		Outputs []struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"outputs"`
	}
	var resp struct {
		Outputs []struct {
			Name string `json:"name"`
		} `json:"outputs"`
	}
	if len(probs) == 0 || json.Unmarshal(e.ReqBody, &req) != nil || json.Unmarshal(body, &resp) != nil {
		return probs
	}
	inRegion := map[string]bool{}
	for _, o := range req.Outputs {
		if _, ok := o.Parameters["shared_memory_region"]; ok {
			inRegion[o.Name] = true
		}
	}
	if len(inRegion) == 0 {
		return probs
	}
	out := probs[:0:0]
	for _, p := range probs {
		var i int
		if n, err := fmt.Sscanf(p.Where, "/outputs/%d", &i); err == nil && n == 1 && p.Where == fmt.Sprintf("/outputs/%d", i) &&
			i < len(resp.Outputs) && inRegion[resp.Outputs[i].Name] && strings.HasPrefix(p.Message, `has no "data"`) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// seenSchema reports whether the same problems of req on the same route
// were recorded before in this run, and notes that they are now: a server
// that breaks the schema in every answer of a route fails the requirement
// once, not in every spec.
func (t *Target) seenSchema(req string, e *Exchange, probs []SchemaProblem) bool {
	key := req + " " + restRoute(e.Method, e.Path) + " " + joinProblems(probs)
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := t.schemaSeen[key]
	t.schemaSeen[key] = true
	return seen
}
