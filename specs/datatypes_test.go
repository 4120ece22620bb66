package specs

import (
	"strings"
	"testing"
)

func TestEmbeddedDatatypes(t *testing.T) {
	dts, err := LoadDatatypes()
	if err != nil {
		t.Fatalf("LoadDatatypes: %v", err)
	}
	if len(dts) != 14 {
		t.Fatalf("%d datatypes, want 14", len(dts))
	}
	byName := map[string]Datatype{}
	for _, d := range dts {
		byName[d.Name] = d
	}
	tests := []struct {
		name     string
		size     int
		contents string
		inTables bool
	}{
		{"BOOL", 1, "bool_contents", true},
		{"UINT8", 1, "uint_contents", true},
		{"UINT64", 8, "uint64_contents", true},
		{"INT16", 2, "int_contents", true},
		{"INT64", 8, "int64_contents", true},
		{"FP16", 2, "", true},
		{"FP32", 4, "fp32_contents", true},
		{"FP64", 8, "fp64_contents", true},
		{"BYTES", 0, "bytes_contents", true},
		{"BF16", 2, "", false},
	}
	for _, tt := range tests {
		d, ok := byName[tt.name]
		if !ok {
			t.Errorf("%s missing", tt.name)
			continue
		}
		if d.Size != tt.size || d.GRPCContentsField != tt.contents || d.InOIPTables != tt.inTables {
			t.Errorf("%s = %+v, want size %d, contents %q, in tables %v", tt.name, d, tt.size, tt.contents, tt.inTables)
		}
	}
	if !byName["BYTES"].Variable() || byName["INT32"].Variable() {
		t.Error("only BYTES should be variable-size")
	}
}

func TestParseDatatypesRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"bad size", `datatypes: [{name: X, size: 3, json: j, raw: r}]`, "size 3"},
		{"duplicate", `datatypes: [{name: X, size: 1, json: j, raw: r}, {name: X, size: 1, json: j, raw: r}]`, "duplicate name"},
		{"lower case", `datatypes: [{name: fp32, size: 4, json: j, raw: r}]`, "upper-case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDatatypes([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v does not mention %q", err, tt.want)
			}
		})
	}
}
