package tensor

import (
	"testing"

	"github.com/oipkit/oipkit/specs"
)

// TestDatatypesMatchCatalog: the datatype facts the codecs use (the list of
// names, element sizes, the gRPC typed-contents field of each) are the ones
// of the catalog's table, specs/datatypes.yaml. The catalog is the source; a
// datatype added or changed there without the codec, or the reverse, fails.
func TestDatatypesMatchCatalog(t *testing.T) {
	table, err := specs.LoadDatatypes()
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != len(Datatypes) {
		t.Errorf("the catalog lists %d datatypes, the tensor package %d", len(table), len(Datatypes))
	}
	known := map[Datatype]bool{}
	for _, row := range table {
		d := Datatype(row.Name)
		known[d] = true
		if !d.Valid() {
			t.Errorf("%s: in the catalog, unknown to the tensor package", row.Name)
			continue
		}
		if d.Size() != row.Size {
			t.Errorf("%s: element size %d in the tensor package, %d in the catalog", d, d.Size(), row.Size)
		}
		if got := contentsField(d); got != row.GRPCContentsField {
			t.Errorf("%s: gRPC contents field %q in the tensor package, %q in the catalog", d, got, row.GRPCContentsField)
		}
		if parsed, err := ParseDatatype(row.Name); err != nil || parsed != d {
			t.Errorf("ParseDatatype(%q) = %q, %v", row.Name, parsed, err)
		}
	}
	for _, d := range Datatypes {
		if !known[d] {
			t.Errorf("%s: in the tensor package, missing from the catalog", d)
		}
	}
}
