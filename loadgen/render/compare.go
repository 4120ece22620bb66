package render

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/loadgen"

	"github.com/oipkit/oipkit/client"
)

// protocolNames are the table's names for the load generator's protocols,
// in table order.
var protocolNames = []struct {
	p    client.Protocol
	name string
}{
	{client.ProtocolHTTP, "REST JSON"},
	{client.ProtocolHTTPBinary, "REST binary"},
	{client.ProtocolGRPCRaw, "gRPC raw"},
	{client.ProtocolGRPC, "gRPC typed"},
}

func protocolName(p client.Protocol) (string, int) {
	for i, n := range protocolNames {
		if n.p == p {
			return n.name, i
		}
	}
	return string(p), len(protocolNames)
}

// WriteComparison writes load results side by side as a Markdown table,
// one row per result, grouped by protocol so that the servers of one
// protocol are next to each other: throughput, response-time p50 and p99
// (from the histograms), requests and failures. Above the table it states
// the settings the runs share, and it flags results that must not be read
// as server figures (generator-bound, failed requests, an early end); a run
// in which no request succeeded has no figures in the table at all.
// servers, if non-nil, names the server of each result (e.g. to tell two
// set-ups of one server apart); servers keep the order in which they first
// appear in results.
func WriteComparison(w io.Writer, results []*loadgen.Result, servers []string) error {
	if len(results) == 0 {
		return fmt.Errorf("no results")
	}
	if servers != nil && len(servers) != len(results) {
		return fmt.Errorf("comparison: %d results, %d server names", len(results), len(servers))
	}
	type row struct {
		r      *loadgen.Result
		server string
	}
	rows := make([]row, len(results))
	order := map[string]int{}
	for i, r := range results {
		rows[i] = row{r, ServerName(r)}
		if servers != nil {
			rows[i].server = servers[i]
		}
		if _, ok := order[rows[i].server]; !ok {
			order[rows[i].server] = len(order)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		_, pi := protocolName(rows[i].r.Config.Target.Protocol)
		_, pj := protocolName(rows[j].r.Config.Target.Protocol)
		if pi != pj {
			return pi < pj
		}
		return order[rows[i].server] < order[rows[j].server]
	})
	measured := make([]*loadgen.Result, 0, len(rows))
	for _, x := range rows {
		if x.r.Counts.OK > 0 {
			measured = append(measured, x.r)
		}
	}
	if len(measured) == 0 {
		measured = []*loadgen.Result{rows[0].r}
	}

	// Streaming runs add their own columns: responses/s, time to first
	// response and the gap between responses.
	streaming := false
	for _, x := range rows {
		streaming = streaming || x.r.Latency.FirstResponse != nil
	}
	var b strings.Builder
	b.WriteString(settingsLine(measured))
	if streaming {
		b.WriteString("\n| protocol | server | throughput (req/s) | p50 (ms) | p99 (ms) | responses/s | first response p50 (ms) | first response p99 (ms) | gap p50 (ms) | gap p99 (ms) | requests | failed |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	} else {
		b.WriteString("\n| protocol | server | throughput (req/s) | p50 (ms) | p99 (ms) | requests | failed |\n|---|---|---:|---:|---:|---:|---:|\n")
	}
	var notes []string
	for _, x := range rows {
		r := x.r
		proto, _ := protocolName(r.Config.Target.Protocol)
		lat := r.Latency.Response
		failed := r.Counts.Errors + r.Counts.Timeouts
		rate, p50, p99 := "—", "—", "—"
		if r.Counts.OK > 0 {
			rate, p50, p99 = strconv.FormatFloat(r.Rates.Completed, 'f', 0, 64), msText(lat.P50), msText(lat.P99)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", proto, mdEscape(x.server), rate, p50, p99)
		if streaming {
			stream := []string{"—", "—", "—", "—", "—"}
			if fr, ir := r.Latency.FirstResponse, r.Latency.InterResponse; r.Counts.OK > 0 && fr != nil && ir != nil {
				stream = []string{strconv.FormatFloat(r.Rates.Responses, 'f', 0, 64), msText(fr.P50), msText(fr.P99), msText(ir.P50), msText(ir.P99)}
				if ir.Count == 0 { // one response a request: no gaps
					stream[3], stream[4] = "—", "—"
				}
			}
			fmt.Fprintf(&b, " %s |", strings.Join(stream, " | "))
		}
		fmt.Fprintf(&b, " %d | %d |\n", r.Counts.Completed, failed)
		var why []string
		if r.EndReason != loadgen.EndCompleted {
			why = append(why, fmt.Sprintf("ended %s: %s", r.EndReason, r.Error))
		}
		if failed > 0 {
			why = append(why, fmt.Sprintf("%d failed requests %v", failed, r.Errors))
		}
		if r.Checks.GeneratorBound {
			why = append(why, "generator-bound: "+strings.Join(r.Checks.Reasons, "; "))
		}
		if len(why) > 0 {
			notes = append(notes, fmt.Sprintf("- %s over %s: %s", x.server, proto, mdEscape(strings.Join(why, "; "))))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNot usable as server figures:\n\n" + strings.Join(notes, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ServerName is the result's server as tables name it: its name and
// version, or "unknown server" for a run that never identified it.
func ServerName(r *loadgen.Result) string {
	if s := loadgen.ServerOf(r); s != "" {
		return s
	}
	return "unknown server"
}

// settingsLine states what every run shared: model, payload, loop,
// duration, warm-up, validation; settings that differ are named as such.
// A setting a run does not know (the inputs of a run that never reached
// its server) differs from nothing.
func settingsLine(rs []*loadgen.Result) string {
	describe := func(r *loadgen.Result) map[string]string {
		c := r.Config
		m := map[string]string{"model": c.Target.Model}
		if r.Target != nil {
			var ins []string
			for _, t := range r.Target.Inputs {
				ins = append(ins, fmt.Sprintf("%s %s %v", t.Name, t.Datatype, t.Shape))
			}
			m["inputs"] = strings.Join(ins, ", ")
		}
		m["load"] = loadgen.DescribeLoad(c)
		m["duration"] = c.Load.Duration.D().String()
		switch {
		case c.Load.WarmupRequests > 0:
			m["warm-up"] = fmt.Sprintf("%d requests", c.Load.WarmupRequests)
		default:
			m["warm-up"] = c.Load.Warmup.D().String()
		}
		m["data"] = c.Inputs.Data
		if c.Inputs.Validate {
			m["data"] += ", every response validated"
		}
		if c.Target.Connections > 0 {
			m["connections"] = strconv.Itoa(c.Target.Connections)
		} else {
			m["connections"] = "default (one gRPC connection; one keep-alive connection per worker)"
		}
		m["timeout"] = c.Target.Timeout.D().String()
		return m
	}
	keys := []string{"model", "inputs", "load", "duration", "warm-up", "data", "connections", "timeout"}
	first := describe(rs[0])
	var same, differ []string
	for _, k := range keys {
		varies := false
		for _, r := range rs[1:] {
			v := describe(r)[k]
			varies = varies || (v != first[k] && v != "" && first[k] != "")
		}
		if varies {
			differ = append(differ, k)
		} else if first[k] != "" {
			same = append(same, k+": "+first[k])
		}
	}
	line := "Settings of every run: " + strings.Join(same, "; ") + ". Latency is the response time (closed loop: from the actual send), from each run's histogram.\n"
	if len(differ) > 0 {
		line += "\n**The runs differ in " + strings.Join(differ, ", ") + "**: the rows are not comparable.\n"
	}
	return line
}

func msText(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) }

// mdEscape makes s safe inside a Markdown table cell.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
