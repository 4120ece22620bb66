package loadgen

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

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
// as server figures (generator-bound, failed requests, an early end).
// order, if non-nil, sorts servers within a protocol (lower first); servers
// it does not know come after, by name.
func WriteComparison(w io.Writer, results []*Result, order func(server string) int) error {
	if len(results) == 0 {
		return fmt.Errorf("no results")
	}
	rows := make([]*Result, len(results))
	copy(rows, results)
	rank := func(r *Result) (int, int, string) {
		_, p := protocolName(r.Config.Target.Protocol)
		s := serverName(r)
		o := 1 << 30
		if order != nil {
			o = order(s)
		}
		return p, o, s
	}
	sort.SliceStable(rows, func(i, j int) bool {
		pi, oi, si := rank(rows[i])
		pj, oj, sj := rank(rows[j])
		if pi != pj {
			return pi < pj
		}
		if oi != oj {
			return oi < oj
		}
		return si < sj
	})

	var b strings.Builder
	b.WriteString(settingsLine(rows))
	b.WriteString("\n| protocol | server | throughput (req/s) | p50 (ms) | p99 (ms) | requests | failed |\n|---|---|---:|---:|---:|---:|---:|\n")
	var notes []string
	for _, r := range rows {
		proto, _ := protocolName(r.Config.Target.Protocol)
		lat := r.Latency.Response
		failed := r.Counts.Errors + r.Counts.Timeouts
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d |\n", proto, mdEscape(serverName(r)),
			strconv.FormatFloat(r.Rates.Completed, 'f', 0, 64), msText(lat.P50), msText(lat.P99), r.Counts.Completed, failed)
		var why []string
		if r.EndReason != EndCompleted {
			why = append(why, fmt.Sprintf("ended %s: %s", r.EndReason, r.Error))
		}
		if failed > 0 {
			why = append(why, fmt.Sprintf("%d failed requests %v", failed, r.Errors))
		}
		if r.Checks.GeneratorBound {
			why = append(why, "generator-bound: "+strings.Join(r.Checks.Reasons, "; "))
		}
		if len(why) > 0 {
			notes = append(notes, fmt.Sprintf("- %s over %s: %s", serverName(r), proto, mdEscape(strings.Join(why, "; "))))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nNot usable as server figures:\n\n" + strings.Join(notes, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func serverName(r *Result) string {
	if s := serverOf(r); s != "" {
		return s
	}
	return "unknown server"
}

// settingsLine states what every run shared: model, payload, loop,
// duration, warm-up, validation; settings that differ are named as such.
func settingsLine(rs []*Result) string {
	describe := func(r *Result) map[string]string {
		c := r.Config
		m := map[string]string{"model": c.Target.Model}
		if r.Target != nil {
			var ins []string
			for _, t := range r.Target.Inputs {
				ins = append(ins, fmt.Sprintf("%s %s %v", t.Name, t.Datatype, t.Shape))
			}
			m["inputs"] = strings.Join(ins, ", ")
		}
		m["load"] = describeLoad(c)
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
			varies = varies || describe(r)[k] != first[k]
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
